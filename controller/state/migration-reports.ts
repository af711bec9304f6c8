/**
 * Agents' answers to their model's migration, one key each
 * (`/migration-reports/<model>/<migration>/<phase>/<machine>`), and who is still awaited: every
 * machine of the model that is alive. In state/ because both the agent hub, which records them, and the
 * migration master, which waits for them, read them.
 */
import type { MigrationReport } from "../../api";
import { REPORTED_PHASES, StewardError } from "../../api";
import type { StateCache } from "./cache";
import type { MigrationDoc } from "./documents";
import { keys } from "./keys";
import type { Store } from "../store";
import { decode, docs } from "./doc-kinds";

export interface ReportDoc {
  ok: boolean;
  reason?: string;
  at: string;
  /** A replica's log transfer (migration/log-transfer.ts): the records it sent. */
  records?: number;
}

export interface AgentReports {
  reported: number;
  failed: { machine: string; reason: string }[];
  waitingFor: string[];
}

/** Records `machine`'s report, if it answers the migration and phase its model is in. */
export async function recordReport(
  store: Store,
  cache: StateCache,
  model: string,
  machine: string,
  r: MigrationReport,
): Promise<void> {
  const m = cache.migrations.get(model);
  if (!m || m.id !== r.id)
    throw new StewardError("conflict", `migration ${r.id} is not this model's current migration`, {
      reason: "not-current-migration",
    });
  if (m.phase !== r.phase || !REPORTED_PHASES.has(r.phase))
    throw new StewardError("conflict", `the migration is in ${m.phase}, not ${r.phase}`, {
      reason: "migration-phase-mismatch",
    });
  const doc: ReportDoc = { ok: r.ok, ...(r.reason ? { reason: r.reason } : {}), at: new Date().toISOString() };
  await store.put(keys.migrationReport(model, r.id, r.phase, machine), JSON.stringify(doc));
}

export async function agentReports(store: Store, cache: StateCache, m: MigrationDoc): Promise<AgentReports> {
  const prefix = keys.migrationReports(m.model, m.id, m.phase);
  const { kvs } = await store.range(prefix);
  const byMachine = new Map(kvs.map((kv) => [kv.key.slice(prefix.length), decode(docs.migrationReport, kv.value)]));
  const failed: AgentReports["failed"] = [];
  const waitingFor: string[] = [];
  let reported = 0;
  for (const machine of cache.models.get(m.model)?.machines.values() ?? []) {
    if (machine.life !== "alive") continue;
    const r = byMachine.get(machine.id);
    if (!r) waitingFor.push(machine.id);
    else if (r.ok) reported++;
    else failed.push({ machine: machine.id, reason: r.reason ?? "no reason given" });
  }
  return { reported, failed, waitingFor: waitingFor.sort((a, b) => Number(a) - Number(b) || a.localeCompare(b)) };
}
