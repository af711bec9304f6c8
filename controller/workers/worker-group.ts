/**
 * {@link WorkerGroup}: starts workers, stops them and waits for them, and says when one failed
 * (controller-runtime's runnableGroup and the manager's error channel). Workers are added in layers:
 * those added by one `add` stop together, and the layers stop in the reverse order they were added, so
 * what others use (the HTTP server, the hubs) is added first and outlives them.
 */
import { setMaxListeners } from "node:events";
import type { Logger } from "../../api";
import type { Worker } from "./worker";

/** How long one layer may take to stop before the stop goes on without it. */
export const DEFAULT_STOP_TIMEOUT_MS = 10_000;

interface Layer {
  readonly workers: Worker[];
  readonly ctl: AbortController;
  runs: Promise<void>[];
  readonly ended: Set<Worker>;
}

export interface WorkerGroupOptions {
  /** For the group's logs. */
  name: string;
  log: Logger;
  /**
   * How long each layer may take to stop. A pass stuck on a store without quorum must not hold a
   * shutdown for ever; what is left running is logged. @default 10000
   */
  stopTimeoutMs?: number;
}

export class WorkerGroup {
  private readonly layers: Layer[] = [];
  private started = false;
  private stopping?: Promise<void>;
  private fail!: (err: unknown) => void;
  /** Rejects when a worker's `run` throws before it was told to stop (a bug: the owner should fail loudly). */
  readonly failed: Promise<never>;

  constructor(private readonly o: WorkerGroupOptions) {
    this.failed = new Promise<never>((_, reject) => {
      this.fail = reject;
    });
    // Nobody may be listening (a group stopped before anything failed): not an unhandled rejection.
    this.failed.catch(() => undefined);
  }

  /** Adds one layer (started at once if the group runs). */
  add(...workers: Worker[]): void {
    if (this.stopping)
      throw new Error(`worker group ${this.o.name} is stopping: ${workers.map((w) => w.name).join(", ")} not added`);
    const layer: Layer = { workers, ctl: new AbortController(), runs: [], ended: new Set() };
    // Each worker of the layer waits on this one signal, and its pass in flight may too: more than
    // Node's default of ten listeners is no leak for a large layer. Far more still would be one.
    setMaxListeners(2 * workers.length + 10, layer.ctl.signal);
    this.layers.push(layer);
    if (this.started) this.startLayer(layer);
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    for (const layer of this.layers) this.startLayer(layer);
  }

  private startLayer(layer: Layer): void {
    const { signal } = layer.ctl;
    layer.runs = layer.workers.map((w) =>
      Promise.resolve()
        .then(() => w.run(signal))
        .then(
          () => undefined,
          (err: unknown) => {
            if (!signal.aborted)
              this.fail(
                new Error(`worker ${w.name} of ${this.o.name} failed: ${(err as Error)?.message ?? String(err)}`, {
                  cause: err,
                }),
              );
            else this.o.log.warn("a worker failed while stopping", { group: this.o.name, worker: w.name, err });
          },
        )
        .finally(() => layer.ended.add(w)),
    );
  }

  /**
   * Stops every worker, last layer first: aborts a layer's signals (at once, in this call, for the last
   * layer) and waits for its workers to end before the next. Calling it again returns the same promise.
   */
  stop(): Promise<void> {
    return (this.stopping ??= this.stopLayers());
  }

  private async stopLayers(): Promise<void> {
    for (const layer of [...this.layers].reverse()) {
      layer.ctl.abort();
      if (!this.started) continue;
      let timer: NodeJS.Timeout | undefined;
      const limit = this.o.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
      const timedOut = await Promise.race([
        Promise.all(layer.runs).then(() => false),
        new Promise<boolean>((r) => {
          timer = setTimeout(() => r(true), limit);
          timer.unref();
        }),
      ]);
      clearTimeout(timer);
      if (timedOut) {
        const left = layer.workers.filter((w) => !layer.ended.has(w)).map((w) => w.name);
        this.o.log.warn("workers did not stop in time; going on without them", {
          group: this.o.name,
          workers: left.join(","),
          after_ms: limit,
        });
      }
    }
  }
}
