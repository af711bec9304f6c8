/**
 * The embedded backend: the whole key space in memory (as etcd keeps its index), made durable by a
 * write-ahead log. Every write batch is framed (length + CRC-32), appended and `fdatasync`ed before
 * any writer is acknowledged or any watcher told, so `kill -9` loses nothing acknowledged; a torn
 * tail frame is detected by its CRC and cut off on the next open. When the log grows past a bound,
 * the state is written to a snapshot (temp file, fsync, rename) and the log starts afresh. The
 * snapshot is framed like the log, one frame per key, and streamed to disk: the store is never
 * turned into one string (V8 caps strings at 512 MiB; a store holding large values broke on it).
 *
 * Writers arriving while a batch is being synced queue up and go out together in the next batch
 * (group commit). Reads wait for an in-flight sync so they never observe a write that is not yet
 * durable. Large values (operator chunks) live in files of their own, not in memory, the log or the
 * snapshot (embedded-blobs.ts).
 */
import { randomBytes } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import { mkdir, open, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { StewardError, invalidRequest } from "../../api";
import { crc32 } from "./crc32";
import { BLOB_MIN_CHARS, BlobFiles, blobKeyValue, blobOf, withValue, withoutValue } from "./embedded-blobs";
import type { KeyValue, Lease, Op, Store, Txn, TxnResult, WatchEvent, WatchOptions, Watcher } from "./store";
import { CompactedError, LeaseNotFoundError, StoreClosedError, ValueTooLargeError, compareHolds } from "./store";

export interface EmbeddedStoreOptions {
  /** Directory holding `wal.log` and `snapshot.frames`; created if missing. */
  dir: string;
  /**
   * Revisions of history kept in memory for watches that replay.
   * @default 50000
   */
  historyRevisions?: number;
  /**
   * Snapshot and restart the log once it is larger than this many bytes.
   * @default 64 MiB
   */
  snapshotAfterBytes?: number;
}

/** etcd's default request limit; the embedded store refuses the same so the backends agree. */
export const MAX_VALUE_BYTES = 1536 * 1024;

/** A put with its value (`v`) or naming the blob file that holds it (`b`), or a delete (`d`). */
type WalWrite = { p: string; v: string; l?: string } | { p: string; b: string; l?: string } | { d: string };
type WalRecord = { r: number; w: WalWrite[]; lr?: string } | { lg: string; ttl: number };

interface LeaseState {
  ttl: number;
  deadline: number;
  keys: Set<string>;
}
interface Pending {
  apply: () => Applied;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}
interface Applied {
  result: unknown;
  record?: WalRecord;
  events?: WatchEvent[];
}
interface WatchState {
  prefix: string;
  listener: (e: WatchEvent[], r: number) => void;
  onError?: (e: Error) => void;
  nextRev: number;
  closed: boolean;
}

const SNAPSHOT = "snapshot.frames";
/** The first snapshot format, one JSON document; still read, replaced by the next snapshot. */
const LEGACY_SNAPSHOT = "snapshot.json";
const WAL = "wal.log";

/** The frames of a snapshot, in order: one header, one frame per key, one end frame. */
type SnapshotFrame =
  { h: { revision: number; leases: { id: string; ttl: number }[] } } | { kv: KeyValue; b?: string } | { end: number };
/** Snapshot frames are gathered into writes of about this many bytes. */
const SNAPSHOT_WRITE_BYTES = 1024 * 1024;

export class EmbeddedStore implements Store {
  readonly backend = "embedded";
  private readonly kv = new Map<string, KeyValue>();
  private readonly leases = new Map<string, LeaseState>();
  private readonly history: { revision: number; events: WatchEvent[] }[] = [];
  private readonly watchers = new Set<WatchState>();
  private revision = 0;
  /** Newest revision that is durable and in `history`; watchers never run ahead of it. */
  private published = 0;
  /** Oldest revision whose events can still be replayed. */
  private firstRetained = 1;
  private queue: Pending[] = [];
  private flushing = false;
  private inflight: Promise<void> | undefined;
  private walBytes = 0;
  private closed = false;
  private failed: Error | undefined;
  private readonly leaseTimer: NodeJS.Timeout;
  private readonly blobs: BlobFiles;

  protected constructor(
    private readonly opts: Required<EmbeddedStoreOptions>,
    private wal: FileHandle,
  ) {
    this.blobs = new BlobFiles(opts.dir);
    this.leaseTimer = setInterval(() => this.expireLeases(), 250);
    this.leaseTimer.unref();
  }

  /** Opens (or creates) the store in `opts.dir`, replaying the snapshot and the log. */
  static async open(options: EmbeddedStoreOptions): Promise<EmbeddedStore> {
    const opts = { historyRevisions: 50_000, snapshotAfterBytes: 64 * 1024 * 1024, ...options };
    await mkdir(opts.dir, { recursive: true, mode: 0o700 });
    const walPath = join(opts.dir, WAL);
    const wal = await open(walPath, "a+", 0o600);
    const store = new EmbeddedStore(opts, wal);
    await store.blobs.open();
    await store.recover(walPath);
    return store;
  }

  private async recover(walPath: string): Promise<void> {
    const now = Date.now();
    if (!(await this.loadSnapshot(now))) await this.loadLegacySnapshot(now);
    const buf = await readFile(walPath);
    let off = 0;
    while (off + 8 <= buf.length) {
      const len = buf.readUInt32LE(off);
      const sum = buf.readUInt32LE(off + 4);
      if (off + 8 + len > buf.length) break;
      const body = buf.subarray(off + 8, off + 8 + len);
      if (crc32(body) !== sum) break;
      this.replay(JSON.parse(body.toString("utf8")) as WalRecord, now);
      off += 8 + len;
    }
    if (off < buf.length) await this.wal.truncate(off); // a torn tail from a crash mid-append: never acknowledged
    this.walBytes = off;
    await this.moveLargeValuesToBlobs();
    this.firstRetained = this.revision + 1;
    this.published = this.revision;
  }

  /** Loads `snapshot.frames` frame by frame; false when there is none. A damaged one stops the open. */
  private async loadSnapshot(now: number): Promise<boolean> {
    const path = join(this.opts.dir, SNAPSHOT);
    const fh = await open(path, "r").catch((e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") return undefined;
      throw e;
    });
    if (!fh) return false;
    const damaged = (why: string): StewardError =>
      new StewardError(
        "internal",
        `the store snapshot ${path} is damaged (${why}); restore the data directory from a backup`,
      );
    try {
      const reader = new FrameReader(fh);
      let kvs = 0;
      let headerSeen = false;
      for (let body = await reader.next(); body; body = await reader.next()) {
        const f = JSON.parse(body.toString("utf8")) as SnapshotFrame;
        if ("h" in f) {
          headerSeen = true;
          this.revision = f.h.revision;
          for (const l of f.h.leases)
            this.leases.set(l.id, { ttl: l.ttl, deadline: now + l.ttl * 1000, keys: new Set() });
        } else if ("kv" in f) {
          if (!headerSeen) throw damaged("a key before the header");
          this.restoreKey(f.b === undefined ? f.kv : blobKeyValue(withoutValue(f.kv), this.blobs.existing(f.b)));
          kvs++;
        } else {
          if (f.end !== kvs) throw damaged(`it ends after ${kvs} keys but promises ${f.end}`);
          return true;
        }
      }
      throw damaged(reader.damage ?? "it has no end frame");
    } finally {
      await fh.close();
    }
  }

  private async loadLegacySnapshot(now: number): Promise<void> {
    const snap = await readFile(join(this.opts.dir, LEGACY_SNAPSHOT), "utf8").catch((e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") return undefined;
      throw e;
    });
    if (snap === undefined) return;
    const s = JSON.parse(snap) as { revision: number; kvs: KeyValue[]; leases: { id: string; ttl: number }[] };
    this.revision = s.revision;
    for (const l of s.leases) this.leases.set(l.id, { ttl: l.ttl, deadline: now + l.ttl * 1000, keys: new Set() });
    for (const kv of s.kvs) this.restoreKey(kv);
  }

  /**
   * Large values held in memory after an open (written by a restore, or by a version that kept them
   * in memory) go to blob files; the next snapshot names the files instead of holding the values.
   */
  private async moveLargeValuesToBlobs(): Promise<void> {
    for (const [key, kv] of this.kv) {
      if (blobOf(kv) || kv.value.length < BLOB_MIN_CHARS) continue;
      this.kv.set(key, blobKeyValue(withoutValue(kv), this.blobs.add(kv.value)));
    }
    await this.blobs.writePending();
  }

  /** Characters of values held in memory (by keys and by retained watch events), for tests and benchmarks. */
  valueCharsInMemory(): number {
    const seen = new Set<KeyValue>();
    for (const kv of this.kv.values()) seen.add(kv);
    for (const h of this.history) for (const e of h.events) seen.add(e.kv);
    let chars = 0;
    for (const kv of seen) {
      const blob = blobOf(kv);
      chars += blob ? (blob.pending?.length ?? 0) : kv.value.length;
    }
    return chars;
  }

  private restoreKey(kv: KeyValue): void {
    this.kv.set(kv.key, kv);
    if (kv.lease) this.leases.get(kv.lease)?.keys.add(kv.key);
  }

  private replay(rec: WalRecord, now: number): void {
    if ("lg" in rec) {
      if (!this.leases.has(rec.lg))
        this.leases.set(rec.lg, { ttl: rec.ttl, deadline: now + rec.ttl * 1000, keys: new Set() });
      return;
    }
    if (rec.r <= this.revision && rec.w.length > 0) return; // already in the snapshot
    if (rec.w.length > 0) {
      this.applyWrites(rec.r, rec.w);
      this.revision = rec.r;
    }
    if (rec.lr) this.leases.delete(rec.lr);
  }

  /** Applies writes at `rev` to memory; returns the watch events. The only place keys change. */
  private applyWrites(rev: number, writes: WalWrite[]): WatchEvent[] {
    const events: WatchEvent[] = [];
    for (const w of writes) {
      if ("d" in w) {
        const old = this.kv.get(w.d);
        if (!old) continue;
        this.kv.delete(w.d);
        if (old.lease) this.leases.get(old.lease)?.keys.delete(w.d);
        events.push({ type: "delete", kv: { ...withoutValue(old), modRevision: rev, value: "" } });
      } else {
        const old = this.kv.get(w.p);
        if (old?.lease && old.lease !== w.l) this.leases.get(old.lease)?.keys.delete(w.p);
        const fields: Omit<KeyValue, "value"> = {
          key: w.p,
          createRevision: old ? old.createRevision : rev,
          modRevision: rev,
          version: old ? old.version + 1 : 1,
        };
        if (w.l) {
          fields.lease = w.l;
          this.leases.get(w.l)?.keys.add(w.p);
        }
        const kv: KeyValue = "b" in w ? blobKeyValue(fields, this.blobs.existing(w.b)) : { ...fields, value: w.v };
        this.kv.set(w.p, kv);
        events.push({ type: "put", kv });
      }
    }
    return events;
  }

  // --- the write path ---

  private enqueue<T>(apply: () => Applied): Promise<T> {
    if (this.closed) return Promise.reject(new StoreClosedError(this.backend));
    if (this.failed) return Promise.reject(this.failed);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ apply, resolve: resolve as (v: unknown) => void, reject });
      if (!this.flushing) {
        this.flushing = true;
        this.flushLoop().catch((err: unknown) => this.fail(err));
      }
    });
  }

  private async flushLoop(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0);
      const frames: Buffer[] = [];
      const settle: (() => void)[] = [];
      const published: { revision: number; events: WatchEvent[] }[] = [];
      for (const p of batch) {
        try {
          const a = p.apply();
          if (a.record) frames.push(frame(a.record));
          if (a.events && a.events.length > 0) published.push({ revision: this.revision, events: a.events });
          settle.push(() => p.resolve(a.result));
        } catch (err) {
          settle.push(() => p.reject(err));
        }
      }
      if (frames.length > 0) {
        const data = Buffer.concat(frames);
        let release!: () => void;
        this.inflight = new Promise<void>((r) => (release = r));
        let blobBytes = 0;
        try {
          // Blob files before the record naming them: a record never names a file that is not there.
          blobBytes = await this.blobs.writePending();
          await this.wal.write(data, 0, data.length, null);
          await this.wal.datasync();
        } catch (err) {
          // Memory is now ahead of disk: stop serving rather than acknowledge what may be lost.
          this.fail(err);
          for (const p of batch) p.reject(this.failed);
          release();
          return;
        }
        // Blob bytes count too: the snapshot that follows deletes the files no key names any more.
        this.walBytes += data.length + blobBytes;
        this.inflight = undefined;
        release();
      }
      for (const h of published) this.history.push(h);
      this.published = this.revision;
      this.trimHistory();
      for (const w of this.watchers) this.catchUp(w);
      for (const s of settle) s();
      if (this.walBytes > this.opts.snapshotAfterBytes) await this.snapshot();
      // Let reads that waited on this batch run before the next batch changes memory.
      await new Promise<void>((r) => setImmediate(r));
    }
    this.flushing = false;
  }

  private fail(err: unknown): void {
    this.failed = new StewardError(
      "unavailable",
      `embedded store failed writing to ${this.opts.dir}: ${(err as Error).message}; restart the controller`,
      { cause: err, reason: "store-failed" },
    );
    for (const p of this.queue.splice(0)) p.reject(this.failed);
    this.flushing = false;
  }

  /**
   * Writes the whole state to a new snapshot, key by key (each key its own frame, so no string
   * ever holds more than one value), then makes it the snapshot in one rename. Runs inside the
   * flush loop, so no write changes memory while it iterates.
   */
  private async snapshot(): Promise<void> {
    const tmp = join(this.opts.dir, `${SNAPSHOT}.tmp`);
    const out = await open(tmp, "w", 0o600);
    try {
      const writer = new FrameWriter(out);
      const leases = [...this.leases].map(([id, l]) => ({ id, ttl: l.ttl }));
      await writer.add({ h: { revision: this.revision, leases } });
      for (const kv of this.kv.values()) {
        const blob = blobOf(kv);
        await writer.add(blob ? { kv: { ...withoutValue(kv), value: "" }, b: blob.hash } : { kv });
      }
      await writer.add({ end: this.kv.size });
      await writer.flush();
      await out.sync();
    } finally {
      await out.close();
    }
    await rename(tmp, join(this.opts.dir, SNAPSHOT));
    await rm(join(this.opts.dir, LEGACY_SNAPSHOT), { force: true });
    await syncDir(this.opts.dir);
    // Only now is the log redundant; a crash before this truncate replays records the snapshot already has (skipped by revision).
    await this.wal.truncate(0);
    await this.wal.sync();
    this.walBytes = 0;
    // Neither the log nor the snapshot names other blob files now; watch events still retained may.
    const live = new Set<string>();
    for (const kv of this.kv.values()) {
      const b = blobOf(kv);
      if (b) live.add(b.hash);
    }
    for (const h of this.history)
      for (const e of h.events) {
        const b = blobOf(e.kv);
        if (b) live.add(b.hash);
      }
    await this.blobs.collect(live);
  }

  private async readable(): Promise<void> {
    if (this.closed) throw new StoreClosedError(this.backend);
    if (this.failed) throw this.failed;
    if (this.inflight) await this.inflight;
  }

  // --- the Store port ---

  async get(key: string): Promise<KeyValue | undefined> {
    await this.readable();
    const kv = this.kv.get(key);
    return kv && withValue(kv);
  }

  async range(prefix: string): Promise<{ kvs: KeyValue[]; revision: number }> {
    await this.readable();
    return { kvs: this.rangeNow(prefix).map(withValue), revision: this.revision };
  }

  private rangeNow(prefix: string): KeyValue[] {
    const out: KeyValue[] = [];
    for (const [k, v] of this.kv) if (k.startsWith(prefix)) out.push(v);
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  txn(t: Txn): Promise<TxnResult> {
    return this.enqueue<TxnResult>(() => {
      const succeeded = (t.compare ?? []).every((c) => compareHolds(c, this.kv.get(c.key)));
      const ops = succeeded ? t.success : (t.failure ?? []);
      this.checkWrites(ops);
      const rev = this.revision + 1;
      const writes: WalWrite[] = [];
      const events: WatchEvent[] = [];
      const responses: KeyValue[][] = [];
      for (const op of ops) {
        let w: WalWrite[] = [];
        switch (op.type) {
          case "get": {
            const kv = this.kv.get(op.key);
            responses.push(kv ? [withValue(kv)] : []);
            break;
          }
          case "range":
            responses.push(this.rangeNow(op.prefix).map(withValue));
            break;
          case "put":
            w = [this.putWrite(op.key, op.value, op.lease)];
            responses.push([]);
            break;
          case "delete": {
            const kv = this.kv.get(op.key);
            w = kv ? [{ d: op.key }] : [];
            responses.push(kv ? [kv] : []);
            break;
          }
          case "deletePrefix": {
            const kvs = this.rangeNow(op.prefix);
            w = kvs.map((kv) => ({ d: kv.key }));
            responses.push(kvs);
            break;
          }
        }
        writes.push(...w);
        events.push(...this.applyWrites(rev, w));
      }
      if (writes.length === 0) return { result: { succeeded, revision: this.revision, responses } };
      this.revision = rev;
      return { result: { succeeded, revision: rev, responses }, record: { r: rev, w: writes }, events };
    });
  }

  /** A put for the log: a large value goes to a blob file (written before the log record). */
  private putWrite(key: string, value: string, lease: string | undefined): WalWrite {
    const l = lease ? { l: lease } : {};
    return value.length >= BLOB_MIN_CHARS
      ? { p: key, b: this.blobs.add(value).hash, ...l }
      : { p: key, v: value, ...l };
  }

  /** Refuses a transaction before it changes anything: unknown lease, oversized value, key written twice. */
  private checkWrites(ops: Op[]): void {
    const seen = new Set<string>();
    for (const op of ops) {
      if (op.type !== "put" && op.type !== "delete") continue;
      if (seen.has(op.key)) throw invalidRequest(`key ${op.key} is written twice in one transaction`);
      seen.add(op.key);
      if (op.type === "put") {
        if (op.lease && !this.leases.has(op.lease)) throw new LeaseNotFoundError(op.lease);
        if (Buffer.byteLength(op.value) > MAX_VALUE_BYTES)
          throw new ValueTooLargeError(op.key, Buffer.byteLength(op.value), MAX_VALUE_BYTES);
      }
    }
  }

  async put(key: string, value: string, opts: { lease?: string } = {}): Promise<number> {
    return (await this.txn({ success: [{ type: "put", key, value, ...(opts.lease ? { lease: opts.lease } : {}) }] }))
      .revision;
  }

  async delete(key: string): Promise<number> {
    return (await this.txn({ success: [{ type: "delete", key }] })).revision;
  }

  grantLease(ttlSeconds: number): Promise<Lease> {
    if (!(ttlSeconds >= 1)) return Promise.reject(invalidRequest("lease TTL must be at least 1 second"));
    const id = randomBytes(8).toString("hex");
    return this.enqueue<Lease>(() => {
      this.leases.set(id, { ttl: ttlSeconds, deadline: Date.now() + ttlSeconds * 1000, keys: new Set() });
      return { result: { id, ttlSeconds }, record: { lg: id, ttl: ttlSeconds } };
    });
  }

  async keepAlive(leaseId: string): Promise<void> {
    await this.readable();
    const l = this.leases.get(leaseId);
    if (!l) throw new LeaseNotFoundError(leaseId);
    l.deadline = Date.now() + l.ttl * 1000;
  }

  revokeLease(leaseId: string): Promise<void> {
    return this.enqueue<void>(() => this.revokeNow(leaseId, false));
  }

  private revokeNow(leaseId: string, onlyIfExpired: boolean): Applied {
    const l = this.leases.get(leaseId);
    if (!l) return { result: undefined };
    if (onlyIfExpired && l.deadline > Date.now()) return { result: undefined }; // renewed while queued
    const writes: WalWrite[] = [...l.keys].sort().map((k) => ({ d: k }));
    const rev = writes.length > 0 ? this.revision + 1 : this.revision;
    const events = this.applyWrites(rev, writes);
    this.revision = rev;
    this.leases.delete(leaseId);
    return { result: undefined, record: { r: rev, w: writes, lr: leaseId }, events };
  }

  private expireLeases(): void {
    if (this.closed || this.failed) return;
    const now = Date.now();
    for (const [id, l] of this.leases) {
      if (l.deadline <= now) this.enqueue<void>(() => this.revokeNow(id, true)).catch(() => undefined);
    }
  }

  watch(prefix: string, listener: (events: WatchEvent[], revision: number) => void, opts: WatchOptions = {}): Watcher {
    const w: WatchState = {
      prefix,
      listener,
      onError: opts.onError,
      nextRev: opts.fromRevision ?? this.published + 1,
      closed: false,
    };
    if (this.closed) throw new StoreClosedError(this.backend);
    if (w.nextRev < this.firstRetained && w.nextRev <= this.published) {
      const err = new CompactedError(w.nextRev, this.firstRetained);
      queueMicrotask(() => {
        if (!w.closed) {
          w.closed = true;
          w.onError?.(err);
        }
      });
      return {
        close: () => {
          w.closed = true;
        },
      };
    }
    this.watchers.add(w);
    queueMicrotask(() => this.catchUp(w));
    return {
      close: () => {
        w.closed = true;
        this.watchers.delete(w);
      },
    };
  }

  /** Delivers every retained revision the watcher has not seen yet, in order. */
  private catchUp(w: WatchState): void {
    if (w.closed || w.nextRev > this.published) return;
    if (w.nextRev < this.firstRetained) {
      // The watcher fell behind history trimming (it was too slow); it must resync.
      w.closed = true;
      this.watchers.delete(w);
      w.onError?.(new CompactedError(w.nextRev, this.firstRetained));
      return;
    }
    const start = lowerBound(this.history, w.nextRev);
    for (let i = start; i < this.history.length && !w.closed; i++) {
      const h = this.history[i]!;
      const mine = h.events.filter((e) => e.kv.key.startsWith(w.prefix));
      w.nextRev = h.revision + 1;
      if (mine.length > 0) {
        try {
          w.listener(mine, h.revision);
        } catch (err) {
          process.emitWarning(`store watch listener threw: ${(err as Error).message}`);
        }
      }
    }
    w.nextRev = Math.max(w.nextRev, this.published + 1);
  }

  private trimHistory(): void {
    const keepFrom = this.revision - this.opts.historyRevisions + 1;
    if (keepFrom <= this.firstRetained) return;
    const cut = lowerBound(this.history, keepFrom);
    this.history.splice(0, cut);
    this.firstRetained = keepFrom;
  }

  async compact(revision: number): Promise<void> {
    await this.readable();
    if (revision > this.published)
      throw invalidRequest(`cannot compact to ${revision}: the current revision is ${this.published}`);
    if (revision <= this.firstRetained) return;
    this.history.splice(0, lowerBound(this.history, revision));
    this.firstRetained = revision;
  }

  async currentRevision(): Promise<number> {
    await this.readable();
    return this.revision;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    while (this.flushing) await new Promise<void>((r) => setImmediate(r));
    this.closed = true;
    clearInterval(this.leaseTimer);
    for (const w of this.watchers) w.closed = true;
    this.watchers.clear();
    await this.wal.close();
  }
}

/** Gathers frames into large writes, so a snapshot of many small keys is not one syscall per key. */
class FrameWriter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(private readonly out: FileHandle) {}

  async add(rec: SnapshotFrame): Promise<void> {
    const f = frame(rec);
    this.pending.push(f);
    this.pendingBytes += f.length;
    if (this.pendingBytes >= SNAPSHOT_WRITE_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const data = Buffer.concat(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    await this.out.write(data, 0, data.length, null);
  }
}

/** Reads frames back one at a time through a buffer, never the whole file at once. */
class FrameReader {
  private buf = Buffer.alloc(0);
  private off = 0;
  private filePos = 0;
  private eof = false;
  /** Why reading stopped early, when it did. */
  damage: string | undefined;

  constructor(private readonly fh: FileHandle) {}

  /** The next frame's body, or undefined at the end (or at damage: see {@link damage}). */
  async next(): Promise<Buffer | undefined> {
    if (!(await this.fill(8))) {
      if (this.buf.length > this.off) this.damage = "a torn frame header at the end";
      return undefined;
    }
    const len = this.buf.readUInt32LE(this.off);
    const sum = this.buf.readUInt32LE(this.off + 4);
    if (!(await this.fill(8 + len))) {
      this.damage = "a frame cut short at the end";
      return undefined;
    }
    const body = this.buf.subarray(this.off + 8, this.off + 8 + len);
    if (crc32(body) !== sum) {
      this.damage = `a checksum mismatch at byte ${this.filePos - (this.buf.length - this.off)}`;
      return undefined;
    }
    this.off += 8 + len;
    return body;
  }

  /** Makes at least `n` unread bytes available; false if the file ends first. */
  private async fill(n: number): Promise<boolean> {
    while (this.buf.length - this.off < n && !this.eof) {
      const chunk = Buffer.alloc(Math.max(SNAPSHOT_WRITE_BYTES, n));
      const { bytesRead } = await this.fh.read(chunk, 0, chunk.length, this.filePos);
      if (bytesRead === 0) {
        this.eof = true;
        break;
      }
      this.filePos += bytesRead;
      this.buf = Buffer.concat([this.buf.subarray(this.off), chunk.subarray(0, bytesRead)]);
      this.off = 0;
    }
    return this.buf.length - this.off >= n;
  }
}

function frame(rec: WalRecord | SnapshotFrame): Buffer {
  const body = Buffer.from(JSON.stringify(rec), "utf8");
  const head = Buffer.alloc(8);
  head.writeUInt32LE(body.length, 0);
  head.writeUInt32LE(crc32(body), 4);
  return Buffer.concat([head, body]);
}

function lowerBound(history: { revision: number }[], rev: number): number {
  let lo = 0,
    hi = history.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (history[mid]!.revision < rev) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Size of the log and snapshot, for status and benchmarks. */
export async function embeddedStoreSize(
  dir: string,
): Promise<{ walBytes: number; snapshotBytes: number; blobBytes: number }> {
  const size = async (f: string): Promise<number> => (await stat(join(dir, f)).catch(() => ({ size: 0 }))).size;
  return {
    walBytes: await size(WAL),
    snapshotBytes: (await size(SNAPSHOT)) + (await size(LEGACY_SNAPSHOT)),
    blobBytes: await BlobFiles.size(dir),
  };
}

/**
 * Writes a new embedded store in `dir` holding exactly `kvs` at `revision`, each key with the
 * revisions and version it had (a restored backup: agents compare databag revisions, which must not
 * all change). `leases` are created afresh with their TTL running from the store's next open.
 * `dir` must not hold a store.
 */
export async function writeEmbeddedStore(
  dir: string,
  revision: number,
  kvs: KeyValue[],
  leases: { id: string; ttl: number }[],
): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const existing = await embeddedStoreSize(dir);
  if (existing.walBytes > 0 || existing.snapshotBytes > 0)
    throw new StewardError("invalid-request", `${dir} already holds a store; a restore writes only into an empty one`);
  const tmp = join(dir, `${SNAPSHOT}.tmp`);
  const out = await open(tmp, "w", 0o600);
  try {
    const writer = new FrameWriter(out);
    await writer.add({ h: { revision, leases } });
    for (const kv of kvs) {
      if (kv.modRevision > revision)
        throw invalidRequest(`key ${kv.key} was written at ${kv.modRevision}, after the store's revision ${revision}`);
      await writer.add({ kv });
    }
    await writer.add({ end: kvs.length });
    await writer.flush();
    await out.sync();
  } finally {
    await out.close();
  }
  await rename(tmp, join(dir, SNAPSHOT));
  await syncDir(dir);
}
