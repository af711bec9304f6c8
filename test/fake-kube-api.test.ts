/**
 * The fake Kubernetes API server (test/harness/kube/) as the real `@kubernetes/client-node` (1.4.0,
 * the newest for Node 20) sees it: authentication, the Status errors, resourceVersion and
 * conflicts, validation against the 1.33 schema, lists and watches (410 when too old, bookmarks),
 * patches, deletion, and the StatefulSet controller with its kubelet. Behaviour is asserted as the
 * Kubernetes documentation describes it, not as any Steward code uses it.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { request } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node" with { "resolution-mode": "import" };
import { FakeKubeApi, SimpleKubelet } from "./harness/kube";
import type { FakeKubeApiOptions, KubeObject, Kubelet, KubeletHost } from "./harness/kube";
import { eventually } from "./harness/eventually";

const loadClient = () => import("@kubernetes/client-node");
type K8s = Awaited<ReturnType<typeof loadClient>>;

interface Env {
  api: FakeKubeApi;
  k8s: K8s;
  kc: KubeConfig;
  core: InstanceType<K8s["CoreV1Api"]>;
  apps: InstanceType<K8s["AppsV1Api"]>;
}

async function start(t: ExecutionContext, o: FakeKubeApiOptions = {}): Promise<Env> {
  const api = await FakeKubeApi.start(o);
  t.teardown(() => api.stop());
  const k8s = await loadClient();
  const kc = new k8s.KubeConfig();
  kc.loadFromString(api.kubeconfig());
  return { api, k8s, kc, core: kc.makeApiClient(k8s.CoreV1Api), apps: kc.makeApiClient(k8s.AppsV1Api) };
}

/** The Status a failed client-node call carries (its body is the JSON text the server sent). */
async function statusOf(p: Promise<unknown>): Promise<{
  code: number;
  reason?: string;
  message?: string;
  kind?: string;
  details?: {
    name?: string;
    kind?: string;
    group?: string;
    causes?: { field: string; message: string; reason: string }[];
  };
}> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e as { code: number; body: unknown },
  );
  if (!err) throw new Error("the call succeeded");
  const body = typeof err.body === "string" ? JSON.parse(err.body) : err.body;
  return { code: err.code, ...body };
}

function raw(
  api: FakeKubeApi,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; text: string }> {
  const u = new URL(api.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, ca: api.caCert, headers }, (res) => {
      let text = "";
      res.on("data", (d: Buffer) => {
        text += d.toString();
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const sts = (
  name: string,
  o: { replicas?: number; policy?: string; probe?: boolean; claims?: boolean; labels?: Record<string, string> } = {},
) => ({
  apiVersion: "apps/v1",
  kind: "StatefulSet",
  metadata: { name },
  spec: {
    replicas: o.replicas ?? 3,
    serviceName: name,
    podManagementPolicy: o.policy ?? "Parallel",
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: o.labels ?? { app: name } },
      spec: {
        containers: [
          {
            name: "main",
            image: "busybox:1.36",
            ...(o.probe ? { readinessProbe: { httpGet: { path: "/ready", port: 8080 } } } : {}),
          },
        ],
      },
    },
    ...(o.claims
      ? {
          volumeClaimTemplates: [
            {
              metadata: { name: "data" },
              spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
            },
          ],
        }
      : {}),
  },
});

/** A kubelet whose pods stop only when the test says. */
class HoldingKubelet extends SimpleKubelet {
  readonly held: { pod: KubeObject; force: boolean }[] = [];
  override killPod(pod: KubeObject, force: boolean): void {
    this.held.push({ pod, force });
  }
  release(name: string): void {
    const i = this.held.findIndex((h) => h.pod.metadata.name === name);
    const [h] = this.held.splice(i, 1);
    super.killPod(h!.pod, h!.force);
  }
}

test("without credentials every API path is 401 Unauthorized (a Status); /version and /healthz are open", async (t) => {
  const { api } = await start(t);
  const none = await raw(api, "GET", "/api/v1/namespaces");
  t.is(none.status, 401);
  t.like(JSON.parse(none.text), { kind: "Status", status: "Failure", reason: "Unauthorized", code: 401 });
  const wrong = await raw(api, "GET", "/api/v1/namespaces", { authorization: "Bearer not-the-token" });
  t.is(wrong.status, 401);
  const right = await raw(api, "GET", "/api/v1/namespaces", { authorization: `Bearer ${api.token}` });
  t.is(right.status, 200);
  t.is(JSON.parse(right.text).kind, "NamespaceList");
  t.is((await raw(api, "GET", "/healthz")).text, "ok");
  t.is(JSON.parse((await raw(api, "GET", "/version")).text).minor, "33");
});

test("KubeConfig with a token, and with a client certificate the fake issued, both authenticate", async (t) => {
  const { api, k8s, core } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  const kc = new k8s.KubeConfig();
  kc.loadFromString(api.kubeconfig({ clientCert: await api.issueClientCertificate(), context: "by-cert" }));
  t.is(kc.getCurrentContext(), "by-cert");
  const list = await kc.makeApiClient(k8s.CoreV1Api).listNamespace();
  t.deepEqual(
    list.items.map((n) => n.metadata?.name),
    ["shop"],
  );
  t.is(api.requests.at(-1)!.user.length > 0, true);
  t.is(api.requests.at(-1)!.status, 200);
});

test("create answers 201 with uid, creationTimestamp and a resourceVersion that grows across the server; a second create is 409 AlreadyExists", async (t) => {
  const { api, core } = await start(t);
  const ns = await core.createNamespace({ body: { metadata: { name: "shop" } } });
  t.is(ns.status?.phase, "Active");
  t.is(ns.metadata?.labels?.["kubernetes.io/metadata.name"], "shop");
  const cm = await core.createNamespacedConfigMap({
    namespace: "shop",
    body: { metadata: { name: "cfg" }, data: { a: "1" } },
  });
  t.regex(cm.metadata!.uid!, /^[0-9a-f-]{36}$/);
  t.true(cm.metadata!.creationTimestamp instanceof Date);
  const secret = await core.createNamespacedSecret({
    namespace: "shop",
    body: { metadata: { name: "s" }, stringData: { password: "hunter2" } },
  });
  t.true(Number(secret.metadata!.resourceVersion) > Number(cm.metadata!.resourceVersion));
  t.true(Number(cm.metadata!.resourceVersion) > Number(ns.metadata!.resourceVersion));
  // stringData is write-only: folded into data as base64, type defaulted.
  t.deepEqual(secret.data, { password: Buffer.from("hunter2").toString("base64") });
  t.is(secret.type, "Opaque");
  t.is(api.requests.find((r) => r.method === "POST" && r.path === "/api/v1/namespaces/shop/configmaps")?.status, 201);
  const again = await statusOf(
    core.createNamespacedConfigMap({ namespace: "shop", body: { metadata: { name: "cfg" } } }),
  );
  t.like(again, {
    code: 409,
    kind: "Status",
    reason: "AlreadyExists",
    message: 'configmaps "cfg" already exists',
    details: { name: "cfg", kind: "configmaps" },
  });
  const nowhere = await statusOf(
    core.createNamespacedConfigMap({ namespace: "nowhere", body: { metadata: { name: "cfg" } } }),
  );
  t.like(nowhere, { code: 404, reason: "NotFound", message: 'namespaces "nowhere" not found' });
});

test("a missing object is 404 NotFound with the standard Status; a stale resourceVersion on update is 409 Conflict", async (t) => {
  const { core } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  const missing = await statusOf(core.readNamespacedConfigMap({ namespace: "shop", name: "nope" }));
  t.deepEqual(missing, {
    code: 404,
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: 'configmaps "nope" not found',
    reason: "NotFound",
    details: { name: "nope", kind: "configmaps" },
  } as never);
  const cm = await core.createNamespacedConfigMap({
    namespace: "shop",
    body: { metadata: { name: "cfg" }, data: { a: "1" } },
  });
  const updated = await core.replaceNamespacedConfigMap({
    namespace: "shop",
    name: "cfg",
    body: { ...cm, data: { a: "2" } },
  });
  t.true(Number(updated.metadata!.resourceVersion) > Number(cm.metadata!.resourceVersion));
  t.is(updated.metadata!.uid, cm.metadata!.uid);
  const stale = await statusOf(
    core.replaceNamespacedConfigMap({ namespace: "shop", name: "cfg", body: { ...cm, data: { a: "3" } } }),
  );
  t.like(stale, {
    code: 409,
    reason: "Conflict",
    message:
      'Operation cannot be fulfilled on configmaps "cfg": the object has been modified; please apply your changes to the latest version and try again',
  });
  // Without a resourceVersion the update is unconditional; an update that changes nothing writes nothing.
  const blind = await core.replaceNamespacedConfigMap({
    namespace: "shop",
    name: "cfg",
    body: { metadata: { name: "cfg" }, data: { a: "4" } },
  });
  t.is(blind.data?.a, "4");
  const same = await core.replaceNamespacedConfigMap({ namespace: "shop", name: "cfg", body: blind });
  t.is(same.metadata!.resourceVersion, blind.metadata!.resourceVersion);
});

test("objects are validated against the 1.33 schema: wrong types 400, missing fields and bad names 422 Invalid with causes", async (t) => {
  const { api, core, apps } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  const wrongType = await raw(
    api,
    "POST",
    "/apis/apps/v1/namespaces/shop/statefulsets",
    { authorization: `Bearer ${api.token}`, "content-type": "application/json" },
    JSON.stringify({ ...sts("web"), spec: { ...sts("web").spec, replicas: "three" } }),
  );
  t.is(wrongType.status, 400);
  t.like(JSON.parse(wrongType.text), { kind: "Status", reason: "BadRequest", code: 400 });
  t.regex(JSON.parse(wrongType.text).message, /spec\.replicas/);
  const noName = sts("web");
  delete (noName.spec.template.spec.containers[0] as { name?: string }).name;
  const missing = await statusOf(apps.createNamespacedStatefulSet({ namespace: "shop", body: noName as never }));
  t.like(missing, { code: 422, reason: "Invalid", details: { name: "web", group: "apps", kind: "StatefulSet" } });
  t.deepEqual(missing.details?.causes, [
    { reason: "FieldValueRequired", message: "Required value", field: "spec.template.spec.containers[0].name" },
  ]);
  t.regex(
    missing.message!,
    /^StatefulSet\.apps "web" is invalid: spec\.template\.spec\.containers\[0\]\.name: Required value/,
  );
  const mismatch = await statusOf(
    apps.createNamespacedStatefulSet({ namespace: "shop", body: sts("web", { labels: { app: "other" } }) as never }),
  );
  t.is(mismatch.code, 422);
  t.is(mismatch.details?.causes?.[0]?.field, "spec.template.metadata.labels");
  const badName = await statusOf(
    core.createNamespacedConfigMap({ namespace: "shop", body: { metadata: { name: "Not_A_Name" } } }),
  );
  t.is(badName.code, 422);
  t.is(badName.details?.causes?.[0]?.field, "metadata.name");
  const badService = await statusOf(
    core.createNamespacedService({
      namespace: "shop",
      body: { metadata: { name: "1web" }, spec: { ports: [{ port: 80 }] } },
    }),
  );
  t.regex(badService.message!, /DNS-1035 label/);
  // Nothing invalid was stored.
  t.is((await apps.listNamespacedStatefulSet({ namespace: "shop" })).items.length, 0);
});

test("Services: ClusterIP by default (a loopback address here), headless with clusterIP None, defaults for ports; clusterIP may not change", async (t) => {
  const { core } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  const svc = await core.createNamespacedService({
    namespace: "shop",
    body: { metadata: { name: "web" }, spec: { selector: { app: "web" }, ports: [{ name: "http", port: 80 }] } },
  });
  t.is(svc.spec?.type, "ClusterIP");
  t.regex(svc.spec!.clusterIP!, /^127\./);
  t.like(svc.spec?.ports?.[0], { protocol: "TCP", port: 80 });
  t.is(svc.spec?.ports?.[0]?.targetPort as unknown, 80);
  const headless = await core.createNamespacedService({
    namespace: "shop",
    body: { metadata: { name: "web-peers" }, spec: { clusterIP: "None", selector: { app: "web" } } },
  });
  t.is(headless.spec?.clusterIP, "None");
  const moved = await statusOf(
    core.replaceNamespacedService({
      namespace: "shop",
      name: "web",
      body: { ...svc, spec: { ...svc.spec, clusterIP: "127.96.9.9", clusterIPs: ["127.96.9.9"] } },
    }),
  );
  t.is(moved.code, 422);
  t.is(moved.details?.causes?.[0]?.field, "spec.clusterIPs[0]");
});

test("list: label and field selectors, the list's resourceVersion, limit and continue with remainingItemCount", async (t) => {
  const { core } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  for (const [name, tier] of [
    ["a", "web"],
    ["b", "db"],
    ["c", "web"],
    ["d", "cache"],
  ] as const) {
    await core.createNamespacedConfigMap({
      namespace: "shop",
      body: { metadata: { name, labels: { tier, ...(name === "c" ? { canary: "yes" } : {}) } } },
    });
  }
  const web = await core.listNamespacedConfigMap({ namespace: "shop", labelSelector: "tier=web" });
  t.deepEqual(
    web.items.map((i) => i.metadata?.name),
    ["a", "c"],
  );
  t.truthy(web.metadata?.resourceVersion);
  t.deepEqual(
    (await core.listNamespacedConfigMap({ namespace: "shop", labelSelector: "tier in (db,cache)" })).items.map(
      (i) => i.metadata?.name,
    ),
    ["b", "d"],
  );
  t.deepEqual(
    (await core.listNamespacedConfigMap({ namespace: "shop", labelSelector: "tier=web,!canary" })).items.map(
      (i) => i.metadata?.name,
    ),
    ["a"],
  );
  // Every namespace also holds kube-root-ca.crt (no tier label): `tier!=web` alone would match it too.
  t.deepEqual(
    (await core.listNamespacedConfigMap({ namespace: "shop", labelSelector: "tier,tier!=web" })).items.map(
      (i) => i.metadata?.name,
    ),
    ["b", "d"],
  );
  t.deepEqual(
    (await core.listNamespacedConfigMap({ namespace: "shop", fieldSelector: "metadata.name=b" })).items.map(
      (i) => i.metadata?.name,
    ),
    ["b"],
  );
  t.like(await statusOf(core.listNamespacedConfigMap({ namespace: "shop", fieldSelector: "data.x=1" })), {
    code: 400,
    message: "field label not supported: data.x",
  });
  t.like(await statusOf(core.listNamespacedConfigMap({ namespace: "shop", labelSelector: "tier in (web" })), {
    code: 400,
    reason: "BadRequest",
  });
  const page1 = await core.listNamespacedConfigMap({ namespace: "shop", labelSelector: "tier", limit: 3 });
  t.deepEqual(
    page1.items.map((i) => i.metadata?.name),
    ["a", "b", "c"],
  );
  t.is(page1.metadata?.remainingItemCount, 1);
  const page2 = await core.listNamespacedConfigMap({
    namespace: "shop",
    labelSelector: "tier",
    limit: 3,
    _continue: page1.metadata!._continue!,
  });
  t.deepEqual(
    page2.items.map((i) => i.metadata?.name),
    ["d"],
  );
  t.is(page2.metadata?._continue, undefined);
  t.like(await statusOf(core.listNamespacedConfigMap({ namespace: "shop", _continue: "made-up" })), {
    code: 410,
    reason: "Expired",
  });
});

test("Watch from a list's resourceVersion sees ADDED, MODIFIED and DELETED in order, only for its selector; an object leaving the selector is DELETED", async (t) => {
  const { k8s, kc, core } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await core.createNamespacedConfigMap({
    namespace: "shop",
    body: { metadata: { name: "before", labels: { w: "1" } } },
  });
  const listed = await core.listNamespacedConfigMap({ namespace: "shop" });
  const seen: string[] = [];
  const watch = new k8s.Watch(kc);
  const ctl = await watch.watch(
    "/api/v1/namespaces/shop/configmaps",
    { resourceVersion: listed.metadata!.resourceVersion!, labelSelector: "w=1" },
    (type, obj: { metadata: { name: string; resourceVersion: string } }) => seen.push(`${type} ${obj.metadata.name}`),
    () => undefined,
  );
  t.teardown(() => ctl.abort());
  const a = await core.createNamespacedConfigMap({
    namespace: "shop",
    body: { metadata: { name: "a", labels: { w: "1" } }, data: { v: "1" } },
  });
  await core.createNamespacedConfigMap({ namespace: "shop", body: { metadata: { name: "unwatched" } } });
  await core.replaceNamespacedConfigMap({ namespace: "shop", name: "a", body: { ...a, data: { v: "2" } } });
  await core.patchNamespacedConfigMap(
    { namespace: "shop", name: "before", body: { metadata: { labels: { w: null } } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
  await core.deleteNamespacedConfigMap({ namespace: "shop", name: "a" });
  await eventually("the watch events", () => seen.length >= 4);
  t.deepEqual(seen, ["ADDED a", "MODIFIED a", "DELETED before", "DELETED a"]);
});

test("Watch without a resourceVersion starts with a synthetic ADDED per object; from a version older than the history it gets an ERROR event with 410 Expired", async (t) => {
  const { k8s, kc, core } = await start(t, { historySize: 5 });
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  const first = await core.createNamespacedConfigMap({ namespace: "shop", body: { metadata: { name: "c0" } } });
  for (let i = 1; i < 8; i++)
    await core.createNamespacedConfigMap({ namespace: "shop", body: { metadata: { name: `c${i}` } } });
  const initial: string[] = [];
  const w1 = await new k8s.Watch(kc).watch(
    "/api/v1/namespaces/shop/configmaps",
    {},
    (type, obj: { metadata: { name: string } }) => initial.push(`${type} ${obj.metadata.name}`),
    () => undefined,
  );
  t.teardown(() => w1.abort());
  await eventually("the initial events", () => initial.length >= 9);
  t.deepEqual(
    initial,
    [...[0, 1, 2, 3, 4, 5, 6, 7].map((i) => `ADDED c${i}`), "ADDED kube-root-ca.crt"],
    "by name, the root CA publisher's ConfigMap too",
  );
  const events: { type: string; obj: { kind?: string; code?: number; reason?: string; message?: string } }[] = [];
  let ended = false;
  await new k8s.Watch(kc).watch(
    "/api/v1/namespaces/shop/configmaps",
    { resourceVersion: first.metadata!.resourceVersion! },
    (type, obj) => events.push({ type, obj }),
    () => {
      ended = true;
    },
  );
  await eventually("the watch to end", () => ended);
  t.is(events.length, 1);
  t.is(events[0]!.type, "ERROR");
  t.like(events[0]!.obj, { kind: "Status", code: 410, reason: "Expired" });
  t.regex(events[0]!.obj.message!, /too old resource version/);
});

test("Watch with allowWatchBookmarks gets BOOKMARK events carrying the current resourceVersion; timeoutSeconds ends the stream", async (t) => {
  const { k8s, kc, core } = await start(t, { bookmarkIntervalMs: 100 });
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  const cm = await core.createNamespacedConfigMap({ namespace: "shop", body: { metadata: { name: "c" } } });
  const bookmarks: { kind: string; metadata: { resourceVersion: string } }[] = [];
  let ended = false;
  await new k8s.Watch(kc).watch(
    "/api/v1/namespaces/shop/configmaps",
    { resourceVersion: cm.metadata!.resourceVersion!, allowWatchBookmarks: true, timeoutSeconds: 1 },
    (type, obj) => {
      if (type === "BOOKMARK") bookmarks.push(obj);
    },
    () => {
      ended = true;
    },
  );
  await eventually("the watch to time out", () => ended, 5000);
  t.true(bookmarks.length >= 2);
  t.like(bookmarks[0], { kind: "ConfigMap", metadata: { resourceVersion: cm.metadata!.resourceVersion! } });
});

test("patch: merge patch, JSON patch (a failed test op is 422), server-side apply creates then merges; strategic merge is refused 415", async (t) => {
  const { k8s, core } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await core.createNamespacedConfigMap({
    namespace: "shop",
    body: { metadata: { name: "cfg" }, data: { a: "1", b: "2" } },
  });
  const merged = await core.patchNamespacedConfigMap(
    { namespace: "shop", name: "cfg", body: { data: { a: "10", b: null, c: "3" } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
  t.deepEqual(merged.data, { a: "10", c: "3" });
  const patched = await core.patchNamespacedConfigMap(
    {
      namespace: "shop",
      name: "cfg",
      body: [
        { op: "test", path: "/data/a", value: "10" },
        { op: "replace", path: "/data/a", value: "11" },
      ],
    },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
  );
  t.is(patched.data?.a, "11");
  const failed = await statusOf(
    core.patchNamespacedConfigMap(
      { namespace: "shop", name: "cfg", body: [{ op: "test", path: "/data/a", value: "nope" }] },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
    ),
  );
  t.is(failed.code, 422);
  // A merge patch carrying a stale resourceVersion is a conflict (optimistic locking).
  const locked = await statusOf(
    core.patchNamespacedConfigMap(
      { namespace: "shop", name: "cfg", body: { metadata: { resourceVersion: "1" }, data: { a: "12" } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    ),
  );
  t.like(locked, { code: 409, reason: "Conflict" });
  const applied = await core.patchNamespacedConfigMap(
    {
      namespace: "shop",
      name: "new",
      fieldManager: "steward",
      body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "new" }, data: { x: "1" } },
    },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.ServerSideApply),
  );
  t.deepEqual(applied.data, { x: "1" });
  const reapplied = await core.patchNamespacedConfigMap(
    {
      namespace: "shop",
      name: "new",
      fieldManager: "steward",
      body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "new" }, data: { y: "2" } },
    },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.ServerSideApply),
  );
  t.is(reapplied.data?.y, "2");
  t.is(reapplied.metadata?.uid, applied.metadata?.uid);
  const noManager = await statusOf(
    core.patchNamespacedConfigMap(
      { namespace: "shop", name: "new", body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "new" } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.ServerSideApply),
    ),
  );
  t.is(noManager.code, 422);
  const strategic = await statusOf(
    core.patchNamespacedConfigMap(
      { namespace: "shop", name: "cfg", body: { data: { a: "1" } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch),
    ),
  );
  t.is(strategic.code, 415);
});

test("deletion: finalizers hold an object with a deletionTimestamp until removed; dryRun deletes nothing", async (t) => {
  const { k8s, core } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await core.createNamespacedConfigMap({
    namespace: "shop",
    body: { metadata: { name: "held", finalizers: ["example.com/hold"] } },
  });
  await core.deleteNamespacedConfigMap({ namespace: "shop", name: "held", dryRun: "All" });
  t.is(
    (await core.readNamespacedConfigMap({ namespace: "shop", name: "held" })).metadata?.deletionTimestamp,
    undefined,
  );
  await core.deleteNamespacedConfigMap({ namespace: "shop", name: "held" });
  const held = await core.readNamespacedConfigMap({ namespace: "shop", name: "held" });
  t.true(held.metadata?.deletionTimestamp instanceof Date);
  const added = await statusOf(
    core.patchNamespacedConfigMap(
      { namespace: "shop", name: "held", body: { metadata: { finalizers: ["example.com/hold", "example.com/more"] } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    ),
  );
  t.is(added.code, 422);
  await core.patchNamespacedConfigMap(
    { namespace: "shop", name: "held", body: { metadata: { finalizers: null } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
  t.is((await statusOf(core.readNamespacedConfigMap({ namespace: "shop", name: "held" }))).code, 404);
});

test("StatefulSet (Parallel): pods <name>-0..2 created at once, Running with loopback IPs and Ready; status as the controller keeps it", async (t) => {
  const { core, apps } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  const created = await apps.createNamespacedStatefulSet({
    namespace: "shop",
    body: sts("web", { claims: true }) as never,
  });
  t.is(created.metadata?.generation, 1);
  t.like(created.spec, {
    podManagementPolicy: "Parallel",
    updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 0 } },
    revisionHistoryLimit: 10,
  });
  const ready = await eventually("3 ready replicas", async () => {
    const s = await apps.readNamespacedStatefulSet({ namespace: "shop", name: "web" });
    return s.status?.readyReplicas === 3 ? s : undefined;
  });
  t.like(ready.status, {
    replicas: 3,
    readyReplicas: 3,
    availableReplicas: 3,
    currentReplicas: 3,
    updatedReplicas: 3,
    observedGeneration: 1,
  });
  t.is(ready.status?.currentRevision, ready.status?.updateRevision);
  const pods = (await core.listNamespacedPod({ namespace: "shop", labelSelector: "app=web" })).items;
  t.deepEqual(
    pods.map((p) => p.metadata?.name),
    ["web-0", "web-1", "web-2"],
  );
  for (const [i, p] of pods.entries()) {
    t.is(p.status?.phase, "Running");
    t.regex(p.status!.podIP!, /^127\.1\./);
    t.is(p.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    t.is(p.spec?.hostname, `web-${i}`);
    t.is(p.spec?.subdomain, "web");
    t.is(p.spec?.nodeName, "fake-node-0");
    t.is(p.metadata?.labels?.["statefulset.kubernetes.io/pod-name"], `web-${i}`);
    t.is(p.metadata?.labels?.["apps.kubernetes.io/pod-index"], String(i));
    t.like(p.metadata?.ownerReferences?.[0], {
      kind: "StatefulSet",
      name: "web",
      uid: created.metadata!.uid!,
      controller: true,
    });
    t.is(p.spec?.volumes?.find((v) => v.name === "data")?.persistentVolumeClaim?.claimName, `data-web-${i}`);
  }
  const claims = (await core.listNamespacedPersistentVolumeClaim({ namespace: "shop" })).items;
  t.deepEqual(
    claims.map((c) => [c.metadata?.name, c.status?.phase]),
    [
      ["data-web-0", "Bound"],
      ["data-web-1", "Bound"],
      ["data-web-2", "Bound"],
    ],
  );
});

test("StatefulSet /scale: 3 → 5 → 2 deletes the highest ordinals first; claims are kept; a negative scale is 422", async (t) => {
  const { k8s, kc, core, apps } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await apps.createNamespacedStatefulSet({ namespace: "shop", body: sts("web", { claims: true }) as never });
  const podNames = async () =>
    (await core.listNamespacedPod({ namespace: "shop" })).items
      .filter((p) => !p.metadata?.deletionTimestamp)
      .map((p) => p.metadata!.name!)
      .sort();
  await eventually("3 pods", async () => (await podNames()).length === 3);
  const scale = await apps.readNamespacedStatefulSetScale({ namespace: "shop", name: "web" });
  t.like(scale, {
    kind: "Scale",
    apiVersion: "autoscaling/v1",
    spec: { replicas: 3 },
    status: { selector: "app=web" },
  });
  await apps.replaceNamespacedStatefulSetScale({
    namespace: "shop",
    name: "web",
    body: { ...scale, spec: { replicas: 5 } },
  });
  await eventually("5 pods", async () => (await podNames()).join() === "web-0,web-1,web-2,web-3,web-4");
  const stale = await statusOf(
    apps.replaceNamespacedStatefulSetScale({
      namespace: "shop",
      name: "web",
      body: { ...scale, spec: { replicas: 4 } },
    }),
  );
  t.like(stale, { code: 409, reason: "Conflict" });
  const deletions: string[] = [];
  const listed = await core.listNamespacedPod({ namespace: "shop" });
  const ctl = await new k8s.Watch(kc).watch(
    "/api/v1/namespaces/shop/pods",
    { resourceVersion: listed.metadata!.resourceVersion! },
    (type, p: { metadata: { name: string; deletionTimestamp?: string } }) => {
      if (type === "MODIFIED" && p.metadata.deletionTimestamp && !deletions.includes(p.metadata.name))
        deletions.push(p.metadata.name);
    },
    () => undefined,
  );
  t.teardown(() => ctl.abort());
  await apps.patchNamespacedStatefulSetScale(
    { namespace: "shop", name: "web", body: { spec: { replicas: 2 } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
  await eventually("2 pods", async () => (await podNames()).join() === "web-0,web-1");
  t.deepEqual(deletions, ["web-4", "web-3", "web-2"]);
  const s = await eventually("status of 2", async () => {
    const x = await apps.readNamespacedStatefulSet({ namespace: "shop", name: "web" });
    return x.status?.replicas === 2 && x.status.readyReplicas === 2 ? x : undefined;
  });
  t.is(s.spec?.replicas, 2);
  t.is(s.metadata?.generation, 3);
  t.is(s.status?.observedGeneration, 3);
  t.is((await core.listNamespacedPersistentVolumeClaim({ namespace: "shop" })).items.length, 5);
  const negative = await statusOf(
    apps.patchNamespacedStatefulSetScale(
      { namespace: "shop", name: "web", body: { spec: { replicas: -1 } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    ),
  );
  t.is(negative.code, 422);
  t.is(negative.details?.causes?.[0]?.field, "spec.replicas");
});

test("StatefulSet: a deleted pod is recreated with the same name and claim and a new uid; a spec change outside the allowed fields is 422", async (t) => {
  const { core, apps } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await apps.createNamespacedStatefulSet({ namespace: "shop", body: sts("db", { claims: true }) as never });
  const before = await eventually("db-1 running", async () => {
    const p = await core.readNamespacedPod({ namespace: "shop", name: "db-1" });
    return p.status?.phase === "Running" ? p : undefined;
  });
  const deleted = await core.deleteNamespacedPod({ namespace: "shop", name: "db-1" });
  t.true(deleted.metadata?.deletionTimestamp instanceof Date);
  t.is(deleted.metadata?.deletionGracePeriodSeconds, 30);
  const after = await eventually("db-1 back with another uid", async () => {
    const p = await core.readNamespacedPod({ namespace: "shop", name: "db-1" }).catch(() => undefined);
    return p && p.metadata?.uid !== before.metadata?.uid && p.status?.phase === "Running" ? p : undefined;
  });
  t.is(after.spec?.volumes?.find((v) => v.name === "data")?.persistentVolumeClaim?.claimName, "data-db-1");
  const s = await apps.readNamespacedStatefulSet({ namespace: "shop", name: "db" });
  const forbidden = await statusOf(
    apps.replaceNamespacedStatefulSet({
      namespace: "shop",
      name: "db",
      body: { ...s, spec: { ...s.spec!, serviceName: "other" } },
    }),
  );
  t.is(forbidden.code, 422);
  t.regex(forbidden.message!, /updates to statefulset spec for fields other than/);
});

test("StatefulSet (OrderedReady, readiness probe): web-1 is created only once web-0 is Ready, as the kubelet's probe reports it", async (t) => {
  const kubelet = new SimpleKubelet();
  const { core, apps } = await start(t, { kubelet });
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await apps.createNamespacedStatefulSet({
    namespace: "shop",
    body: sts("web", { policy: "OrderedReady", probe: true, replicas: 2 }) as never,
  });
  const p0 = await eventually("web-0 running", async () => {
    const p = await core.readNamespacedPod({ namespace: "shop", name: "web-0" }).catch(() => undefined);
    return p?.status?.phase === "Running" ? p : undefined;
  });
  t.is(p0.status?.conditions?.find((c) => c.type === "Ready")?.status, "False");
  await new Promise((r) => setTimeout(r, 200));
  t.deepEqual(
    (await core.listNamespacedPod({ namespace: "shop" })).items.map((p) => p.metadata?.name),
    ["web-0"],
  );
  t.true(kubelet.setReady("shop", "web-0", true));
  await eventually(
    "web-1 created",
    async () => (await core.listNamespacedPod({ namespace: "shop" })).items.length === 2,
  );
  const s = await apps.readNamespacedStatefulSet({ namespace: "shop", name: "web" });
  t.is(s.status?.readyReplicas, 1);
});

test("StatefulSet deletion: Background removes its pods through the garbage collector, Orphan leaves them without an owner", async (t) => {
  const { core, apps } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await apps.createNamespacedStatefulSet({ namespace: "shop", body: sts("a", { replicas: 2 }) as never });
  await apps.createNamespacedStatefulSet({ namespace: "shop", body: sts("b", { replicas: 2 }) as never });
  await eventually("4 pods", async () => (await core.listNamespacedPod({ namespace: "shop" })).items.length === 4);
  await apps.deleteNamespacedStatefulSet({ namespace: "shop", name: "a" });
  await apps.deleteNamespacedStatefulSet({ namespace: "shop", name: "b", propagationPolicy: "Orphan" });
  await eventually(
    "a's pods gone",
    async () => (await core.listNamespacedPod({ namespace: "shop", labelSelector: "app=a" })).items.length === 0,
  );
  const orphans = (await core.listNamespacedPod({ namespace: "shop", labelSelector: "app=b" })).items;
  t.deepEqual(
    orphans.map((p) => [p.metadata?.name, p.metadata?.ownerReferences]),
    [
      ["b-0", undefined],
      ["b-1", undefined],
    ],
  );
});

test("deleting a namespace empties it (Terminating meanwhile), then it is gone; nothing new may be created in it while it terminates", async (t) => {
  const { core, apps } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await core.createNamespacedSecret({ namespace: "shop", body: { metadata: { name: "s" } } });
  await apps.createNamespacedStatefulSet({ namespace: "shop", body: sts("web", { replicas: 1 }) as never });
  await eventually("the pod", async () => (await core.listNamespacedPod({ namespace: "shop" })).items.length === 1);
  const deleting = await core.deleteNamespace({ name: "shop" });
  t.is((deleting as { status?: { phase?: string } }).status?.phase, "Terminating");
  await eventually(
    "the namespace gone",
    async () => (await statusOf(core.readNamespace({ name: "shop" })).catch(() => ({ code: 200 }))).code === 404,
  );
  t.is((await core.listSecretForAllNamespaces()).items.length, 0);
  t.is((await core.listPodForAllNamespaces()).items.length, 0);
});

/** A kubelet that records what the server asks of it and answers only when the test says. */
class RecordingKubelet implements Kubelet {
  readonly nodeName = "node-a";
  host?: KubeletHost;
  readonly calls: string[] = [];
  readonly synced: KubeObject[] = [];
  start(host: KubeletHost): void {
    this.host = host;
  }
  syncPod(pod: KubeObject): void {
    this.calls.push(`sync ${pod.metadata.name}`);
    this.synced.push(pod);
  }
  killPod(pod: KubeObject, force: boolean): void {
    this.calls.push(`kill ${pod.metadata.name}${force ? " force" : ""}`);
  }
  async close(): Promise<void> {
    /* nothing runs */
  }
}

test("the kubelet seam: a new pod is bound to the kubelet's node, handed to syncPod, and its status is what the kubelet reports; a deleted pod stays until the kubelet says its containers stopped", async (t) => {
  const kubelet = new RecordingKubelet();
  const { core } = await start(t, { kubelet });
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await core.createNamespacedSecret({ namespace: "shop", body: { metadata: { name: "env" }, stringData: { A: "1" } } });
  const created = await core.createNamespacedPod({
    namespace: "shop",
    body: { metadata: { name: "p" }, spec: { containers: [{ name: "c", image: "busybox:1.36" }] } },
  });
  t.is(created.status?.phase, "Pending");
  t.is(created.spec?.nodeName, undefined);
  await eventually("syncPod", () => kubelet.synced.length === 1);
  const bound = kubelet.synced[0]!;
  t.is(bound.spec.nodeName, "node-a");
  t.is(bound.status.conditions.find((c: { type: string }) => c.type === "PodScheduled")?.status, "True");
  t.is(
    (kubelet.host!.read("secrets", "shop", "env")?.data as Record<string, string> | undefined)?.A,
    Buffer.from("1").toString("base64"),
  );
  kubelet.host!.updatePodStatus("shop", "p", bound.metadata.uid!, (s) => {
    s.phase = "Running";
    s.podIP = "127.1.0.9";
  });
  t.like((await core.readNamespacedPod({ namespace: "shop", name: "p" })).status, {
    phase: "Running",
    podIP: "127.1.0.9",
  });
  // A status for another incarnation (an old uid) is ignored.
  t.is(
    kubelet.host!.updatePodStatus("shop", "p", "00000000-0000-0000-0000-000000000000", (s) => {
      s.phase = "Failed";
    }),
    undefined,
  );
  await core.deleteNamespacedPod({ namespace: "shop", name: "p", gracePeriodSeconds: 20 });
  await eventually("killPod", () => kubelet.calls.includes("kill p"));
  const terminating = await core.readNamespacedPod({ namespace: "shop", name: "p" });
  t.is(terminating.metadata?.deletionGracePeriodSeconds, 20);
  t.true(terminating.metadata?.deletionTimestamp instanceof Date);
  kubelet.host!.podTerminated("shop", "p", bound.metadata.uid!);
  t.is((await statusOf(core.readNamespacedPod({ namespace: "shop", name: "p" }))).code, 404);
  // gracePeriodSeconds 0: gone from the API at once, the kubelet told to force the stop.
  await core.createNamespacedPod({
    namespace: "shop",
    body: { metadata: { name: "q" }, spec: { containers: [{ name: "c", image: "busybox:1.36" }] } },
  });
  await eventually("syncPod q", () => kubelet.calls.includes("sync q"));
  await core.deleteNamespacedPod({ namespace: "shop", name: "q", gracePeriodSeconds: 0 });
  t.is((await statusOf(core.readNamespacedPod({ namespace: "shop", name: "q" }))).code, 404);
  await eventually("kill q force", () => kubelet.calls.includes("kill q force"));
});

test("the /status subresource: status is ignored on create and on updates of the pod, and only status changes through /status", async (t) => {
  const { core } = await start(t, { kubelet: new RecordingKubelet() });
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  const pod = await core.createNamespacedPod({
    namespace: "shop",
    body: {
      metadata: { name: "p" },
      spec: { containers: [{ name: "c", image: "busybox:1.36" }] },
      status: { phase: "Succeeded" },
    },
  });
  t.is(pod.status?.phase, "Pending");
  const labelled = await core.replaceNamespacedPod({
    namespace: "shop",
    name: "p",
    body: {
      ...(await core.readNamespacedPod({ namespace: "shop", name: "p" })),
      metadata: { ...pod.metadata, resourceVersion: undefined, labels: { x: "y" } },
      status: { phase: "Failed" },
    },
  });
  t.is(labelled.metadata?.labels?.x, "y");
  t.is(labelled.status?.phase, "Pending");
  const current = await core.readNamespacedPod({ namespace: "shop", name: "p" });
  const st = await core.replaceNamespacedPodStatus({
    namespace: "shop",
    name: "p",
    body: {
      ...current,
      metadata: { ...current.metadata, labels: { x: "changed" } },
      status: { ...current.status, phase: "Running" },
    },
  });
  t.is(st.status?.phase, "Running");
  t.is(st.metadata?.labels?.x, "y");
  const immutable = await statusOf(
    core.replaceNamespacedPod({
      namespace: "shop",
      name: "p",
      body: { ...st, spec: { ...st.spec!, restartPolicy: "Never" } },
    }),
  );
  t.is(immutable.code, 422);
  t.regex(immutable.message!, /pod updates may not change fields other than/);
});

test("StatefulSet rolling update: a new template replaces pods from the highest ordinal down, one at a time; then the update revision is current", async (t) => {
  const { k8s, kc, core, apps } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await apps.createNamespacedStatefulSet({ namespace: "shop", body: sts("web") as never });
  const first = await eventually("3 ready", async () => {
    const s = await apps.readNamespacedStatefulSet({ namespace: "shop", name: "web" });
    return s.status?.readyReplicas === 3 ? s : undefined;
  });
  const listed = await core.listNamespacedPod({ namespace: "shop" });
  const order: string[] = [];
  const ctl = await new k8s.Watch(kc).watch(
    "/api/v1/namespaces/shop/pods",
    { resourceVersion: listed.metadata!.resourceVersion! },
    (type, p: { metadata: { name: string } }) => {
      if (type === "DELETED") order.push(p.metadata.name);
    },
    () => undefined,
  );
  t.teardown(() => ctl.abort());
  await apps.patchNamespacedStatefulSet(
    {
      namespace: "shop",
      name: "web",
      body: { spec: { template: { spec: { containers: [{ name: "main", image: "busybox:1.37" }] } } } },
    },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
  const done = await eventually("the update to complete", async () => {
    const s = await apps.readNamespacedStatefulSet({ namespace: "shop", name: "web" });
    return s.status?.updatedReplicas === 3 &&
      s.status.readyReplicas === 3 &&
      s.status.currentRevision === s.status.updateRevision
      ? s
      : undefined;
  });
  t.deepEqual(order, ["web-2", "web-1", "web-0"]);
  t.not(done.status?.updateRevision, first.status?.updateRevision);
  t.is(done.metadata?.generation, 2);
  t.is(done.status?.observedGeneration, 2);
  const pods = (await core.listNamespacedPod({ namespace: "shop" })).items;
  t.deepEqual(
    pods.map((p) => [p.spec?.containers[0]?.image, p.metadata?.labels?.["controller-revision-hash"]]),
    pods.map(() => ["busybox:1.37", done.status?.updateRevision]),
  );
});

test("StatefulSet persistentVolumeClaimRetentionPolicy whenScaled Delete: the claims of scaled-away pods go, the others stay", async (t) => {
  const { core, apps } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  const body = sts("db", { claims: true }) as { spec: Record<string, unknown> };
  body.spec.persistentVolumeClaimRetentionPolicy = { whenScaled: "Delete", whenDeleted: "Retain" };
  await apps.createNamespacedStatefulSet({ namespace: "shop", body: body as never });
  const claims = async () =>
    (await core.listNamespacedPersistentVolumeClaim({ namespace: "shop" })).items.map((c) => c.metadata!.name!).join();
  await eventually("3 claims", async () => (await claims()) === "data-db-0,data-db-1,data-db-2");
  await apps.replaceNamespacedStatefulSetScale({
    namespace: "shop",
    name: "db",
    body: { metadata: { name: "db" }, spec: { replicas: 1 } },
  });
  await eventually("1 claim", async () => (await claims()) === "data-db-0");
  t.is((await core.listNamespacedPod({ namespace: "shop" })).items.map((p) => p.metadata?.name).join(), "db-0");
});

test("EndpointSlices list a Service's selected pods with ready/serving/terminating as their readiness says, hostnames for the headless Service of a StatefulSet", async (t) => {
  const kubelet = new SimpleKubelet();
  const { k8s, kc, core, apps } = await start(t, { kubelet });
  const discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await core.createNamespacedService({
    namespace: "shop",
    body: {
      metadata: { name: "web" },
      spec: {
        clusterIP: "None",
        selector: { app: "web" },
        ports: [{ name: "http", port: 80, targetPort: "http" as never }],
      },
    },
  });
  const body = sts("web", { probe: true, replicas: 2 }) as {
    spec: { template: { spec: { containers: Record<string, unknown>[] } } };
  };
  body.spec.template.spec.containers[0]!.ports = [{ name: "http", containerPort: 8080 }];
  await apps.createNamespacedStatefulSet({ namespace: "shop", body: body as never });
  const slice = async () =>
    (
      await discovery.listNamespacedEndpointSlice({
        namespace: "shop",
        labelSelector: "kubernetes.io/service-name=web",
      })
    ).items;
  const two = await eventually("2 endpoints", async () => {
    const s = await slice();
    return s[0]?.endpoints?.length === 2 ? s : undefined;
  });
  t.is(two.length, 1);
  t.regex(two[0]!.metadata!.name!, /^web-/);
  t.is(two[0]!.metadata?.labels?.["endpointslice.kubernetes.io/managed-by"], "endpointslice-controller.k8s.io");
  t.deepEqual(
    two[0]!.ports?.map((p) => ({ ...p })),
    [{ name: "http", protocol: "TCP", port: 8080 }],
  );
  t.deepEqual(
    two[0]!.endpoints.map((e) => [e.hostname, e.targetRef?.name, e.conditions?.ready]),
    [
      ["web-0", "web-0", false],
      ["web-1", "web-1", false],
    ],
  );
  t.true(kubelet.setReady("shop", "web-1", true));
  await eventually(
    "web-1 ready in the slice",
    async () => (await slice())[0]?.endpoints.find((e) => e.targetRef?.name === "web-1")?.conditions?.ready === true,
  );
  t.is((await slice())[0]?.endpoints.find((e) => e.targetRef?.name === "web-0")?.conditions?.ready, false);
  // A terminating pod (held here by a finalizer) stays listed, not ready but still serving.
  await core.createNamespacedPod({
    namespace: "shop",
    body: {
      metadata: { name: "extra", labels: { app: "web" }, finalizers: ["example.com/hold"] },
      spec: { containers: [{ name: "c", image: "busybox:1.36" }] },
    },
  });
  await eventually(
    "extra ready in the slice",
    async () => (await slice())[0]?.endpoints.find((e) => e.targetRef?.name === "extra")?.conditions?.ready === true,
  );
  await core.deleteNamespacedPod({ namespace: "shop", name: "extra" });
  const leaving = await eventually("extra terminating", async () => {
    const e = (await slice())[0]?.endpoints.find((x) => x.targetRef?.name === "extra");
    return e?.conditions?.terminating ? e : undefined;
  });
  t.deepEqual({ ...leaving.conditions }, { ready: false, serving: true, terminating: true });
  t.is(leaving.hostname, undefined);
  await core.patchNamespacedPod(
    { namespace: "shop", name: "extra", body: { metadata: { finalizers: null } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
  await eventually("extra gone from the slice", async () => (await slice())[0]?.endpoints.length === 2);
  await core.deleteNamespacedService({ namespace: "shop", name: "web" });
  await eventually("the slice gone with its Service", async () => (await slice()).length === 0);
});

test("the real client's informer (list, then watch from the list's resourceVersion) keeps a cache that follows the StatefulSet's pods, a recreated pod included", async (t) => {
  const { k8s, kc, core, apps } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  const informer = k8s.makeInformer(kc, "/api/v1/namespaces/shop/pods", () =>
    core.listNamespacedPod({ namespace: "shop" }),
  );
  const events: string[] = [];
  informer.on("add", (p) => events.push(`add ${p.metadata?.name}`));
  informer.on("delete", (p) => events.push(`delete ${p.metadata?.name}`));
  informer.on("error", (err) => events.push(`error ${String(err)}`));
  await informer.start();
  t.teardown(() => informer.stop());
  await apps.createNamespacedStatefulSet({ namespace: "shop", body: sts("web") as never });
  await eventually(
    "3 running pods in the cache",
    () => informer.list().filter((p) => p.status?.phase === "Running").length === 3,
  );
  const old = informer.get("web-1", "shop")!;
  await core.deleteNamespacedPod({ namespace: "shop", name: "web-1" });
  await eventually("web-1 back in the cache", () => {
    const p = informer.get("web-1", "shop");
    return p && p.metadata?.uid !== old.metadata?.uid && p.status?.phase === "Running";
  });
  t.deepEqual(
    events.filter((e) => !e.startsWith("add web-0") && !e.startsWith("add web-2")),
    ["add web-1", "delete web-1", "add web-1"],
  );
  t.deepEqual(
    informer
      .list()
      .map((p) => p.metadata?.name)
      .sort(),
    ["web-0", "web-1", "web-2"],
  );
});

test("RBAC, Leases and PodDisruptionBudgets are stored and validated: a binding's roleRef cannot change, a budget cannot set both minAvailable and maxUnavailable", async (t) => {
  const { k8s, kc, core } = await start(t);
  const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const policy = kc.makeApiClient(k8s.PolicyV1Api);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await rbac.createNamespacedRole({
    namespace: "shop",
    body: {
      metadata: { name: "steward:controller" },
      rules: [
        {
          apiGroups: ["apps"],
          resources: ["statefulsets", "statefulsets/scale"],
          verbs: ["get", "list", "watch", "patch"],
        },
      ],
    },
  });
  await rbac.createClusterRole({
    body: {
      metadata: { name: "steward-namespaces" },
      rules: [{ apiGroups: [""], resources: ["namespaces"], verbs: ["create"] }],
    },
  });
  t.deepEqual(
    (await rbac.listClusterRole()).items.map((r) => r.metadata?.name),
    ["steward-namespaces"],
  );
  const binding = await rbac.createNamespacedRoleBinding({
    namespace: "shop",
    body: {
      metadata: { name: "b" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "steward:controller" },
      subjects: [{ kind: "ServiceAccount", name: "controller", namespace: "shop" }],
    },
  });
  const moved = await statusOf(
    rbac.replaceNamespacedRoleBinding({
      namespace: "shop",
      name: "b",
      body: { ...binding, roleRef: { ...binding.roleRef, name: "other" } },
    }),
  );
  t.is(moved.code, 422);
  t.is(moved.details?.causes?.[0]?.field, "roleRef");
  t.is(
    (await statusOf(rbac.createNamespacedRole({ namespace: "shop", body: { metadata: { name: "a/b" } } }))).code,
    422,
  );
  const lease = await coordination.createNamespacedLease({
    namespace: "shop",
    body: { metadata: { name: "leader" }, spec: { holderIdentity: "ctrl-0", leaseDurationSeconds: 15 } },
  });
  await coordination.replaceNamespacedLease({
    namespace: "shop",
    name: "leader",
    body: { ...lease, spec: { ...lease.spec, holderIdentity: "ctrl-1" } },
  });
  t.like(
    await statusOf(
      coordination.replaceNamespacedLease({
        namespace: "shop",
        name: "leader",
        body: { ...lease, spec: { ...lease.spec, holderIdentity: "ctrl-2" } },
      }),
    ),
    { code: 409, reason: "Conflict" },
  );
  await policy.createNamespacedPodDisruptionBudget({
    namespace: "shop",
    body: {
      metadata: { name: "quorum" },
      spec: { minAvailable: 2 as never, selector: { matchLabels: { app: "ctrl" } } },
    },
  });
  const both = await statusOf(
    policy.createNamespacedPodDisruptionBudget({
      namespace: "shop",
      body: {
        metadata: { name: "bad" },
        spec: { minAvailable: 2 as never, maxUnavailable: 1 as never, selector: { matchLabels: { app: "ctrl" } } },
      },
    }),
  );
  t.is(both.code, 422);
  t.regex(both.message!, /minAvailable and maxUnavailable cannot be both set/);
});

test("the real informer recovers from 410: while other kinds' changes push its resourceVersion out of the history, its next watch is Expired, it lists again and goes on", async (t) => {
  const { api, k8s, kc, core } = await start(t, { historySize: 5, watchTimeoutSeconds: 1 });
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await core.createNamespacedConfigMap({ namespace: "shop", body: { metadata: { name: "first" } } });
  const informer = k8s.makeInformer(kc, "/api/v1/namespaces/shop/configmaps", () =>
    core.listNamespacedConfigMap({ namespace: "shop" }),
  );
  await informer.start();
  t.teardown(() => informer.stop());
  const lists = () =>
    api.requests.filter(
      (r) => r.method === "GET" && r.path === "/api/v1/namespaces/shop/configmaps" && !r.query.includes("watch"),
    ).length;
  t.is(lists(), 1);
  for (let i = 0; i < 10; i++)
    await core.createNamespacedSecret({ namespace: "shop", body: { metadata: { name: `s${i}` } } });
  await eventually("a second list after the 410", () => lists() >= 2, 10_000);
  t.true(api.requests.some((r) => r.path === "/api/v1/namespaces/shop/configmaps" && r.watchError === 410));
  await core.createNamespacedConfigMap({ namespace: "shop", body: { metadata: { name: "second" } } });
  await eventually("the informer to see the new object", () => informer.get("second", "shop"), 10_000);
  t.deepEqual(
    informer
      .list()
      .map((c) => c.metadata?.name)
      .sort(),
    ["first", "kube-root-ca.crt", "second"],
  );
});

test("OrderedReady scale-down: one pod at a time from the highest ordinal, the next only once the previous is completely gone", async (t) => {
  const kubelet = new HoldingKubelet();
  const { k8s, core, apps } = await start(t, { kubelet });
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await apps.createNamespacedStatefulSet({ namespace: "shop", body: sts("web", { policy: "OrderedReady" }) as never });
  await eventually(
    "3 ready",
    async () => (await apps.readNamespacedStatefulSet({ namespace: "shop", name: "web" })).status?.readyReplicas === 3,
  );
  await apps.patchNamespacedStatefulSetScale(
    { namespace: "shop", name: "web", body: { spec: { replicas: 1 } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
  await eventually("web-2 asked to stop", () => kubelet.held.some((h) => h.pod.metadata.name === "web-2"));
  await new Promise((r) => setTimeout(r, 200));
  t.deepEqual(
    kubelet.held.map((h) => h.pod.metadata.name),
    ["web-2"],
  );
  t.falsy((await core.readNamespacedPod({ namespace: "shop", name: "web-1" })).metadata?.deletionTimestamp);
  kubelet.release("web-2");
  await eventually("web-1 asked to stop", () => kubelet.held.some((h) => h.pod.metadata.name === "web-1"));
  kubelet.release("web-1");
  await eventually(
    "1 pod",
    async () =>
      (await core.listNamespacedPod({ namespace: "shop" })).items.map((p) => p.metadata?.name).join() === "web-0",
  );
});

test("PodDisruptionBudget status and eviction: with minAvailable 2 of 3 one eviction is allowed, the next is 429 until the evicted pod is back and Ready", async (t) => {
  const kubelet = new HoldingKubelet();
  const { k8s, kc, core, apps } = await start(t, { kubelet });
  const policy = kc.makeApiClient(k8s.PolicyV1Api);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  await apps.createNamespacedStatefulSet({ namespace: "shop", body: sts("ctrl") as never });
  await policy.createNamespacedPodDisruptionBudget({
    namespace: "shop",
    body: {
      metadata: { name: "quorum" },
      spec: { minAvailable: 2 as never, selector: { matchLabels: { app: "ctrl" } } },
    },
  });
  await policy.createNamespacedPodDisruptionBudget({
    namespace: "shop",
    body: {
      metadata: { name: "other" },
      spec: { maxUnavailable: "34%" as never, selector: { matchLabels: { app: "nothing" } } },
    },
  });
  const pdb = await eventually("one disruption allowed", async () => {
    const p = await policy.readNamespacedPodDisruptionBudget({ namespace: "shop", name: "quorum" });
    return p.status?.disruptionsAllowed === 1 ? p : undefined;
  });
  t.like(pdb.status, { expectedPods: 3, currentHealthy: 3, desiredHealthy: 2, observedGeneration: 1 });
  t.is(pdb.status?.conditions?.find((c) => c.type === "DisruptionAllowed")?.status, "True");
  const old = await core.readNamespacedPod({ namespace: "shop", name: "ctrl-0" });
  await core.createNamespacedPodEviction({
    namespace: "shop",
    name: "ctrl-0",
    body: { metadata: { name: "ctrl-0", namespace: "shop" } },
  });
  const refused = await statusOf(
    core.createNamespacedPodEviction({
      namespace: "shop",
      name: "ctrl-1",
      body: { metadata: { name: "ctrl-1", namespace: "shop" } },
    }),
  );
  t.like(refused, {
    code: 429,
    reason: "TooManyRequests",
    message: "Cannot evict pod as it would violate the pod's disruption budget.",
  });
  t.is(refused.details?.causes?.[0]?.reason, "DisruptionBudget");
  t.falsy((await core.readNamespacedPod({ namespace: "shop", name: "ctrl-1" })).metadata?.deletionTimestamp);
  // ctrl-0 is still stopping: it does not count as healthy, so still no disruption is allowed.
  t.true(
    (await core.readNamespacedPod({ namespace: "shop", name: "ctrl-0" })).metadata?.deletionTimestamp instanceof Date,
  );
  const during = await eventually("the budget recomputed", async () => {
    const b = await policy.readNamespacedPodDisruptionBudget({ namespace: "shop", name: "quorum" });
    return b.status?.currentHealthy === 2 ? b : undefined;
  });
  t.is(during.status?.disruptionsAllowed, 0);
  t.is(during.status?.conditions?.find((c) => c.type === "DisruptionAllowed")?.status, "False");
  kubelet.release("ctrl-0");
  await eventually("ctrl-0 back and the budget restored", async () => {
    const p = await core.readNamespacedPod({ namespace: "shop", name: "ctrl-0" }).catch(() => undefined);
    const b = await policy.readNamespacedPodDisruptionBudget({ namespace: "shop", name: "quorum" });
    return p && p.metadata?.uid !== old.metadata?.uid && b.status?.disruptionsAllowed === 1;
  });
  await core.createNamespacedPodEviction({
    namespace: "shop",
    name: "ctrl-1",
    body: { metadata: { name: "ctrl-1", namespace: "shop" } },
  });
  const other = await policy.readNamespacedPodDisruptionBudget({ namespace: "shop", name: "other" });
  t.like(other.status, { expectedPods: 0, currentHealthy: 0, disruptionsAllowed: 0 });
});

test("StatefulSet ordinals.start numbers the pods from it; minReadySeconds holds availableReplicas back until pods have been Ready that long", async (t) => {
  const { core, apps } = await start(t);
  await core.createNamespace({ body: { metadata: { name: "shop" } } });
  const body = sts("web", { replicas: 2 }) as { spec: Record<string, unknown> };
  body.spec.ordinals = { start: 5 };
  body.spec.minReadySeconds = 4;
  await apps.createNamespacedStatefulSet({ namespace: "shop", body: body as never });
  const ready = await eventually("2 ready", async () => {
    const s = await apps.readNamespacedStatefulSet({ namespace: "shop", name: "web" });
    return s.status?.readyReplicas === 2 ? s : undefined;
  });
  t.deepEqual(
    (await core.listNamespacedPod({ namespace: "shop" })).items.map((p) => [
      p.metadata?.name,
      p.metadata?.labels?.["apps.kubernetes.io/pod-index"],
    ]),
    [
      ["web-5", "5"],
      ["web-6", "6"],
    ],
  );
  t.is(ready.status?.availableReplicas, 0);
  await eventually(
    "2 available after minReadySeconds",
    async () =>
      (await apps.readNamespacedStatefulSet({ namespace: "shop", name: "web" })).status?.availableReplicas === 2,
    15_000,
  );
});
