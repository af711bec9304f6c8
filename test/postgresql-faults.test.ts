/**
 * The proof of issue 34: a three-unit PostgreSQL under Steward on SSH test hosts, a client writing a
 * row every 50 ms through the `database` relation (reconnecting to whatever primary its relation data
 * names) and keeping a ledger of acknowledged commits, and faults one after another: the primary's
 * host killed and brought back, the primary cut off for 30 s and healed, a standby killed, every host
 * of the model restarted at once, a planned switchover, an operator refresh to another version (a
 * rolling restart: standbys one at a time, the primary after a switchover). After each: writes accepted again, every unit
 * back to active with one primary, every acknowledged commit on the primary and every standby, and
 * no sign of two primaries accepting writes at once in the timeline histories, the units' control
 * data or the ledger. What each fault cost the writer is logged, never asserted (bench/postgresql-failover
 * measures it).
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import type { FaultReport } from "./harness/pg-cluster";
import { PgCluster, formatFault } from "./harness/pg-cluster";
import { PgLedger } from "./harness/pg-ledger";
import { localPostgresAvailable } from "./harness/pg-server";
import { formatRoll, observeRoll, refreshOperator } from "./harness/pg-rolling";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let cluster: PgCluster | undefined;
let ledger: PgLedger | undefined;
test.after.always(async () => {
  await ledger?.stop();
  await cluster?.close();
});

/** The checks every fault must pass. */
function assertClean(t: ExecutionContext, r: FaultReport): void {
  t.log(formatFault(r));
  t.deepEqual(r.missing, [], `${r.fault}: acknowledged commits missing on the primary ${r.primary}`);
  t.deepEqual(r.standbysBehind, [], `${r.fault}: standbys missing acknowledged commits`);
  t.deepEqual(r.timelines.problems, [], `${r.fault}: signs of two primaries at once`);
}

test.serial("no acknowledged commit is lost and no two primaries write, through every fault", async (t) => {
  if (!(await localPostgresAvailable())) return t.pass("needs root (test hosts) and PostgreSQL 15");
  t.timeout(40 * 60_000);
  cluster = await PgCluster.start({ leaseSeconds: 10 });
  ledger = PgLedger.start({ address: () => cluster!.address(), intervalMs: 50 });
  await ledger.firstAck(120_000);
  await sleep(2000);
  const c = cluster;
  const l = ledger;

  // The primary's host dies; a standby takes over; the host comes back and rejoins as a standby.
  {
    const old = await c.primary();
    const at = Date.now();
    await old.host.kill();
    const first = await l.ackAfter(Date.now(), 300_000);
    t.not(first.server, old.host.ip, "another unit took the writes");
    await old.host.start();
    assertClean(t, await c.settle(l, "primary's host killed", at));
  }

  // The primary is cut off from everything (controller, standbys, client) for 30 s, then healed.
  {
    const old = await c.primary();
    const at = Date.now();
    await old.host.cut();
    await sleep(30_000);
    await old.host.restore();
    assertClean(t, await c.settle(l, "primary cut off 30 s", at));
  }

  // A standby dies: with two standbys and ANY 1 synchronous, writes go on; it comes back and catches up.
  {
    const standby = await c.standby();
    const at = Date.now();
    await standby.host.kill();
    await sleep(5000);
    await standby.host.start();
    assertClean(t, await c.settle(l, "standby's host killed", at));
  }

  // A power cut: every host of the model (the client's too) at once, then all booted again.
  {
    const at = Date.now();
    await Promise.all(c.hosts.map((h) => h.kill()));
    await sleep(2000);
    await Promise.all(c.hosts.map((h) => h.start()));
    assertClean(t, await c.settle(l, "every host restarted", at));
  }

  // A planned switchover to a named standby: no lost commit, a short pause.
  {
    const old = await c.primary();
    const target = (await c.pgUnits()).find((u) => u.name !== old.unit)!.name;
    const at = Date.now();
    await c.switchover(target);
    const report = await c.settle(l, `switchover to ${target}`, at);
    t.is(report.primary, target, "the named unit is the primary");
    assertClean(t, report);
  }

  // An operator refresh to another version: a rolling restart, standbys one at a time, then the
  // primary after a switchover to a restarted standby.
  {
    const at = Date.now();
    const roll = await observeRoll(c, () => refreshOperator(c, "15.1.0-refreshed"));
    const report = await c.settle(l, "operator refresh", at);
    t.log(formatRoll(roll));
    t.deepEqual(roll.problems, [], "operator refresh: the rolling restart broke its order");
    assertClean(t, report);
  }

  await l.stop();
  const verdict = await l.verify(await c.address());
  t.log(`${verdict.acknowledged} commits acknowledged in all, ${l.failures.length} writes failed or timed out`);
  t.deepEqual(verdict.missing, []);
});
