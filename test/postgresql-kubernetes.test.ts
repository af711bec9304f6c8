/**
 * The postgresql operator (issue 34) on a Kubernetes model: the FAKE API server and FAKE process
 * kubelet with a real controller, real agents and supervisors, and real PostgreSQL 15. The
 * operator's `postgresql` container (image postgres:15-bookworm) runs, in the fake kubelet, this
 * machine's /usr/lib/postgresql/15 programs: the supervisor is its entrypoint, and the operator
 * runs every PostgreSQL program there through container-exec and the server as the supervisor's
 * service, as postgres. Three units reach one primary and two streaming standbys; the
 * postgresql-client application gets its credentials; a row written on the primary (on its pod's
 * address) is read on a standby. Then the primary's pod is deleted and its replacement held back
 * (its agent image cannot be pulled) until a standby has been promoted: writes are accepted again,
 * the committed row is there, and the replacement pod, let go, rejoins as a standby. The storage is
 * mounted read-only in the agent's container (a harness option of the fake kubelet): on a real
 * cluster the agent runs as another user than postgres, so the operator must read and write it only
 * in the postgresql container. Last, the backup
 * and restore actions, whose files are the workload container's: the leader restores its own backup,
 * then one a standby took, which it fetches from that standby's server; each time a row written
 * after the backup is gone and the standbys clone the restored primary again.
 */
import test from "ava";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { UnitStatusView } from "../api";
import { kubernetes } from "../substrates";
import { operatorsDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import type { ClientDbJson } from "./harness/pg-units";
import { dbJsonWithStandbys, finishedAction, primaryAndStandbys, workloadMessages } from "./harness/pg-units";
import { hostAndPort as endpoint, psqlAt as sql } from "./harness/pg-server";
import type { KubeLab } from "./harness/kube/lab";
import { startKubeLab } from "./harness/kube/lab";
import { makeTestCertificates } from "./harness/test-certificates";

const R = kubernetes.KUBE_RESOURCES;
const { AGENT_CONTAINER } = kubernetes;
/** The pgdata storage's location (operator.yaml), in both containers. */
const STORAGE = "/srv/postgresql";
const BIN = "/usr/lib/postgresql/15/bin";
const root = process.getuid?.() === 0;
const kube = root ? test.serial : test.skip; // network namespaces and runuser need root
const M = "pgk";
/** The application's unit-leadership lease. */
const LEASE_S = 10;

let lab: KubeLab;
test.before(async () => {
  if (!root) return;
  // The official image's entrypoint (docker-entrypoint.sh) is never run: the supervisor replaces it.
  lab = await startKubeLab({
    images: { postgres: { entrypoint: [`${BIN}/postgres`] } },
    // As on a cluster where the agent's user (10001) may not write the postgres-owned storage: every
    // write there goes through the postgresql container, or the test fails.
    readOnlyMounts: [{ container: AGENT_CONTAINER, mountPath: STORAGE }],
  });
});
test.after.always(async () => {
  await lab?.close();
});

const unitsOf = async (app: string): Promise<Record<string, UnitStatusView>> =>
  (await lab.tc.admin.status(M)).applications[app]?.units ?? {};
const messages = async (): Promise<Record<string, string>> => workloadMessages(await unitsOf("pg"));
const podOf = (unit: string): string => unit.replace("/", "-");

/** The end of every unit's server log (in its postgresql container), for a failure's message. */
const serverLogs = async (): Promise<string> =>
  (
    await Promise.all(
      [0, 1, 2].map(async (n) => {
        const r = await lab.kubelet.exec(M, `pg-${n}`, "postgresql", [
          "sh",
          "-c",
          "tail -n 15 /srv/postgresql/postgresql.log; cat /srv/postgresql/rejoin.log 2>/dev/null",
        ]);
        return `pg/${n}: ${r.stdout}${r.stderr}`;
      }),
    )
  ).join("\n");

/** Waits for one active primary and `standbys` streaming standbys (among units not in `except`); the primary. */
const cluster = (standbys: number, timeoutMs: number, except: string[] = []): Promise<string> =>
  primaryAndStandbys({ messages, logs: serverLogs, standbys, timeoutMs, except });

/** The client's db.json, read in its pod's agent container. */
async function dbJson(): Promise<ClientDbJson | undefined> {
  const r = await lab.kubelet.exec(M, "app-0", "steward-agent", [
    "sh",
    "-c",
    "cat $(find /var/lib/steward/agent -name db.json -path '*app-0*' 2>/dev/null | head -n 1)",
  ]);
  return r.code === 0 && r.stdout.trim() ? (JSON.parse(r.stdout) as ClientDbJson) : undefined;
}

const podIp = async (pod: string): Promise<string | undefined> =>
  (await lab.kube.get(R.pods, pod, { namespace: M })).status?.podIP;

let primary = "";
let creds: ClientDbJson;

kube(
  "three units in postgresql containers: a primary and two streaming standbys; the client's row is read on a standby",
  async (t) => {
    t.timeout(600_000);
    const { tc } = lab;
    await tc.admin.createModel(M, { updateStatusInterval: 5 }, "kubernetes", { credential: "lab" });
    const pg = await tc.upload(join(operatorsDir, "postgresql"));
    const client = await tc.upload(join(operatorsDir, "postgresql-client"));
    const t0 = Date.now();
    await tc.admin.deploy(M, { name: "pg", operator: pg, units: 3, leadershipLease: LEASE_S });
    await tc.admin.deploy(M, { name: "app", operator: client, units: 1 });
    await tc.admin.integrate(M, "app", "pg");
    primary = await cluster(2, 300_000);
    t.log(`deploy to 1 primary + 2 streaming standbys: ${Date.now() - t0} ms; primary ${primary}`);

    const set = await lab.kube.get(R.statefulSets, "pg", { namespace: M });
    const pgContainer = set.spec!.template.spec!.containers.find((c) => c.name === "postgresql");
    t.is(pgContainer?.image, "postgres:15-bookworm");
    t.true(
      ((pgContainer?.volumeMounts ?? []) as { mountPath: string }[]).some((m) => m.mountPath === "/srv/postgresql"),
      "the pgdata storage is mounted in the postgresql container",
    );
    // The agent's container reads the storage but cannot write it: everything the operator wrote
    // there went through the postgresql container.
    const probe = await lab.kubelet.exec(M, podOf(primary), AGENT_CONTAINER, ["touch", `${STORAGE}/agent-probe`]);
    t.regex(probe.stderr, /Read-only file system/, `the agent's container wrote the storage: ${probe.code}`);
    // The server is the supervisor's service in the workload container, running as postgres.
    const ps = await lab.kubelet.exec(M, podOf(primary), "postgresql", ["ps", "-o", "user=,args=", "-C", "postgres"]);
    t.regex(ps.stdout, /^postgres\s+\S*postgres -D \/srv\/postgresql\/data/m, ps.stdout + ps.stderr);

    creds = await dbJsonWithStandbys(dbJson, 2);
    t.is(creds.host, (await podIp(podOf(primary))) ?? "(no pod IP)", "the client is given the primary's pod address");
    t.is(creds.database, "app");

    await sql(creds, creds, "CREATE TABLE ledger (id int PRIMARY KEY, note text)");
    await sql(creds, creds, "INSERT INTO ledger VALUES (1, 'before the failover')");
    const ro = endpoint(creds.readOnly[0]!);
    const seen = await eventually(
      `the row on the standby at ${creds.readOnly[0]}`,
      async () => {
        const rows = await sql(ro, creds, "SELECT note FROM ledger WHERE id = 1").catch(() => []);
        return rows.length ? rows : undefined;
      },
      30_000,
    );
    t.deepEqual(seen, ["before the failover"]);
    const write = await sql(ro, creds, "INSERT INTO ledger VALUES (2, 'no')").catch((e: Error) => e);
    t.regex(
      String(write instanceof Error ? write.message : write),
      /read-only transaction/,
      "a standby refuses writes",
    );
  },
);

kube(
  "the primary's pod deleted: a standby is promoted with the committed row; the recreated pod rejoins as a standby",
  async (t) => {
    t.timeout(600_000);
    if (!primary) return t.fail("no cluster from the first test");
    const old = primary;
    const oldPod = podOf(old);
    const set = await lab.kube.get(R.statefulSets, "pg", { namespace: M });
    // The replacement pod waits for its agent image (init container) until a standby has taken over:
    // else its agent could be back within the lease and keep the leadership.
    const agentImage = set.spec!.template.spec!.initContainers![0]!.image!;
    const release = lab.kubelet.withholdImage(agentImage);
    const t0 = Date.now();
    try {
      await lab.kube.delete(R.pods, oldPod, { namespace: M });
      primary = await cluster(1, 240_000, [old]);
    } finally {
      release();
    }
    const promoted = Date.now() - t0;
    t.not(primary, old, "another unit is the primary");
    const moved = await eventually(
      "the client's db.json names the new primary",
      async () => {
        const c = await dbJson();
        return c && c.host === (await podIp(podOf(primary))) ? c : undefined;
      },
      120_000,
      500,
    );
    await eventually(
      "writes accepted on the new primary",
      () => sql(moved, moved, "INSERT INTO ledger VALUES (2, 'after the failover')").then(() => true),
      60_000,
      500,
    );
    const writable = Date.now() - t0;
    t.deepEqual(await sql(moved, moved, "SELECT id, note FROM ledger ORDER BY id"), [
      "1|before the failover",
      "2|after the failover",
    ]);

    const back = await cluster(2, 300_000);
    const rejoined = Date.now() - t0;
    t.is(back, primary, "the primary stays where it moved");
    const oldIp = await podIp(oldPod);
    const again = await eventually(
      `both rows on ${old}, a standby again`,
      async () => {
        const rows = await sql({ host: oldIp!, port: 5432 }, moved, "SELECT count(*) FROM ledger").catch(() => []);
        return rows[0] === "2" ? rows : undefined;
      },
      60_000,
      500,
    );
    t.deepEqual(again, ["2"]);
    const rejoin = await lab.kubelet.exec(M, oldPod, "postgresql", ["cat", "/srv/postgresql/rejoin.log"]);
    t.regex(rejoin.stdout, /pg_rewind/, `${old} rejoined through pg_rewind: ${rejoin.stdout}${rejoin.stderr}`);
    t.log(
      `pod of ${old} deleted: ${primary} primary after ${promoted} ms, writes accepted after ${writable} ms, ${old} streaming again after ${rejoined} ms`,
    );
  },
);

const action = (unit: string, name: string, params: Record<string, string> = {}) =>
  finishedAction(lab.tc.admin, M, unit, name, params);

/** The ledger's rows on the primary, then on every standby once each has cloned the restored primary. */
async function ledgerEverywhere(): Promise<string[]> {
  await cluster(2, 300_000);
  const at = await dbJsonWithStandbys(dbJson, 2);
  const rows = await sql(at, at, "SELECT id FROM ledger ORDER BY id");
  for (const ro of at.readOnly)
    await eventually(
      `${ro} has the restored primary's rows`,
      async () => {
        const seen = await sql(endpoint(ro), at, "SELECT id FROM ledger ORDER BY id").catch(() => []);
        return seen.join() === rows.join() ? seen : undefined;
      },
      120_000,
      500,
    );
  return rows;
}

kube("restore of the leader's own backup: the row written after it is gone, the standbys clone it again", async (t) => {
  t.timeout(900_000);
  if (!primary) return t.fail("no cluster from the first tests");
  const backup = await action("pg/leader", "backup");
  t.is(backup.status, "completed", `${backup.message}: ${backup.output}`);
  const id = String(backup.results.id);
  // Taken in the postgresql container, as postgres, on the unit's storage.
  const owned = await lab.kubelet.exec(M, podOf(primary), "postgresql", [
    "stat",
    "-c",
    "%U",
    `/srv/postgresql/backups/${id}`,
  ]);
  t.is(owned.stdout.trim(), "postgres", owned.stderr);
  const at = (await dbJson())!;
  await sql(at, at, "INSERT INTO ledger VALUES (3, 'after the backup')");
  const t0 = Date.now();
  const restored = await action("pg/leader", "restore", { backup: id });
  t.is(restored.status, "completed", `${restored.message}: ${restored.output}`);
  t.is(restored.results["fetched-from"], undefined, "the leader's own backup is not fetched");
  t.deepEqual(await ledgerEverywhere(), ["1", "2"], "the row written after the backup is gone");
  const data = await lab.kubelet.exec(M, podOf(primary), "postgresql", ["stat", "-c", "%U %a", "/srv/postgresql/data"]);
  t.is(data.stdout.trim(), "postgres 700", "the restored data directory is postgres's");
  t.log(`restore of ${id} on ${primary}, standbys cloned again: ${Date.now() - t0} ms`);

  const missing = await action("pg/leader", "restore", { backup: "20000101T000000Z" });
  t.is(missing.status, "failed");
  t.regex(missing.message, new RegExp(`no backup 20000101T000000Z .*has: .*${id}`));
});

kube("restore on the leader of a backup a standby took: fetched from its server into the leader's pod", async (t) => {
  t.timeout(900_000);
  if (!primary) return t.fail("no cluster from the first tests");
  const standby = Object.entries(await messages()).find(([, m]) => /^active standby/.test(m))?.[0];
  if (!standby) return t.fail(`no streaming standby: ${JSON.stringify(await messages())}`);
  const at = (await dbJson())!;
  await eventually(
    `the ledger's rows on ${standby}`,
    async () => {
      const ip = await podIp(podOf(standby));
      const rows = await sql({ host: ip!, port: 5432 }, at, "SELECT count(*) FROM ledger").catch(() => []);
      return rows[0] === "2" ? rows : undefined;
    },
    60_000,
    500,
  );
  const backup = await action(standby, "backup");
  t.is(backup.status, "completed", `${backup.message}: ${backup.output}`);
  const id = String(backup.results.id);
  await sql(at, at, "INSERT INTO ledger VALUES (4, 'after the standby backup')");
  const t0 = Date.now();
  const restored = await action("pg/leader", "restore", { backup: id });
  t.is(restored.status, "completed", `${restored.message}: ${restored.output}`);
  t.is(restored.results["fetched-from"], standby, "fetched from the standby that took it");
  // Every file of the backup arrived whole: the same files with the same content as the standby's.
  const sums = async (pod: string): Promise<string> =>
    (
      await lab.kubelet.exec(M, pod, "postgresql", [
        "sh",
        "-c",
        `cd /srv/postgresql/backups/${id} && find . -type f -exec sha256sum {} + | sort -k 2`,
      ])
    ).stdout;
  const theirs = await sums(podOf(standby));
  t.regex(theirs, /\.\/PG_VERSION\n/);
  t.is(await sums(podOf(primary)), theirs, "the fetched backup is the standby's, file for file");
  t.true(Number(restored.results["fetched-bytes"]) > 0);
  t.deepEqual(await ledgerEverywhere(), ["1", "2"], "the row written after the backup is gone");
  t.log(
    `restore of ${id} fetched from ${standby} on ${primary} (${String(restored.results["fetched-bytes"])} bytes), standbys cloned again: ${Date.now() - t0} ms`,
  );
});

/** SQL as postgres over the server's socket, in a unit's postgresql container. */
async function localSql(pod: string, query: string): Promise<string> {
  const r = await lab.kubelet.exec(M, pod, "postgresql", [
    "runuser",
    "-u",
    "postgres",
    "--",
    `${BIN}/psql`,
    "-h",
    "/srv/postgresql/run",
    "-XAtq",
    "-c",
    query,
    "postgres",
  ]);
  if (r.code !== 0) throw new Error(`psql in ${pod}: ${r.stderr}`);
  return r.stdout.trim();
}

kube(
  "tls on pods: the secret's certificate is written in the postgresql containers; the client verifies the primary, standbys stream over TLS; unset, ssl is off",
  async (t) => {
    t.timeout(900_000);
    if (!primary) return t.fail("no cluster from the first tests");
    const certs = await makeTestCertificates(await mkdtemp(join(tmpdir(), "pgk-tls-")));
    const { admin } = lab.tc;
    const secret = await admin.addSecret(M, "pg-tls", {
      certificate: certs.certPem,
      "private-key": certs.keyPem,
      "ca-certificate": certs.caPem,
    });
    await admin.grantSecret(M, secret.uri, ["pg"]);
    const t0 = Date.now();
    await admin.updateApplication(M, "pg", { config: { tls: secret.uri } });
    const at = await eventually(
      "the client's db.json with sslmode verify-ca",
      async () => {
        const c = await dbJson();
        return c?.sslmode === "verify-ca" ? c : undefined;
      },
      180_000,
      500,
    );
    const now = await cluster(2, 300_000);
    const verify = `sslmode=verify-ca sslrootcert=${certs.caFile}`;
    t.deepEqual(
      await eventually(
        "a verify-ca connection to the primary",
        () => sql(at, at, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", verify),
        60_000,
        500,
      ),
      ["t"],
    );
    await eventually(
      "both standbys streaming over TLS",
      async () =>
        (await localSql(
          podOf(now),
          "SELECT count(*) FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid) WHERE s.ssl AND r.state = 'streaming'",
        )) === "2",
      120_000,
      500,
    );
    for (const pod of ["pg-0", "pg-1", "pg-2"]) {
      const key = await lab.kubelet.exec(M, pod, "postgresql", [
        "stat",
        "-c",
        "%a %U",
        "/srv/postgresql/tls/server.key",
      ]);
      t.is(key.stdout.trim(), "600 postgres", `${pod}: ${key.stderr}`);
    }
    t.log(`tls set → verify-ca connections to the primary of 3 pods after ${Date.now() - t0} ms`);

    await admin.updateApplication(M, "pg", { config: { tls: null } });
    await eventually(
      "ssl off on the primary",
      async () => (await localSql(podOf(now), "SHOW ssl")) === "off",
      180_000,
      500,
    );
    const gone = await lab.kubelet.exec(M, podOf(now), "postgresql", ["test", "-e", "/srv/postgresql/tls"]);
    t.not(gone.code, 0, "tls/ is removed from the storage");
    await cluster(2, 300_000);
  },
);

/** What a pod's PostgreSQL watchdog wrote (in its agent container: the unit's own directory). */
const watchdogLog = async (pod: string): Promise<string> =>
  (
    await lab.kubelet.exec(M, pod, AGENT_CONTAINER, [
      "sh",
      "-c",
      "cat $(find /var/lib/steward -name watchdog.log 2>/dev/null | head -n 1)",
    ])
  ).stdout;

kube(
  "the primary's pod cut off from the controller: its watchdog stops the server within the lease; healed, it rejoins as a standby",
  async (t) => {
    t.timeout(900_000);
    if (!primary) return t.fail("no cluster from the first tests");
    const old = await cluster(2, 300_000);
    const oldPod = podOf(old);
    const at = (await dbJson())!;
    const oldAddress = { host: (await podIp(oldPod))!, port: 5432 };
    t.regex(await watchdogLog(oldPod), /watching the postgresql container's/, "the primary's watchdog runs");
    const rewinds = async (): Promise<number> =>
      (
        (await lab.kubelet.exec(M, oldPod, "postgresql", ["cat", "/srv/postgresql/rejoin.log"])).stdout.match(
          /pg_rewind/g,
        ) ?? []
      ).length;
    const rewindsBefore = await rewinds();
    const others = [0, 1, 2].map((i) => `pg-${i}`).filter((p) => p !== oldPod);
    const stops = async (pod: string): Promise<number> =>
      ((await watchdogLog(pod)).match(/stopped the primary/g) ?? []).length;
    const stopsBefore = await Promise.all(others.map(stops));

    // Only the controller is out of reach: clients, the other pods and the kubelet still reach the pod.
    const heal = await lab.kubelet.cutOff(M, oldPod, lab.tc.addresses);
    const t0 = Date.now();
    let stopped = 0;
    let next = "";
    try {
      await eventually(
        `${old}'s server to stop taking connections while cut off`,
        async () => {
          const r = await lab.kubelet.exec(M, oldPod, "postgresql", [
            `${BIN}/pg_isready`,
            "-h",
            "/srv/postgresql/run",
            "-p",
            "5432",
          ]);
          return r.code !== 0;
        },
        120_000,
        250,
      ).catch(async (err: Error) => {
        const agent = await lab.kubelet.exec(M, oldPod, AGENT_CONTAINER, [
          "sh",
          "-c",
          "cat $(find /var/lib/steward -name postgresql-role | head -n 1); echo; ip rule list",
        ]);
        const log = (await lab.kubelet.logs(M, oldPod, AGENT_CONTAINER)).split("\n").slice(-15).join("\n");
        throw new Error(
          `${err.message}\nwatchdog.log: ${await watchdogLog(oldPod)}\nrole, rules: ${agent.stdout}${agent.stderr}\nagent: ${log}`,
        );
      });
      stopped = Date.now() - t0;
      const refused = await sql(oldAddress, at, "INSERT INTO ledger VALUES (10, 'to the cut-off primary')").catch(
        (e: Error) => e,
      );
      t.true(refused instanceof Error, "the cut-off old primary takes no write");
      t.regex(
        await watchdogLog(oldPod),
        /stopped the primary \(the postgres service \(active\)\): (is-leader answered false|no is-leader answer)/,
      );
      next = await cluster(1, 240_000, [old]);
      t.not(next, old, "another unit leads and is the primary meanwhile");
    } finally {
      await heal();
    }
    const back = await cluster(2, 300_000);
    t.is(back, next, "the primary stays where it moved");
    t.true((await rewinds()) > rewindsBefore, `${old} rejoined through pg_rewind`);
    t.deepEqual(await Promise.all(others.map(stops)), stopsBefore, "the standbys' watchdogs stopped nothing");
    t.log(
      `${old} cut off from the controller: its server stopped after ${stopped} ms (lease ${LEASE_S} s); ${next} primary; ${old} streaming again after ${Date.now() - t0} ms`,
    );
  },
);
