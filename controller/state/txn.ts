/**
 * The transaction helpers every domain operation uses: reads typed by document kind (doc-kinds.ts),
 * compare-and-swap with retry, and values sized for the store.
 */
import { StewardError } from "../../api";
import type { Compare, Op, Store } from "../store";
import { MAX_VALUE_BYTES, ValueTooLargeError, absent } from "../store";
import { currentRequest } from "./request-records";
import type { DocKind, Read } from "./doc-kinds";
import { readDoc, readDocs } from "./doc-kinds";

export type { Read } from "./doc-kinds";
const MAX_ATTEMPTS = 50;

export class StoreTxns {
  constructor(
    protected readonly store: Store,
    protected readonly now: () => Date = () => new Date(),
  ) {}

  protected stamp(): string {
    return this.now().toISOString();
  }

  /** The document of kind `d` with id `id`, typed by its kind and in its current shape. */
  protected get<A extends unknown[], T>(d: DocKind<A, T, never>, ...id: A): Promise<Read<T> | undefined> {
    return readDoc(this.store, d, ...id);
  }

  /** Every document of kind `d` under its prefix for `within` (say a model, or a model and an application). */
  protected getAll<P extends unknown[], T>(
    d: DocKind<never, T, P>,
    ...within: P
  ): Promise<(Read<T> & { key: string })[]> {
    return readDocs(this.store, d, ...within);
  }

  /** A read by raw key, for kinds not bound in doc-kinds.ts; prefer {@link get}. */
  protected async read<T>(key: string): Promise<Read<T> | undefined> {
    const kv = await this.store.get(key);
    return kv ? { doc: JSON.parse(kv.value) as T, rev: kv.modRevision } : undefined;
  }

  /** A range read by raw prefix, for kinds not bound in doc-kinds.ts; prefer {@link getAll}. */
  protected async readAll<T>(prefix: string): Promise<(Read<T> & { key: string })[]> {
    return (await this.store.range(prefix)).kvs.map((kv) => ({
      key: kv.key,
      doc: JSON.parse(kv.value) as T,
      rev: kv.modRevision,
    }));
  }

  /**
   * Runs `write`, reporting a value over the store's size limit as the user's `field` being too
   * large (with `hint` on how to shrink it) instead of naming an internal store key.
   */
  protected async sized<T>(field: string, hint: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (err instanceof ValueTooLargeError) throw tooLarge(field, hint, err.bytes);
      throw err;
    }
  }

  /** Refuses `value` before anything is written when the store could not hold it (see {@link sized}). */
  protected checkStorable(field: string, hint: string, value: string): void {
    const bytes = Buffer.byteLength(value);
    if (bytes > MAX_VALUE_BYTES) throw tooLarge(field, hint, bytes);
  }

  /**
   * Runs `attempt` until its transaction's compares hold; `attempt` throws to refuse. Within a
   * request that carries an id, the write also records its result, and a retry of that request
   * gets the recorded result back instead of writing again (see request-records.ts). `result`
   * must then be plain JSON and hold no secret: `secretResult` opts out (a retry writes again).
   */
  protected async retry<T>(
    what: string,
    attempt: () => Promise<{ compare: Compare[]; ops: Op[]; result: T }>,
    opts: { secretResult?: boolean } = {},
  ): Promise<T & { revision: number }> {
    const step = opts.secretResult ? undefined : currentRequest()?.nextStep();
    for (let i = 0; i < MAX_ATTEMPTS; i++) {
      const done = await step?.recorded(this.store);
      if (done) return done as T & { revision: number };
      let built: { compare: Compare[]; ops: Op[]; result: T };
      try {
        built = await attempt();
      } catch (err) {
        // Refused because an earlier try of this very request already made the change.
        const earlier = await step?.recorded(this.store);
        if (earlier) return earlier as T & { revision: number };
        throw err;
      }
      const { compare, ops, result } = built;
      const res = step
        ? await this.store.txn({ compare: [...compare, absent(step.key)], success: [...ops, step.record(result)] })
        : await this.store.txn({ compare, success: ops });
      if (res.succeeded) return { ...result, revision: res.revision };
    }
    throw new StewardError("conflict", `${what}: too much concurrent change, try again`, { retryable: true });
  }
}

function tooLarge(field: string, hint: string, bytes: number): StewardError {
  return new StewardError(
    "invalid-request",
    `${field} is too large: ${bytes} bytes once stored, at most ${MAX_VALUE_BYTES}; ${hint}`,
    { details: { field, bytes, limit: MAX_VALUE_BYTES } },
  );
}
