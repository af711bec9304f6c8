/**
 * Workload containers end to end on the FAKE API server and FAKE process kubelet, with a real
 * controller and the real agent and supervisor bundles: an operator declaring one container is
 * deployed with 2 units; each pod's init container places the supervisor, which becomes the
 * workload container's entrypoint; the unit runs `web-workload-ready`, pushes files, sets the layer
 * and starts the service with the hook tools, the page answers on the pod's IP and the unit goes
 * active. A killed service is restarted by the supervisor (not the container by the kubelet), a
 * recreated pod runs `web-workload-ready` again, and an application upgraded to an operator that
 * declares containers gets them in its pods.
 */
import test from "ava";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { request } from "node:http";
import { join } from "node:path";
import type { UnitStatusView } from "../api";
import { unitIsReady } from "../api";
import { kubernetes } from "../substrates";
import { fixturesDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import type { KubeLab } from "./harness/kube/lab";
import { startKubeLab } from "./harness/kube/lab";
import { hooksByUnit, recordDir } from "./harness/operators";

const R = kubernetes.KUBE_RESOURCES;
const readyUnits =
  (n: number) =>
  (units: UnitStatusView[]): boolean =>
    units.length === n && units.every(unitIsReady);

function get(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ host, port, path: "/", timeout: 2000 }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => {
        body += d.toString();
      });
      res.on("end", () => resolve(body));
    })
      .on("error", reject)
      .on("timeout", function (this: { destroy(e: Error): void }) {
        this.destroy(new Error("timed out"));
      })
      .end();
  });
}

let lab: KubeLab;
/** Where the operator records its hooks (set by the first test, which deploys it). */
let record = "";
test.before(async () => {
  lab = await startKubeLab();
});
test.after.always(async () => {
  await lab?.close();
});

test.serial(
  "an operator's workload container runs under the supervisor: workload-ready, layer and service set by hook tools, page served on the pod IP",
  async (t) => {
    const { tc, kube, kubelet } = lab;
    record = await recordDir();
    await tc.admin.createModel("wl", { updateStatusInterval: 300 }, "kubernetes", { credential: "lab" });
    const op = await tc.upload(join(fixturesDir, "operators", "workload-web"));
    await tc.admin.deploy("wl", { name: "site", operator: op, units: 2, config: { "record-dir": record } });
    await tc.waitForUnits("wl", readyUnits(2), "2 units active, serving from their workload containers", 120_000);

    const set = await kube.get(R.statefulSets, "site", { namespace: "wl" });
    const podSpec = set.spec!.template.spec!;
    t.deepEqual(
      podSpec.initContainers?.map((c) => c.name),
      ["steward-init"],
    );
    t.deepEqual(
      podSpec.containers.map((c) => c.name),
      ["steward-agent", "web"],
    );

    const hooks = await hooksByUnit(record);
    for (const n of [0, 1]) {
      const unit = `site/${n}`;
      const seen = (hooks.get(unit) ?? []).filter((h) => h !== "update-status");
      t.deepEqual(seen.slice(-2), ["start", "web-workload-ready"], `${unit}: ${seen.join(", ")}`);
      t.is(seen.filter((h) => h === "web-workload-ready").length, 1, `${unit} ran web-workload-ready once`);
      // The container turns ready when its startup probe (on the supervisor) passes, which the unit need not wait for.
      const pod = await eventually(
        `site-${n}'s web container ready`,
        async () => {
          const p = await kube.get(R.pods, `site-${n}`, { namespace: "wl" });
          return p.status?.containerStatuses?.find((c) => c.name === "web")?.ready ? p : undefined;
        },
        30_000,
      );
      t.is(
        (pod.status?.initContainerStatuses?.[0]?.state as { terminated?: { reason?: string } } | undefined)?.terminated
          ?.reason,
        "Completed",
        "the init container placed the supervisor",
      );
      t.is(
        pod.status?.containerStatuses?.find((c) => c.name === "web")?.restartCount,
        0,
        "the web container was never restarted",
      );
      t.is(await get(pod.status!.podIP!, 8080), `hello from ${unit}\n`, `${unit}'s page on its pod IP`);
      t.regex(
        await readFile(join(record, `services-site-${n}.txt`), "utf8"),
        /http\s+disabled\s+active\s+0/,
        "container-services listed the service active",
      );
      t.regex((await tc.admin.status("wl")).applications.site!.units[unit]!.workload.message, /serving on :8080/);
    }

    // The service dies: its supervisor starts it again by its on-failure policy; the container stays up.
    const pod0 = await kube.get(R.pods, "site-0", { namespace: "wl" });
    const killed = await kubelet.exec("wl", "site-0", "web", ["pkill", "-f", "/steward/srv/server.js"]);
    t.is(killed.code, 0, killed.stderr);
    const again = await eventually(
      "the page served again",
      () => get(pod0.status!.podIP!, 8080).catch(() => undefined),
      30_000,
      200,
    );
    t.is(again, "hello from site/0\n");
    const web0 = (await kube.get(R.pods, "site-0", { namespace: "wl" })).status?.containerStatuses?.find(
      (c) => c.name === "web",
    );
    t.is(web0?.restartCount, 0, "the kubelet did not restart the container");
    t.is((await kube.get(R.pods, "site-0", { namespace: "wl" })).metadata?.uid, pod0.metadata?.uid);
  },
);

test.serial(
  "a recreated pod brings a new supervisor: web-workload-ready runs again and the page is back",
  async (t) => {
    const { tc, kube } = lab;
    const old = await kube.get(R.pods, "site-1", { namespace: "wl" });
    const before = ((await hooksByUnit(record)).get("site/1") ?? []).filter((h) => h === "web-workload-ready").length;
    await kube.delete(R.pods, "site-1", { namespace: "wl" });
    const pod = await eventually(
      "site-1 made again, its unit active and its page served",
      async () => {
        const p = await kube.find(R.pods, "site-1", { namespace: "wl" });
        if (!p?.status?.podIP || p.metadata?.uid === old.metadata?.uid) return undefined;
        const ready =
          ((await hooksByUnit(record)).get("site/1") ?? []).filter((h) => h === "web-workload-ready").length > before;
        const page = ready ? await get(p.status.podIP, 8080).catch(() => undefined) : undefined;
        return page === "hello from site/1\n" ? p : undefined;
      },
      120_000,
      500,
    );
    t.not(pod.metadata?.uid, old.metadata?.uid);
    const all = ((await hooksByUnit(record)).get("site/1") ?? []).filter((h) => h !== "update-status");
    // Since the deletion: start again (a new boot), config-changed (the pod's new IP), and the new supervisor's workload-ready last.
    const since = all.slice(all.lastIndexOf("start"));
    t.is(since[0], "start", all.join(", "));
    t.is(since.at(-1), "web-workload-ready", all.join(", "));
    t.false(since.slice(1).includes("install"), "no install again");
    await tc.waitForUnits("wl", readyUnits(2), "both units active again", 60_000);
  },
);

test.serial(
  "upgrading to an operator that declares a container patches the pod template: the pod is rolled with the container",
  async (t) => {
    const { tc, kube } = lab;
    // The same operator before it had containers: active without one.
    const v1 = await mkdtemp(join(tmpdir(), "steward-op-"));
    t.teardown(() => rm(v1, { recursive: true, force: true }));
    await cp(join(fixturesDir, "operators", "workload-web"), v1, { recursive: true });
    const yaml = await readFile(join(v1, "operator.yaml"), "utf8");
    await writeFile(
      join(v1, "operator.yaml"),
      yaml.replace(/^containers:\n(?: .*\n)+/m, "").replace(/^version: "1"$/m, 'version: "0"'),
    );
    const dispatch = await readFile(join(v1, "dispatch"), "utf8");
    await writeFile(
      join(v1, "dispatch"),
      dispatch.replace('status-set waiting "waiting for the web container"', 'status-set active "no containers yet"'),
    );
    const old = await tc.upload(v1);
    await tc.admin.deploy("wl", { name: "plain", operator: old, units: 1, config: { "record-dir": record } });
    const plainReady = (units: UnitStatusView[]): boolean =>
      units.filter((u) => u.name.startsWith("plain/")).length === 1 &&
      units.filter((u) => u.name.startsWith("plain/")).every(unitIsReady);
    await tc.waitForUnits("wl", plainReady, "plain/0 active without containers", 90_000);
    t.is((await kube.get(R.statefulSets, "plain", { namespace: "wl" })).spec!.template.spec!.initContainers, undefined);

    const next = await tc.upload(join(fixturesDir, "operators", "workload-web"));
    await tc.admin.updateApplication("wl", "plain", { operator: next });
    const pod = await eventually(
      "plain-0 rolled with the web container and serving",
      async () => {
        const p = await kube.find(R.pods, "plain-0", { namespace: "wl" });
        if (!p?.status?.podIP || !p.spec?.containers.some((c) => c.name === "web")) return undefined;
        const page = await get(p.status.podIP, 8080).catch(() => undefined);
        return page === "hello from plain/0\n" ? p : undefined;
      },
      120_000,
      500,
    );
    t.deepEqual(
      pod.spec?.initContainers?.map((c) => c.name),
      ["steward-init"],
    );
    const seen = ((await hooksByUnit(record)).get("plain/0") ?? []).filter((h) => h !== "update-status");
    t.true(seen.includes("upgrade"), seen.join(", "));
    t.is(seen[seen.length - 1], "web-workload-ready", seen.join(", "));
  },
);
