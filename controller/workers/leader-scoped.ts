/**
 * {@link leaderScoped}: the work only the elected leader does, as one worker whose inner signal is
 * leadership. On election it makes the term's workers from the fenced store (every write carries the
 * leader's fence) and starts them; on deposition it aborts them at once (in the election's callback, before
 * the store can have handed leadership on) and waits for their passes to end before a new term may start.
 * A pass that calls outside the store (a cloud, etcd membership) looks at its signal before each call:
 * fencing guards the store, the signal guards the rest. Stopping the worker stops the campaign too.
 */
import type { Logger } from "../../api";
import type { Store } from "../store";
import type { Worker } from "./worker";
import { WorkerGroup } from "./worker-group";

/** What leaderScoped needs of an election (cluster/leader-election.ts). */
export interface Leadership {
  readonly isLeader: boolean;
  /** The store seen through this term's fence: its writes fail once this replica no longer leads. */
  fenced(): Store;
  /** Calls `listener` on each election and deposition, in the election's own callback; returns the way to stop. */
  watch(listener: (leading: boolean) => void): () => void;
  start(): void;
  /** Steps down (deposing first) and stops campaigning. */
  stop(): Promise<void>;
}

export interface LeaderScopedOptions {
  log: Logger;
  /** How long a term's workers may take to stop. @default DEFAULT_STOP_TIMEOUT_MS */
  stopTimeoutMs?: number;
}

export function leaderScoped(election: Leadership, make: (fenced: Store) => Worker[], o: LeaderScopedOptions): Worker {
  return {
    name: "leader",
    run: async (signal) => {
      let term: { group: WorkerGroup; over: boolean } | undefined;
      let wake = (): void => undefined;
      const changed = (): Promise<void> =>
        new Promise((r) => {
          wake = r;
        });
      // Deposition aborts the term here and now; the loop below then waits for it to drain.
      const unwatch = election.watch((leading) => {
        if (!leading && term) {
          term.over = true;
          void term.group.stop();
        }
        wake();
      });
      const onAbort = (): void => wake();
      signal.addEventListener("abort", onAbort, { once: true });
      election.start();
      try {
        while (!signal.aborted) {
          if (!election.isLeader) {
            await changed();
            continue;
          }
          const group = new WorkerGroup({
            name: "leader term",
            log: o.log,
            ...(o.stopTimeoutMs ? { stopTimeoutMs: o.stopTimeoutMs } : {}),
          });
          term = { group, over: false };
          group.add(...make(election.fenced()));
          group.start();
          // Until deposed or stopped; a worker that fails fails this one (and so the replica).
          while (!term.over && !signal.aborted) await Promise.race([changed(), group.failed]);
          await group.stop();
          term = undefined;
        }
      } finally {
        signal.removeEventListener("abort", onAbort);
        await election.stop();
        await term?.group.stop();
        unwatch();
      }
    },
  };
}
