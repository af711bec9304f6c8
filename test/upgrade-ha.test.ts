/**
 * `steward upgrade-controller` across a minor version on a 3-replica controller installed over SSH on
 * real sshd test hosts (each replica a controller plus its etcd member): bootstrapped by an older
 * release (this build with a minor version less and the previous store format, made by the release
 * harness), upgraded by this build's CLI, with a writer creating models the whole time. A dry run
 * changes nothing; a release that fails its health gate is rolled back on the first replica and
 * nothing else is touched (nor the store's format); the good release goes replica by replica, the
 * leader last, then its leader migrates the store, and no acknowledged write is lost.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClusterInfo } from "../api";
import { ControllerClient, STEWARD_VERSION, STORE_FORMAT } from "../api";
import { loadClientConfig } from "../cli";
import { cliRunner } from "./harness/cli";
import { eventually } from "./harness/eventually";
import type { TestHost } from "./harness/hosts";
import { TestLab } from "./harness/hosts";
import type { Release } from "./harness/release";
import { makeRelease } from "./harness/release";

const root = process.getuid?.() === 0;
const ha = root ? test.serial : test.skip; // namespaces and sshd need root

let lab: TestLab;
let home: string;
let client: ControllerClient;
let caCert: string;
let password: string;
const releases: Release[] = [];
const acked: string[] = [];
/** The release the controller is bootstrapped with: a minor version older, writing the previous store format. */
let older: Release;
/** This build's CLI, which upgrades it. */
let steward: ReturnType<typeof cliRunner>;

test.before(async () => {
  if (!root) return;
  lab = await TestLab.create(3);
  home = await mkdtemp(join(tmpdir(), "steward-upgrade-ha-"));
  process.env.UPGRADE_TEST_SSH_KEY = lab.clientKey;
  const [major, minor] = STEWARD_VERSION.split(".").map(Number) as [number, number];
  older = await makeRelease({
    version: minor > 0 ? `${major}.${minor - 1}.7` : "0.0.7",
    storeFormat: STORE_FORMAT - 1,
  });
  releases.push(older);
  steward = cliRunner(home, home);
  const boot = await older.steward(
    home,
    "bootstrap",
    lab.hosts.map((h) => `ssh:root@${h.ip}`).join(","),
    "up",
    "--key-env",
    "UPGRADE_TEST_SSH_KEY",
    ...lab.hosts.flatMap((h) => ["--host-key", h.hostKeyFingerprint]),
  );
  if (boot.code !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
  const entry = (await loadClientConfig(home)).controllers.up!;
  [caCert, password] = [entry.caCert, entry.password!];
  client = newClient(entry.addresses);
});
test.after.always(async () => {
  client?.close();
  for (const r of releases) await r.close();
  await lab?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

function newClient(addresses: string[]): ControllerClient {
  return new ControllerClient({ addresses, caCert, user: "admin", password, timeoutMs: 4000 });
}

const upgradeArgs = (): string[] => [
  "upgrade-controller",
  "-c",
  "up",
  "--key-env",
  "UPGRADE_TEST_SSH_KEY",
  ...lab.hosts.flatMap((h) => ["--host-key", `${h.ip}=${h.hostKeyFingerprint}`]),
];
const launchScripts = (): Promise<string[]> =>
  Promise.all(lab.hosts.map(async (h: TestHost) => (await h.exec("cat /var/lib/steward/controller/launch")).stdout));

/** Three voters present at `version`, one leader, quorum. */
async function healthyAt(t: ExecutionContext, version: string): Promise<ClusterInfo> {
  return eventually(
    `three healthy voters at ${version}`,
    async () => {
      const c = (await client.controllerInfo().catch(() => undefined))?.cluster;
      const voters = c?.members.filter((m) => m.hasVote) ?? [];
      // The keeper idle too: right after a replica joins it reports "acting" for a pass, which upgrade-controller refuses.
      return c?.quorum &&
        voters.length === 3 &&
        voters.every((m) => m.present && m.version === version) &&
        voters.filter((m) => m.leader).length === 1 &&
        c.keeper.state === "idle"
        ? c
        : undefined;
    },
    90_000,
    300,
  ).catch(async (err: unknown) => {
    t.log(JSON.stringify((await client.controllerInfo().catch(() => undefined))?.cluster.members));
    throw err;
  });
}

/** Creates models until stopped; records every acknowledged one, and the longest time between two. */
function startWriter(tag: string): { stop(): Promise<{ writes: number; failures: number; longestGapMs: number }> } {
  const c = newClient(client.addresses);
  let stopped = false;
  let [writes, failures, longestGapMs, last] = [0, 0, 0, Date.now()];
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      try {
        await c.createModel(`${tag}-${i}`);
        acked.push(`${tag}-${i}`);
        writes++;
        longestGapMs = Math.max(longestGapMs, Date.now() - last);
        last = Date.now();
      } catch {
        failures++;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      c.close();
      return { writes, failures, longestGapMs };
    },
  };
}

async function assertNothingLost(t: ExecutionContext): Promise<void> {
  const present = new Set((await client.listModels()).map((m) => m.name));
  t.deepEqual(
    acked.filter((m) => !present.has(m)),
    [],
    "every acknowledged write is present",
  );
}

ha("--dry-run on three replicas prints the order, the leader last, then the store, and changes nothing", async (t) => {
  const c = await healthyAt(t, older.version);
  const before = await launchScripts();
  const r = await steward(...upgradeArgs(), "--dry-run");
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, new RegExp(`then the store: format ${STORE_FORMAT - 1} -> ${STORE_FORMAT}`));
  const leader = c.members.find((m) => m.leader)!;
  const lines = r.stdout.split("\n").filter((l) => /^\s+\d\. /.test(l));
  t.is(lines.length, 3, r.stdout);
  t.true(lines[2]!.includes(leader.name) && lines[2]!.includes("(the leader, last)"), r.stdout);
  t.deepEqual(await launchScripts(), before, "no replica was switched");
  t.is((await client.controllerInfo()).cluster.upgrade, undefined);
});

ha(
  "a release that fails its health gate is rolled back on the first replica; no other replica is touched",
  async (t) => {
    // Staging 16 MiB on three hosts over SSH takes up to a minute on a loaded machine, then a 20 s gate and the rollback.
    t.timeout(300_000);
    const broken = await makeRelease({ version: STEWARD_VERSION, broken: true });
    releases.push(broken);
    const before = await launchScripts();
    const writer = startWriter("rb");
    const r = await broken.steward(home, ...upgradeArgs(), "--timeout", "20s");
    const w = await writer.stop();
    t.log(
      `writer during the failed upgrade: ${w.writes} writes, ${w.failures} failed calls, longest gap ${w.longestGapMs} ms`,
    );
    t.not(r.code, 0);
    t.regex(r.stderr, new RegExp(`rolled back to ${older.version} and is healthy again`), r.stderr);
    await healthyAt(t, older.version);
    t.deepEqual(await launchScripts(), before, "every replica runs the release it ran before");
    const u = (await client.controllerInfo()).cluster.upgrade!;
    t.is(u.state, "failed");
    t.deepEqual(
      u.replicas.map((x) => x.state),
      ["rolled-back", "pending", "pending"],
    );
    t.is((await client.controllerInfo()).store?.format, STORE_FORMAT - 1, "the store is not migrated");
    await assertNothingLost(t);
  },
);

ha(
  "the next minor release upgrades the replicas one by one, the leader last, then the store, with writes going on and none lost",
  async (t) => {
    t.timeout(300_000);
    const c0 = await healthyAt(t, older.version);
    const leader = c0.members.find((m) => m.leader)!;
    const writer = startWriter("up");
    const t0 = Date.now();
    const r = await steward(...upgradeArgs());
    const upgradeS = (Date.now() - t0) / 1000;
    const w = await writer.stop();
    t.log(
      `upgrade took ${upgradeS.toFixed(1)} s; writer: ${w.writes} writes, ${w.failures} failed calls, longest gap ${w.longestGapMs} ms`,
    );
    t.is(r.code, 0, r.stderr);
    const order = r.stderr.split("\n").filter((l) => l.startsWith("Replica "));
    t.is(order.length, 3, r.stderr);
    t.true(order[2]!.includes(leader.name) && order[2]!.includes("the leader"), "the leader goes last");
    await healthyAt(t, STEWARD_VERSION);
    const info = await client.controllerInfo();
    const u = info.cluster.upgrade!;
    t.is(u.state, "done");
    t.true(u.replicas.every((x) => x.state === "upgraded" && x.version === STEWARD_VERSION));
    // The leader migrated the store once the upgrade had ended, not while a replica could still go back.
    const m = info.store?.migration;
    t.is(info.store?.format, STORE_FORMAT);
    t.truthy(m?.doneAt, r.stderr);
    t.true(Date.parse(m!.startedAt!) >= Date.parse(u.finishedAt!), `${m?.startedAt} after ${u.finishedAt}`);
    t.regex(r.stderr, new RegExp(`Store format ${STORE_FORMAT}: migrated from ${STORE_FORMAT - 1}`));
    t.true(w.writes > 0);
    t.is(w.failures, 0, "no write failed: the client's failover covered every restart");
    await assertNothingLost(t);
    // The previous release stays on each host for a rollback; older ones go.
    for (const h of lab.hosts) {
      const kept = await h.exec(
        "test -f /var/lib/steward/controller/launch.previous && ls /opt/steward/controller | wc -l",
      );
      t.true(
        kept.code === 0 && Number(kept.stdout.trim()) === 2,
        `${h.name} keeps the release it ran before and no older one (the failed release is gone): ${kept.stdout}`,
      );
    }
    const again = await steward(...upgradeArgs());
    t.regex(again.stdout, new RegExp(`already at ${STEWARD_VERSION}`));
  },
);
