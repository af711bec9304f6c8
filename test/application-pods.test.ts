/**
 * The kubernetes kind's pod broker (substrates/brokers.ts `ApplicationBroker`), taken through the
 * registry as the controller's pod provisioner takes it, against the fake API server
 * (test/harness/kube/): what each call makes, changes and reports, that the agents' Secret is
 * rewritten only when the configurations change, and what a removed model leaves. The provisioner
 * on top of it is covered end to end by kubernetes-substrate and kubernetes-migration.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { MODEL_SUBSTRATES, contractOf } from "../api";
import type { ApplicationBroker, ApplicationPods } from "../substrates";
import { SUBSTRATES, kubernetes } from "../substrates";
import { FakeKubeApi } from "./harness/kube";
import { eventually } from "./harness/eventually";

const R = kubernetes.KUBE_RESOURCES;
const MODEL = "0b7a7f0e-5b8e-4c2f-9a51-2d0c3c1e6f10";

async function start(t: ExecutionContext, namespace = "shop") {
  const api = await FakeKubeApi.start();
  const kube = new kubernetes.KubeApi(kubernetes.parseKubeconfig(api.kubeconfig()));
  const kind = SUBSTRATES.kubernetes();
  const placement: unknown = kind.placement!(
    { settings: { namespace }, controllerUuid: "ctl" },
    { kubeconfig: api.kubeconfig() },
  );
  const broker = kind.pods!({ agentImage: "steward/agent:test" }) as ApplicationBroker<unknown>;
  t.teardown(async () => {
    broker.close();
    kube.close();
    await api.stop();
  });
  return { api, kube, kind, broker, target: { model: MODEL, placement } };
}

/** An application spec whose agent configurations are `configs`, remembering what the broker held each time. */
function appSpec(
  target: { model: string; placement: unknown },
  app: string,
  replicas: number,
  configs: Record<number, string>,
  held: Map<number, string>[],
): ApplicationPods<unknown> {
  return {
    ...target,
    app,
    replicas,
    agentConfigs: (h) => {
      held.push(new Map(h));
      return Promise.resolve(new Map(Object.entries(configs).map(([n, text]) => [Number(n), text])));
    },
  };
}

test("every kind whose units are pods gives a pod broker and a placement (what the pod provisioner takes from the registry); no other kind does", (t) => {
  const podKinds = MODEL_SUBSTRATES.filter((name) => contractOf(name).provisions === "pods");
  t.deepEqual(podKinds, ["kubernetes"]);
  for (const name of MODEL_SUBSTRATES) {
    const kind = SUBSTRATES[name]();
    t.is(!!kind.pods, podKinds.includes(name), `${name}: a pod broker exactly when its units are pods`);
    if (kind.pods) t.truthy(kind.placement, `${name}: and a placement for it`);
  }
});

test("an application's pods: made, left alone, scaled, re-templated, listed, removed; the agents' Secret rewritten only when it changes", async (t) => {
  const { kube, kind, broker, target } = await start(t);
  t.is(kind.contract.provisions, "pods");
  t.deepEqual(broker.where(target.placement).namespace, "shop");

  t.true(await broker.ensureModel(target), "the namespace is made");
  t.false(await broker.ensureModel(target), "and then is there");
  const ns = await kube.get(R.namespaces, "shop");
  t.is(ns.metadata.labels?.[kubernetes.LABELS.model], MODEL, "labelled as the model's own");

  const held: Map<number, string>[] = [];
  t.deepEqual(await broker.ensureApplication(appSpec(target, "web", 2, { 0: "zero", 1: "one" }, held)), {
    change: "made",
  });
  t.deepEqual(held, [new Map()], "nothing was held before");
  const secret = await kube.get(R.secrets, kubernetes.agentsSecretName("web"), { namespace: "shop" });
  t.deepEqual(
    Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString()])),
    { "agent-0.conf": "zero", "agent-1.conf": "one" },
  );
  t.is((await kube.get(R.statefulSets, "web", { namespace: "shop" })).spec?.replicas, 2);
  t.truthy(await kube.find(R.services, "web", { namespace: "shop" }));
  t.truthy(await kube.find(R.services, kubernetes.endpointsServiceName("web"), { namespace: "shop" }));

  t.deepEqual(await broker.ensureApplication(appSpec(target, "web", 2, { 0: "zero", 1: "one" }, held)), {
    change: "none",
  });
  t.deepEqual(
    held[1],
    new Map([
      [0, "zero"],
      [1, "one"],
    ]),
    "the broker gives back what it holds",
  );
  const same = await kube.get(R.secrets, kubernetes.agentsSecretName("web"), { namespace: "shop" });
  t.is(same.metadata.resourceVersion, secret.metadata.resourceVersion, "an unchanged Secret is not written");

  t.deepEqual(await broker.ensureApplication(appSpec(target, "web", 3, { 0: "zero", 1: "one", 2: "two" }, held)), {
    change: "scaled",
    from: 2,
  });
  const grown = await kube.get(R.secrets, kubernetes.agentsSecretName("web"), { namespace: "shop" });
  t.deepEqual(Object.keys(grown.data ?? {}).sort(), ["agent-0.conf", "agent-1.conf", "agent-2.conf"]);
  t.is((await kube.get(R.statefulSets, "web", { namespace: "shop" })).spec?.replicas, 3);

  // Another agent image is another pod template: patched in, with the replicas.
  const other = kind.pods!({ agentImage: "steward/agent:next" }) as ApplicationBroker<unknown>;
  t.teardown(() => other.close());
  t.deepEqual(await other.ensureApplication(appSpec(target, "web", 3, { 0: "zero", 1: "one", 2: "two" }, held)), {
    change: "template",
  });
  const set = await kube.get(R.statefulSets, "web", { namespace: "shop" });
  t.is(set.spec?.template.spec?.containers[0]?.image, "steward/agent:next");

  const units = [
    { app: "web", unit: 0 },
    { app: "web", unit: 7 },
  ];
  const pods = await eventually("web/0's pod running", async () => {
    const p = await broker.unitPods(target, units);
    return p[0]?.running ? p : undefined;
  });
  t.like(pods[0], { id: "shop/web-0", exists: true, running: true });
  t.regex(pods[0]!.state, /^running, (not )?ready$/);
  t.truthy(pods[0]!.address, "a running pod has its IP");
  t.deepEqual(
    pods[1],
    { id: "shop/web-7", state: "pending", exists: false, running: false },
    "one not there is waited for",
  );
  t.deepEqual(await broker.applications(target), ["web"]);

  await broker.removeApplication(target, "web");
  await broker.removeApplication(target, "web"); // already gone is fine
  t.is(await kube.find(R.secrets, kubernetes.agentsSecretName("web"), { namespace: "shop" }), undefined);
  t.is(await kube.find(R.services, "web", { namespace: "shop" }), undefined);
  await eventually("web's StatefulSet gone", async () => (await broker.applications(target)).length === 0);

  t.deepEqual(await broker.removeModel(target), { removed: "space" }, "the model's own namespace goes whole");
  await eventually("the namespace gone", async () => (await kube.find(R.namespaces, "shop")) === undefined);
  t.deepEqual(await broker.removeModel(target), { removed: "nothing" }, "a space already gone is fine");
});

test("a namespace the model shares keeps standing: only the model's applications go; every call takes the signal", async (t) => {
  const { kube, broker, target } = await start(t, "shared");
  await kube.create(R.namespaces, { metadata: { name: "shared" } });
  t.false(await broker.ensureModel(target), "a namespace already there is used as it is");
  const held: Map<number, string>[] = [];
  t.deepEqual(await broker.ensureApplication(appSpec(target, "db", 0, {}, held)), { change: "made" });
  t.deepEqual(held, [], "no units: no configurations asked for, no Secret");
  t.is(await kube.find(R.secrets, kubernetes.agentsSecretName("db"), { namespace: "shared" }), undefined);

  // An aborted call ends with the signal's reason.
  const aborted = (p: Promise<unknown>) =>
    p.then(
      () => "went through",
      (err: Error) => err.name,
    );
  t.is(await aborted(broker.ensureModel(target, { signal: AbortSignal.abort() })), "AbortError");
  t.is(await aborted(broker.removeModel(target, { signal: AbortSignal.abort() })), "AbortError");
  t.truthy(await kube.find(R.statefulSets, "db", { namespace: "shared" }), "an aborted call removed nothing");

  // A released placement is opened again on its next call.
  broker.release(target.placement);
  t.deepEqual(await broker.removeModel(target), { removed: "applications", applications: ["db"] });
  t.truthy(await kube.find(R.namespaces, "shared"), "the shared namespace stays");
  await eventually("db's StatefulSet gone", async () => (await broker.applications(target)).length === 0);
});
