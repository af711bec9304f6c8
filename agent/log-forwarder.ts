/**
 * {@link LogForwarder} sends the agent's log records (its own lines and its hooks' output) to the
 * controller for `steward debug-log`, in batches over the agent's connection. It never makes a hook
 * or the agent wait: records queue in memory up to a bound, the oldest are dropped (and counted,
 * and the count sent) when the controller is away or slow, and one batch is in flight at a time.
 */
import type { AgentLogRecord, Logger } from "../api/core";
import { LOG_BATCH_MAX_RECORDS, LOG_MESSAGE_MAX_CHARS, isUnavailable } from "../api/core";

export interface LogForwarderOptions {
  /** Sends one batch (the agent protocol's `log.batch`); rejects when it did not arrive. */
  send: (batch: { records: AgentLogRecord[]; dropped: number }) => Promise<unknown>;
  /** Whether the connection is up (no batch is tried while it is down). */
  connected: () => boolean;
  /** For the forwarder's own troubles; must not be a logger that forwards (it would feed itself). */
  log: Logger;
  /**
   * Most records queued; beyond it the oldest are dropped.
   * @default 5000
   */
  maxQueued?: number;
  /**
   * Most records in one batch (at most the protocol's limit).
   * @default 200
   */
  batchSize?: number;
  /**
   * How long a record may wait for others to share its batch, in ms.
   * @default 200
   */
  lingerMs?: number;
}

export class LogForwarder {
  private queue: AgentLogRecord[] = [];
  /** Records dropped since the count was last sent. */
  private dropped = 0;
  private sending = false;
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly o: LogForwarderOptions) {}

  /** Queues a record; returns at once whatever the controller does. */
  add(record: AgentLogRecord): void {
    if (this.closed) return;
    const message =
      record.message.length > LOG_MESSAGE_MAX_CHARS ? record.message.slice(0, LOG_MESSAGE_MAX_CHARS) : record.message;
    this.queue.push({ ...record, message });
    this.trim();
    this.schedule();
  }

  /** Sends what is queued now (the agent calls it when it has connected). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.sending || this.closed || !this.o.connected() || (this.queue.length === 0 && this.dropped === 0)) return;
    this.sending = true;
    // The batch leaves the queue while it is away, so drops made meanwhile count only unsent records.
    const records = this.queue.splice(0, Math.min(this.o.batchSize ?? 200, LOG_BATCH_MAX_RECORDS));
    const dropped = this.dropped;
    let again = true;
    this.o
      .send({ records, dropped })
      .then(() => {
        this.dropped -= dropped;
      })
      .catch((err: unknown) => {
        if (isUnavailable(err)) {
          // Back in front, to go with the next add or reconnection (not at once: that could spin).
          this.queue.unshift(...records);
          this.trim();
          again = false;
          this.o.log.debug("log records kept until the controller answers", { queued: this.queue.length, err });
          return;
        }
        // Refused for what it holds: sending it again would be refused again.
        this.dropped += records.length;
        this.o.log.warn("the controller refused a batch of log records; dropping it", { records: records.length, err });
      })
      .finally(() => {
        this.sending = false;
        if (again && (this.queue.length > 0 || this.dropped > 0)) this.schedule();
      });
  }

  /** Drops the oldest records beyond the bound, counting them. */
  private trim(): void {
    const excess = this.queue.length - (this.o.maxQueued ?? 5000);
    if (excess > 0) {
      this.queue.splice(0, excess);
      this.dropped += excess;
    }
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.timer || this.sending || this.closed) return;
    const full = this.queue.length >= (this.o.batchSize ?? 200);
    this.timer = setTimeout(() => this.flush(), full ? 0 : (this.o.lingerMs ?? 200));
    this.timer.unref();
  }
}
