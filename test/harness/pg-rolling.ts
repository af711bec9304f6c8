/**
 * A rolling restart of the postgresql operator seen from outside, for the rolling test, the fault test
 * and the benchmark: what triggers one (a restart-needing setting, or a refresh to another operator
 * version: a copy of operators/postgresql with its version changed), and whether it went as promised,
 * read from the servers themselves: each unit's postmaster start time (pg_postmaster_start_time()),
 * when the new primary's timeline began (its history file), and a watcher sampling the old primary's
 * streaming standbys while it is still primary. Problems come back as sentences; the caller asserts
 * (a test) or reports (a benchmark).
 */
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ApplicationInfo } from "../../api";
import { operatorsDir } from "./controller";
import { eventually } from "./eventually";
import { PG_APP } from "./pg-cluster";
import type { PgCluster } from "./pg-cluster";

/** Each unit's postmaster start time (ms since the epoch), by unit name. */
export async function startTimes(c: PgCluster): Promise<Map<string, number>> {
  const entries = await Promise.all(
    [...c.unitHosts].map(async ([unit, host]) => {
      const rows = await c.query<{ ms: string }>(
        { host: host.ip },
        "SELECT (extract(epoch FROM pg_postmaster_start_time()) * 1000)::bigint AS ms",
      );
      return [unit, Number(rows[0]!.ms)] as const;
    }),
  );
  return new Map(entries);
}

/** When `unit` began its current timeline (its history file's time, whole seconds), and which timeline. */
export async function timelineBegan(c: PgCluster, unit: string): Promise<{ timeline: number; at: number }> {
  const rows = await c.query<{ tli: number; ms: string }>(
    { host: c.unitHosts.get(unit)!.ip },
    "SELECT timeline_id AS tli, (extract(epoch FROM (pg_stat_file('pg_wal/' || lpad(upper(to_hex(timeline_id)), 8, '0') || '.history')).modification) * 1000)::bigint AS ms FROM pg_control_checkpoint()",
  );
  return { timeline: Number(rows[0]!.tli), at: Number(rows[0]!.ms) };
}

/**
 * Refreshes the application to a copy of operators/postgresql whose operator.yaml says `version`
 * (`touch`: a file added too, so the content differs even when the version does not). Returns the
 * application as updated (for {@link changeOf}).
 */
export async function refreshOperator(c: PgCluster, version: string, touch = ""): Promise<ApplicationInfo> {
  const dir = await mkdtemp(join(tmpdir(), "pg-operator-"));
  try {
    await cp(join(operatorsDir, "postgresql"), dir, { recursive: true });
    const yaml = join(dir, "operator.yaml");
    const text = await readFile(yaml, "utf8");
    if (!/^version: .*$/m.test(text)) throw new Error("operators/postgresql/operator.yaml has no version line");
    await writeFile(yaml, text.replace(/^version: .*$/m, `version: "${version}"`));
    if (touch) await writeFile(join(dir, "REFRESHED"), `${touch}\n`);
    const hash = await c.tc.upload(dir);
    return await c.tc.admin.updateApplication(c.model, PG_APP, { operator: hash });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** What one rolling restart did. */
export interface RollReport {
  oldPrimary: string;
  newPrimary: string;
  /** Units in the order their servers started again, with the time from the trigger (ms). */
  order: { unit: string; afterMs: number }[];
  /** The new primary's timeline began this long after the trigger (ms, whole seconds). */
  switchedAfterMs: number;
  /** Samples of the old primary's streaming standbys while it was primary, and the fewest seen. */
  samples: number;
  fewestStreaming: number;
  /** Broken promises: must be empty. */
  problems: string[];
}

/**
 * Runs `trigger` (a config change or a refresh) and watches the rolling restart it starts until every
 * unit's server has started again (`timeoutMs`). Call it on a settled cluster; settle it after.
 */
export async function observeRoll(
  c: PgCluster,
  trigger: () => Promise<unknown>,
  timeoutMs = 600_000,
): Promise<RollReport> {
  const before = await startTimes(c);
  const oldPrimary = (await c.primary()).unit;
  const standbys = [...c.unitHosts.keys()].filter((u) => u !== oldPrimary);
  const oldHost = { host: c.unitHosts.get(oldPrimary)!.ip };
  let fewest = Infinity;
  let samples = 0;
  let watching = true;
  const watch = (async () => {
    while (watching) {
      try {
        const rows = await c.query<{ n: string; recovering: boolean }>(
          oldHost,
          "SELECT (SELECT count(*) FROM pg_stat_replication WHERE state IN ('streaming', 'catchup')) AS n, pg_is_in_recovery() AS recovering",
        );
        if (rows[0]!.recovering) break; // a standby now: the switchover happened
        samples++;
        fewest = Math.min(fewest, Number(rows[0]!.n));
      } catch {
        // Stopped for the switchover, or a moment's refusal: only answers count.
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const t0 = Date.now();
  await trigger();
  let after = new Map<string, number>();
  try {
    await eventually(
      "every unit's server started again",
      async () => {
        after = await startTimes(c);
        return [...before].every(([u, was]) => (after.get(u) ?? 0) > was);
      },
      timeoutMs,
      1000,
    );
  } finally {
    watching = false;
    await watch;
  }
  const newPrimary = (await eventually("one primary", () => c.primary().catch(() => undefined), 120_000, 500)).unit;
  const problems: string[] = [];
  if (newPrimary === oldPrimary) problems.push(`${oldPrimary} is still the primary: no switchover before it restarted`);
  const began = newPrimary !== oldPrimary ? await timelineBegan(c, newPrimary) : { timeline: 0, at: 0 };
  const order = [...after].sort((a, b) => a[1] - b[1]).map(([unit, at]) => ({ unit, afterMs: at - t0 }));
  const restartedStandbys = order.map((o) => o.unit).filter((u) => u !== oldPrimary);
  const unitOrder = [...standbys].sort((a, b) => Number(a.split("/")[1]) - Number(b.split("/")[1]));
  if (restartedStandbys.join(",") !== unitOrder.join(","))
    problems.push(`standbys restarted in the order ${restartedStandbys.join(", ")}, not ${unitOrder.join(", ")}`);
  if (order.at(-1)?.unit !== oldPrimary)
    problems.push(`the old primary ${oldPrimary} restarted before a standby: ${order.map((o) => o.unit).join(", ")}`);
  if (began.at && after.get(oldPrimary)! < began.at)
    problems.push(`${oldPrimary} restarted before ${newPrimary} was promoted (timeline ${began.timeline})`);
  if (standbys.length > 1 && samples > 0 && fewest < standbys.length - 1)
    problems.push(`${fewest} of ${standbys.length} standbys streamed at one moment: more than one restarted at once`);
  return {
    oldPrimary,
    newPrimary,
    order,
    switchedAfterMs: began.at - t0,
    samples,
    fewestStreaming: samples ? fewest : -1,
    problems,
  };
}

/** One line for a log. */
export function formatRoll(r: RollReport): string {
  return (
    `rolled ${r.order.map((o) => `${o.unit} +${(o.afterMs / 1000).toFixed(1)} s`).join(", ")}; ` +
    `${r.oldPrimary} -> ${r.newPrimary} (timeline began +${(r.switchedAfterMs / 1000).toFixed(0)} s); ` +
    `fewest streaming standbys ${r.fewestStreaming} in ${r.samples} samples`
  );
}
