/**
 * The postgresql operator (issue 34) on real sshd test hosts with a real controller, real agents and
 * real PostgreSQL 15: three units reach active (one primary, two synchronous standbys); the
 * postgresql-client operator gets a database, a user and its password (a secret), and can write and read; a
 * row written on the primary is on both standbys, which refuse writes. Killing the primary's host
 * makes another unit primary with every committed row, and the client's db.json follows it; the old
 * primary's host comes back and it rejoins as a standby (pg_rewind). get-password reads the secret.
 * A switchover to a named unit (leader-resign) runs when the agent has that tool.
 */
import test from "ava";
import { join } from "node:path";
import type { ControllerClient, TaskInfo, UnitStatusView } from "../api";
import { readOperatorDir } from "../api";
import { eventually } from "./harness/eventually";
import type { ClientDbJson } from "./harness/pg-units";
import { dbJsonWithStandbys, primaryAndStandbys, workloadMessages } from "./harness/pg-units";
import { hostAndPort as endpoint, psqlAt as sql } from "./harness/pg-server";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";
import type { TestHost } from "./harness/hosts";
import { TestLab, sshMachineStarted } from "./harness/hosts";

const root = process.getuid?.() === 0;
const ssh = root ? test.serial : test.skip; // namespaces and sshd need root
/** The application's unit-leadership lease: a lost primary's leadership is claimable 10 s after its last renewal. */
const LEASE_S = 10;

let lab: TestLab;
let tc: TestController;
let client: ControllerClient;
const M = "pg";
/** Unit name -> test host. */
const hostOf = new Map<string, TestHost>();

test.before(async () => {
  if (!root) return;
  lab = await TestLab.create(4);
  tc = await startTestController({ listenHost: `${lab.subnet}.1` });
  client = tc.admin;
  await client.createModel(M, { updateStatusInterval: 5 }, "ssh");
});
test.after.always(async () => {
  await tc?.close();
  await lab?.close();
});

const installed = (h: TestHost): Promise<string> => sshMachineStarted(client, M, h);
const unitsOf = async (app: string): Promise<Record<string, UnitStatusView>> =>
  (await client.status(M)).applications[app]?.units ?? {};
/** The pg units' workload messages, by unit. */
const messages = async (): Promise<Record<string, string>> => workloadMessages(await unitsOf("pg"));
/** Waits for one active primary (`want`, when given) and `standbys` active standbys (among units not in `except`); the primary's name. */
const cluster = (standbys: number, timeoutMs = 300_000, except: string[] = [], want?: string): Promise<string> =>
  primaryAndStandbys({ messages, logs: serverLogs, standbys, timeoutMs, except, ...(want ? { want } : {}) });

/** The end of every unit's server log and what its last rejoin did, for a failure's message. */
const serverLogs = async (): Promise<string> =>
  (
    await Promise.all(
      [...hostOf].map(
        async ([u, h]) =>
          `${u}: ${(await h.exec("tail -n 15 /srv/postgresql/postgresql.log; cat /srv/postgresql/rejoin.log")).stdout}`,
      ),
    )
  ).join("\n");

/** The client's db.json, read on its host. */
async function dbJson(): Promise<ClientDbJson | undefined> {
  const h = lab.hosts[3]!;
  const r = await h.exec("cat $(find /var/lib/steward -name db.json -path '*/units/app-0/*' 2>/dev/null | head -n 1)");
  return r.code === 0 && r.stdout.trim() ? (JSON.parse(r.stdout) as ClientDbJson) : undefined;
}

/** Waits until the client's db.json names `unit`'s address (the relation data followed a new primary). */
const dbJsonNaming = (unit: string, what: string, timeoutMs = 60_000): Promise<ClientDbJson> =>
  eventually(
    `the client's db.json names ${what}`,
    async () => {
      const c = await dbJson();
      return c && c.host === addressOf(unit) ? c : undefined;
    },
    timeoutMs,
    250,
  );

const waitTask = (id: number, timeoutMs = 120_000): Promise<TaskInfo> =>
  eventually(
    `task ${id} finished`,
    async () => {
      const task = await client.task(M, id);
      return task.status !== "pending" && task.status !== "running" ? task : undefined;
    },
    timeoutMs,
    250,
  );
const action = async (unit: string, name: string, params: Record<string, string> = {}): Promise<TaskInfo> => {
  const r = await client.runAction(M, [unit], name, params);
  return waitTask(r.tasks[0]!.id);
};

/** Whether `unit`'s address is the one in an endpoint. */
const addressOf = (unit: string) => hostOf.get(unit)!.ip;

let primary = "";
let creds: ClientDbJson;
const committed: number[] = [];

ssh(
  "three units: a primary and two synchronous standbys; the client gets a database and can write and read",
  async (t) => {
    t.timeout(900_000);
    const machines = await Promise.all(
      lab.hosts.map(async (h) => {
        await client.addSshMachine(M, lab.sshTarget(h));
        return installed(h);
      }),
    );
    const pg = await readOperatorDir(join(operatorsDir, "postgresql"));
    const pgClient = await readOperatorDir(join(operatorsDir, "postgresql-client"));
    await client.uploadOperator(pg.bundle);
    await client.uploadOperator(pgClient.bundle);
    const t0 = Date.now();
    await client.deploy(M, {
      name: "pg",
      operator: pg.hash,
      units: 3,
      to: machines.slice(0, 3),
      leadershipLease: LEASE_S,
    });
    await client.deploy(M, { name: "app", operator: pgClient.hash, units: 1, to: [machines[3]!] });
    await client.integrate(M, "app", "pg");
    for (const [u, s] of Object.entries(await unitsOf("pg"))) hostOf.set(u, lab.hosts[machines.indexOf(s.machine!)]!);
    primary = await cluster(2);
    t.log(`deploy to 1 primary + 2 streaming standbys: ${Date.now() - t0} ms; primary ${primary}`);

    // Both standbys are read-only endpoints once they stream (the leader republishes as they do).
    creds = await dbJsonWithStandbys(dbJson, 2);
    t.is(creds.database, "app");
    t.is(creds.host, addressOf(primary), "the client is given the primary's address");
    t.is(creds.readOnly.length, 2, "and both standbys' as read-only endpoints");
    t.regex(creds.user, /^relation_\d+$/);
    // Synchronous: ANY 1 of the two standbys.
    const operator = await action(`pg/leader`, "get-password", { username: "operator" });
    t.is(operator.status, "completed", operator.message);
    const su = { user: "operator", password: String(operator.results.password), database: "postgres" };
    t.true(su.password.length >= 24);
    const sync = await sql(creds, su, "SHOW synchronous_standby_names");
    t.regex(sync[0]!, /^ANY 1 \("pg_\d", "pg_\d"\)$/);
    t.deepEqual(
      await sql(creds, su, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"),
      ["2"],
      "two standbys stream",
    );
    // A password nobody may read through the action.
    const refused = await client
      .runAction(M, ["pg/leader"], "get-password", { username: "relation_1" })
      .catch((e: Error) => e);
    t.true(refused instanceof Error, "get-password takes only the cluster's own users");
    // Roles get SCRAM verifiers, so no server log can show a password, whatever it logs.
    for (const [u, h] of hostOf) {
      const log = (await h.exec("cat /srv/postgresql/postgresql.log")).stdout;
      for (const secret of [su.password, creds.password])
        t.false(log.includes(secret), `${u}'s server log holds no password`);
    }

    await sql(creds, creds, "CREATE TABLE ledger (id int PRIMARY KEY, note text)");
    for (let i = 1; i <= 20; i++) {
      await sql(creds, creds, `INSERT INTO ledger VALUES (${i}, 'row ${i}')`);
      committed.push(i);
    }
    t.deepEqual(await sql(creds, creds, "SELECT count(*) FROM ledger"), ["20"]);

    // Every committed row reaches both standbys, which refuse writes.
    for (const ro of creds.readOnly) {
      const at = endpoint(ro);
      await eventually(
        `rows on ${ro}`,
        async () => (await sql(at, creds, "SELECT count(*) FROM ledger"))[0] === "20",
        30_000,
      );
      const write = await sql(at, creds, "INSERT INTO ledger VALUES (999, 'no')").catch((e: Error) => e);
      t.true(write instanceof Error, `${ro} refuses a write`);
      t.regex(String((write as Error).message), /read-only transaction/);
    }
  },
);

ssh(
  "the primary's host killed: another unit becomes primary with every committed row; the client follows",
  async (t) => {
    t.timeout(900_000);
    if (!primary) return t.fail("no cluster from the first test");
    const old = primary;
    const oldHost = hostOf.get(old)!;
    const t0 = Date.now();
    await oldHost.kill();
    primary = await cluster(1, 240_000, [old]);
    const promoted = Date.now() - t0;
    t.not(primary, old);
    const moved = await dbJsonNaming(primary, "the new primary", 120_000);
    const followed = Date.now() - t0;
    await eventually(
      "writes accepted on the new primary",
      async () => {
        await sql(moved, moved, `INSERT INTO ledger VALUES (${committed.length + 1}, 'after failover')`);
        committed.push(committed.length + 1);
        return true;
      },
      60_000,
      250,
    );
    t.log(
      `primary ${old} killed: ${primary} active primary after ${promoted} ms, client's db.json after ${followed} ms, writes after ${Date.now() - t0} ms`,
    );
    const trace = await hostOf
      .get(primary)!
      .exec(`grep -h -E 'leader-elected|promoted|failover' /var/lib/steward/agents/*/agent.log | cut -c1-300`);
    t.log(`the new primary's agent:\n${trace.stdout.trim()}`);
    const rows = (await sql(moved, moved, "SELECT id FROM ledger ORDER BY id")).map(Number);
    t.deepEqual(rows, committed, "every committed row is on the new primary");

    // The old primary's host comes back: it rejoins as a standby of the new primary (pg_rewind).
    await oldHost.start();
    await cluster(2, 300_000);
    const again = await cluster(2, 10_000);
    t.is(again, primary, "the primary stays");
    const back = { host: oldHost.ip, port: 5432 };
    await eventually(
      `every row on the old primary ${old}`,
      async () => (await sql(back, moved, "SELECT count(*) FROM ledger"))[0] === String(committed.length),
      60_000,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}\n${await serverLogs()}`);
    });
    const rejoined = (await oldHost.exec("cat /srv/postgresql/rejoin.log")).stdout;
    t.regex(rejoined, /pg_rewind: .*Done!/, "rewound (its crash recovery wrote past the new timeline's fork)");
    t.log(rejoined.trim());
    const write = await sql(back, moved, "INSERT INTO ledger VALUES (1000, 'no')").catch((e: Error) => e);
    t.true(write instanceof Error, "the old primary, now a standby, refuses writes");
  },
);

ssh("backup, then restore: the primary goes back to the backup and the standbys clone it again", async (t) => {
  t.timeout(600_000);
  if (!primary) return t.fail("no cluster from the first tests");
  const backup = await action("pg/leader", "backup");
  t.is(backup.status, "completed", `${backup.message}: ${backup.output}`);
  const id = String(backup.results.id);
  t.regex(id, /^\d{8}T\d{6}Z$/);
  const before = committed.length;
  await sql(
    creds.host === addressOf(primary) ? creds : (await dbJson())!,
    creds,
    "INSERT INTO ledger VALUES (5000, 'after the backup')",
  );
  const restored = await action("pg/leader", "restore", { backup: id });
  t.is(restored.status, "completed", `${restored.message}: ${restored.output}`);
  await cluster(2, 300_000);
  const at = (await dbJson())!;
  t.deepEqual(
    (await sql(at, creds, "SELECT count(*), max(id) FROM ledger"))[0],
    `${before}|${before}`,
    "the row written after the backup is gone",
  );
  for (const ro of at.readOnly)
    await eventually(
      `${ro} cloned the restored primary`,
      async () => (await sql(endpoint(ro), creds, "SELECT count(*) FROM ledger"))[0] === String(before),
      60_000,
    );
  const missing = await client.runAction(M, ["pg/leader"], "restore", { backup: "20000101T000000Z" });
  const refused = await waitTask(missing.tasks[0]!.id);
  t.is(refused.status, "failed");
  t.regex(refused.message, /no backup 20000101T000000Z/);
});

ssh(
  "switchover to a named standby: it becomes primary without losing a commit; the old primary follows it",
  async (t) => {
    t.timeout(600_000);
    if (!primary) return t.fail("no cluster from the first tests");
    const to = [...hostOf.keys()].find((u) => u !== primary)!;
    const at = (await dbJson())!;
    await sql(at, creds, "INSERT INTO ledger VALUES (6000, 'before the switchover')");
    // Writes on the target, tried all along: how long no primary took them.
    const target = { host: addressOf(to), port: 5432 };
    const t0 = Date.now();
    const queued = await client.runAction(M, ["pg/leader"], "switchover", { to });
    const accepted = eventually(
      "writes accepted on the target",
      () => sql(target, creds, "INSERT INTO ledger VALUES (6001, 'on the target')").then(() => Date.now()),
      120_000,
      50,
    );
    const done = await waitTask(queued.tasks[0]!.id);
    t.is(done.status, "completed", `${done.message}: ${done.output}`);
    t.log(
      `switchover to ${to}: the old primary stopped ${done.results["stopped-ms"]} ms before it handed over; ` +
        `writes accepted on the target ${(await accepted) - t0} ms after the action was queued`,
    );
    t.is(await cluster(2, 120_000, [], to), to);
    const moved = await dbJsonNaming(to, "the target");
    t.deepEqual(await sql(moved, creds, "SELECT note FROM ledger WHERE id IN (6000, 6001) ORDER BY id"), [
      "before the switchover",
      "on the target",
    ]);
    primary = to;
  },
);

ssh(
  "the primary and a standby lost at once: the last standby is blocked, not promoted, until it can learn the lost standby's position",
  async (t) => {
    t.timeout(900_000);
    if (!primary) return t.fail("no cluster from the first tests");
    const lostPrimary = primary;
    const [lostStandby, last] = [...hostOf.keys()].filter((u) => u !== primary) as [string, string];
    // Both standbys synchronous candidates first (a unit that rejoined is added once it streams).
    const pw = await action("pg/leader", "get-password", { username: "operator" });
    const su = { user: "operator", password: String(pw.results.password), database: "postgres" };
    await eventually(
      "both standbys in synchronous_standby_names",
      async () =>
        /^ANY 1 \("pg_\d", "pg_\d"\)$/.test(
          (await sql({ host: addressOf(primary), port: 5432 }, su, "SHOW synchronous_standby_names"))[0] ?? "",
        ),
      60_000,
      500,
    );
    await Promise.all([hostOf.get(lostPrimary)!.kill(), hostOf.get(lostStandby)!.kill()]);
    // ANY 1 of two standbys: the one lost may hold a commit the last one lacks, so the last must not promote.
    const held = await eventually(
      `${last} blocked`,
      async () => {
        const m = (await messages())[last] ?? "";
        return m.startsWith("blocked failover held") ? m : undefined;
      },
      120_000,
      250,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}; units: ${JSON.stringify(await messages())}`);
    });
    t.regex(held, new RegExp(`the positions of ${lostStandby} are unknown`));
    t.deepEqual(
      await sql({ host: addressOf(last), port: 5432 }, creds, "SELECT pg_is_in_recovery()"),
      ["t"],
      `${last} is still a standby`,
    );
    // The lost standby comes back: its position is known, the last unit promotes; then the old primary rejoins.
    await hostOf.get(lostStandby)!.start();
    t.is(await cluster(1, 240_000, [lostPrimary], last), last);
    await hostOf.get(lostPrimary)!.start();
    t.is(await cluster(2, 300_000, [], last), last);
    const at = await dbJsonNaming(last, "it");
    t.deepEqual(await sql(at, creds, "SELECT note FROM ledger WHERE id = 6001"), ["on the target"], "no commit lost");
    primary = last;
  },
);

ssh("a setting only a restart applies (max-connections) reaches every unit by a rolling restart", async (t) => {
  t.timeout(600_000);
  if (!primary) return t.fail("no cluster from the first tests");
  await client.updateApplication(M, "pg", { config: { "max-connections": 120 } });
  for (const u of hostOf.keys())
    await eventually(
      `${u} restarted with max_connections 120`,
      async () => (await sql({ host: addressOf(u), port: 5432 }, creds, "SHOW max_connections"))[0] === "120",
      120_000,
      500,
    );
  // The primary restarts last, after a switchover (test/postgresql-rolling.test.ts checks the order).
  const now = await cluster(2, 180_000);
  t.not(now, primary, "the primary switched over before it restarted");
  const at = await dbJsonNaming(now, "the new primary");
  await sql(at, creds, "INSERT INTO ledger VALUES (7000, 'after the restart')");
  t.deepEqual(await sql(at, creds, "SELECT note FROM ledger WHERE id = 7000"), ["after the restart"]);
});
