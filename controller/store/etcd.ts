/**
 * The etcd backend (etcd 3.4, through the `etcd3` client's raw RPCs). What it avoids or works
 * around in that client:
 *
 * - no STM: every transaction is an explicit compare/then/else, built here;
 * - a watch asked for compacted history is cancelled by etcd with an empty message: it is reported
 *   as {@link CompactedError} so the caller re-reads, and its `cancel()` (which never resolves) is
 *   not awaited;
 * - keep-alives are explicit (one request per call), so an expired lease is an error at once rather
 *   than a `lost` event two TTLs later;
 * - reads of many keys (ranges, and transactions that only read, such as the state cache's load on
 *   a replica's start) go in pages at one pinned revision: one consistent snapshot, however large
 *   the keyspace, without a response that outgrows the client's message limit.
 *
 * All keys live under `prefix` (one etcd can hold several controllers' data, and tests share one).
 */
import { noop } from "cockatiel";
import { Etcd3 } from "etcd3";
import type { IKeyValue } from "etcd3";
import { StewardError, invalidRequest } from "../../api";
import type {
  CallOptions,
  Compare,
  KeyValue,
  Lease,
  Op,
  Store,
  Txn,
  TxnResult,
  WatchEvent,
  WatchOptions,
  Watcher,
} from "./store";
import { CompactedError, LeaseNotFoundError, StoreClosedError, ValueTooLargeError } from "./store";
import { MAX_VALUE_BYTES } from "./embedded";

export interface EtcdStoreOptions {
  /** Client URLs of the members, e.g. `http://127.0.0.1:2379` (https with `tls`). */
  endpoints: string[];
  /**
   * Prefix of every key this store uses.
   * @default ""
   */
  prefix?: string;
  tls?: { caCert: string; cert: string; key: string };
  /** @default 5000 */
  requestTimeoutMs?: number;
  /**
   * Keys per page of a large read. 2,000 keeps a page under the client's limit even if every
   * key were a full 64 KiB relation databag; `npm run bench -- etcd-snapshot` has the cost
   * (100,000 keys: 1.0 s in pages of 2,000, 0.67 s in pages of 10,000, 0.62 s in one response).
   * @default 2000
   */
  readPageKeys?: number;
}

const enum Result {
  Equal = 0,
  Greater = 1,
  Less = 2,
  NotEqual = 3,
}
const enum Target {
  Version = 0,
  Create = 1,
  Mod = 2,
  Value = 3,
}

/** The smallest key greater than every key that starts with `prefix` (etcd's range_end for a prefix). */
function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

type ReadOp = Extract<Op, { type: "range" | "get" }>;
const isRead = (op: Op): op is ReadOp => op.type === "range" || op.type === "get";

/** One etcd member as the cluster lists it. `name` is empty until a newly added member starts. */
export interface EtcdMemberInfo {
  id: string;
  name: string;
  peerUrls: string[];
  clientUrls: string[];
  learner: boolean;
}

/** Cluster membership through the connected member (etcd 3.4's Cluster API). */
export interface EtcdMembership {
  list(): Promise<EtcdMemberInfo[]>;
  /** Adds a non-voting learner; returns it and the membership the new member must start with. */
  addLearner(peerUrl: string): Promise<{ member: EtcdMemberInfo; members: EtcdMemberInfo[] }>;
  remove(id: string): Promise<void>;
  /** Refused by etcd until the learner has caught up with the leader. */
  promote(id: string): Promise<void>;
  /** Replaces a member's peer URLs (its host's address changed). */
  updatePeerUrls(id: string, peerUrls: string[]): Promise<void>;
  /** The raft leader the connected member sees (`0`: none) and its raft term (which grows with each election). */
  status(): Promise<{ leaderId: string; raftTerm: number }>;
  /** Asks the raft leader (which must be the connected member) to hand leadership to member `id`. */
  moveLeader(id: string, opts?: CallOptions): Promise<void>;
}

/** gRPC failures that mean "etcd did not answer" (no leader, no quorum, unreachable) rather than a bug. */
const UNAVAILABLE =
  /circuit breaker|deadline|unavailable|no leader|timed out|timeout|connect|ECONNREFUSED|leader changed|not supported for learner|too many requests/i;

export class EtcdStore implements Store {
  readonly backend = "etcd";
  private closed = false;
  private readonly prefix: string;
  /** Newest revision any answer has shown this client: a watch without a start revision starts after it. */
  private seen = 0;

  protected constructor(
    private readonly client: Etcd3,
    private readonly o: EtcdStoreOptions,
  ) {
    this.prefix = o.prefix ?? "";
  }

  /** Connects and checks the cluster answers (a linearizable read). */
  static async connect(o: EtcdStoreOptions): Promise<EtcdStore> {
    const client = new Etcd3({
      hosts: o.endpoints,
      dialTimeout: 3000,
      ...(o.tls
        ? {
            credentials: {
              rootCertificate: Buffer.from(o.tls.caCert),
              certChain: Buffer.from(o.tls.cert),
              privateKey: Buffer.from(o.tls.key),
            },
          }
        : {}),
      // A replica's first read of the keyspace can pass gRPC's 4 MiB default (a replacement
      // replica failed to start on a 9.4 MB answer); requests stay under etcd's 1.5 MiB limit.
      grpcOptions: {
        "grpc.keepalive_time_ms": 10_000,
        "grpc.keepalive_timeout_ms": 5_000,
        "grpc.max_receive_message_length": 256 * 1024 * 1024,
      },
      // No client-side retries or circuit breaker: callers decide (every write is a conditional
      // transaction), and a breaker left open would keep refusing for a while after quorum returns.
      faultHandling: { host: () => noop, global: noop },
    });
    const store = new EtcdStore(client, o);
    try {
      await store.currentRevision();
    } catch (err) {
      client.close();
      throw new StewardError(
        "unavailable",
        `cannot reach etcd at ${o.endpoints.join(", ")}: ${(err as Error).message}`,
        { cause: err, reason: "store-unreachable" },
      );
    }
    return store;
  }

  private saw(revision: string | number): number {
    const r = Number(revision);
    if (r > this.seen) this.seen = r;
    return r;
  }

  /** Membership operations, for the quorum keeper and status. */
  membership(): EtcdMembership {
    const member = (m: {
      ID: string;
      name: string;
      peerURLs: string[];
      clientURLs: string[];
      isLearner?: boolean;
    }): EtcdMemberInfo => ({
      id: String(m.ID),
      name: m.name,
      peerUrls: m.peerURLs,
      clientUrls: m.clientURLs,
      learner: m.isLearner === true,
    });
    const cluster = this.client.cluster;
    const call = <T>(what: string, fn: () => Promise<T>): Promise<T> => {
      this.check();
      return this.rpc(what, fn);
    };
    return {
      list: () => call("listing members", async () => (await cluster.memberList({}, this.opts())).members.map(member)),
      addLearner: (peerUrl) =>
        call("adding a member", async () => {
          const res = await cluster.memberAdd({ peerURLs: [peerUrl], isLearner: true }, this.opts());
          return { member: member(res.member), members: res.members.map(member) };
        }),
      remove: (id) =>
        call("removing a member", async () => {
          await cluster.memberRemove({ ID: id }, this.opts());
        }),
      promote: (id) =>
        call("promoting a member", async () => {
          await cluster.memberPromote({ ID: id }, this.opts());
        }),
      updatePeerUrls: (id, peerURLs) =>
        call("updating a member's peer URLs", async () => {
          await cluster.memberUpdate({ ID: id, peerURLs }, this.opts());
        }),
      moveLeader: (id, opts) =>
        call("moving the etcd leader", async () => {
          await this.client.maintenance.moveLeader({ targetID: id }, this.opts(opts));
        }),
      status: () =>
        call("reading member status", async () => {
          const st = await this.client.maintenance.status(this.opts());
          return { leaderId: String(st.leader), raftTerm: Number(st.raftTerm) };
        }),
    };
  }

  private async rpc<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw this.storeError(err, what);
    }
  }

  /** etcd's refusals stay as they are; "did not answer" becomes a retryable `unavailable`. */
  private storeError(err: unknown, what: string): unknown {
    const message = (err as Error)?.message ?? String(err);
    if (StewardError.isInstance(err) || !UNAVAILABLE.test(message)) return err;
    return new StewardError(
      "unavailable",
      `the controller's store (etcd) did not answer ${what}: ${message}. A majority of controller replicas must be up for the controller to work`,
      { reason: "store-unreachable", cause: err },
    );
  }

  private opts(call: CallOptions = {}): { deadline: Date } {
    return { deadline: new Date(Date.now() + (call.timeoutMs ?? this.o.requestTimeoutMs ?? 5000)) };
  }
  private k(key: string): Buffer {
    return Buffer.from(this.prefix + key);
  }
  private check(): void {
    if (this.closed) throw new StoreClosedError(this.backend);
  }

  private kv(raw: IKeyValue): KeyValue {
    const kv: KeyValue = {
      key: raw.key.toString().slice(this.prefix.length),
      value: raw.value.toString(),
      createRevision: Number(raw.create_revision),
      modRevision: Number(raw.mod_revision),
      version: Number(raw.version),
    };
    if (raw.lease && raw.lease !== "0") kv.lease = String(raw.lease);
    return kv;
  }

  async get(key: string): Promise<KeyValue | undefined> {
    this.check();
    const res = await this.rpc("a read", () => this.client.kv.range({ key: this.k(key) }, this.opts()));
    return res.kvs[0] ? this.kv(res.kvs[0]) : undefined;
  }

  async range(prefix: string): Promise<{ kvs: KeyValue[]; revision: number }> {
    this.check();
    const key = this.k(prefix);
    return this.pagedRange(key, prefixEnd(key));
  }

  /**
   * Every key in [key, end) as of `revision` (default: the revision the first page sees), read
   * page by page. Later pages ask for the same revision, so writes landing meanwhile do not show;
   * auto-compaction keeps an hour of history, far longer than any read takes.
   */
  private async pagedRange(
    key: Buffer,
    end: Buffer | undefined,
    revision?: number,
  ): Promise<{ kvs: KeyValue[]; revision: number }> {
    const limit = this.o.readPageKeys ?? 2000;
    const kvs: KeyValue[] = [];
    let from = key;
    let rev = revision;
    for (;;) {
      const page = await this.rpc("a read", () =>
        this.client.kv.range(
          { key: from, ...(end ? { range_end: end, limit } : {}), ...(rev ? { revision: rev } : {}) },
          this.opts(),
        ),
      );
      rev ??= this.saw(page.header.revision);
      for (const kv of page.kvs) kvs.push(this.kv(kv));
      if (!page.more || page.kvs.length === 0) return { kvs, revision: rev };
      from = Buffer.concat([page.kvs[page.kvs.length - 1]!.key, Buffer.from([0])]);
    }
  }

  /** A transaction that only reads, as one snapshot read in pages (see {@link pagedRange}). */
  private async snapshot(ops: ReadOp[]): Promise<TxnResult> {
    let revision: number | undefined;
    const responses: KeyValue[][] = [];
    for (const op of ops) {
      const key = this.k(op.type === "range" ? op.prefix : op.key);
      const res = await this.pagedRange(key, op.type === "range" ? prefixEnd(key) : undefined, revision);
      revision ??= res.revision;
      responses.push(res.kvs);
    }
    return { succeeded: true, revision: revision ?? (await this.currentRevision()), responses };
  }

  async txn(t: Txn, call?: CallOptions): Promise<TxnResult> {
    this.check();
    for (const ops of [t.success, t.failure ?? []]) {
      const written = new Set<string>();
      for (const op of ops) {
        if (op.type !== "put" && op.type !== "delete") continue;
        if (written.has(op.key)) throw invalidRequest(`key ${op.key} is written twice in one transaction`);
        written.add(op.key);
        if (op.type === "put" && Buffer.byteLength(op.value) > MAX_VALUE_BYTES)
          throw new ValueTooLargeError(op.key, Buffer.byteLength(op.value), MAX_VALUE_BYTES);
      }
    }
    if (!t.compare?.length && !t.failure?.length && t.success.every(isRead)) return this.snapshot(t.success);
    try {
      const res = await this.client.kv.txn(
        {
          compare: (t.compare ?? []).map((c) => this.compare(c)),
          success: t.success.map((op) => this.op(op)),
          failure: (t.failure ?? []).map((op) => this.op(op)),
        },
        this.opts(call),
      );
      const responses: KeyValue[][] = res.responses.map((r) => {
        if (r.response_range) return r.response_range.kvs.map((kv) => this.kv(kv));
        if (r.response_delete_range) return (r.response_delete_range.prev_kvs ?? []).map((kv) => this.kv(kv));
        return [];
      });
      return { succeeded: res.succeeded, revision: this.saw(res.header.revision), responses };
    } catch (err) {
      const message = (err as Error).message ?? "";
      if (/requested lease not found/.test(message)) {
        const put = t.success.find((op) => op.type === "put" && op.lease);
        throw new LeaseNotFoundError(put && put.type === "put" ? put.lease! : "?");
      }
      if (/duplicate key/.test(message)) throw invalidRequest("a key is written twice in one transaction");
      throw this.storeError(err, "a write");
    }
  }

  private compare(c: Compare): object {
    const op = c.op ?? "==";
    const result =
      op === "==" ? Result.Equal : op === "!=" ? Result.NotEqual : op === "<" ? Result.Less : Result.Greater;
    const key = this.k(c.key);
    switch (c.target) {
      case "value":
        return { key, result, target: Target.Value, value: Buffer.from(c.value) };
      case "version":
        return { key, result, target: Target.Version, version: String(c.value) };
      case "createRevision":
        return { key, result, target: Target.Create, create_revision: String(c.value) };
      case "modRevision":
        return { key, result, target: Target.Mod, mod_revision: String(c.value) };
    }
  }

  private op(op: Op): object {
    switch (op.type) {
      case "get":
        return { request_range: { key: this.k(op.key) } };
      case "range": {
        const key = this.k(op.prefix);
        return { request_range: { key, range_end: prefixEnd(key) } };
      }
      case "put":
        return {
          request_put: { key: this.k(op.key), value: Buffer.from(op.value), ...(op.lease ? { lease: op.lease } : {}) },
        };
      case "delete":
        return { request_delete_range: { key: this.k(op.key), prev_kv: true } };
      case "deletePrefix": {
        const key = this.k(op.prefix);
        return { request_delete_range: { key, range_end: prefixEnd(key), prev_kv: true } };
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

  async grantLease(ttlSeconds: number, call?: CallOptions): Promise<Lease> {
    this.check();
    if (!(ttlSeconds >= 1)) throw invalidRequest("lease TTL must be at least 1 second");
    const res = await this.rpc("a lease grant", () =>
      this.client.leaseClient.leaseGrant({ TTL: ttlSeconds }, this.opts(call)),
    );
    return { id: String(res.ID), ttlSeconds: Number(res.TTL) };
  }

  async keepAlive(leaseId: string): Promise<void> {
    this.check();
    const stream = await this.client.leaseClient.leaseKeepAlive();
    try {
      const answer = new Promise<{ TTL: string }>((resolve, reject) => {
        stream.on("data", resolve);
        stream.on("error", reject);
        setTimeout(
          () => reject(new StewardError("deadline-exceeded", "etcd did not answer a lease keep-alive in time")),
          this.o.requestTimeoutMs ?? 5000,
        ).unref();
      });
      stream.write({ ID: leaseId });
      const res = await answer;
      if (Number(res.TTL) <= 0) throw new LeaseNotFoundError(leaseId);
    } finally {
      stream.end();
    }
  }

  async revokeLease(leaseId: string): Promise<void> {
    this.check();
    try {
      await this.client.leaseClient.leaseRevoke({ ID: leaseId }, this.opts());
    } catch (err) {
      if (!/requested lease not found/.test((err as Error).message ?? "")) throw err;
    }
  }

  watch(prefix: string, listener: (events: WatchEvent[], revision: number) => void, opts: WatchOptions = {}): Watcher {
    this.check();
    let closed = false;
    // etcd creates the watch asynchronously; starting after the newest revision seen keeps
    // "events after now" exact for anything this client wrote before calling watch().
    let nextRev = opts.fromRevision ?? this.seen + 1;
    const fail = (err: Error): void => {
      if (!closed) {
        closed = true;
        opts.onError?.(err);
      }
    };
    const builder = this.client.watch().prefix(this.prefix + prefix);
    const pending = builder.startRevision(String(nextRev)).create();
    let watcher: Awaited<typeof pending> | undefined;
    pending.then(
      (w) => {
        watcher = w;
        if (closed) {
          void w.cancel().catch(() => undefined);
          return;
        }
        w.on("data", (res) => {
          if (closed) return;
          // One response may hold several revisions: deliver them one revision at a time, in order.
          const byRev = new Map<number, WatchEvent[]>();
          for (const e of res.events) {
            const kv = this.kv(e.kv);
            const list = byRev.get(kv.modRevision) ?? [];
            list.push({ type: e.type === "Delete" ? "delete" : "put", kv });
            byRev.set(kv.modRevision, list);
          }
          for (const [rev, events] of [...byRev].sort(([a], [b]) => a - b)) {
            nextRev = rev + 1;
            try {
              listener(events, rev);
            } catch (err) {
              process.emitWarning(`store watch listener threw: ${(err as Error).message}`);
            }
          }
        });
        w.on("error", (err: Error) => {
          // etcd cancels a watch below the compaction revision with an empty reason (etcd3 1.1.2).
          fail(/canceled|compacted/i.test(err.message) ? new CompactedError(nextRev, 0) : err);
          w.removeAllListeners();
        });
      },
      (err: Error) => fail(/canceled|compacted/i.test(err.message) ? new CompactedError(nextRev, 0) : err),
    );
    return {
      close: () => {
        closed = true;
        // Not awaited: cancel() on a watcher etcd already cancelled never resolves.
        if (watcher) {
          watcher.removeAllListeners();
          void watcher.cancel().catch(() => undefined);
        }
      },
    };
  }

  async compact(revision: number): Promise<void> {
    this.check();
    try {
      await this.client.kv.compact({ revision: String(revision), physical: true }, this.opts());
    } catch (err) {
      if (/required revision has been compacted/.test((err as Error).message ?? "")) return;
      throw err;
    }
  }

  async currentRevision(): Promise<number> {
    this.check();
    const res = await this.rpc("a read", () =>
      this.client.kv.range({ key: this.k("\0"), count_only: true }, this.opts()),
    );
    return this.saw(res.header.revision);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.client.close();
  }
}
