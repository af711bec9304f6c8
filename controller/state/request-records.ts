/**
 * Idempotent requests. A client keeps one request id across its retries of a mutating request
 * (another replica, after a timeout or a 503); the controller remembers, in the store, what each
 * id already did, so a retry gets the original answer instead of "already exists" or a second
 * copy of what it added.
 *
 * Two records per id, both under {@link REQUESTS_PREFIX}:
 * - `steps/<n>`: written in the same transaction as the request's n-th domain write, with that
 *   write's result. It survives the replica dying (or the store answering late) between the
 *   commit and the answer: a retry re-runs the handler, which gets each recorded step's result
 *   back instead of writing again, and so builds the same answer.
 * - `response`: the answer itself, written before it is sent; a retry gets it as it was.
 *
 * Records are kept {@link REQUEST_RECORD_TTL_MS} and then swept by the leader.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Op, Store } from "../store";
import { keys } from "./keys";

export const REQUESTS_PREFIX = keys.requestsPrefix;
/** How long a request id is remembered: far longer than any client retries. */
export const REQUEST_RECORD_TTL_MS = 10 * 60 * 1000;

/** A request's answer as kept for a retry (`response`): who asked what, and what was answered. */
export interface ResponseRecordDoc {
  at: number;
  who: string;
  method: string;
  path: string;
  status: number;
  body: string;
}

export const requestKeys = {
  step: (id: string, n: number): string => `${REQUESTS_PREFIX}${id}/steps/${n}`,
  response: (id: string): string => `${REQUESTS_PREFIX}${id}/response`,
};

/** One domain write of a request: its record key, and how to read back a result recorded earlier. */
export interface RequestStep {
  readonly key: string;
  /** The op that records `result` with the write. */
  record(result: unknown): Op;
  /** The result this step recorded on an earlier try, with that write's revision; undefined if none. */
  recorded(store: Store): Promise<(Record<string, unknown> & { revision: number }) | undefined>;
}

/** The request being served, while its handler runs. */
export class RequestScope {
  private steps = 0;
  /** Set once the answer is on its way: later writes (background work it started) are not the request's. */
  closed = false;

  constructor(readonly id: string) {}

  nextStep(): RequestStep | undefined {
    if (this.closed) return undefined;
    const key = requestKeys.step(this.id, this.steps++);
    return {
      key,
      record: (result) => ({ type: "put", key, value: JSON.stringify({ at: Date.now(), result }) }),
      async recorded(store) {
        const kv = await store.get(key);
        if (!kv) return undefined;
        const { result } = JSON.parse(kv.value) as { result: Record<string, unknown> };
        return { ...result, revision: kv.modRevision };
      },
    };
  }
}

const scopes = new AsyncLocalStorage<RequestScope>();

/** Runs `fn` (and everything it starts) as part of request `scope`. */
export function runInRequest<T>(scope: RequestScope, fn: () => T): T {
  return scopes.run(scope, fn);
}

/**
 * Runs `fn` (and everything it starts) outside any request: for requests without an id, and for
 * long-lived work a request sets off (a restart of the controller must not serve every later
 * request as part of the one that asked for it).
 */
export function outsideRequest<T>(fn: () => T): T {
  return scopes.exit(fn);
}

/** The request whose handler is running now, if it carries an id. */
export function currentRequest(): RequestScope | undefined {
  return scopes.getStore();
}

/** Deletes request records older than the TTL; returns how many keys went. */
export async function sweepRequestRecords(store: Store, now = Date.now()): Promise<number> {
  const { kvs } = await store.range(REQUESTS_PREFIX);
  const old = kvs.filter((kv) => {
    try {
      return now - (JSON.parse(kv.value) as { at: number }).at > REQUEST_RECORD_TTL_MS;
    } catch {
      return true;
    }
  });
  for (let i = 0; i < old.length; i += 500) {
    await store.txn({ success: old.slice(i, i + 500).map((kv) => ({ type: "delete" as const, key: kv.key })) });
  }
  return old.length;
}
