/**
 * Large values of the embedded store, kept in files of their own (`blobs/<sha-256>`) instead of in
 * its in-memory map, log and snapshot. Held in memory, operator chunks cost the controller about four
 * times their size (96 MB of operators took 370 MB more RSS); on disk they cost what a read of one
 * takes. A key holding one has a `value` read from its file when asked for, so every reader (gets,
 * ranges, watch events, compares) sees an ordinary value.
 *
 * A blob file is written and synced before the log record naming it, so a record never names a
 * file that is not there; files no key or retained watch event names are deleted after a snapshot.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { KeyValue } from "./store";

/** Values of at least this many characters are kept in blob files. Smaller ones stay in memory. */
export const BLOB_MIN_CHARS = 64 * 1024;

const BLOB_DIR = "blobs";
const BLOB_OF = Symbol("embedded-blob");

/** One blob's file; `pending` holds its value in memory until the file is durable. */
export class Blob {
  constructor(
    readonly path: string,
    readonly hash: string,
    public pending: string | undefined,
  ) {}

  read(): string {
    return this.pending ?? readFileSync(this.path, "utf8");
  }
}

/** The blob directory of one embedded store. */
export class BlobFiles {
  private readonly dir: string;
  /** Blobs whose files are still to be written, by hash. */
  private readonly unwritten = new Map<string, Blob>();

  constructor(storeDir: string) {
    this.dir = join(storeDir, BLOB_DIR);
  }

  async open(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
  }

  /** A blob for `value`, its file written at the next {@link writePending}. */
  add(value: string): Blob {
    const hash = createHash("sha256").update(value).digest("hex");
    const waiting = this.unwritten.get(hash);
    if (waiting) return waiting;
    const blob = new Blob(join(this.dir, hash), hash, value);
    this.unwritten.set(hash, blob);
    return blob;
  }

  /** The blob a log record or snapshot names (its file already written). */
  existing(hash: string): Blob {
    return this.unwritten.get(hash) ?? new Blob(join(this.dir, hash), hash, undefined);
  }

  /** Writes and syncs every blob added since the last call; returns the bytes written. */
  async writePending(): Promise<number> {
    if (this.unwritten.size === 0) return 0;
    let bytes = 0;
    const blobs = [...this.unwritten.values()];
    for (const blob of blobs) {
      const data = Buffer.from(blob.pending!, "utf8");
      const tmp = `${blob.path}.tmp`;
      const fh = await open(tmp, "w", 0o600);
      try {
        await fh.write(data, 0, data.length, 0);
        await fh.datasync();
      } finally {
        await fh.close();
      }
      await rename(tmp, blob.path);
      bytes += data.length;
    }
    const dir = await open(this.dir, "r");
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
    // Only now may readers go to the files: the values leave memory.
    for (const blob of blobs) {
      blob.pending = undefined;
      this.unwritten.delete(blob.hash);
    }
    return bytes;
  }

  /** Deletes blob files (and leftover temporary files) whose hash is not in `live`. */
  async collect(live: Set<string>): Promise<void> {
    for (const name of await readdir(this.dir)) {
      if (live.has(name) || this.unwritten.has(name.replace(/\.tmp$/, ""))) continue;
      await rm(join(this.dir, name), { force: true });
    }
  }

  /** Bytes of every blob file. */
  static async size(storeDir: string): Promise<number> {
    const dir = join(storeDir, BLOB_DIR);
    const names = await readdir(dir).catch(() => [] as string[]);
    let sum = 0;
    for (const n of names) sum += (await stat(join(dir, n)).catch(() => ({ size: 0 }))).size;
    return sum;
  }
}

/** A key-value whose value is read from `blob` each time it is asked for. */
export function blobKeyValue(kv: Omit<KeyValue, "value">, blob: Blob): KeyValue {
  const out = { ...kv } as KeyValue;
  Object.defineProperty(out, "value", { get: () => blob.read(), enumerable: true, configurable: true });
  Object.defineProperty(out, BLOB_OF, { value: blob, enumerable: false });
  return out;
}

/** The blob holding `kv`'s value, if its value is in a blob file. */
export function blobOf(kv: KeyValue): Blob | undefined {
  return (kv as { [BLOB_OF]?: Blob })[BLOB_OF];
}

/**
 * `kv` with its value read now, for gets, ranges and a transaction's reads: what a caller holds
 * stays readable after the key changes and a snapshot deletes the file. (Watch events read their
 * value when asked: their files stay while the event is retained for replays.)
 */
export function withValue(kv: KeyValue): KeyValue {
  const blob = blobOf(kv);
  return blob ? { ...withoutValue(kv), value: blob.read() } : kv;
}

/** `kv`'s fields without its value (read from nowhere). */
export function withoutValue(kv: KeyValue): Omit<KeyValue, "value"> {
  return {
    key: kv.key,
    createRevision: kv.createRevision,
    modRevision: kv.modRevision,
    version: kv.version,
    ...(kv.lease ? { lease: kv.lease } : {}),
  };
}
