/**
 * {@link ModelLogs} keeps the newest log records of each model in memory (a ring buffer per model)
 * and hands new ones to the `debug-log` streams that follow the model. Records arrive from the
 * agents connected to this replica only: with several replicas, each keeps and serves what its own
 * agents sent (a known limit, stated in docs/operators.md).
 */
import type { DebugLogRecord, LogFilter } from "../../api";
import { logRecordMatches } from "../../api";

export interface ModelLogsOptions {
  /**
   * Records kept per model; the oldest go first.
   * @default 10000
   */
  recordsPerModel?: number;
}

type Follower = { filter: LogFilter; onRecord: (r: DebugLogRecord) => void };

/** A fixed-size ring of records, oldest first when read. */
class Ring {
  private readonly items: (DebugLogRecord | undefined)[];
  private next = 0;
  private size = 0;

  constructor(private readonly capacity: number) {
    this.items = new Array<DebugLogRecord | undefined>(capacity);
  }

  push(r: DebugLogRecord): void {
    this.items[this.next] = r;
    this.next = (this.next + 1) % this.capacity;
    this.size = Math.min(this.size + 1, this.capacity);
  }

  /** The newest `n` records that match, oldest first. */
  newest(filter: LogFilter, n: number): DebugLogRecord[] {
    const out: DebugLogRecord[] = [];
    for (let i = 1; i <= this.size && out.length < n; i++) {
      const r = this.items[(this.next - i + this.capacity) % this.capacity]!;
      if (logRecordMatches(filter, r)) out.push(r);
    }
    return out.reverse();
  }
}

export class ModelLogs {
  private readonly rings = new Map<string, Ring>();
  private readonly followers = new Map<string, Set<Follower>>();

  constructor(private readonly o: ModelLogsOptions = {}) {}

  append(model: string, records: DebugLogRecord[]): void {
    let ring = this.rings.get(model);
    if (!ring) this.rings.set(model, (ring = new Ring(this.o.recordsPerModel ?? 10_000)));
    const followers = this.followers.get(model);
    for (const r of records) {
      ring.push(r);
      for (const f of followers ?? []) if (logRecordMatches(f.filter, r)) f.onRecord(r);
    }
  }

  /** The newest `n` records of the model that match `filter`, oldest first. */
  recent(model: string, filter: LogFilter, n: number): DebugLogRecord[] {
    return this.rings.get(model)?.newest(filter, n) ?? [];
  }

  /** Calls `onRecord` with each matching record that arrives from now on; returns the way to stop. */
  follow(model: string, filter: LogFilter, onRecord: (r: DebugLogRecord) => void): () => void {
    const f: Follower = { filter, onRecord };
    let set = this.followers.get(model);
    if (!set) this.followers.set(model, (set = new Set()));
    set.add(f);
    return () => {
      set.delete(f);
      if (set.size === 0 && this.followers.get(model) === set) this.followers.delete(model);
    };
  }

  /** The model is gone: its records go with it. */
  forget(model: string): void {
    this.rings.delete(model);
  }
}
