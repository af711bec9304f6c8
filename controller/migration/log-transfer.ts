/**
 * LOGTRANSFER from every replica. Agents send their log records to the replica they are connected
 * to, which keeps them in memory ({@link ModelLogs}); with several replicas no one of them holds a
 * model's whole log. So each replica sends its own records to the target when the model's migration
 * reaches LOGTRANSFER, and records that it did (`/migration-reports/<model>/<id>/LOGTRANSFER/replica:<id>`);
 * the master waits for every live replica's report, up to a deadline, before REAP removes the model.
 */
import type { DebugLogRecord, Logger } from "../../api";
import type { ControllerClient } from "../../api";
import type { MigrationDoc, ReportDoc, StateCache } from "../state";
import { decode, docs, keys } from "../state";
import type { Sealer } from "../security/sealing";
import type { ModelLogs } from "../state/model-logs";
import type { Store } from "../store";
import { targetClient } from "./target-login";
import type { Worker } from "../workers";
import { aborted, sleep } from "../workers";

const LOG_BATCH = 2000;
/** Records one replica sends: its whole ring for the model holds at most this many. */
const MOST_RECORDS = 10_000;
const ATTEMPTS = 3;

const REPLICA = "replica:";
const reportKey = (m: MigrationDoc, replicaId: string): string =>
  keys.migrationReport(m.model, m.id, "LOGTRANSFER", `${REPLICA}${replicaId}`);

/** Sends this replica's records of the model, in batches, oldest first. Returns how many. */
async function sendModelLogs(target: ControllerClient, m: MigrationDoc, logs: ModelLogs): Promise<number> {
  const records: DebugLogRecord[] = logs.recent(m.model, { include: [], exclude: [], level: "DEBUG" }, MOST_RECORDS);
  for (let i = 0; i < records.length; i += LOG_BATCH)
    await target.call("POST", `/v1/migrations/${m.id}/logs`, {
      model: m.model,
      records: records.slice(i, i + LOG_BATCH),
    });
  return records.length;
}

export interface LogTransferOptions {
  cache: StateCache;
  store: Store;
  sealer: Sealer;
  logs: ModelLogs;
  replicaId: string;
  log: Logger;
}

/** On every replica: sends its part of a model's logs once that model's migration is in LOGTRANSFER. */
export class MigrationLogSender implements Worker {
  readonly name = "migration-log-sender";
  private readonly started = new Set<string>();
  private readonly sending = new Set<Promise<void>>();

  constructor(private readonly o: LogTransferOptions) {}

  /** Until stopped; then the sends in flight end (they stop retrying) before this resolves. */
  async run(signal: AbortSignal): Promise<void> {
    const unsubscribe = this.o.cache.subscribe(() => this.scan(signal));
    this.scan(signal);
    await aborted(signal);
    unsubscribe();
    await Promise.all([...this.sending]);
  }

  private scan(signal: AbortSignal): void {
    if (signal.aborted) return;
    for (const m of this.o.cache.migrations.values()) {
      if (m.phase !== "LOGTRANSFER" || this.started.has(m.id)) continue;
      this.started.add(m.id);
      const p = this.send(m, signal)
        .catch((err: unknown) =>
          this.o.log.warn("could not report this replica's log transfer", { model: m.modelName, err }),
        )
        .finally(() => this.sending.delete(p));
      this.sending.add(p);
    }
  }

  private async send(m: MigrationDoc, signal: AbortSignal): Promise<void> {
    const key = reportKey(m, this.o.replicaId);
    if (await this.o.store.get(key)) return; // sent before this process restarted
    let report: ReportDoc | undefined;
    let why = "";
    for (let attempt = 1; attempt <= ATTEMPTS && !signal.aborted && !report; attempt++) {
      const target = targetClient(m, this.o.sealer);
      try {
        report = { ok: true, records: await sendModelLogs(target, m, this.o.logs), at: new Date().toISOString() };
      } catch (err) {
        why = err instanceof Error ? err.message : String(err);
        await sleep(attempt * 1000, signal);
      } finally {
        target.close();
      }
    }
    if (signal.aborted) return;
    report ??= { ok: false, records: 0, reason: why, at: new Date().toISOString() };
    // Only while the migration is still in LOGTRANSFER: a report after REAP would outlive the model's records.
    const now = this.o.cache.migrations.get(m.model);
    if (now?.id === m.id && now.phase === "LOGTRANSFER") await this.o.store.put(key, JSON.stringify(report));
  }
}

export interface LogTransferState {
  records: number;
  reported: string[];
  failed: { replica: string; reason: string }[];
  waitingFor: string[];
}

/** Which live replicas have sent their part of the migration's logs. */
export async function logTransferState(store: Store, cache: StateCache, m: MigrationDoc): Promise<LogTransferState> {
  const prefix = `${keys.migrationReports(m.model, m.id, "LOGTRANSFER")}${REPLICA}`;
  const reports = new Map(
    (await store.range(prefix)).kvs.map((kv) => [kv.key.slice(prefix.length), decode(docs.migrationReport, kv.value)]),
  );
  const state: LogTransferState = { records: 0, reported: [], failed: [], waitingFor: [] };
  for (const [replica, r] of reports) {
    if (r.ok) {
      state.reported.push(replica);
      state.records += r.records ?? 0;
    } else state.failed.push({ replica, reason: r.reason ?? "no reason given" });
  }
  for (const replica of cache.replicas.keys()) if (!reports.has(replica)) state.waitingFor.push(replica);
  return state;
}
