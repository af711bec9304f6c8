/**
 * `steward upgrade-controller` on a 3-replica controller on Kubernetes (the FAKE API server and
 * FAKE process kubelet: pods are processes in network namespaces), bootstrapped by the CLI, and
 * upgraded by the CLI of a real second release of this build (a separate process, as a user runs
 * it), whose controller image `steward/controller:<new version>` the kubelet maps to that release's
 * controller bundle. One controller goes through the story: a dry run; refused while a replica is
 * down; a broken image fails the first pod's gate, that pod is made again with the image it ran and
 * the partition holds the rest; the good image resumes, the pods replaced from the highest ordinal
 * down with quorum kept and writes going on, none lost; then nothing to do.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClusterInfo } from "../api";
import { ControllerClient, STEWARD_VERSION } from "../api";
import { loadClientConfig } from "../cli";
import { kubernetes } from "../substrates";
import { cliRunner } from "./harness/cli";
import { eventually } from "./harness/eventually";
import type { KubeCluster } from "./harness/kube/lab";
import { controllerImageOf, startKubeCluster } from "./harness/kube/lab";
import type { Release } from "./harness/release";
import { makeRelease } from "./harness/release";

const R = kubernetes.KUBE_RESOURCES;
const NS = "steward";
const NAME = "ctl";
const OLD_IMAGE = kubernetes.DEFAULT_CONTROLLER_IMAGE;

let cluster: KubeCluster;
let home: string;
let kubeconfig: string;
let caCert: string;
let password: string;
let addresses: string[];
let client: ControllerClient;
let patch: Release;
let broken: Release;
const acked: string[] = [];

test.before(async () => {
  patch = await makeRelease({ bump: "patch" });
  broken = await makeRelease({ bump: "patch", broken: true });
  cluster = await startKubeCluster({
    images: {
      [`steward/controller:${patch.version}`]: controllerImageOf(join(patch.dir, "controller-bundle", "main.js")),
      [`steward/controller:${patch.version}-broken`]: controllerImageOf(
        join(broken.dir, "controller-bundle", "main.js"),
      ),
    },
  });
  home = await mkdtemp(join(tmpdir(), "steward-upgrade-k8s-"));
  kubeconfig = join(home, "kubeconfig");
  await writeFile(kubeconfig, cluster.api.kubeconfig(), { mode: 0o600 });
  const boot = await cliRunner(home, home)(
    "bootstrap",
    "kubernetes:",
    NAME,
    "--kubeconfig",
    kubeconfig,
    "--namespace",
    NS,
    "--replicas",
    "3",
    "--replace-after",
    "30m",
    "--timeout",
    "5m",
  );
  if (boot.code !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
  const entry = (await loadClientConfig(home)).controllers[NAME]!;
  [caCert, password, addresses] = [entry.caCert, entry.password!, entry.addresses];
  client = newClient();
});
test.after.always(async () => {
  client?.close();
  await cluster?.close();
  await patch?.close();
  await broken?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

const podAddresses = async (): Promise<string[]> =>
  (await cluster.kube.list(R.pods, { namespace: NS })).items
    .filter((p) => p.status?.podIP && !p.metadata?.deletionTimestamp)
    .map((p) => `${p.status!.podIP}:${kubernetes.CONTROLLER_API_PORT}`);
/** A client that follows the pods' IPs as they are made again (what the CLI does too). */
function newClient(): ControllerClient {
  return new ControllerClient({ addresses, caCert, user: "admin", password, timeoutMs: 4000, reachable: podAddresses });
}
const upgrade = (release: Release, ...args: string[]) =>
  release.steward(home, "upgrade-controller", "-c", NAME, "--kubeconfig", kubeconfig, ...args);
const statefulSet = () => cluster.kube.get(R.statefulSets, NAME, { namespace: NS });
const imageOf = (o: { spec?: { containers: { name: string; image?: string }[] } } | undefined): string | undefined =>
  o?.spec?.containers.find((c) => c.name === "controller")?.image;
const podUids = async (): Promise<Record<string, string>> =>
  Object.fromEntries(
    (await cluster.kube.list(R.pods, { namespace: NS })).items.map((p) => [p.metadata!.name!, p.metadata!.uid!]),
  );
const memberOf = (c: ClusterInfo, ordinal: number) =>
  c.members.find((m) => m.host === kubernetes.replicaDnsName({ name: NAME, namespace: NS }, ordinal));

/** Three voters present at `version`, one leader, quorum, the keeper idle. */
async function healthyAt(t: ExecutionContext, version: string): Promise<ClusterInfo> {
  return eventually(
    `three healthy voters at ${version}`,
    async () => {
      const c = (await client.controllerInfo().catch(() => undefined))?.cluster;
      const voters = c?.members.filter((m) => m.hasVote) ?? [];
      return c?.quorum &&
        voters.length === 3 &&
        voters.every((m) => m.present && m.version === version) &&
        voters.filter((m) => m.leader).length === 1 &&
        c.keeper.state === "idle"
        ? c
        : undefined;
    },
    240_000,
    500,
  ).catch(async (err: unknown) => {
    t.log(JSON.stringify((await client.controllerInfo().catch(() => undefined))?.cluster.members));
    throw err;
  });
}

/** Creates models until stopped, recording every acknowledged one. */
function startWriter(tag: string): { stop(): Promise<{ writes: number; failures: number }> } {
  const c = newClient();
  let stopped = false;
  let [writes, failures] = [0, 0];
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      try {
        await c.createModel(`${tag}-${i}`);
        acked.push(`${tag}-${i}`);
        writes++;
      } catch {
        failures++;
        await new Promise((r) => setTimeout(r, 200));
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      c.close();
      return { writes, failures };
    },
  };
}

/**
 * Watches the cluster until stopped: which pods were made again, in order, and every controller
 * answer in which there were not three voters, or fewer than two present, or no quorum.
 */
function startWatcher(): { stop(): Promise<{ replaced: string[]; answers: number; bad: string[] }> } {
  const c = newClient();
  let stopped = false;
  const replaced: string[] = [];
  const bad: string[] = [];
  let answers = 0;
  const loop = (async () => {
    let uids = await podUids();
    while (!stopped) {
      const now = await podUids().catch(() => uids);
      for (const [name, uid] of Object.entries(now))
        if (uids[name] && uids[name] !== uid && replaced.at(-1) !== name) replaced.push(name);
      uids = { ...uids, ...now };
      const info = (await c.controllerInfo().catch(() => undefined))?.cluster;
      if (info) {
        answers++;
        const voters = info.members.filter((m) => m.hasVote);
        const present = voters.filter((m) => m.present).length;
        if (!info.quorum || voters.length !== 3 || present < 2)
          bad.push(`${new Date().toISOString()}: quorum ${info.quorum}, ${voters.length} voters, ${present} present`);
      }
      await new Promise((r) => setTimeout(r, 300));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      c.close();
      return { replaced, answers, bad };
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

test.serial(
  "--dry-run prints the image and the pods' order, the highest ordinal first, and changes nothing",
  async (t) => {
    t.timeout(300_000);
    const c = await healthyAt(t, STEWARD_VERSION);
    const uids = await podUids();
    const r = await upgrade(patch, "--dry-run");
    t.is(r.code, 0, r.stderr);
    t.regex(r.stdout, new RegExp(`image ${OLD_IMAGE} -> steward/controller:${patch.version}`));
    const lines = r.stdout.split("\n").filter((l) => /^\s+\d\. /.test(l));
    t.deepEqual(
      lines.map((l) => l.trim().split(" ")[1]),
      [2, 1, 0].map((n) => memberOf(c, n)!.name),
      r.stdout,
    );
    t.regex(r.stdout, /Dry run: nothing was changed/);
    const sts = await statefulSet();
    t.is(imageOf(sts.spec?.template), OLD_IMAGE);
    t.is(sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0, 0);
    t.deepEqual(await podUids(), uids);
    t.is((await client.controllerInfo()).cluster.upgrade, undefined, "nothing recorded");
  },
);

test.serial("refused while a replica is down: nothing changes", async (t) => {
  t.timeout(300_000);
  await healthyAt(t, STEWARD_VERSION);
  const uids = await podUids();
  // Every process of pod ctl-1 (its controller and etcd member) frozen: its presence lapses. They go
  // on before its liveness probe (a minute) would restart them; even then the pod stays the same one.
  const frozen = await cluster.kubelet.processes(NS, `${NAME}-1`);
  const commands = await Promise.all(
    frozen.map(async (pid) => (await readFile(`/proc/${pid}/comm`, "utf8").catch(() => "")).trim()),
  );
  t.true(commands.includes("etcd"), `ctl-1 runs its etcd member (${commands.join(", ")})`);
  try {
    for (const pid of frozen) process.kill(pid, "SIGSTOP");
    await eventually(
      "ctl-1 shown down",
      async () => {
        const c = (await client.controllerInfo().catch(() => undefined))?.cluster;
        const m = c && memberOf(c, 1);
        return m && !m.present;
      },
      60_000,
      500,
    );
    const r = await upgrade(patch);
    t.not(r.code, 0);
    t.regex(r.stderr, /is down: an upgrade restarts replicas one at a time|does not report its version/, r.stderr);
  } finally {
    for (const pid of frozen) {
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        /* gone */
      }
    }
  }
  const sts = await statefulSet();
  t.is(imageOf(sts.spec?.template), OLD_IMAGE, "the image is unchanged");
  t.is(sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0, 0, "the partition is unchanged");
  t.deepEqual(await podUids(), uids, "no pod was replaced");
  t.is((await client.controllerInfo()).cluster.upgrade, undefined, "nothing recorded");
});

test.serial(
  "a broken image fails the first pod's gate: that pod is made again with the image it ran, the partition holds the rest",
  async (t) => {
    t.timeout(600_000);
    await healthyAt(t, STEWARD_VERSION);
    const uids = await podUids();
    const brokenImage = `steward/controller:${patch.version}-broken`;
    const writer = startWriter("rb");
    const r = await upgrade(broken, "--image", brokenImage, "--timeout", "60s");
    const w = await writer.stop();
    t.log(r.stderr);
    t.log(`writer: ${w.writes} writes, ${w.failures} failed calls`);
    t.not(r.code, 0);
    t.regex(
      r.stderr,
      new RegExp(
        `upgrade stopped at replica .*rolled back to ${STEWARD_VERSION.replace(/\./g, "\\.")} and is healthy again`,
      ),
    );
    t.regex(r.stderr, /held at partition 3/);
    const sts = await statefulSet();
    t.is(imageOf(sts.spec?.template), brokenImage, "the template keeps the new image");
    t.is(
      sts.spec?.updateStrategy?.rollingUpdate?.partition,
      3,
      "the partition is above every pod: no other pod is replaced",
    );
    const now = await podUids();
    t.is(now[`${NAME}-0`], uids[`${NAME}-0`], "ctl-0 untouched");
    t.is(now[`${NAME}-1`], uids[`${NAME}-1`], "ctl-1 untouched");
    t.not(now[`${NAME}-2`], uids[`${NAME}-2`], "ctl-2 was replaced (and made again)");
    t.is(
      imageOf(await cluster.kube.get(R.pods, `${NAME}-2`, { namespace: NS })),
      OLD_IMAGE,
      "ctl-2 runs the image it ran before (the StatefulSet's current revision)",
    );
    const c = await healthyAt(t, STEWARD_VERSION);
    const u = c.upgrade!;
    t.is(u.state, "failed");
    t.is(u.replicas.find((x) => x.name === memberOf(c, 2)!.name)?.state, "rolled-back");
    t.deepEqual(
      u.replicas.filter((x) => x.name !== memberOf(c, 2)!.name).map((x) => x.state),
      ["pending", "pending"],
    );
    await assertNothingLost(t);
  },
);

test.serial(
  "the good image resumes: pods replaced from the highest ordinal down, quorum kept, writes going on and none lost; then nothing to do",
  async (t) => {
    t.timeout(900_000);
    const c0 = await healthyAt(t, STEWARD_VERSION);
    const names = [2, 1, 0].map((n) => memberOf(c0, n)!.name);
    const watcher = startWatcher();
    const writer = startWriter("up");
    const t0 = Date.now();
    const r = await upgrade(patch, "--timeout", "4m");
    const seconds = ((Date.now() - t0) / 1000).toFixed(1);
    const w = await writer.stop();
    const seen = await watcher.stop();
    t.log(r.stdout);
    t.log(r.stderr);
    t.log(
      `upgrade took ${seconds} s; writer: ${w.writes} writes, ${w.failures} failed calls; ${seen.answers} controller answers watched`,
    );
    t.is(r.code, 0, r.stderr);
    t.regex(r.stdout, /resuming the upgrade started/);
    t.regex(
      r.stdout,
      new RegExp(`image steward/controller:${patch.version}-broken -> steward/controller:${patch.version}`),
    );
    const order = r.stderr
      .split("\n")
      .filter((l) => l.startsWith("Replica "))
      .map((l) => l.split(" ")[1]);
    t.deepEqual(order, names, "the CLI went ctl-2, ctl-1, ctl-0");
    t.deepEqual(
      seen.replaced,
      [`${NAME}-2`, `${NAME}-1`, `${NAME}-0`],
      "the pods were made again from the highest ordinal down, each once",
    );
    t.deepEqual(seen.bad, [], "three voters and quorum in every answer during the rollout");
    t.true(seen.answers > 10, `the controller answered the watcher throughout (${seen.answers})`);
    for (const n of [2, 1, 0]) t.regex(r.stderr, new RegExp(`pod ${NAME}-${n} is Ready`));
    const c = await healthyAt(t, patch.version);
    t.deepEqual(
      c.members.filter((m) => m.hasVote).map((m) => m.version),
      [patch.version, patch.version, patch.version],
    );
    for (const a of await podAddresses()) {
      const own = new ControllerClient({ addresses: [a], caCert, timeoutMs: 4000 });
      try {
        t.is(
          (await own.call<{ version: string }>("GET", "/v1/health")).version,
          patch.version,
          `${a} serves ${patch.version}`,
        );
      } finally {
        own.close();
      }
    }
    t.is(c.upgrade?.state, "done");
    t.true(c.upgrade!.replicas.every((x) => x.state === "upgraded" && x.version === patch.version));
    const sts = await statefulSet();
    t.is(imageOf(sts.spec?.template), `steward/controller:${patch.version}`);
    t.is(sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0, 0, "the partition is back at 0");
    for (const p of (await cluster.kube.list(R.pods, { namespace: NS })).items)
      t.is(imageOf(p), `steward/controller:${patch.version}`, `${p.metadata?.name} runs the new image`);
    t.true(w.writes > 0);
    await assertNothingLost(t);
    // Bootstrapped without --api-address, the entry held the pods' IPs: it follows the new pods, so other commands still reach the controller.
    t.deepEqual([...(await loadClientConfig(home)).controllers[NAME]!.addresses].sort(), (await podAddresses()).sort());
    const show = await patch.steward(home, "show-controller", "-c", NAME);
    t.is(show.code, 0, show.stderr);
    t.regex(
      show.stdout,
      new RegExp(`Upgrade ${STEWARD_VERSION.replace(/\./g, "\\.")} -> ${patch.version.replace(/\./g, "\\.")}: done`),
    );

    const uids = await podUids();
    const again = await upgrade(patch);
    t.is(again.code, 0, again.stderr);
    t.regex(again.stdout, new RegExp(`already at ${patch.version.replace(/\./g, "\\.")}: nothing to do`));
    t.deepEqual(await podUids(), uids, "no pod was replaced");
  },
);
