/**
 * Runs an async job one at a time: a kick while it runs makes it run once more afterwards, however
 * many kicks came. For reconcile loops driven by a stream of change notifications.
 */
export class CoalescedRunner {
  private running = false;
  private again = false;
  private stopped = false;
  private current: Promise<void> = Promise.resolve();

  constructor(private readonly job: () => Promise<void>, private readonly onError: (err: unknown) => void) {}

  kick(): void {
    if (this.stopped) return;
    if (this.running) { this.again = true; return; }
    this.running = true;
    this.current = this.job()
      .catch((err: unknown) => this.onError(err))
      .finally(() => {
        this.running = false;
        if (this.again) { this.again = false; this.kick(); }
      });
  }

  stop(): void { this.stopped = true; }

  /** Settles once no job runs: after stop(), what a caller awaits so that no pass still writes. */
  async idle(): Promise<void> {
    while (this.running) await this.current;
  }
}
