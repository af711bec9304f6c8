/**
 * {@link Reconciler}: the loop every leader-side provisioner, the cleaner and the periodic sweeps share.
 * A pass runs when the state cache changes in a way that matters (its {@link Reconciler.signature} moved),
 * at least every `pollMs`, and one at a time: kicks during a pass make one more pass after it, however
 * many came. Stopping waits for the pass in flight, so no pass still writes (or starts an agent, or
 * calls a cloud) once `run` has resolved. This was copied six times, each `close()` returning while
 * a pass went on writing.
 */
import type { Logger } from "../../api";
import type { StateCache } from "../state";
import type { Worker } from "./worker";
import { aborted } from "./worker";

export interface ReconcilerOptions {
  /** Changes to it kick a pass (when the signature moved). Absent: only the timer kicks. */
  cache?: StateCache;
  log: Logger;
  /** A pass at least this often, in ms (also what finds what the cache cannot show: a dead process). Absent: none. */
  pollMs?: number;
  /** What the log says when a pass throws (the next kick retries). */
  failure: string;
  /** @default "error" */
  failureLevel?: "warn" | "error";
  /** Whether a pass runs as soon as the worker starts, or only at the first kick. @default true */
  immediately?: boolean;
}

export abstract class Reconciler implements Worker {
  abstract readonly name: string;
  // ECMAScript private: subclasses keep their own names (a provisioner's `seen`, `running`).
  readonly #kit: ReconcilerOptions;
  #signal?: AbortSignal;
  #running?: Promise<void>;
  #again = false;
  /** The signature the last pass began with. */
  #seen: string | undefined;

  constructor(kit: ReconcilerOptions) {
    this.#kit = kit;
  }

  /** What decides a pass (status chatter should leave it unchanged). Undefined: every cache change kicks. */
  protected signature(): string | undefined {
    return undefined;
  }

  /** One pass. `signal` aborts when the worker is stopped: a pass looks at it between slow steps. */
  protected abstract reconcile(signal: AbortSignal): Promise<void>;

  /** Called on each timer tick before its kick (what only the timer makes due). */
  protected polled(): void {}

  /** Whether the worker is stopping (or stopped): for a pass's inner loops. */
  protected get stopped(): boolean {
    return this.#signal?.aborted ?? true;
  }

  /** Asks for a pass: now if none runs, else once more after the current one. */
  protected kick(): void {
    const signal = this.#signal;
    if (!signal || signal.aborted) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#seen = this.signature();
    this.#running = this.reconcile(signal)
      .catch((err: unknown) => {
        // Ended by the stop (its reason thrown by a check): nothing went wrong.
        if (signal.aborted && err === signal.reason) return;
        this.#kit.log[this.#kit.failureLevel ?? "error"](this.#kit.failure, { err });
      })
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.kick();
        }
      });
  }

  async run(signal: AbortSignal): Promise<void> {
    this.#signal = signal;
    const unsubscribe = this.#kit.cache?.subscribe(() => {
      const now = this.signature();
      if (now === undefined || now !== this.#seen) this.kick();
    });
    const timer = this.#kit.pollMs
      ? setInterval(() => {
          this.polled();
          this.kick();
        }, this.#kit.pollMs)
      : undefined;
    timer?.unref();
    if (this.#kit.immediately ?? true) this.kick();
    await aborted(signal);
    unsubscribe?.();
    clearInterval(timer);
    // Drain: the pass in flight ends before the worker counts as stopped.
    while (this.#running) await this.#running;
  }
}

/** A worker that runs `pass` every `everyMs` (the first after one interval, or at once if `immediately`), one at a time. */
export function periodic(
  name: string,
  everyMs: number,
  pass: (signal: AbortSignal) => Promise<unknown>,
  o: { log: Logger; failure: string; failureLevel?: "warn" | "error"; immediately?: boolean },
): Worker {
  return new (class extends Reconciler {
    readonly name = name;
    protected async reconcile(signal: AbortSignal): Promise<void> {
      await pass(signal);
    }
  })({ ...o, pollMs: everyMs, immediately: o.immediately ?? false });
}
