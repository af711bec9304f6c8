/**
 * The store port: etcd's data model, which every backend implements and the conformance suite
 * (test/store-conformance.ts) checks. One global revision counts every write; a transaction
 * compares revisions or values and applies its operations atomically at a new revision; leases
 * expire and take their keys with them; watches replay every event from a revision on.
 */
import { StewardError } from "../../api";

export interface KeyValue {
  key: string;
  value: string;
  /** Revision at which this key was last created (0 when absent). */
  createRevision: number;
  /** Revision of the last write to this key. */
  modRevision: number;
  /** Writes since creation, starting at 1. */
  version: number;
  /** Lease the key is attached to, if any. */
  lease?: string;
}

/** A condition on one key. An absent key has revisions and version 0 and never equals a value. */
export type Compare =
  | { key: string; target: "modRevision" | "createRevision" | "version"; op?: "==" | "!=" | "<" | ">"; value: number }
  | { key: string; target: "value"; op?: "==" | "!="; value: string };

export type Op =
  | { type: "put"; key: string; value: string; lease?: string }
  | { type: "delete"; key: string }
  | { type: "deletePrefix"; prefix: string }
  | { type: "get"; key: string }
  | { type: "range"; prefix: string };

export interface Txn {
  compare?: Compare[];
  success: Op[];
  failure?: Op[];
}

export interface TxnResult {
  succeeded: boolean;
  /** The store revision after the transaction (unchanged when it wrote nothing). */
  revision: number;
  /** One entry per executed op: the key-values read for get/range, the count deleted for deletes, [] for puts. */
  responses: KeyValue[][];
}

export interface WatchEvent {
  type: "put" | "delete";
  kv: KeyValue;
}

export interface WatchOptions {
  /** Replay events from this revision (inclusive). Default: only events after the current revision. */
  fromRevision?: number;
  /** Called once if the watch ends abnormally (e.g. {@link CompactedError}); the watch is then closed. */
  onError?: (err: Error) => void;
}

export interface Watcher {
  close(): void;
}

export interface Lease {
  id: string;
  ttlSeconds: number;
}

/** Per-call options a backend may honour (the embedded store answers at once and ignores them). */
export interface CallOptions {
  /** Give up after this long instead of the backend's default deadline (etcd: 5 s). */
  timeoutMs?: number;
}

export interface Store {
  /** Backend name for logs and status: `embedded`, `etcd`. */
  readonly backend: string;
  get(key: string): Promise<KeyValue | undefined>;
  /** Every key starting with `prefix`, sorted by key, with the revision the read saw. */
  range(prefix: string): Promise<{ kvs: KeyValue[]; revision: number }>;
  txn(txn: Txn, opts?: CallOptions): Promise<TxnResult>;
  /** Blind write; domain code should prefer {@link Store.txn} with a compare. */
  put(key: string, value: string, opts?: { lease?: string }): Promise<number>;
  delete(key: string): Promise<number>;
  grantLease(ttlSeconds: number, opts?: CallOptions): Promise<Lease>;
  /** Resets the lease's time to live; throws {@link LeaseNotFoundError} when it already expired. */
  keepAlive(leaseId: string): Promise<void>;
  revokeLease(leaseId: string): Promise<void>;
  /** Events for keys under `prefix`, delivered in revision order, grouped per revision. */
  watch(prefix: string, listener: (events: WatchEvent[], revision: number) => void, opts?: WatchOptions): Watcher;
  /** Forgets history before `revision`; watches from earlier revisions then fail with {@link CompactedError}. */
  compact(revision: number): Promise<void>;
  currentRevision(): Promise<number>;
  close(): Promise<void>;
}

/** Thrown to a watch asked to replay from history that was compacted away: re-read, then watch again. */
export class CompactedError extends StewardError {
  constructor(
    public readonly requested: number,
    public readonly compactRevision: number,
  ) {
    super(
      "conflict",
      `revision ${requested} was compacted (history starts at ${compactRevision}); read again and watch from the new revision`,
      { retryable: true, details: { requested, compactRevision } },
    );
    this.name = "CompactedError";
  }
}

export class LeaseNotFoundError extends StewardError {
  constructor(public readonly leaseId: string) {
    super("not-found", `lease ${leaseId} not found (expired or revoked)`, {
      details: { kind: "lease", name: leaseId },
    });
    this.name = "LeaseNotFoundError";
  }
}

/**
 * A value over the store's size limit. Its message names the store key, which means nothing to a
 * user: callers translate it into the field the user sent (StoreTxns.sized), and the HTTP layer
 * never passes the key on.
 */
export class ValueTooLargeError extends StewardError {
  constructor(
    public readonly key: string,
    public readonly bytes: number,
    public readonly limit: number,
  ) {
    super("invalid-request", `value for ${key} is ${bytes} bytes; the store takes at most ${limit}`, {
      details: { bytes, limit },
    });
    this.name = "ValueTooLargeError";
  }
}

export class StoreClosedError extends StewardError {
  constructor(backend: string) {
    super("unavailable", `the ${backend} store is closed`);
    this.name = "StoreClosedError";
  }
}

/** True when `kv` (undefined when absent) satisfies `c`. Shared by backends that evaluate compares themselves. */
export function compareHolds(c: Compare, kv: KeyValue | undefined): boolean {
  const op = c.op ?? "==";
  if (c.target === "value") {
    if (!kv) return op === "!=";
    return op === "==" ? kv.value === c.value : kv.value !== c.value;
  }
  const actual = kv ? kv[c.target] : 0;
  switch (op) {
    case "==":
      return actual === c.value;
    case "!=":
      return actual !== c.value;
    case "<":
      return actual < c.value;
    case ">":
      return actual > c.value;
  }
}

/** A compare that holds only when `key` does not exist. */
export function absent(key: string): Compare {
  return { key, target: "createRevision", value: 0 };
}

/** A compare that holds only when `key` is unchanged since it was read at `modRevision` (0: still absent). */
export function unchanged(key: string, modRevision: number): Compare {
  return { key, target: "modRevision", value: modRevision };
}
