/**
 * A {@link Worker} is one piece of long-running work with one way to stop it: `run(signal)` works until the
 * signal aborts, then finishes what it was doing and resolves (controller-runtime's Runnable, with an
 * AbortSignal for the context). Every reconciler, timer and leader-only part of a controller replica is
 * one, so a group can start them all, stop them all and wait for them (worker-group.ts), and a throw
 * that nobody expected fails the replica loudly instead of leaving it half running.
 */

export interface Worker {
  /** For logs: which worker failed or did not stop in time. */
  readonly name: string;
  /** Works until `signal` aborts; resolves once nothing it started is still running. Throws only on a bug. */
  run(signal: AbortSignal): Promise<void>;
}

/** Settles when `signal` aborts (at once if it has). */
export function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

export { sleep } from "../../api";

/**
 * A worker for something that runs by itself once made (a hub of sockets, a server): it does nothing
 * until stopped, then closes it and waits for the close.
 */
export function service(name: string, close: () => void | Promise<void>): Worker {
  return {
    name,
    run: async (signal) => {
      await aborted(signal);
      await close();
    },
  };
}

/** `worker`, then `cleanup` once it has ended (what it used and owns, closed after its last pass). */
export function withCleanup(worker: Worker, cleanup: () => void | Promise<void>): Worker {
  return {
    name: worker.name,
    run: async (signal) => {
      try {
        await worker.run(signal);
      } finally {
        await cleanup();
      }
    },
  };
}
