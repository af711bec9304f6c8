/**
 * The fake API server's controllers' work queue, after client-go's workqueue: a key enqueued
 * while already waiting is synced once; keys are synced in a later turn of the event loop, one at
 * a time; a sync that throws is retried after 50 ms (a conflict, a name still taken by a
 * terminating pod); an unexpected error is also printed, named for `owner`.
 */
import { KubeStatusError } from "./status";

export class WorkQueue {
  private readonly queue = new Set<string>();
  private running = false;
  private stopped = false;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly owner: string,
    private readonly sync: (key: string) => void,
  ) {}

  add(key: string, afterMs = 0): void {
    if (this.stopped) return;
    if (afterMs > 0) {
      const t = setTimeout(() => {
        this.timers.delete(t);
        this.add(key);
      }, afterMs);
      this.timers.add(t);
      return;
    }
    this.queue.add(key);
    if (!this.running) {
      this.running = true;
      setImmediate(() => this.drain());
    }
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
  }

  private drain(): void {
    while (this.queue.size && !this.stopped) {
      const key = this.queue.values().next().value!;
      this.queue.delete(key);
      try {
        this.sync(key);
      } catch (err) {
        if (!(err instanceof KubeStatusError))
          console.error(`${this.owner}: ${key}: ${(err as Error).stack ?? String(err)}`);
        this.add(key, 50);
      }
    }
    this.running = false;
  }
}
