/**
 * Sends unit status to the controller. Reports are merged per unit and retried after a reconnect,
 * so a status set while the controller is unreachable still arrives, and only the newest counts.
 */
import type { Logger, UnitStatusReport } from "../api/core";
import type { ControllerConnection } from "./connection";

type Partial_ = Omit<UnitStatusReport, "unit">;

export class StatusReporter {
  private readonly pending = new Map<string, Partial_>();
  private readonly waiters = new Map<string, { resolve: () => void; reject: (e: unknown) => void }[]>();
  private flushing = false;

  constructor(
    private readonly conn: ControllerConnection,
    private readonly log: Logger,
  ) {}

  /** Queues a report; resolves once the controller has recorded it. */
  report(unit: string, r: Partial_): Promise<void> {
    this.pending.set(unit, { ...this.pending.get(unit), ...r });
    const p = new Promise<void>((resolve, reject) => {
      const list = this.waiters.get(unit) ?? [];
      list.push({ resolve, reject });
      this.waiters.set(unit, list);
    });
    this.flush();
    return p;
  }

  /** Queues a report nobody waits for (errors are logged; it is retried after a reconnect). */
  post(unit: string, r: Partial_): void {
    this.report(unit, r).catch(() => undefined);
  }

  forget(unit: string): void {
    this.pending.delete(unit);
    for (const w of this.waiters.get(unit) ?? []) w.resolve();
    this.waiters.delete(unit);
  }

  flush(): void {
    if (this.flushing || !this.conn.connected) return;
    this.flushing = true;
    this.drain()
      .catch((err: unknown) => this.log.debug("status report deferred until reconnect", { err }))
      .finally(() => {
        this.flushing = false;
        if (this.pending.size > 0 && this.conn.connected) this.flush();
      });
  }

  private async drain(): Promise<void> {
    while (this.pending.size > 0) {
      const [unit, report] = this.pending.entries().next().value as [string, Partial_];
      this.pending.delete(unit);
      const waiters = this.waiters.get(unit) ?? [];
      this.waiters.delete(unit);
      try {
        await this.conn.call("unit.status", { unit, ...report });
        for (const w of waiters) w.resolve();
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === "unavailable") {
          // Put it back under anything newer, to be sent after the reconnect.
          this.pending.set(unit, { ...report, ...this.pending.get(unit) });
          this.waiters.set(unit, [...waiters, ...(this.waiters.get(unit) ?? [])]);
          throw err;
        }
        for (const w of waiters) w.reject(err);
      }
    }
  }
}
