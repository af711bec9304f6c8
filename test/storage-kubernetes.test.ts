/**
 * Storage on the kubernetes substrate (issue 32), on the FAKE API server and process kubelet
 * (test/harness/kube: a persistent volume controller with a host-path provisioner, a kubelet that
 * mounts each claim's volume directory at its mount path), with a real controller and real agents in
 * the pods. The shelf operator's storage-attached hook leaves a marker in its storage; its start hook
 * reads it back in each pod the unit runs in. Checked: the instance is the StatefulSet's claim
 * `storage-data-0-<app>-<N>` on the default class; a deleted pod's successor reads the marker; an
 * application scaled to 0 and back to 1 keeps its data (juju#23335: Juju 4 loses it), the new unit's
 * storage-attached hook reading it; `remove-unit --destroy-storage` deletes the claim and its
 * volume; a cluster without the class asked for (or without a default class) makes nothing, and the
 * unit's storage says why.
 */
import test from "ava";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import type { StewardError, StorageInfo, UnitStatusView } from "../api";
import { kubernetes, substrateKind } from "../substrates";
import { fixturesDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { kindFor } from "./harness/kube/kinds";
import type { KubeLab } from "./harness/kube/lab";
import { startKubeLab } from "./harness/kube/lab";

const R = kubernetes.KUBE_RESOURCES;
const VOLUMES = kindFor("", "v1", "persistentvolumes")!;
const MOUNT = "/var/lib/steward/storage/data";

let lab: KubeLab;
test.before(async () => {
  lab = await startKubeLab();
});
test.after.always(async () => {
  await lab?.close();
});

const storageOf = async (model: string): Promise<StorageInfo[]> => (await lab.tc.admin.listStorage(model)).storage;

/** A pod as the API and its kubelet see it, for a failure's message: its status and its agent's last lines. */
async function podState(namespace: string, pod: string): Promise<string> {
  const p = await lab.kube.find(R.pods, pod, { namespace });
  const set = await lab.kube.find(R.statefulSets, pod.replace(/-\d+$/, ""), { namespace });
  const log = (await lab.kubelet.logs(namespace, pod, kubernetes.AGENT_CONTAINER)).split("\n").slice(-12).join("\n");
  return [
    `statefulset: ${JSON.stringify({ spec: set?.spec?.replicas, status: set?.status })}`,
    `pod ${pod}: ${p ? JSON.stringify({ uid: p.metadata.uid, deletion: p.metadata.deletionTimestamp, status: p.status }) : "none"}`,
    `agent's log:\n${log}`,
  ].join("\n");
}
const exists = async (path: string): Promise<boolean> => (await stat(path).catch(() => undefined)) !== undefined;
const saying =
  (unit: string, message: RegExp) =>
  (units: UnitStatusView[]): boolean =>
    units.some((u) => u.name === unit && message.test(u.workload.message));

test.serial(
  "a unit's storage is its pod's claim: kept through a deleted pod and a scale to 0 and back, destroyed when asked",
  async (t) => {
    const { tc, kube, kubelet } = lab;
    await tc.admin.createModel("vault", { updateStatusInterval: 300 }, "kubernetes", { credential: "lab" });
    const op = await tc.upload(join(fixturesDir, "operators", "shelf"));
    await tc.admin.deploy("vault", { name: "shelf", operator: op, units: 1 });
    await tc.waitForUnits(
      "vault",
      saying("shelf/0", /^start 1: attach wrote; marker written by shelf\/0$/),
      "shelf/0 to write its marker",
      90_000,
    );
    const [first] = await storageOf("vault");
    t.like(first, { id: "data/0", unit: "shelf/0", status: "attached", pool: "kubernetes", size: 32, location: MOUNT });

    // The claim the StatefulSet made for pod 0, bound on the default class, holding data/0; its volume on the node's disk.
    const set = await kube.get(R.statefulSets, "shelf", { namespace: "vault" });
    t.deepEqual(set.spec?.persistentVolumeClaimRetentionPolicy, { whenScaled: "Retain", whenDeleted: "Retain" });
    const claim = await kube.get(R.persistentVolumeClaims, "storage-data-0-shelf-0", { namespace: "vault" });
    t.is(claim.status?.phase, "Bound");
    t.is(claim.spec?.storageClassName, "standard");
    t.is(claim.spec?.resources?.requests?.storage, "32Mi");
    t.is(claim.metadata?.annotations?.["steward.io/storage"], "data/0");
    const pv = lab.api.state.find(VOLUMES, undefined, claim.spec?.volumeName ?? "");
    const volumeDir: string = pv?.spec?.hostPath?.path;
    t.truthy(volumeDir, "the claim's volume has a directory on the node");
    t.is(await readFile(join(volumeDir, "marker"), "utf8"), "written by shelf/0\n");

    // The pod deleted: the StatefulSet makes it again on the same claim, and the unit's start reads the marker there.
    const old = await kube.get(R.pods, "shelf-0", { namespace: "vault" });
    await kube.delete(R.pods, "shelf-0", { namespace: "vault" });
    await tc.waitForUnits(
      "vault",
      saying("shelf/0", /^start 2: attach wrote; marker written by shelf\/0$/),
      "shelf/0 started again in a new pod",
      90_000,
    );
    const again = await kube.get(R.pods, "shelf-0", { namespace: "vault" });
    t.not(again.metadata?.uid, old.metadata?.uid, "a new pod");
    const read = await kubelet.exec("vault", "shelf-0", "steward-agent", ["cat", `${MOUNT}/marker`]);
    t.is(read.stdout, "written by shelf/0\n", "the new pod's agent container sees the marker");

    // Scaled to 0: the unit goes, its storage is kept (the claim stays, detached); its agent state goes.
    await tc.admin.removeUnit("vault", "shelf/0");
    const kept = await eventually(
      "data/0 detached and pod shelf-0 gone",
      async () => {
        const [s] = await storageOf("vault");
        const pod = await kube.find(R.pods, "shelf-0", { namespace: "vault" });
        return s?.status === "detached" && !pod ? s : undefined;
      },
      90_000,
    );
    t.is(kept.unit, undefined);
    t.is((await kube.get(R.statefulSets, "shelf", { namespace: "vault" })).spec?.replicas, 0);
    t.truthy(await kube.find(R.persistentVolumeClaims, "storage-data-0-shelf-0", { namespace: "vault" }), "kept");
    t.falsy(
      await kube.find(R.persistentVolumeClaims, "agent-state-shelf-0", { namespace: "vault" }),
      "the removed unit's hook state is not left for the next unit 0",
    );

    // And back to 1: the new shelf/0 takes its number's kept storage, and its storage-attached hook finds the marker.
    // Refused (storage-attached) for the moment data/0 is still being detached: its claim must not be mounted on its way out.
    const { units } = await eventually(
      "add-unit accepted once data/0 is detached",
      () =>
        tc.admin.addUnits("vault", "shelf", 1).catch((err: StewardError) => {
          if (err.reason === "storage-attached") return undefined;
          throw err;
        }),
      30_000,
    );
    t.deepEqual(units, ["shelf/0"]);
    const storage = await storageOf("vault");
    t.is(storage.length, 1, "no new instance: the kept one came back");
    t.like(storage[0], { id: "data/0", unit: "shelf/0", status: "attached" });
    await tc.waitForUnits(
      "vault",
      saying("shelf/0", /^start 1: attach found written by shelf\/0; marker written by shelf\/0$/),
      "the new shelf/0 to find the marker",
      90_000,
    );

    // Destroyed when asked: the claim, its volume and its directory go.
    await tc.admin.removeUnit("vault", "shelf/0", false, true);
    await eventually("data/0 destroyed", async () => (await storageOf("vault")).length === 0, 90_000);
    await eventually(
      "the claim deleted",
      async () => !(await kube.find(R.persistentVolumeClaims, "storage-data-0-shelf-0", { namespace: "vault" })),
      30_000,
    );
    await eventually(
      "its volume and its directory deleted",
      async () => !lab.api.state.find(VOLUMES, undefined, pv!.metadata.name!) && !(await exists(volumeDir)),
      30_000,
    );
    t.deepEqual(await storageOf("vault"), [], "no storage left in the model");
    t.falsy(await kube.find(R.persistentVolumeClaims, "storage-data-0-shelf-0", { namespace: "vault" }), "no claim");
    t.false(await exists(volumeDir), "the volume's directory on the node is gone");
  },
);

test.serial("a storage class the cluster lacks: nothing is made, and the unit's storage says why", async (t) => {
  const { tc, kube } = lab;
  // The pod broker and the volume broker, against the cluster: a class it does not have is refused before anything is written.
  const placement = { connection: kubernetes.parseKubeconfig(lab.api.kubeconfig()), namespace: "bare" };
  await kube.create(R.namespaces, { apiVersion: "v1", kind: "Namespace", metadata: { name: "bare" } });
  const pods = substrateKind("kubernetes").pods!({ agentImage: "steward/agent:test" });
  const refused = await t.throwsAsync(
    pods.ensureApplication({
      model: "m",
      placement,
      app: "shelf",
      replicas: 1,
      storage: [{ name: "data", count: 1, size: 32, multiple: false, attributes: { "storage-class": "fast" } }],
      agentConfigs: async () => new Map([[0, "unused"]]),
    }),
  );
  t.regex(refused?.message ?? "", /storage class "fast" does not exist on cluster .* \(it has: standard\)/);
  pods.close();
  const volumes = substrateKind("kubernetes").volumes!({ machinesDir: "", placement: async () => placement });
  const attach = await t.throwsAsync(
    volumes.attach(
      {
        model: "m",
        id: "data/0",
        kind: "filesystem",
        pool: "fast",
        poolType: "kubernetes",
        size: 32,
        attributes: { "storage-class": "fast" },
        unit: "shelf/0",
      },
      { model: "m", machine: "0" },
    ),
  );
  t.regex(attach?.message ?? "", /storage class "fast" does not exist/);
  for (const r of [R.statefulSets, R.secrets, R.services, R.persistentVolumeClaims] as kubernetes.KubeResource[])
    t.deepEqual((await kube.list(r, { namespace: "bare" })).items, [], `no ${r.plural} made`);

  // End to end, a cluster whose default class is gone: the unit's storage says so, and no pod or claim is made.
  const standard = await kube.get(R.storageClasses, "standard");
  await kube.delete(R.storageClasses, "standard");
  try {
    await tc.admin.createModel("bare2", { updateStatusInterval: 300 }, "kubernetes", { credential: "lab" });
    const op = await tc.upload(join(fixturesDir, "operators", "shelf"));
    await tc.admin.deploy("bare2", { name: "shelf", operator: op, units: 1 });
    const told = await eventually(
      "the storage to say why",
      async () => {
        const [s] = await storageOf("bare2");
        return s?.message ? s : undefined;
      },
      60_000,
    );
    t.regex(told.message ?? "", /has no default storage class/);
    t.is(told.location, "");
    t.falsy(await kube.find(R.statefulSets, "shelf", { namespace: "bare2" }), "no StatefulSet");
    t.deepEqual((await kube.list(R.persistentVolumeClaims, { namespace: "bare2" })).items, [], "no claim");
  } finally {
    const { resourceVersion: _, uid: __, creationTimestamp: ___, ...metadata } = standard.metadata!;
    await kube.create(R.storageClasses, { ...standard, metadata });
  }
  // The class back: the unit comes up with its storage.
  await tc.waitForUnits(
    "bare2",
    saying("shelf/0", /^start 1: attach wrote; marker written by shelf\/0$/),
    "shelf/0 once the cluster has a default class again",
    120_000,
  );
  const [s] = await storageOf("bare2");
  t.is(s?.message, undefined, "the message cleared once attached");

  // A pool made with a class the cluster lacks: its storage-class reaches the claims' check, nothing is made.
  await tc.admin.createModel("bare3", { updateStatusInterval: 300 }, "kubernetes", { credential: "lab" });
  const bad = await t.throwsAsync(
    tc.admin.createStoragePool("bare3", "odd", "kubernetes", { "storage-class": "No_Such" }),
  );
  t.is(
    (bad as { reason?: string } | undefined)?.reason,
    "storage-pool-attribute",
    "a class name Kubernetes cannot have is refused when the pool is made",
  );
  await tc.admin.createStoragePool("bare3", "fast", "kubernetes", { "storage-class": "fast" });
  await tc.admin.deploy("bare3", {
    name: "shelf",
    operator: await tc.upload(join(fixturesDir, "operators", "shelf")),
    units: 1,
    storage: { data: { pool: "fast" } },
  });
  const fast = await eventually(
    "the made pool's storage to say why",
    async () => {
      const [x] = await storageOf("bare3");
      return x?.message ? x : undefined;
    },
    60_000,
  );
  t.regex(fast.message ?? "", /storage class "fast" does not exist/);
  t.falsy(await kube.find(R.statefulSets, "shelf", { namespace: "bare3" }), "no StatefulSet for the made pool");
});

test.serial(
  "--attach-storage gives a kept claim to the new unit of its number, and refuses a unit of another number",
  async (t) => {
    const { tc, kube } = lab;
    await tc.admin.createModel("pair", { updateStatusInterval: 300 }, "kubernetes", { credential: "lab" });
    const op = await tc.upload(join(fixturesDir, "operators", "shelf"));
    await tc.admin.deploy("pair", { name: "shelf", operator: op, units: 2 });
    for (const n of [0, 1])
      await tc.waitForUnits("pair", saying(`shelf/${n}`, /^start 1: attach wrote/), `shelf/${n} active`, 90_000);
    const idOf = async (unit: string): Promise<string> => (await storageOf("pair")).find((s) => s.unit === unit)!.id;
    const second = await idOf("shelf/1");
    const detached = (id: string) => async () =>
      (await storageOf("pair")).find((s) => s.id === id)?.status === "detached";
    const addWith = (ids: string[]) =>
      eventually(
        "add-unit accepted or refused for good",
        () =>
          tc.admin.addUnits("pair", "shelf", 1, undefined, ids).catch((err: StewardError) => {
            if (err.reason === "storage-attached") return undefined;
            return err;
          }),
        30_000,
      );

    // shelf/1 removed and given back its storage by name: the same number, so its claim.
    await tc.admin.removeUnit("pair", "shelf/1");
    await eventually(`${second} detached`, detached(second), 60_000);
    const back = await addWith([second]);
    t.deepEqual((back as { units: string[] }).units, ["shelf/1"]);
    await tc
      .waitForUnits(
        "pair",
        saying("shelf/1", /^start 1: attach found written by shelf\/1; marker written by shelf\/1$/),
        "shelf/1 back on its claim",
        90_000,
      )
      .catch(async (err: Error) => {
        throw new Error(`${err.message}\n${await podState("pair", "shelf-1")}`);
      });

    // Both removed: shelf/1's storage cannot go to the next unit, which is number 0.
    await tc.admin.removeUnit("pair", "shelf/1");
    await eventually(`${second} detached again`, detached(second), 60_000);
    await tc.admin.removeUnit("pair", "shelf/0");
    await eventually(
      "both detached",
      async () => (await storageOf("pair")).every((s) => s.status === "detached"),
      60_000,
    );
    const refused = (await addWith([second])) as StewardError;
    t.is(refused.reason, "storage-kept-for-unit-number");
    t.regex(refused.message, /kept in the claim of shelf\/1's pod.*the new unit would be shelf\/0/);
    t.deepEqual(
      (await storageOf("pair")).map((s) => [s.id, s.status]),
      [
        ["data/0", "detached"],
        ["data/1", "detached"],
      ],
      "nothing attached by the refusal",
    );
    t.is(Object.keys((await tc.admin.status("pair")).applications.shelf?.units ?? {}).length, 0, "no unit made");
    t.truthy(await kube.find(R.persistentVolumeClaims, "storage-data-0-shelf-1", { namespace: "pair" }), "kept");
  },
);
