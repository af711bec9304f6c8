/**
 * The postgresql operator's safety parts on real sshd test hosts (one cluster shared by the checks, as
 * test/postgresql.test.ts does): TLS from a user secret in the `tls` config option (a certificate made
 * here with openssl; a client verifies the server with sslmode=verify-ca; standbys replicate over TLS; a
 * secret that is not PEM blocks the units with the reason; unset, ssl is off again); a backup taken on a
 * standby restored by the leader, which fetches it from that standby; the watchdog that stops a primary
 * cut off from the controller between hooks, which rejoins as a standby after the heal; and a client's
 * relation removed, after which its user and database are gone.
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TaskInfo } from "../api";
import { eventually } from "./harness/eventually";
import { CLIENT_APP, PG_APP, PgCluster } from "./harness/pg-cluster";
import type { PgAddress } from "./harness/pg-ledger";
import { PG_BIN, psqlAt } from "./harness/pg-server";
import { makeTestCertificates } from "./harness/test-certificates";

const root = process.getuid?.() === 0;
const ssh = root ? test.serial : test.skip; // namespaces and sshd need root

let cluster: PgCluster;
let tmp: string;
let su: { user: string; password: string; database: string };

test.before(async () => {
  if (!root) return;
  tmp = await mkdtemp(join(tmpdir(), "pg-safe-"));
  cluster = await PgCluster.start();
  su = {
    user: "operator",
    password: String((await cluster.leaderAction("get-password", { username: "operator" })).results.password),
    database: "postgres",
  };
});
test.after.always(async () => {
  await cluster?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

const M = () => cluster.model;
const admin = () => cluster.tc.admin;

const sql = psqlAt;

const action = async (unit: string, name: string, params: Record<string, string> = {}): Promise<TaskInfo> => {
  const r = await admin().runAction(M(), [unit], name, params);
  const id = r.tasks[0]!.id;
  return eventually(
    `${name} on ${unit}`,
    async () => {
      const task = await admin().task(M(), id);
      return task.status !== "pending" && task.status !== "running" ? task : undefined;
    },
    300_000,
    250,
  );
};

/** The client's files in its unit data directory, read on its host. */
const clientFile = async (name: string): Promise<string> =>
  (await cluster.clientHost.exec(`cat /var/lib/steward/agents/*/units/${CLIENT_APP}-0/data/${name}`)).stdout;

const messages = async (): Promise<string[]> =>
  (await cluster.pgUnits()).map((u) => `${u.name} ${u.workload.current} ${u.workload.message}`);

ssh(
  "tls: a secret's certificate turns ssl on; a client verifies it (verify-ca); a bad secret blocks; unset turns it off",
  async (t) => {
    t.timeout(900_000);
    const certs = await makeTestCertificates(tmp);
    const good = await admin().addSecret(M(), "pg-tls", {
      certificate: certs.certPem,
      "private-key": certs.keyPem,
      "ca-certificate": certs.caPem,
    });
    await admin().grantSecret(M(), good.uri, [PG_APP]);
    const t0 = Date.now();
    await admin().updateApplication(M(), PG_APP, { config: { tls: good.uri } });

    // The client is told (tls "true" and the CA) and writes sslmode=verify-ca into its service file.
    await eventually(
      "the client's pg_service.conf with sslmode=verify-ca",
      async () => /sslmode=verify-ca/.test(await clientFile("pg_service.conf")),
      120_000,
      500,
    );
    t.is((await clientFile("ca.crt")).trim(), certs.caPem.trim(), "the client holds the server's CA");
    t.log(`tls set → the client's service file says verify-ca after ${Date.now() - t0} ms`);
    const addr: PgAddress = await cluster.address();
    const verify = `sslmode=verify-ca sslrootcert=${certs.caFile}`;
    t.deepEqual(
      await eventually(
        "a verify-ca connection",
        () => sql(addr, addr, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", verify),
        60_000,
        500,
      ),
      ["t"],
      "the client's connection is TLS, the server's certificate verified by the CA",
    );
    // Standbys replicate over TLS once they followed the new primary_conninfo (a reload restarts the WAL receiver).
    await eventually(
      "both standbys streaming over TLS",
      async () =>
        (
          await sql(
            addr,
            su,
            "SELECT count(*) FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid) WHERE s.ssl AND r.state = 'streaming'",
          )
        )[0] === "2",
      120_000,
      500,
    );
    for (const h of cluster.pgHosts) {
      const key = await h.exec("stat -c '%a %U' /srv/postgresql/tls/server.key");
      t.is(key.stdout.trim(), "600 postgres", `the key on ${h.ip} is postgres's, 0600, outside the data directory`);
    }

    // A secret that is not PEM: every unit blocked with the reason; the certificate in use stays.
    const bad = await admin().addSecret(M(), "pg-tls-bad", {
      certificate: "not a certificate",
      "private-key": "nor a key",
    });
    await admin().grantSecret(M(), bad.uri, [PG_APP]);
    await admin().updateApplication(M(), PG_APP, { config: { tls: bad.uri } });
    const blocked = await eventually(
      "every unit blocked on the tls secret",
      async () => {
        const m = await messages();
        return m.length === 3 && m.every((x) => / blocked tls: secret /.test(x)) ? m : undefined;
      },
      120_000,
      500,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}: ${(await messages()).join("; ")}`);
    });
    t.regex(blocked[0]!, /its certificate is not a PEM X\.509 certificate/);
    t.deepEqual(await sql(addr, addr, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", verify), ["t"]);

    // Unset: ssl off, the client back to libpq's default.
    await admin().updateApplication(M(), PG_APP, { config: { tls: null } });
    await cluster.allActive();
    await eventually(
      "the client's pg_service.conf without sslmode",
      async () => !/sslmode/.test(await clientFile("pg_service.conf")),
      120_000,
      500,
    );
    await eventually("ssl off on the primary", async () => (await sql(addr, su, "SHOW ssl"))[0] === "off", 60_000, 500);
    const refused = await sql(addr, addr, "SELECT 1", verify).catch((e: Error) => e);
    t.true(refused instanceof Error, "a verify-ca client is refused once the server takes no TLS");
  },
);

ssh(
  "restore on the leader of a backup taken on a standby: fetched from it, data back to the backup point",
  async (t) => {
    t.timeout(900_000);
    const addr = await cluster.address();
    await sql(addr, addr, "CREATE TABLE IF NOT EXISTS kept (id int PRIMARY KEY)");
    await sql(addr, addr, "INSERT INTO kept SELECT g FROM generate_series(1, 100) g ON CONFLICT DO NOTHING");
    const standby = await cluster.standby();
    // The standby has every commit (synchronous to ANY 1: wait until it applied them).
    await eventually(
      `the rows on ${standby.unit}`,
      async () => (await sql({ ...addr, host: standby.host.ip }, addr, "SELECT count(*) FROM kept"))[0] === "100",
      60_000,
      500,
    );
    const backup = await action(standby.unit, "backup");
    t.is(backup.status, "completed", `${backup.message}: ${backup.output}`);
    const id = String(backup.results.id);
    await sql(addr, addr, "INSERT INTO kept VALUES (1000)");
    const leader = (await cluster.primary()).unit;
    t.not(leader, standby.unit);
    const t0 = Date.now();
    const restored = await action(`${PG_APP}/leader`, "restore", { backup: id });
    t.is(restored.status, "completed", `${restored.message}: ${restored.output}`);
    t.is(restored.results["fetched-from"], standby.unit, "the leader fetched it from the standby that took it");
    t.log(
      `restore of ${id} from ${standby.unit} on ${leader}: ${restored.results["fetched-bytes"]} bytes fetched, ${Date.now() - t0} ms`,
    );
    await cluster.allActive();
    const at = await cluster.address();
    t.deepEqual(
      await sql(at, addr, "SELECT count(*), max(id) FROM kept"),
      ["100|100"],
      "the row written after the backup is gone",
    );
    await cluster.allStreaming(at);
  },
);

ssh(
  "watchdog: a primary cut off from the controller stops taking writes with no hook there, and rejoins as a standby",
  async (t) => {
    t.timeout(900_000);
    const old = await cluster.primary();
    const at = await cluster.address();
    t.is(at.host, old.host.ip);
    await eventually(
      "the watchdog running on the primary",
      async () => (await old.host.exec("kill -0 $(cat /srv/postgresql/watchdog.pid)")).code === 0,
      30_000,
      500,
    );
    const t0 = Date.now();
    await old.host.cut();
    // Nothing reaches it: look from inside the host.
    const stopped = await eventually(
      "the watchdog stopped the cut-off primary",
      async () => {
        const r = await old.host.exec("grep 'stopped the primary' /srv/postgresql/watchdog.log");
        return r.code === 0 ? r.stdout.trim() : undefined;
      },
      60_000,
      250,
    );
    const stoppedMs = Date.now() - t0;
    t.regex(stopped, /is-leader answered false|no is-leader answer/);
    // A fast shutdown refuses new connections and ends sessions at once (its postmaster may linger
    // while its walsenders try to reach standbys it cannot, until the watchdog makes it immediate).
    const refused = await eventually(
      "the old primary refusing connections",
      async () => {
        const r = await old.host.exec(
          `runuser -u postgres -- ${PG_BIN}/psql -h /srv/postgresql/run -XAtq -c 'SELECT 1' postgres 2>&1`,
        );
        return r.code !== 0 ? r.stdout.trim() : undefined;
      },
      5_000,
      100,
    );
    t.log(`the old primary's answer to a new session: ${refused}`);
    await eventually(
      "its server gone",
      async () => (await old.host.exec("test -e /srv/postgresql/data/postmaster.pid")).code !== 0,
      60_000,
      250,
    );
    t.log(`primary ${old.unit} cut off: stopped by its watchdog ${stoppedMs} ms later (${stopped})`);
    const next = await eventually(
      "another unit primary",
      async () => {
        const p = await cluster.primary().catch(() => undefined);
        return p && p.unit !== old.unit ? p : undefined;
      },
      240_000,
      500,
    );
    await old.host.restore();
    await cluster.allActive();
    const now = await eventually(
      "the client following the new primary",
      async () => {
        const a = await cluster.address();
        return a.host === next.host.ip ? a : undefined;
      },
      120_000,
      500,
    );
    await cluster.allStreaming(now);
    const was = (await cluster.pgUnits()).find((u) => u.name === old.unit)!;
    t.regex(was.workload.message, /^standby/, `${old.unit} rejoined as a standby`);
  },
);

ssh("the client's relation removed: its user and database are dropped", async (t) => {
  t.timeout(600_000);
  const addr = await cluster.address();
  const primary = await cluster.primary();
  const at = { host: primary.host.ip, port: addr.port };
  t.deepEqual(await sql(at, su, `SELECT count(*) FROM pg_roles WHERE rolname = '${addr.user}'`), ["1"]);
  await admin().removeIntegration(M(), `${CLIENT_APP}:database`, `${PG_APP}:database`);
  await eventually(
    `${addr.user} and ${addr.database} dropped`,
    async () =>
      (
        await sql(
          at,
          su,
          `SELECT (SELECT count(*) FROM pg_roles WHERE rolname = '${addr.user}') + (SELECT count(*) FROM pg_database WHERE datname = '${addr.database}')`,
        )
      )[0] === "0",
    120_000,
    500,
  );
  t.deepEqual(
    await sql(at, su, "SELECT count(*) FROM pg_database WHERE datname = 'postgres'"),
    ["1"],
    "the cluster's own database stays",
  );
  const login = await sql(at, addr, "SELECT 1").catch((e: Error) => e);
  t.true(login instanceof Error, "the client's user cannot log in");
});
