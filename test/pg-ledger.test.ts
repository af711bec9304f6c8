/**
 * The proof's instruments, tested before they are trusted with a failover (issue 34): the ledger of
 * acknowledged commits against a real PostgreSQL 15 crashed with SIGKILL mid-stream (the outage is
 * reported, nothing acknowledged is missing), a commit held back by a synchronous standby that never
 * answers (not acknowledged, whether or not it committed), and an acknowledged row deleted behind its
 * back (the verification names it); and the two-primaries check on hand-made timeline histories, both
 * a clean failover and each kind of split brain.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { PgLedger } from "./harness/pg-ledger";
import type { LedgerAck } from "./harness/pg-ledger";
import { LocalPostgres, localPostgresPresent } from "./harness/pg-server";
import { checkOnePrimaryAtATime, parseControlData, parseHistory, parseLsn } from "./harness/pg-timelines";
import type { UnitTimelines } from "./harness/pg-timelines";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Runs `fn` against a fresh local server. */
const realPg = test.macro(async (t, fn: (t: ExecutionContext, pg: LocalPostgres) => Promise<void>) => {
  const pg = await LocalPostgres.start();
  try {
    await fn(t, pg);
  } finally {
    await pg.close();
  }
});
/** Skipped only where a server cannot run: not root, or no PostgreSQL 15 (setup-host.sh installs it). */
const pgTest = localPostgresPresent() ? test : test.skip;

pgTest("the ledger sees a crash as an outage, and every acknowledged commit survives it", realPg, async (t, pg) => {
  const ledger = PgLedger.start({ address: () => pg.address, intervalMs: 20, statementTimeoutMs: 1000 });
  try {
    await ledger.firstAck();
    await sleep(700);
    const crashedAt = Date.now();
    await pg.crash();
    await sleep(1000);
    await pg.boot(); // crash recovery replays the WAL
    await ledger.ackAfter(Date.now());
    await sleep(300);
    await ledger.stop();

    t.true(ledger.acks.filter((a) => a.at < crashedAt).length >= 5, "writes flowed before the crash");
    const outages = ledger.outagesBetween(crashedAt, Date.now());
    t.is(outages.length, 1, JSON.stringify(outages));
    // Closed by the first write acknowledged after it began (a write in flight at the kill may have
    // been answered just before), and at least as long as the server was down.
    const back = ledger.acks.find((a) => a.at > outages[0]!.from)!;
    t.is(outages[0]!.to, back.at);
    t.true(outages[0]!.ms >= 1000 && outages[0]!.failures >= 1, JSON.stringify(outages[0]));
    t.true(ledger.longestGap(crashedAt, back.at) >= 1000);
    t.log(`crash: ${outages[0]!.failures} failed writes, ${outages[0]!.ms} ms without an acknowledged write`);
    const verdict = await ledger.verify(pg.address);
    t.deepEqual(verdict.missing, [], "no acknowledged row lost in the crash");
    t.is(verdict.acknowledged, ledger.acks.length);
    // Every write the ledger tried is accounted for, acknowledged or failed, each number once.
    const tried = [...ledger.acks.map((a) => a.seq), ...ledger.failures.flatMap((f) => f.seq ?? [])];
    t.is(new Set(tried).size, tried.length);
    t.is(Math.max(...tried), tried.length);
  } finally {
    await ledger.stop();
  }
});

pgTest("a commit held back by a synchronous standby that never answers is not acknowledged", realPg, async (t, pg) => {
  const ledger = PgLedger.start({ address: () => pg.address, intervalMs: 50, statementTimeoutMs: 500 });
  try {
    await ledger.firstAck();
    await pg.sql("ALTER SYSTEM SET synchronous_standby_names = 'nobody'");
    await pg.sql("SELECT pg_reload_conf()");
    const heldAt = Date.now();
    await sleep(2000);
    const ackedWhileHeld = ledger.acks.filter((a) => a.sentAt > heldAt + 200);
    const timedOut = ledger.failures.filter((f) => f.sentAt > heldAt && /timeout/i.test(f.error));
    await pg.sql("ALTER SYSTEM RESET synchronous_standby_names");
    await pg.sql("SELECT pg_reload_conf()");
    await ledger.ackAfter(Date.now());
    await ledger.stop();

    t.deepEqual(
      ackedWhileHeld.map((a) => a.seq),
      [],
      "nothing acknowledged while commits waited for the standby",
    );
    t.true(timedOut.length > 0, "writes timed out while held");
    const verdict = await ledger.verify(pg.address);
    t.deepEqual(verdict.missing, []);
    // They committed locally all along (released when the standby list was reset), unacknowledged: allowed.
    t.true(verdict.unacknowledgedPresent >= 1, "a held commit reached the table after its release");
  } finally {
    await ledger.stop();
  }
});

pgTest("the verification names an acknowledged row that is gone", realPg, async (t, pg) => {
  const ledger = PgLedger.start({ address: () => pg.address, intervalMs: 20 });
  try {
    await ledger.firstAck();
    await sleep(500);
    await ledger.stop();
    const clean = await ledger.verify(pg.address);
    t.deepEqual(clean.missing, []);
    t.true(clean.acknowledged >= 5);
    const victim = ledger.acks[3]!.seq;
    await pg.sql(`DELETE FROM ${ledger.table} WHERE seq = ${victim}`);
    t.deepEqual((await ledger.verify(pg.address)).missing, [victim]);
  } finally {
    await ledger.stop();
  }
});

pgTest("an acknowledgement records the server and the timeline it was written on", realPg, async (t, pg) => {
  const ledger = PgLedger.start({ address: () => pg.address });
  try {
    const first = await ledger.firstAck();
    t.is(first.server, "127.0.0.1");
    t.is(first.timeline, Number(await pg.sql("SELECT timeline_id FROM pg_control_checkpoint()")));
    t.true(parseLsn(first.lsn) > 0n);
  } finally {
    await ledger.stop();
  }
});

pgTest(
  "the timeline check reads a real failover as clean, and the old primary back as a second one",
  realPg,
  async (t, a) => {
    const b = await LocalPostgres.standbyOf(a);
    let target = a;
    const ledger = PgLedger.start({ address: () => target.address, intervalMs: 20, statementTimeoutMs: 1000 });
    const units = async (): Promise<UnitTimelines[]> => [
      { unit: "a", host: "a", controlData: await a.controlData(), histories: await a.histories() },
      { unit: "b", host: "b", controlData: await b.controlData(), histories: await b.histories() },
    ];
    // Both listen on 127.0.0.1: tell the ledger's servers apart by timeline (only a writes 1, only b 2).
    const acks = (): LedgerAck[] => ledger.acks.map((x) => ({ ...x, server: x.timeline === 1 ? "a" : "b" }));
    try {
      await ledger.firstAck();
      await sleep(300);
      // A planned failover: the primary stops (its standby receives everything it wrote), the standby is promoted.
      await a.stop();
      await b.sql("SELECT pg_promote()");
      target = b;
      await ledger.ackAfter(Date.now());
      const clean = checkOnePrimaryAtATime(await units(), acks());
      t.deepEqual(clean.problems, []);
      t.deepEqual(Object.keys(clean.timelines), ["2"], "b's promotion made timeline 2");
      t.is(parseControlData(await a.controlData()).state, "shut down");

      // The old primary comes back as a primary (no rewind, no standby.signal) and the client is sent to it.
      await a.boot();
      target = a;
      await b.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'steward-ledger'");
      const back = await ledger.ackAfter(Date.now());
      t.is(back.timeline, 1);
      await sleep(200);
      await ledger.stop();
      const split = checkOnePrimaryAtATime(await units(), acks()).problems;
      t.log(split.join("\n"));
      t.true(split.some((p) => /acknowledged on timeline 1 \(by a\) after timeline 2 had left it/.test(p)));
      t.true(split.some((p) => /acknowledged on timeline 1 \(a\) after seq \d+ on timeline 2 \(b\)/.test(p)));
      t.true(split.includes("2 units run as primary now: a, b"));
    } finally {
      await ledger.stop();
      await b.close();
    }
  },
);

// ---- the two-primaries check, on hand-made inputs ----

const ack = (seq: number, server: string, timeline: number, lsn: string): LedgerAck => ({
  seq,
  sentAt: seq * 50,
  at: seq * 50 + 5,
  server,
  timeline,
  lsn,
});
const control = (timeline: number, state: string): string =>
  `pg_control version number:            1300\nDatabase cluster state:               ${state}\n` +
  `Latest checkpoint's TimeLineID:       ${timeline}\nLatest checkpoint's PrevTimeLineID:   ${timeline}\n`;
const H2 = "1\t0/3000158\tno recovery target specified\n";
const H3 = "1\t0/3000158\tno recovery target specified\n\n2\t0/5000A28\tno recovery target specified\n";

/** Unit 0 was primary on timeline 1; unit 1 took over (timeline 2) at 0/3000158; unit 2 followed it. */
const cleanFailover = (): { units: UnitTimelines[]; acks: LedgerAck[] } => ({
  units: [
    { unit: "pg/0", host: "10.0.0.10", controlData: control(2, "in archive recovery"), histories: { 2: H2 } },
    { unit: "pg/1", host: "10.0.0.11", controlData: control(2, "in production"), histories: { 2: H2 } },
    { unit: "pg/2", host: "10.0.0.12", controlData: control(2, "in archive recovery"), histories: { 2: H2 } },
  ],
  acks: [
    ack(1, "10.0.0.10", 1, "0/3000060"),
    ack(2, "10.0.0.10", 1, "0/3000100"),
    ack(5, "10.0.0.11", 2, "0/3000200"),
    ack(6, "10.0.0.11", 2, "0/3000300"),
  ],
});

test("the timeline check parses what PostgreSQL writes", (t) => {
  t.deepEqual(parseHistory(H3), [
    { parent: 1, switchpoint: "0/3000158", reason: "no recovery target specified" },
    { parent: 2, switchpoint: "0/5000A28", reason: "no recovery target specified" },
  ]);
  t.deepEqual(parseControlData(control(3, "in production")), { timeline: 3, state: "in production" });
  t.true(parseLsn("1/0") > parseLsn("0/FFFFFFFF"));
  t.throws(() => parseHistory("1 nonsense"));
});

test("the timeline check passes a clean failover and a second one after it", (t) => {
  const { units, acks } = cleanFailover();
  const verdict = checkOnePrimaryAtATime(units, acks);
  t.deepEqual(verdict.problems, []);
  t.deepEqual(verdict.timelines[2]?.units, ["pg/0", "pg/1", "pg/2"]);
  // Then unit 2 takes over at 0/5000A28 (timeline 3); the others follow it.
  for (const u of units) u.histories[3] = H3;
  units[1]!.controlData = control(3, "in archive recovery");
  units[2]!.controlData = control(3, "in production");
  t.deepEqual(
    checkOnePrimaryAtATime(units, [...acks, ack(9, "10.0.0.12", 3, "0/5000B00")]).problems,
    [],
    "a second failover",
  );
});

test("the timeline check finds two units promoted to the same timeline", (t) => {
  const { units, acks } = cleanFailover();
  units[2]!.histories[2] = "1\t0/3000190\tno recovery target specified\n";
  const problems = checkOnePrimaryAtATime(units, acks).problems;
  t.is(problems.length, 1);
  t.regex(problems[0]!, /timeline 2 was created twice/);
  // The same number, the same fork point, but both wrote on it: the ledger tells.
  const same = cleanFailover();
  const both = checkOnePrimaryAtATime(same.units, [...same.acks, ack(7, "10.0.0.12", 2, "0/3000400")]).problems;
  t.is(both.length, 1);
  t.regex(both[0]!, /timeline 2 accepted writes on 2 servers: pg\/1, pg\/2/);
});

test("the timeline check finds writes by the old primary after another unit's promotion", (t) => {
  const { units, acks } = cleanFailover();
  // Acknowledged by unit 0 on timeline 1 beyond the point where timeline 2 left it (and after seq 6 on 2).
  const late = ack(7, "10.0.0.10", 1, "0/3000300");
  const problems = checkOnePrimaryAtATime(units, [...acks, late]).problems;
  t.is(problems.length, 2, problems.join("\n"));
  t.regex(
    problems[0]!,
    /1 write\(s\) acknowledged on timeline 1 \(by pg\/0\) after timeline 2 had left it at 0\/3000158/,
  );
  t.regex(problems[1]!, /seq 7 was acknowledged on timeline 1 \(pg\/0\) after seq 6 on timeline 2 \(pg\/1\)/);
});

test("the timeline check finds two units running as primary", (t) => {
  const { units, acks } = cleanFailover();
  units[0]!.controlData = control(1, "in production");
  const problems = checkOnePrimaryAtATime(units, acks).problems;
  t.deepEqual(problems, ["2 units run as primary now: pg/0, pg/1"]);
});
