/** One hook at a time on a machine, across all its units (Juju's machine lock). */
export class MachineLock {
  private tail: Promise<void> = Promise.resolve();
  /** When the current holder took the lock (undefined while free). */
  private since?: number;

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(async () => {
      this.since = Date.now();
      try {
        return await fn();
      } finally {
        this.since = undefined;
      }
    });
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /** How long the current holder has held the lock, in ms (0 while free): the agent's liveness watches it. */
  heldForMs(now = Date.now()): number {
    return this.since === undefined ? 0 : now - this.since;
  }
}
