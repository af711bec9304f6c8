/**
 * PostgreSQL under Steward (issue 34): how long a client writing a row every 50 ms through the
 * `database` relation cannot write when the primary's host is killed (a standby is promoted once the
 * dead unit's leadership lease runs out; the host then comes back and rejoins as a standby) and during
 * a planned switchover, and an operator refresh to another version (a rolling restart: standbys one at
 * a time, the primary after a switchover; a broken order fails the run), median and max over `size` trials of each, with a 10 s unit-leadership lease;
 * and how many acknowledged commits were lost (must be 0) or showed signs of two primaries at once.
 * Target (the issue): primary killed ≤ 15 s, switchover ≤ 3 s. Three postgresql units and the client on
 * SSH test hosts, as in test/postgresql-faults.test.ts.
 *
 * Needs root (network namespaces) and PostgreSQL 15.
 */
import { PgCluster } from "../test/harness/pg-cluster";
import type { FaultReport } from "../test/harness/pg-cluster";
import { PgLedger } from "../test/harness/pg-ledger";
import { localPostgresAvailable } from "../test/harness/pg-server";
import { observeRoll, refreshOperator } from "../test/harness/pg-rolling";
import type { BenchOptions } from "./util";
import { median, report, sleep } from "./util";

export interface PgFailoverOptions extends BenchOptions {
  /**
   * The unit-leadership lease, in seconds.
   * @default 10
   */
  leaseSeconds?: number;
}

/** `size`: trials of each fault (default 5). */
export async function benchPostgresqlFailover(o: PgFailoverOptions = {}): Promise<void> {
  if (!(await localPostgresAvailable())) {
    process.stdout.write("\npostgresql-failover: skipped (needs root for test hosts, and PostgreSQL 15)\n");
    return;
  }
  const TRIALS = o.size ?? 5;
  const lease = o.leaseSeconds ?? 10;
  const cluster = await PgCluster.start({ leaseSeconds: lease });
  const ledger = PgLedger.start({ address: () => cluster.address(), intervalMs: 50 });
  const results: Record<"killed" | "switchover" | "refresh", FaultReport[]> = {
    killed: [],
    switchover: [],
    refresh: [],
  };
  /** What a rolling restart did out of its promised order (must stay empty). */
  const rollProblems: string[] = [];
  /** Why the trials stopped early: a cluster that did not come back is itself the finding. */
  let broken: string | undefined;
  try {
    await ledger.firstAck(120_000);
    for (let trial = 0; trial < TRIALS && !broken; trial++) {
      try {
        await sleep(1000 + Math.random() * 2000); // anywhere in the lease's renewal cycle
        const old = await cluster.primary();
        const killedAt = Date.now();
        await old.host.kill();
        await ledger.ackAfter(Date.now(), 300_000);
        await old.host.start();
        results.killed.push(await cluster.settle(ledger, "primary's host killed", killedAt));

        await sleep(1000);
        const from = await cluster.primary();
        const to = (await cluster.pgUnits()).find((u) => u.name !== from.unit)!.name;
        const switchedAt = Date.now();
        await cluster.switchover(to);
        results.switchover.push(await cluster.settle(ledger, "switchover", switchedAt));

        // A refresh to another operator version: a rolling restart (the primary switches over last).
        await sleep(1000);
        const refreshedAt = Date.now();
        const roll = await observeRoll(cluster, () => refreshOperator(cluster, `15.1.0-bench.${trial + 1}`));
        const refreshed = await cluster.settle(ledger, "operator refresh", refreshedAt);
        rollProblems.push(...roll.problems.map((p) => `trial ${trial + 1}: ${p}`));
        results.refresh.push(refreshed);
      } catch (err) {
        broken = `trial ${trial + 1}: ${(err as Error).message}`;
      }
    }
  } finally {
    await ledger.stop();
    await cluster.close();
  }
  const s = (ms: number): string => (ms / 1000).toFixed(2);
  const stat = (f: (v: number[]) => number, v: number[]): string => (v.length ? s(f(v)) : "n/a");
  const max = (v: number[]): number => Math.max(...v);
  const all = [...results.killed, ...results.switchover, ...results.refresh];
  const told = results.killed.flatMap((r) => r.toldMs ?? []);
  const killed = results.killed.map((r) => r.unavailableMs);
  const switched = results.switchover.map((r) => r.unavailableMs);
  const refreshed = results.refresh.map((r) => r.unavailableMs);
  const lost = all.reduce((n, r) => n + r.missing.length, 0);
  const behind = all.reduce((n, r) => n + r.standbysBehind.length, 0);
  const splitBrains = all.filter((r) => r.timelines.problems.length > 0).length;
  report(
    `PostgreSQL failover under Steward: 3 units + a client writing every 50 ms on SSH test hosts, ${lease} s leadership lease (${TRIALS} trials)`,
    {
      "primary's host killed: writes unavailable median (s)": stat(median, killed),
      "primary's host killed: writes unavailable max (s)": stat(max, killed),
      "primary's host killed: client sent to the new primary median (s)": stat(median, told),
      "primary's host killed: back to all active median (s)": stat(
        median,
        results.killed.map((r) => r.settledMs),
      ),
      "switchover: writes unavailable median (s)": stat(median, switched),
      "switchover: writes unavailable max (s)": stat(max, switched),
      "operator refresh (rolling restart): writes unavailable median (s)": stat(median, refreshed),
      "operator refresh (rolling restart): writes unavailable max (s)": stat(max, refreshed),
      "operator refresh: trigger to all active again median (s)": stat(
        median,
        results.refresh.map((r) => r.settledMs),
      ),
      "trials completed": `${Math.min(results.killed.length, results.switchover.length, results.refresh.length)} of ${TRIALS}`,
      "acknowledged commits (all trials)": String(all.at(-1)?.acknowledged ?? 0),
      "acknowledged commits lost (must be 0)": String(lost),
      "standbys lacking an acknowledged commit after 60 s (must be 0)": String(behind),
      "trials with signs of two primaries (must be 0)": String(splitBrains),
      "rolling restarts out of order (must be 0)": String(rollProblems.length),
    },
  );
  for (const r of all)
    for (const p of [...r.missing.map((m) => `seq ${m} lost`), ...r.standbysBehind, ...r.timelines.problems])
      process.stdout.write(`  ${r.fault}: ${p}\n`);
  for (const p of rollProblems) process.stdout.write(`  operator refresh: ${p}\n`);
  if (broken) process.stdout.write(`  the cluster did not come back: ${broken}\n`);
  // Not a timing: a broken guarantee or a cluster that does not recover fails the run (and the suite's smoke).
  if (lost + behind + splitBrains + rollProblems.length > 0 || broken) process.exitCode = 1;
}
