/**
 * The product's Kubernetes client (substrates/kubernetes) against the fake API server
 * (test/harness/kube/, itself checked with the real @kubernetes/client-node): kubeconfig reading,
 * the verbs, typed errors naming the object and the server's message, watches with 410, /scale,
 * timeouts, aborts and the pinned CA; the credential never printed; in-cluster configuration.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { mkdtempSync, renameSync, writeFileSync } from "node:fs";
import { createServer, request as httpsRequest } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import YAML from "yaml";
import { kubernetes } from "../substrates";
import { createCertificateAuthority, issueServerCertificate } from "../controller";
import { FakeKubeApi } from "./harness/kube";
import type { FakeKubeApiOptions } from "./harness/kube";
import { eventually } from "./harness/eventually";

const {
  KubeApi,
  KUBE_RESOURCES: R,
  isAlreadyExists,
  isConflict,
  isGone,
  isInvalid,
  isNotFound,
  parseKubeconfig,
  loadKubeconfig,
} = kubernetes;
type Obj = kubernetes.KubeObject & {
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};

async function start(
  t: ExecutionContext,
  o: FakeKubeApiOptions = {},
  namespace = "shop",
): Promise<{ api: FakeKubeApi; kube: InstanceType<typeof KubeApi> }> {
  const api = await FakeKubeApi.start(o);
  const kube = KubeApi.fromKubeconfig(api.kubeconfig({ namespace }), { timeoutMs: 5000 });
  t.teardown(async () => {
    kube.close();
    await api.stop();
  });
  await kube.create(R.namespaces, { metadata: { name: namespace } });
  return { api, kube };
}

async function failure(p: Promise<unknown>): Promise<Error & { code?: number; reason?: string }> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  if (!err) throw new Error("the call succeeded");
  return err;
}

const sts = (name: string, replicas = 2): kubernetes.StatefulSet => ({
  metadata: { name },
  spec: {
    replicas,
    serviceName: name,
    podManagementPolicy: "Parallel",
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: "main", image: "busybox:1.36" }] } },
  },
});

test("parseKubeconfig: the current or a named context, inline data or files relative to the kubeconfig, and errors that name what is wrong", async (t) => {
  const ca = await createCertificateAuthority("kubeconfig-test");
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const doc = {
    apiVersion: "v1",
    kind: "Config",
    "current-context": "a",
    clusters: [
      { name: "c1", cluster: { server: "https://127.0.0.1:6443/", "certificate-authority-data": b64(ca.certPem) } },
      { name: "c2", cluster: { server: "https://127.0.0.2:6443", "certificate-authority": "ca.crt" } },
    ],
    users: [
      { name: "u1", user: { token: "s3cret-token" } },
      { name: "u2", user: { tokenFile: "token" } },
      { name: "plugin", user: { exec: { command: "aws" } } },
    ],
    contexts: [
      { name: "a", context: { cluster: "c1", user: "u1", namespace: "shop" } },
      { name: "b", context: { cluster: "c2", user: "u2" } },
      { name: "p", context: { cluster: "c1", user: "plugin" } },
    ],
  };
  const dir = mkdtempSync(join(tmpdir(), "kubeconfig-"));
  writeFileSync(join(dir, "ca.crt"), ca.certPem);
  writeFileSync(join(dir, "token"), "file-token\n");
  writeFileSync(join(dir, "config"), YAML.stringify(doc));
  const a = parseKubeconfig(YAML.stringify(doc));
  t.like(a, { server: "https://127.0.0.1:6443", namespace: "shop", context: "a", caCert: ca.certPem });
  t.is(a.credential().token, "s3cret-token");
  const b = loadKubeconfig(join(dir, "config"), { context: "b" });
  t.like(b, { server: "https://127.0.0.2:6443", namespace: "default", caCert: ca.certPem });
  t.is(b.credential().token, "file-token");
  // The credential never shows.
  t.false(inspect(a).includes("s3cret-token"));
  t.false(JSON.stringify(a).includes("s3cret-token"));
  t.false(String(a).includes("s3cret-token"));
  t.throws(() => parseKubeconfig(YAML.stringify(doc), { context: "nope" }), {
    message: 'kubeconfig: context "nope" not found (contexts: a, b, p)',
  });
  t.throws(() => parseKubeconfig(YAML.stringify(doc), { context: "p" }), {
    message: /user "plugin" authenticates with an exec plugin, which Steward does not run/,
  });
  t.throws(
    () =>
      parseKubeconfig(
        YAML.stringify({ ...doc, clusters: [{ name: "c1", cluster: { server: "http://127.0.0.1:8080" } }] }),
      ),
    { message: /must be https:\/\// },
  );
  t.throws(
    () =>
      parseKubeconfig(
        YAML.stringify({ ...doc, users: [{ name: "u1", user: { "client-certificate-data": b64(ca.certPem) } }] }),
      ),
    { message: /a client certificate without its key/ },
  );
  t.throws(() => parseKubeconfig(YAML.stringify({ ...doc, "current-context": undefined })), {
    message: /has no current-context/,
  });
  t.throws(() => loadKubeconfig(join(dir, "missing")), { message: /cannot read the kubeconfig/ });
  t.throws(() => parseKubeconfig("- just\n- a list\n"), { message: /is not a kubeconfig/ });
});

test("create, get, find, replace: 409 AlreadyExists and Conflict as typed errors naming the object and the server's message", async (t) => {
  const { kube } = await start(t);
  const cm = await kube.create<Obj>(R.configMaps, { metadata: { name: "cfg" }, data: { a: "1" } });
  t.is(cm.metadata.namespace, "shop");
  t.is(cm.kind, "ConfigMap");
  t.truthy(cm.metadata.uid);
  t.deepEqual((await kube.get<Obj>(R.configMaps, "cfg")).data, { a: "1" });
  t.is(await kube.find(R.configMaps, "nope"), undefined);
  const missing = await failure(kube.get(R.configMaps, "nope"));
  t.true(isNotFound(missing));
  t.is(missing.message, 'Kubernetes get configmaps shop/nope: 404 NotFound: configmaps "nope" not found');
  const dup = await failure(kube.create(R.configMaps, { metadata: { name: "cfg" } }));
  t.true(isAlreadyExists(dup));
  t.false(isConflict(dup));
  const updated = await kube.replace<Obj>(R.configMaps, { ...cm, data: { a: "2" } });
  t.true(Number(updated.metadata.resourceVersion) > Number(cm.metadata.resourceVersion));
  const stale = await failure(kube.replace(R.configMaps, { ...cm, data: { a: "3" } }));
  t.true(isConflict(stale));
  t.regex(
    stale.message,
    /^Kubernetes replace configmaps shop\/cfg: 409 Conflict: Operation cannot be fulfilled on configmaps "cfg"/,
  );
  const bad = await failure(
    kube.create(R.statefulSets, {
      metadata: { name: "web" },
      spec: {
        selector: { matchLabels: { app: "x" } },
        serviceName: "web",
        template: { metadata: { labels: { app: "y" } }, spec: { containers: [{ name: "c", image: "i" }] } },
      },
    }),
  );
  t.true(isInvalid(bad));
  t.regex(
    bad.message,
    /^Kubernetes create statefulsets\.apps shop\/web: 422 Invalid: StatefulSet\.apps "web" is invalid: spec\.template\.metadata\.labels/,
  );
  // Another namespace than the context's, and the object's own namespace must agree with it.
  await kube.create(R.namespaces, { metadata: { name: "other" } });
  t.is(
    (await kube.create(R.secrets, { metadata: { name: "s", namespace: "other" }, stringData: { k: "v" } })).metadata
      .namespace,
    "other",
  );
  await t.throwsAsync(kube.create(R.secrets, { metadata: { name: "s", namespace: "other" } }, { namespace: "shop" }), {
    message: /in namespace other, not shop/,
  });
});

test("list follows continue pages and answers the list's resourceVersion; label selectors; all namespaces", async (t) => {
  const { api, kube } = await start(t);
  for (let i = 0; i < 5; i++)
    await kube.create(R.secrets, { metadata: { name: `c${i}`, labels: { even: String(i % 2 === 0) } } });
  const all = await kube.list(R.secrets, { limit: 2 });
  t.deepEqual(
    all.items.map((i) => i.metadata.name),
    ["c0", "c1", "c2", "c3", "c4"],
  );
  t.true(all.items.every((i) => i.kind === "Secret" && i.apiVersion === "v1"));
  t.is(all.resourceVersion, api.state.resourceVersion);
  t.is(api.requests.filter((r) => r.path === "/api/v1/namespaces/shop/secrets" && r.method === "GET").length, 3);
  t.deepEqual(
    (await kube.list(R.secrets, { labelSelector: "even=true" })).items.map((i) => i.metadata.name),
    ["c0", "c2", "c4"],
  );
  await kube.create(R.namespaces, { metadata: { name: "other" } });
  await kube.create(R.secrets, { metadata: { name: "x", namespace: "other" } });
  t.is((await kube.list(R.secrets, { allNamespaces: true })).items.length, 6);
});

test("patch (merge and JSON), server-side apply, delete with preconditions and propagation", async (t) => {
  const { kube } = await start(t);
  await kube.create(R.configMaps, { metadata: { name: "cfg" }, data: { a: "1", b: "2" } });
  t.deepEqual((await kube.patch<Obj>(R.configMaps, "cfg", { data: { b: null, c: "3" } })).data, { a: "1", c: "3" });
  t.is(
    (await kube.patch<Obj>(R.configMaps, "cfg", [{ op: "replace", path: "/data/a", value: "9" }], { type: "json" }))
      .data?.a,
    "9",
  );
  await t.throwsAsync(kube.patch(R.configMaps, "cfg", { op: "x" }, { type: "json" }), {
    message: /a json patch must be an array of operations/,
  });
  const applied = await kube.apply<Obj>(
    R.configMaps,
    { metadata: { name: "applied" }, data: { x: "1" } },
    { fieldManager: "steward" },
  );
  t.is(applied.data?.x, "1");
  t.is(
    (
      await kube.apply<Obj>(
        R.configMaps,
        { metadata: { name: "applied" }, data: { y: "2" } },
        { fieldManager: "steward" },
      )
    ).metadata.uid,
    applied.metadata.uid,
  );
  const wrongUid = await failure(
    kube.delete(R.configMaps, "applied", { preconditions: { uid: "00000000-0000-0000-0000-000000000000" } }),
  );
  t.true(isConflict(wrongUid));
  await kube.delete(R.configMaps, "applied", { preconditions: { uid: applied.metadata.uid! } });
  t.is(await kube.find(R.configMaps, "applied"), undefined);
  await kube.create(R.statefulSets, sts("web"));
  await eventually("2 pods", async () => (await kube.list(R.pods)).items.length === 2);
  await kube.delete(R.statefulSets, "web", { propagationPolicy: "Orphan" });
  const pods = (await kube.list(R.pods)).items;
  t.deepEqual(
    pods.map((p) => [p.metadata.name, p.metadata.ownerReferences]),
    [
      ["web-0", undefined],
      ["web-1", undefined],
    ],
  );
});

test("watch from a list's resourceVersion yields the changes; a too-old version throws KubeGoneError; breaking out closes the stream", async (t) => {
  const { api, kube } = await start(t, { historySize: 4 });
  const first = await kube.create(R.configMaps, { metadata: { name: "first" } });
  const listed = await kube.list(R.configMaps);
  const seen: string[] = [];
  const done = (async () => {
    for await (const e of kube.watch(R.configMaps, { resourceVersion: listed.resourceVersion })) {
      seen.push(`${e.type} ${e.object.metadata.name}`);
      if (seen.length === 3) break;
    }
  })();
  await eventually("the watch to be open", () =>
    api.requests.some((r) => r.query.includes("watch=true") && r.status === 200),
  );
  await kube.create(R.configMaps, { metadata: { name: "a" } });
  await kube.patch(R.configMaps, "a", { data: { k: "v" } });
  await kube.delete(R.configMaps, "a");
  await done;
  t.deepEqual(seen, ["ADDED a", "MODIFIED a", "DELETED a"]);
  await eventually("the server to see the stream closed", () => api.openWatches === 0);
  for (let i = 0; i < 5; i++) await kube.create(R.configMaps, { metadata: { name: `fill${i}` } });
  const gone = await failure(
    (async () => {
      for await (const _ of kube.watch(R.configMaps, { resourceVersion: first.metadata.resourceVersion! })) {
        /* none */
      }
    })(),
  );
  t.true(isGone(gone));
  t.regex(gone.message, /^Kubernetes watch configmaps in namespace shop: 410 Expired: too old resource version/);
});

test("watch ends when its signal aborts, with the signal's reason", async (t) => {
  const { api, kube } = await start(t);
  const ac = new AbortController();
  const events: string[] = [];
  const run = (async () => {
    for await (const e of kube.watch(R.pods, { signal: ac.signal })) events.push(e.type);
  })();
  await eventually("the watch to be open", () =>
    api.requests.some((r) => r.query.includes("watch=true") && r.status === 200),
  );
  ac.abort(new Error("stopping"));
  const err = await failure(run);
  t.is(err.message, "stopping");
  t.deepEqual(events, []);
  await eventually("the server to see the stream closed", () => api.openWatches === 0);
});

test("scale through /scale: replicas change the StatefulSet; with a stale resourceVersion it is a Conflict; bad counts are refused", async (t) => {
  const { kube } = await start(t);
  const created = await kube.create(R.statefulSets, sts("db", 1));
  const scaled = await kube.scale(R.statefulSets, "db", 3);
  t.like(scaled, { kind: "Scale", spec: { replicas: 3 } });
  await eventually("3 pods", async () => (await kube.list(R.pods)).items.length === 3);
  t.is((await kube.getScale(R.statefulSets, "db")).status?.selector, "app=db");
  const stale = await failure(
    kube.scale(R.statefulSets, "db", 1, { resourceVersion: created.metadata.resourceVersion! }),
  );
  t.true(isConflict(stale));
  t.regex(stale.message, /^Kubernetes scale statefulsets\.apps shop\/db\/scale: 409 Conflict/);
  const current = await kube.get(R.statefulSets, "db");
  await kube.scale(R.statefulSets, "db", 1, { resourceVersion: current.metadata.resourceVersion! });
  await eventually(
    "1 pod",
    async () =>
      (await kube.list(R.pods)).items
        .filter((p) => !p.metadata.deletionTimestamp)
        .map((p) => p.metadata.name)
        .join() === "db-0",
  );
  await t.throwsAsync(kube.scale(R.statefulSets, "db", -1), {
    message: /replicas must be a whole number >= 0, not -1/,
  });
});

test("authentication: a client certificate works; a wrong token is 401 and its text appears nowhere", async (t) => {
  const { api } = await start(t);
  const byCert = KubeApi.fromKubeconfig(
    api.kubeconfig({ clientCert: await api.issueClientCertificate(), namespace: "shop" }),
  );
  t.teardown(() => byCert.close());
  t.deepEqual(
    (await byCert.list(R.namespaces)).items.map((n) => n.metadata.name),
    ["shop"],
  );
  const wrong = KubeApi.fromKubeconfig(api.kubeconfig({ token: "wrong-token-value" }));
  t.teardown(() => wrong.close());
  const err = await failure(wrong.list(R.pods));
  t.is(err.code, 401);
  t.is(err.message, "Kubernetes list pods in namespace default: 401 Unauthorized: Unauthorized");
  t.false(inspect(wrong).includes("wrong-token-value"));
  t.false(inspect(err).includes("wrong-token-value"));
});

test("the cluster CA is pinned: a server with another CA is refused; a server that does not answer times out", async (t) => {
  const { api } = await start(t);
  const otherCa = await createCertificateAuthority("other");
  const cfg = YAML.parse(api.kubeconfig()) as { clusters: { cluster: Record<string, string> }[] };
  cfg.clusters[0]!.cluster["certificate-authority-data"] = Buffer.from(otherCa.certPem).toString("base64");
  const pinned = KubeApi.fromKubeconfig(YAML.stringify(cfg));
  t.teardown(() => pinned.close());
  const tls = await failure(pinned.list(R.namespaces));
  t.regex(tls.message, /^Kubernetes list namespaces at 127\.0\.0\.1:\d+: .*(certificate|self.signed)/i);
  // A TLS server that accepts and never answers.
  const cert = await issueServerCertificate(otherCa, ["127.0.0.1"]);
  const silent = createServer({ cert: cert.certPem, key: cert.keyPem }, () => undefined);
  await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
  t.teardown(() => {
    silent.closeAllConnections();
    silent.close();
  });
  cfg.clusters[0]!.cluster.server = `https://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  const slow = KubeApi.fromKubeconfig(YAML.stringify(cfg), { timeoutMs: 300 });
  t.teardown(() => slow.close());
  const timeout = await failure(slow.get(R.namespaces, "shop"));
  t.regex(timeout.message, /^Kubernetes get namespaces shop at 127\.0\.0\.1:\d+: no answer in 300 ms$/);
  // One that starts its answer and never finishes it: the deadline covers the body too.
  const trickle = createServer({ cert: cert.certPem, key: cert.keyPem }, (_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.write("{");
  });
  await new Promise<void>((r) => trickle.listen(0, "127.0.0.1", r));
  t.teardown(() => {
    trickle.closeAllConnections();
    trickle.close();
  });
  cfg.clusters[0]!.cluster.server = `https://127.0.0.1:${(trickle.address() as AddressInfo).port}`;
  const stalled = KubeApi.fromKubeconfig(YAML.stringify(cfg), { timeoutMs: 300 });
  t.teardown(() => stalled.close());
  t.regex(
    (await failure(stalled.list(R.pods))).message,
    /^Kubernetes list pods in namespace default at 127\.0\.0\.1:\d+: no answer in 300 ms$/,
  );
  const ac = new AbortController();
  const aborted = slow.get(R.namespaces, "shop", { signal: ac.signal, timeoutMs: 10_000 });
  ac.abort(new Error("cancelled by the caller"));
  t.is((await failure(aborted)).message, "cancelled by the caller");
});

test("typed objects: a StatefulSet's status and its pods' phase and IPs read as typed fields; /status writes; a watch ends when the server's timeoutSeconds does", async (t) => {
  const { kube } = await start(t);
  await kube.create(R.statefulSets, sts("web", 2));
  const s = await eventually("2 ready", async () => {
    const x = await kube.get(R.statefulSets, "web");
    return x.status?.readyReplicas === 2 ? x : undefined;
  });
  t.is(s.status?.observedGeneration, 1);
  const pods = await kube.list(R.pods, { labelSelector: "app=web" });
  t.deepEqual(
    pods.items.map((p) => [
      p.metadata.name,
      p.status?.phase,
      p.status?.conditions?.find((c) => c.type === "Ready")?.status,
    ]),
    [
      ["web-0", "Running", "True"],
      ["web-1", "Running", "True"],
    ],
  );
  t.true(pods.items.every((p) => /^127\.1\./.test(p.status?.podIP ?? "")));
  const claim = await kube.create(R.persistentVolumeClaims, {
    metadata: { name: "c" },
    // No class (""), so no provisioner binds it: the test writes its status itself, as a controller would.
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } }, storageClassName: "" },
  });
  t.is(claim.status?.phase, "Pending");
  const bound = await kube.replace(
    R.persistentVolumeClaims,
    { ...claim, status: { phase: "Bound" } },
    { subresource: "status" },
  );
  t.is(bound.status?.phase, "Bound");
  const started = Date.now();
  const events: string[] = [];
  for await (const e of kube.watch(R.pods, { resourceVersion: pods.resourceVersion, timeoutSeconds: 1 }))
    events.push(e.type);
  t.true(Date.now() - started >= 900);
  t.deepEqual(events, []);
});

test("answers that are not successes: a 410 HTTP answer is a KubeGoneError too, a non-Status body is quoted, a non-JSON success is an error", async (t) => {
  const ca = await createCertificateAuthority("answers");
  const cert = await issueServerCertificate(ca, ["127.0.0.1"]);
  const answers: [number, string][] = [
    [
      410,
      JSON.stringify({
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        reason: "Expired",
        code: 410,
        message: "The provided continue parameter is too old",
      }),
    ],
    [502, "<html>bad gateway</html>"],
    [200, "not json"],
  ];
  const server = createServer({ cert: cert.certPem, key: cert.keyPem }, (_req, res) => {
    const [code, body] = answers.shift()!;
    res.writeHead(code);
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const kube = new KubeApi(
    new kubernetes.KubeConnection({
      server: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
      caCert: ca.certPem,
      credential: { token: "t" },
      namespace: "shop",
    }),
  );
  t.teardown(() => kube.close());
  const gone = await failure(kube.list(R.pods));
  t.true(isGone(gone));
  t.is(gone.message, "Kubernetes list pods in namespace shop: 410 Expired: The provided continue parameter is too old");
  const gateway = await failure(kube.get(R.pods, "p"));
  t.is(gateway.code, 502);
  t.is(gateway.message, "Kubernetes get pods shop/p: 502 Bad Gateway: <html>bad gateway</html>");
  t.regex(
    (await failure(kube.get(R.pods, "p"))).message,
    /^Kubernetes get pods shop\/p: 200 BadResponse: not JSON: not json$/,
  );
  await t.throwsAsync(kube.get(R.pods, "a/b"), { message: 'Kubernetes pods: "a/b" is not a valid name' });
  await t.throwsAsync(kube.create(R.pods, { metadata: { name: "p" }, kind: "Service" }), {
    message: "Kubernetes pods: the object is a Service, not a Pod",
  });
});

test("observe: a list, then the changes; when the stream ends it watches again from the last version, and after a 410 it lists again", async (t) => {
  const { api, kube } = await start(t, { historySize: 5, watchTimeoutSeconds: 1 });
  await kube.create(R.secrets, { metadata: { name: "first" } });
  const ac = new AbortController();
  const seen: string[] = [];
  const run = (async () => {
    for await (const e of kubernetes.observe(kube, R.secrets, {
      signal: ac.signal,
      watchTimeoutSeconds: 1,
      retryMs: 50,
    })) {
      seen.push(
        e.type === "LIST"
          ? `LIST ${e.items.map((i) => i.metadata.name).join(",")}`
          : `${e.type} ${e.object.metadata.name}`,
      );
    }
  })();
  await eventually("the first list", () => seen.length === 1);
  t.is(seen[0], "LIST first");
  await kube.create(R.secrets, { metadata: { name: "a" } });
  await eventually("ADDED a", () => seen.includes("ADDED a"));
  const watches = () =>
    api.requests.filter((r) => r.path === "/api/v1/namespaces/shop/secrets" && r.query.includes("watch=true"));
  await eventually("a second watch after the first stream ended", () => watches().length >= 2, 10_000);
  t.true(watches().every((w) => w.watchError === undefined));
  t.deepEqual(seen, ["LIST first", "ADDED a"]);
  // Other kinds' changes push the last version seen out of the history while no secret changes.
  for (let i = 0; i < 10; i++) await kube.create(R.configMaps, { metadata: { name: `s${i}` } });
  await eventually("a second list", () => seen.filter((s) => s.startsWith("LIST")).length >= 2, 10_000);
  t.is(seen.filter((s) => s.startsWith("LIST"))[1], "LIST a,first");
  t.true(api.requests.some((r) => r.path === "/api/v1/namespaces/shop/secrets" && r.watchError === 410));
  await kube.delete(R.secrets, "a");
  await eventually("DELETED a", () => seen.includes("DELETED a"), 10_000);
  ac.abort();
  await run;
  t.is(seen.filter((s) => s === "ADDED a").length, 1);
});

test("in-cluster configuration: the pod's environment and mounted files; the token file is read again when the kubelet replaces it; a clear error outside a pod", async (t) => {
  const { api, kube } = await start(t);
  await kube.create(R.serviceAccounts, { metadata: { name: "app" } });
  await kube.create(R.roles, {
    metadata: { name: "r" },
    rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["list"] }],
  });
  await kube.create(R.roleBindings, {
    metadata: { name: "r" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "r" },
    subjects: [{ kind: "ServiceAccount", name: "app", namespace: "shop" }],
  });
  const token = (): Promise<string> => fetchToken(api);
  const dir = mkdtempSync(join(tmpdir(), "steward-sa-"));
  writeFileSync(join(dir, "ca.crt"), api.caCert);
  writeFileSync(join(dir, "namespace"), "shop");
  writeFileSync(join(dir, "token"), "not-a-token");
  const u = new URL(api.url);
  const conn = kubernetes.inClusterConnection({
    env: { KUBERNETES_SERVICE_HOST: u.hostname, KUBERNETES_SERVICE_PORT: u.port },
    dir,
  });
  t.is(conn.server, api.url);
  t.is(conn.namespace, "shop");
  t.notRegex(inspect(conn), /not-a-token/);
  const inPod = new KubeApi(conn);
  t.teardown(() => inPod.close());
  t.is((await failure(inPod.list(R.configMaps))).code, 401);
  // The kubelet replaces the file (a rename, as it rotates the token): the next call uses the new one.
  for (let i = 0; i < 2; i++) {
    writeFileSync(join(dir, ".token.tmp"), await token());
    renameSync(join(dir, ".token.tmp"), join(dir, "token"));
    t.true(Array.isArray((await inPod.list(R.configMaps)).items));
  }
  t.throws(() => kubernetes.inClusterConnection({ env: {}, dir }), {
    message: "not in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set",
  });
  t.throws(
    () =>
      kubernetes.inClusterConnection({
        env: { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" },
        dir: join(dir, "absent"),
      }),
    {
      message:
        /cannot read the pod's cluster CA .*absent\/ca\.crt \(is automountServiceAccountToken off for this pod\?\)/,
    },
  );
});

/** A token for shop/app from the TokenRequest API, as the kubelet asks for one. */
function fetchToken(api: FakeKubeApi): Promise<string> {
  const u = new URL(api.url);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: u.hostname,
        port: u.port,
        method: "POST",
        path: "/api/v1/namespaces/shop/serviceaccounts/app/token",
        ca: api.caCert,
        headers: { authorization: `Bearer ${api.token}`, "content-type": "application/json" },
      },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => {
          text += d.toString();
        });
        res.on("end", () => {
          try {
            resolve((JSON.parse(text) as { status: { token: string } }).status.token);
          } catch (err) {
            reject(err as Error);
          }
        });
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ spec: {} }));
  });
}
