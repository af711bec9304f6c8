/**
 * A kubernetes model moves between two real controllers, on the FAKE API server and FAKE process
 * kubelet (test/harness/kube): two units of the peer-cluster operator in pods migrate to DONE and
 * stay active on the target, their pods untouched; the target rewrites the application's Secret to
 * name its addresses and CA (keeping each agent's credential); the source makes no write to the
 * cluster after DONE (each controller holds the cluster credential under its own token, so the
 * server's request log tells them apart); with the source stopped, a pod deleted (and one deleted
 * with its claim, so only the Secret's configuration is left) comes back talking to the target.
 * A target without the model's cluster credential refuses to activate it: the move aborts and the
 * source, which held off from the activation on, provisions the model again.
 */
import test from "ava";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { MigrationInfo, UnitStatusView } from "../api";
import { unitIsReady } from "../api";
import { kubernetes } from "../substrates";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { migrateAndWait } from "./harness/migration";
import type { KubeCluster } from "./harness/kube/lab";
import { LAB_PROBES, startKubeCluster } from "./harness/kube/lab";

const R = kubernetes.KUBE_RESOURCES;
const NS = "shop";
const SOURCE_USER = "steward-source";
const TARGET_USER = "steward-target";

interface PodConfig {
  model: string;
  machine: string;
  credential: string;
  controllerAddresses: string[];
  caCert: string;
}

let cluster: KubeCluster;
let a: TestController;
let b: TestController;
const tokens = {
  admin: randomBytes(24).toString("base64url"),
  source: randomBytes(24).toString("base64url"),
  target: randomBytes(24).toString("base64url"),
};

test.before(async () => {
  cluster = await startKubeCluster({
    tokens: { [tokens.admin]: "admin", [tokens.source]: SOURCE_USER, [tokens.target]: TARGET_USER },
  });
  const options = { listenHost: cluster.kubelet.gateway, kubernetes: { pollIntervalMs: 500, probes: LAB_PROBES } };
  [a, b] = await Promise.all([startTestController(options), startTestController(options)]);
  // The same credential name on both, as `steward add-k8s` would store it on each (the import needs it there).
  await a.admin.putCredential("k8s", "kubernetes", { kubeconfig: cluster.api.kubeconfig({ token: tokens.source }) });
  await b.admin.putCredential("k8s", "kubernetes", { kubeconfig: cluster.api.kubeconfig({ token: tokens.target }) });
});
test.after.always(async () => {
  await b?.close();
  await a?.close();
  await cluster?.close();
});

const readyUnits =
  (n: number) =>
  (units: UnitStatusView[]): boolean =>
    units.length === n && units.every(unitIsReady);
const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

async function podConfigs(app: string, namespace = NS): Promise<Map<string, PodConfig>> {
  const secret = await cluster.kube.get(R.secrets, kubernetes.agentsSecretName(app), { namespace });
  return new Map(
    Object.entries(secret.data ?? {}).map(([k, v]) => [
      k,
      JSON.parse(Buffer.from(v, "base64").toString()) as PodConfig,
    ]),
  );
}

test.serial(
  "a target without the model's cluster credential refuses to activate it: the move aborts and the source provisions the model again",
  async (t) => {
    t.timeout(600_000);
    const { kube } = cluster;
    await a.admin.putCredential("k8s-a", "kubernetes", {
      kubeconfig: cluster.api.kubeconfig({ token: tokens.source }),
    });
    await a.admin.createModel("cafe", { updateStatusInterval: 300 }, "kubernetes", { credential: "k8s-a" });
    await a.admin.deploy("cafe", {
      name: "till",
      operator: await a.upload(join(operatorsDir, "peer-cluster")),
      units: 1,
      config: { size: 1 },
    });
    await a.waitForUnits("cafe", readyUnits(1), "till/0 active on the source", 180_000);
    const ended = await migrateAndWait(
      a.admin,
      "cafe",
      { name: "b", addresses: b.addresses, caCert: b.caCert, user: "admin", password: b.adminPassword },
      300_000,
    );
    t.is(ended.phase, "ABORTDONE");
    t.regex(ended.failure ?? "", /credential "k8s-a"/);
    t.false(
      (await b.admin.listModels()).some((m) => m.name === "cafe"),
      "nothing of it on the target",
    );
    // The source held off while the target might have taken the model; now it provisions it again.
    await a.admin.addUnits("cafe", "till", 1);
    await a.waitForUnits("cafe", readyUnits(2), "2 units active on the source", 180_000);
    const configs = await podConfigs("till", "cafe");
    t.is(configs.size, 2);
    for (const c of configs.values()) t.deepEqual(c.controllerAddresses, a.addresses);
    t.truthy(await kube.find(R.pods, "till-1", { namespace: "cafe" }));
  },
);

test.serial(
  "a kubernetes model moves: units stay active on the target, its Secret names the target, the source leaves the namespace alone, recreated pods come back to the target",
  async (t) => {
    t.timeout(900_000);
    const { kube, api, kubelet } = cluster;
    await a.admin.createModel(NS, { updateStatusInterval: 300 }, "kubernetes", { credential: "k8s" });
    await a.admin.deploy(NS, {
      name: "ring",
      operator: await a.upload(join(operatorsDir, "peer-cluster")),
      units: 2,
      config: { size: 2 },
    });
    await a.waitForUnits(NS, readyUnits(2), "2 members active in pods on the source", 180_000);
    const before = await podConfigs("ring");
    t.is(before.size, 2);
    for (const c of before.values()) t.deepEqual(c.controllerAddresses, a.addresses, "written by the source first");
    const uids = new Map(
      (await kube.list(R.pods, { namespace: NS })).items.map((p) => [p.metadata!.name!, p.metadata!.uid!]),
    );
    t.deepEqual([...uids.keys()].sort(), ["ring-0", "ring-1"]);

    await a.admin.call("POST", `/v1/models/${NS}/migrate`, {
      target: { name: "b", addresses: b.addresses, caCert: b.caCert, user: "admin", password: b.adminPassword },
    });
    const done = await eventually(
      "the migration over",
      async () => {
        const m = await a.admin.call<MigrationInfo>("GET", `/v1/models/${NS}/migration`);
        return m.phase === "DONE" || m.phase === "ABORTDONE" ? m : undefined;
      },
      300_000,
      250,
    );
    t.is(done.phase, "DONE", done.failure);
    const doneAt = api.requests.length;

    // On the target: both units active, in the same pods (nothing was restarted by the move).
    const there = await b.waitForUnits(NS, readyUnits(2), "2 members active on the target", 120_000);
    t.regex(there.applications.ring!.units["ring/0"]!.workload.message, /ready/);
    t.deepEqual(
      new Map((await kube.list(R.pods, { namespace: NS })).items.map((p) => [p.metadata!.name!, p.metadata!.uid!])),
      uids,
      "the same pods",
    );

    // The Secret names the target, with each agent's credential kept (the running agents use it there).
    const after = await eventually(
      "the Secret rewritten by the target",
      async () => {
        const c = await podConfigs("ring");
        return [...c.values()].every((x) => x.caCert === b.caCert) ? c : undefined;
      },
      60_000,
      250,
    );
    for (const [key, c] of after) {
      t.deepEqual(c.controllerAddresses, b.addresses, `${key} names the target's addresses`);
      const was = before.get(key);
      t.is(c.credential, was?.credential ?? "(no entry before)", `${key} keeps its credential`);
      t.is(c.machine, was?.machine ?? "(no entry before)");
    }
    // The source also holds the other test's model on this cluster: only this namespace counts.
    const byUser = (user: string, from = 0) =>
      api.requests.slice(from).filter((r) => r.user === user && r.path.includes(`/namespaces/${NS}/`));
    t.true(
      byUser(TARGET_USER).some(
        (r) =>
          r.method === "PUT" &&
          r.path === `/api/v1/namespaces/${NS}/secrets/${kubernetes.agentsSecretName("ring")}` &&
          r.status === 200,
      ),
      "the target replaced the Secret",
    );
    t.true(
      byUser(SOURCE_USER).some((r) => WRITES.has(r.method)),
      "the source wrote before the move (so the log tells the users apart)",
    );
    // From the target's first write on (it took the model at activation) the source writes nothing:
    // no pass of the source rewrites the Secret back to itself.
    const takeover = api.requests.findIndex(
      (r) => r.user === TARGET_USER && WRITES.has(r.method) && r.path.includes(`/namespaces/${NS}/`),
    );
    t.true(takeover >= 0);
    t.deepEqual(
      byUser(SOURCE_USER, takeover)
        .filter((r) => WRITES.has(r.method))
        .map((r) => `${r.method} ${r.path}`),
      [],
      "no write by the source once the target took over",
    );

    // The source leaves the namespace alone after DONE: several of its provisioning passes (every 500 ms), no write.
    await new Promise((r) => setTimeout(r, 5000));
    t.deepEqual(
      byUser(SOURCE_USER, doneAt)
        .filter((r) => WRITES.has(r.method))
        .map((r) => `${r.method} ${r.path}`),
      [],
      "no write by the source after DONE",
    );
    t.truthy(await kube.find(R.namespaces, NS), "the namespace is still there");
    t.truthy(await kube.find(R.statefulSets, "ring", { namespace: NS }));

    // Without the source at all, pods made again come back to the target: ring-0 on its claim (the
    // agent's saved configuration), ring-1 on a new claim (only the Secret's configuration).
    await a.controller.stop();
    const claim1 = await kube.get(R.persistentVolumeClaims, "agent-state-ring-1", { namespace: NS });
    await kube.delete(R.persistentVolumeClaims, "agent-state-ring-1", { namespace: NS });
    await kube.delete(R.pods, "ring-1", { namespace: NS });
    await kube.delete(R.pods, "ring-0", { namespace: NS });
    await eventually(
      "both pods made again, ring-1 on a new claim, and both units active on the target",
      async () => {
        const pods = (await kube.list(R.pods, { namespace: NS })).items;
        const fresh = pods.filter(
          (p) => p.metadata?.uid !== uids.get(p.metadata!.name!) && p.status?.phase === "Running",
        );
        const claim = await kube.find(R.persistentVolumeClaims, "agent-state-ring-1", { namespace: NS });
        if (fresh.length !== 2 || !claim || claim.metadata?.uid === claim1.metadata?.uid) return undefined;
        const s = await b.admin.status(NS);
        const units = Object.values(s.applications.ring?.units ?? {});
        return readyUnits(2)(units) && Object.values(s.machines).every((m) => m.instance?.state === "running, ready")
          ? s
          : undefined;
      },
      180_000,
      500,
    );
    for (const pod of ["ring-0", "ring-1"]) {
      const saved = await kubelet.exec(NS, pod, kubernetes.AGENT_CONTAINER, [
        "cat",
        `${kubernetes.POD_PATHS.agentDir}/agent.json`,
      ]);
      t.is(saved.code, 0, saved.stderr);
      const c = JSON.parse(saved.stdout) as PodConfig;
      t.deepEqual(c.controllerAddresses, b.addresses, `${pod}'s agent talks to the target`);
      t.is(c.caCert, b.caCert);
    }
    t.deepEqual(
      byUser(SOURCE_USER, doneAt)
        .filter((r) => WRITES.has(r.method))
        .map((r) => `${r.method} ${r.path}`),
      [],
      "still no write by the source",
    );
  },
);
