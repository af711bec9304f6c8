/**
 * The kubernetes substrate on the FAKE API server and FAKE process kubelet (test/harness/kube):
 * a real controller makes a StatefulSet per application, each pod runs the real agent bundle as its
 * agent container, and the recorder operator writes every hook it runs. Checked: Juju's hook order
 * in pods, unit N = pod N, scale up, scale down with every departing unit's teardown hooks run
 * before its pod is deleted (highest ordinal first), a deleted pod coming back as the same unit
 * (its hook state on its claim: `start` again, no `install`; on a new claim, the copy the
 * controller keeps), and the objects going with the application and the model.
 */
import test from "ava";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { UnitStatusView } from "../api";
import { unitIsReady } from "../api";
import { kubernetes } from "../substrates";
import { fixturesDir, operatorsDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import type { KubeLab } from "./harness/kube/lab";
import { startKubeLab } from "./harness/kube/lab";
import { hooksByUnit, recordDir } from "./harness/operators";

const R = kubernetes.KUBE_RESOURCES;
const withoutUpdateStatus = (hooks: string[] | undefined): string[] =>
  (hooks ?? []).filter((h) => h !== "update-status");
const readyUnits =
  (n: number) =>
  (units: UnitStatusView[]): boolean =>
    units.length === n && units.every(unitIsReady);

let lab: KubeLab;
test.before(async () => {
  lab = await startKubeLab();
});
test.after.always(async () => {
  await lab?.close();
});

test.serial(
  "a kubernetes model: units in pods, scale up, scale down with teardown before the pods go, a deleted pod back as the same unit",
  async (t) => {
    const { tc, kube } = lab;
    const record = await recordDir();
    const model = await tc.admin.createModel("shop", { updateStatusInterval: 300 }, "kubernetes", {
      credential: "lab",
    });
    t.is(model.substrate, "kubernetes");
    const op = await tc.upload(join(fixturesDir, "operators", "recorder"));
    await tc.admin.deploy("shop", { name: "rec", operator: op, units: 3, config: { "record-dir": record } });
    await tc.waitForUnits("shop", readyUnits(3), "3 units active in pods", 90_000);

    // The objects: namespace, Secret before StatefulSet, two headless Services, pods rec-0..2.
    t.truthy(await kube.find(R.namespaces, "shop"));
    const set = await kube.get(R.statefulSets, "rec", { namespace: "shop" });
    t.is(set.spec?.replicas, 3);
    t.is(set.spec?.podManagementPolicy, "Parallel");
    const secret = await kube.get(R.secrets, kubernetes.agentsSecretName("rec"), { namespace: "shop" });
    t.deepEqual(Object.keys(secret.data ?? {}).sort(), ["agent-0.conf", "agent-1.conf", "agent-2.conf"]);
    t.truthy(await kube.find(R.services, "rec", { namespace: "shop" }));
    t.truthy(await kube.find(R.services, "rec-endpoints", { namespace: "shop" }));
    const status = await tc.admin.status("shop");
    for (const n of [0, 1, 2]) {
      const unit = status.applications.rec!.units[`rec/${n}`]!;
      const machine = status.machines[unit.machine]!;
      t.is(machine.instance?.id, `shop/rec-${n}`, `rec/${n} runs in pod rec-${n}`);
    }
    let hooks = await hooksByUnit(record);
    const leaders = [0, 1, 2].filter((n) => withoutUpdateStatus(hooks.get(`rec/${n}`))[1] === "leader-elected");
    t.is(leaders.length, 1, "one leader");
    for (const n of [0, 1, 2]) {
      t.deepEqual(
        withoutUpdateStatus(hooks.get(`rec/${n}`)),
        ["install", leaders.includes(n) ? "leader-elected" : "leader-settings-changed", "config-changed", "start"],
        `rec/${n}`,
      );
    }

    // Highest ordinal first: rec/1 cannot go while rec/2 stays.
    const refused = await t.throwsAsync(tc.admin.removeUnit("shop", "rec/1"));
    t.regex(refused?.message ?? "", /remove rec\/2 before rec\/1/);

    // 3 → 5.
    const added = await tc.admin.addUnits("shop", "rec", 2);
    t.deepEqual(added.units, ["rec/3", "rec/4"]);
    await tc.waitForUnits("shop", readyUnits(5), "5 units active", 90_000);
    t.is((await kube.get(R.statefulSets, "rec", { namespace: "shop" })).spec?.replicas, 5);

    // 5 → 2: watch the pods; when one is marked for deletion, its unit's teardown must already be recorded.
    const seenAtDeletion = new Map<string, string[]>();
    const abort = new AbortController();
    const watching = (async () => {
      for await (const ev of kube.watch(R.pods, { namespace: "shop", signal: abort.signal })) {
        const name = ev.object.metadata?.name ?? "";
        if ((ev.type === "DELETED" || ev.object.metadata?.deletionTimestamp) && !seenAtDeletion.has(name)) {
          const unit = `rec/${name.slice("rec-".length)}`;
          const lines = readFileSync(join(record, "hooks.log"), "utf8")
            .split("\n")
            .filter((l) => l.startsWith(`${unit} `))
            .map((l) => l.split(" ")[1]!);
          seenAtDeletion.set(name, lines);
        }
      }
    })().catch(() => undefined);
    for (const u of ["rec/4", "rec/3", "rec/2"]) await tc.admin.removeUnit("shop", u);
    await tc.waitForUnits("shop", readyUnits(2), "2 units left", 90_000);
    await eventually(
      "pods rec-2..4 deleted",
      async () => {
        const pods = await kube.list(R.pods, { namespace: "shop" });
        return pods.items.every((p) => ["rec-0", "rec-1"].includes(p.metadata!.name!)) && pods.items.length === 2;
      },
      60_000,
    );
    abort.abort();
    await watching;
    for (const pod of ["rec-2", "rec-3", "rec-4"]) {
      const lines = seenAtDeletion.get(pod);
      t.truthy(lines, `${pod}'s deletion was seen`);
      t.deepEqual(
        withoutUpdateStatus(lines).slice(-2),
        ["stop", "remove"],
        `${pod} went only after its unit's stop and remove hooks`,
      );
    }
    t.is((await kube.get(R.statefulSets, "rec", { namespace: "shop" })).spec?.replicas, 2);
    t.deepEqual(
      Object.keys(
        (await kube.get(R.secrets, kubernetes.agentsSecretName("rec"), { namespace: "shop" })).data ?? {},
      ).sort(),
      ["agent-0.conf", "agent-1.conf"],
    );
    // Their machines went with them.
    const after = await eventually(
      "the removed units' machines gone",
      async () => {
        const s = await tc.admin.status("shop");
        return Object.keys(s.machines).length === 2 ? s : undefined;
      },
      30_000,
    );
    t.deepEqual(
      Object.values(after.machines)
        .map((m) => m.instance?.id)
        .sort(),
      ["shop/rec-0", "shop/rec-1"],
    );

    // A deleted pod comes back as the same unit: start again (as after a reboot), not install.
    const before = withoutUpdateStatus((await hooksByUnit(record)).get("rec/1"));
    const old = await kube.get(R.pods, "rec-1", { namespace: "shop" });
    await kube.delete(R.pods, "rec-1", { namespace: "shop" });
    await eventually(
      "rec-1 made again and its unit active",
      async () => {
        const pod = await kube.find(R.pods, "rec-1", { namespace: "shop" });
        if (!pod || pod.metadata?.uid === old.metadata?.uid) return undefined;
        const s = await tc.admin.status("shop");
        const u = s.applications.rec?.units["rec/1"];
        const again = withoutUpdateStatus((await hooksByUnit(record)).get("rec/1"));
        return u && unitIsReady(u) && again.length > before.length ? true : undefined;
      },
      90_000,
    );
    hooks = await hooksByUnit(record);
    const added1 = withoutUpdateStatus(hooks.get("rec/1")).slice(before.length);
    t.false(added1.includes("install"), `no install again: ${added1.join(", ")}`);
    t.true(added1.includes("start"), `start again: ${added1.join(", ")}`);

    // A pod made again on a new, empty claim (its node and disk lost): the unit's hook state comes back from the controller.
    const before0 = withoutUpdateStatus((await hooksByUnit(record)).get("rec/0"));
    const old0 = await kube.get(R.pods, "rec-0", { namespace: "shop" });
    const claim = await kube.get(R.persistentVolumeClaims, "agent-state-rec-0", { namespace: "shop" });
    await kube.delete(R.persistentVolumeClaims, "agent-state-rec-0", { namespace: "shop" });
    await kube.delete(R.pods, "rec-0", { namespace: "shop" });
    await eventually(
      "rec-0 made again on a new claim and its unit active",
      async () => {
        const pod = await kube.find(R.pods, "rec-0", { namespace: "shop" });
        const newClaim = await kube.find(R.persistentVolumeClaims, "agent-state-rec-0", { namespace: "shop" });
        if (
          !pod ||
          pod.metadata?.uid === old0.metadata?.uid ||
          !newClaim ||
          newClaim.metadata?.uid === claim.metadata?.uid
        )
          return undefined;
        const u = (await tc.admin.status("shop")).applications.rec?.units["rec/0"];
        return u &&
          unitIsReady(u) &&
          withoutUpdateStatus((await hooksByUnit(record)).get("rec/0")).length > before0.length
          ? true
          : undefined;
      },
      90_000,
    );
    const added0 = withoutUpdateStatus((await hooksByUnit(record)).get("rec/0")).slice(before0.length);
    t.false(added0.includes("install"), `no install on the new claim: ${added0.join(", ")}`);
    t.true(added0.includes("start"), `start again: ${added0.join(", ")}`);
  },
);

test.serial("an application's objects go with it, and the model's namespace with the model", async (t) => {
  const { tc, kube } = lab;
  await tc.admin.createModel("cafe", { updateStatusInterval: 300 }, "kubernetes", { credential: "lab" });
  const op = await tc.upload(join(fixturesDir, "operators", "recorder"));
  await tc.admin.deploy("cafe", { name: "till", operator: op, units: 1, config: { "record-dir": await recordDir() } });
  await tc.waitForUnits("cafe", readyUnits(1), "till/0 active", 90_000);
  await tc.admin.removeApplication("cafe", "till");
  await eventually(
    "till's StatefulSet, Services and Secret deleted",
    async () => {
      const left = await Promise.all([
        kube.find(R.statefulSets, "till", { namespace: "cafe" }),
        kube.find(R.services, "till", { namespace: "cafe" }),
        kube.find(R.services, "till-endpoints", { namespace: "cafe" }),
        kube.find(R.secrets, kubernetes.agentsSecretName("till"), { namespace: "cafe" }),
      ]);
      return left.every((x) => x === undefined);
    },
    60_000,
  );
  await tc.admin.destroyModel("cafe");
  const ns = await eventually(
    "the namespace deleted",
    async () => {
      const found = await kube.find(R.namespaces, "cafe");
      return found === undefined ? "gone" : found.status?.phase === "Terminating" ? "terminating" : undefined;
    },
    60_000,
  );
  t.true(["gone", "terminating"].includes(ns));
});

test.serial(
  "a unit's pod is ready only once its operator says so: the Service lists ready units, the peers' Service every unit",
  async (t) => {
    const { tc, kube } = lab;
    await tc.admin.createModel("db", { updateStatusInterval: 300 }, "kubernetes", { credential: "lab" });
    const op = await tc.upload(join(operatorsDir, "peer-cluster"));
    const readyIn = async (service: string): Promise<string[]> => {
      const slices = await kube.list(R.endpointSlices, {
        namespace: "db",
        labelSelector: `kubernetes.io/service-name=${service}`,
      });
      return slices.items
        .flatMap((s) => s.endpoints.filter((e) => e.conditions?.ready).map((e) => e.targetRef?.name ?? "?"))
        .sort();
    };
    // Two of the three members it waits for: both wait, and their pods stay out of the Service.
    await tc.admin.deploy("db", { name: "quorum", operator: op, units: 2, config: { size: 3 } });
    await tc.waitForUnits(
      "db",
      (units) =>
        units.length === 2 &&
        units.every((u) => /waiting for peers before bootstrapping \(2\/3\)/.test(u.workload.message)),
      "2 units waiting for a third",
      90_000,
    );
    await eventually(
      "both pods running and announced to peers",
      async () => (await readyIn("quorum-endpoints")).length === 2,
      30_000,
    );
    const pods = await kube.list(R.pods, { namespace: "db" });
    t.true(
      pods.items.every(
        (p) =>
          p.status?.phase === "Running" && !p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
      ),
      "running, not ready",
    );
    t.deepEqual(await readyIn("quorum"), [], "no unit in the Service before the cluster is assembled");

    // The third arrives: the leader bootstraps, every unit says ready, and the Service lists all three.
    await tc.admin.addUnits("db", "quorum", 1);
    await tc.waitForUnits("db", readyUnits(3), "3 members active", 90_000);
    const listed = await eventually(
      "every pod in the Service",
      async () => {
        const r = await readyIn("quorum");
        return r.length === 3 ? r : undefined;
      },
      30_000,
    );
    t.deepEqual(listed, ["quorum-0", "quorum-1", "quorum-2"]);
    const s = await tc.admin.status("db");
    t.regex(
      s.applications.quorum!.units["quorum/2"]!.workload.message,
      /ready: 3 members, bootstrapped by quorum\/\d with 3/,
    );
  },
);

test.serial(
  "liveness holds while the controller is away: no agent container is restarted (the last test: it stops the controller)",
  async (t) => {
    const { tc, kube } = lab;
    const restarts = async (): Promise<Record<string, number>> => {
      const pods = await kube.list(R.pods, {
        allNamespaces: true,
        labelSelector: `${kubernetes.LABELS.managedBy}=${kubernetes.MANAGED_BY}`,
      });
      return Object.fromEntries(
        pods.items.map((p) => [
          `${p.metadata!.namespace}/${p.metadata!.name}`,
          p.status?.containerStatuses?.[0]?.restartCount ?? -1,
        ]),
      );
    };
    const before = await restarts();
    t.true(Object.keys(before).length >= 5, `pods of the earlier tests: ${Object.keys(before).join(", ")}`);
    await tc.controller.stop();
    // Liveness is probed every second and fails after 3: 8 s is well past what a controller-bound check would survive.
    await new Promise((r) => setTimeout(r, 8000));
    const after = await restarts();
    t.deepEqual(after, before, "no container restarted");
    const pods = await kube.list(R.pods, {
      allNamespaces: true,
      labelSelector: `${kubernetes.LABELS.managedBy}=${kubernetes.MANAGED_BY}`,
    });
    t.true(
      pods.items.every((p) => p.status?.phase === "Running"),
      "every pod still running",
    );
  },
);
