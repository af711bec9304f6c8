/**
 * Rolling restarts of the postgresql operator (issue 34) on SSH test hosts, with a client writing
 * every 50 ms through the `database` relation and keeping a ledger of acknowledged commits: a setting
 * only a restart applies (max-connections) and a refresh to another operator version each restart the
 * units one at a time, the standbys first in unit order, then the primary after it has switched over
 * to a restarted standby. Checked from the servers (postmaster start times, the new timeline's
 * history, the old primary's streaming standbys sampled while it was primary), and after each: every
 * acknowledged commit on the new primary, no sign of two primaries, every unit active. A refresh that
 * keeps the operator version restarts nothing.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import type { FaultReport } from "./harness/pg-cluster";
import { PG_APP, PgCluster, formatFault } from "./harness/pg-cluster";
import { PgLedger } from "./harness/pg-ledger";
import { localPostgresAvailable } from "./harness/pg-server";
import { formatRoll, observeRoll, refreshOperator, startTimes } from "./harness/pg-rolling";
import type { RollReport } from "./harness/pg-rolling";
import { changeOf, waitForModelReady } from "../api";

let cluster: PgCluster | undefined;
let ledger: PgLedger | undefined;
test.after.always(async () => {
  await ledger?.stop();
  await cluster?.close();
});

function assertRolled(t: ExecutionContext, roll: RollReport, r: FaultReport): void {
  t.log(formatRoll(roll));
  t.log(formatFault(r));
  t.deepEqual(roll.problems, [], `${r.fault}: the rolling restart broke its order`);
  t.true(roll.samples > 0, "the old primary's standbys were sampled while it was primary");
  t.not(r.primary, roll.oldPrimary, "the primary switched over");
  t.deepEqual(r.missing, [], `${r.fault}: acknowledged commits missing on the primary ${r.primary}`);
  t.deepEqual(r.standbysBehind, [], `${r.fault}: standbys missing acknowledged commits`);
  t.deepEqual(r.timelines.problems, [], `${r.fault}: signs of two primaries at once`);
}

test.serial(
  "restart-needing settings and operator refreshes roll: standbys one at a time, the primary last after a switchover",
  async (t) => {
    if (!(await localPostgresAvailable())) return t.fail("needs root (test hosts) and PostgreSQL 15");
    t.timeout(30 * 60_000);
    cluster = await PgCluster.start({ leaseSeconds: 10 });
    ledger = PgLedger.start({ address: () => cluster!.address(), intervalMs: 50 });
    await ledger.firstAck(120_000);
    const c = cluster;
    const l = ledger;

    {
      const at = Date.now();
      const roll = await observeRoll(c, () =>
        c.tc.admin.updateApplication(c.model, PG_APP, { config: { "max-connections": 120 } }),
      );
      const report = await c.settle(l, "max-connections 100 -> 120", at);
      assertRolled(t, roll, report);
      for (const [unit, host] of c.unitHosts)
        t.deepEqual(
          await c.query({ host: host.ip }, "SHOW max_connections"),
          [{ max_connections: "120" }],
          `${unit} runs the new setting`,
        );
    }

    {
      const at = Date.now();
      const roll = await observeRoll(c, () => refreshOperator(c, "15.1.0-rolled"));
      const report = await c.settle(l, "operator refresh to 15.1.0-rolled", at);
      assertRolled(t, roll, report);
    }

    // Same version, other content: every unit runs the new content's upgrade hook, no server restarts.
    {
      const before = await startTimes(c);
      const updated = await refreshOperator(c, "15.1.0-rolled", "same version");
      await waitForModelReady(c.tc.admin, c.model, {
        apps: [PG_APP],
        changed: { [PG_APP]: changeOf(updated) },
        timeoutMs: 180_000,
      });
      await new Promise((r) => setTimeout(r, 15_000)); // three update-status rounds, for a late request
      await c.allActive();
      t.deepEqual(await startTimes(c), before, "no server restarted");
    }

    await l.stop();
    const verdict = await l.verify(await c.address());
    t.log(`${verdict.acknowledged} commits acknowledged in all, ${l.failures.length} writes failed or timed out`);
    t.deepEqual(verdict.missing, []);
  },
);
