/**
 * The fake kubelet that runs containers as processes (test/harness/kube/process-kubelet.ts), behind
 * the fake API server and driven by the real `@kubernetes/client-node`, checked against what the
 * Kubernetes documentation says a kubelet does: init containers first, the downward API and
 * secrets in the environment, volumes shared within a pod, pod IPs of their own, readiness gating
 * Ready, liveness restarting a container, back-off after a crash, SIGTERM on deletion, claims
 * that outlive their pods (given the pod's fsGroup), and a pod's ServiceAccount token (mounted, rotated)
 * and API address.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { chmod, lstat, mkdir, mkdtemp, rm, stat, symlink, writeFile } from "node:fs/promises";
import { get } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeKubeApi } from "./harness/kube";
import type { KubeObject } from "./harness/kube";
import { kubernetes } from "../substrates";
import { publishApiServer } from "./harness/kube/lab";
import { ProcessKubelet } from "./harness/kube/process-kubelet";
import { applyVolumeOwnership } from "./harness/kube/volume-ownership";
import { eventually } from "./harness/eventually";

const loadClient = () => import("@kubernetes/client-node");

/** A test image: a small HTTP server that answers with its pod's facts, on $PORT. */
const SERVER = `
const http = require("node:http"); const fs = require("node:fs"); const os = require("node:os");
process.on("SIGTERM", () => { fs.appendFileSync("/data/terms", os.hostname() + " got SIGTERM\\n"); process.exit(0); });
http.createServer((req, res) => {
  if (req.url === "/ready") { res.statusCode = fs.existsSync("/data/ready") ? 200 : 503; return res.end(); }
  res.end(JSON.stringify({ host: os.hostname(), pod: process.env.POD_NAME, ip: process.env.POD_IP, secret: process.env.PASSWORD, init: fs.readFileSync("/shared/from-init", "utf8").trim() }));
}).listen(Number(process.env.PORT), "0.0.0.0");
`;

async function start(t: ExecutionContext) {
  const dir = await mkdtemp(join(tmpdir(), "steward-kubelet-"));
  await writeFile(join(dir, "server.js"), SERVER);
  const kubelet = new ProcessKubelet({
    dataDir: join(dir, "node"),
    images: {
      "steward-test/server": { entrypoint: [process.execPath, join(dir, "server.js")] },
      "steward-test/shell": { entrypoint: ["/bin/sh", "-c"], cmd: ["sleep 3600"] },
    },
    restartBackoff: { initialMs: 300, maxMs: 2000 },
    maxGraceSeconds: 5,
    secretRefreshMs: 300,
  });
  const api = await FakeKubeApi.start({ kubelet });
  t.teardown(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const k8s = await loadClient();
  const kc = new k8s.KubeConfig();
  kc.loadFromString(api.kubeconfig());
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: "default" } } });
  const pod = async (name: string): Promise<KubeObject> =>
    (await core.readNamespacedPod({ name, namespace: "default" })) as unknown as KubeObject;
  return { api, kubelet, core, apps: kc.makeApiClient(k8s.AppsV1Api), pod, dir };
}

const fetchJson = (url: string): Promise<Record<string, string>> =>
  new Promise((resolve, reject) => {
    get(url, (res) => {
      let b = "";
      res.on("data", (d: Buffer) => {
        b += d.toString();
      });
      res.on("end", () => {
        try {
          resolve(JSON.parse(b) as Record<string, string>);
        } catch (e) {
          reject(e as Error);
        }
      });
    }).on("error", reject);
  });
const ready = (p: KubeObject): boolean =>
  !!p.status?.conditions?.some((c: { type: string; status: string }) => c.type === "Ready" && c.status === "True");

const serverPod = (name: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  spec: {
    terminationGracePeriodSeconds: 3,
    volumes: [
      { name: "shared", emptyDir: {} },
      { name: "data", emptyDir: {} },
      { name: "creds", secret: { secretName: "creds" } },
    ],
    initContainers: [
      {
        name: "setup",
        image: "steward-test/shell",
        args: ["echo made-by-init > /shared/from-init; touch /data/ready"],
        volumeMounts: [
          { name: "shared", mountPath: "/shared" },
          { name: "data", mountPath: "/data" },
        ],
      },
    ],
    containers: [
      {
        name: "server",
        image: "steward-test/server",
        ports: [{ name: "http", containerPort: 8080 }],
        env: [
          { name: "PORT", value: "8080" },
          { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
          { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
          { name: "PASSWORD", valueFrom: { secretKeyRef: { name: "creds", key: "password" } } },
        ],
        volumeMounts: [
          { name: "shared", mountPath: "/shared", readOnly: true },
          { name: "data", mountPath: "/data" },
          { name: "creds", mountPath: "/etc/creds", readOnly: true },
        ],
        readinessProbe: { httpGet: { path: "/ready", port: "http" }, periodSeconds: 1, failureThreshold: 1 },
      },
      { name: "sidecar", image: "steward-test/shell", volumeMounts: [{ name: "data", mountPath: "/data" }] },
    ],
  },
});

test("a pod runs: init container first, its own IP and hostname, env from the downward API and a secret, shared volumes, readiness", async (t) => {
  const { core, kubelet, pod } = await start(t);
  await core.createNamespacedSecret({
    namespace: "default",
    body: { metadata: { name: "creds" }, data: { password: Buffer.from("s3cret").toString("base64") } },
  });
  await core.createNamespacedPod({ namespace: "default", body: serverPod("web-0") as never });
  await core.createNamespacedPod({ namespace: "default", body: serverPod("web-1") as never });
  const [a, b] = await Promise.all(
    ["web-0", "web-1"].map((n) =>
      eventually(
        `${n} ready`,
        async () => {
          const p = await pod(n);
          return ready(p) ? p : undefined;
        },
        30_000,
      ),
    ),
  );
  t.not(a!.status.podIP, b!.status.podIP, "each pod has its own IP");
  t.is(a!.status.phase, "Running");
  t.is(a!.status.initContainerStatuses[0].state.terminated.reason, "Completed");
  const facts = await fetchJson(`http://${a!.status.podIP}:8080/`);
  t.deepEqual(facts, { host: "web-0", pod: "web-0", ip: a!.status.podIP, secret: "s3cret", init: "made-by-init" });
  // Both containers of a pod see the same emptyDir; the secret is a file too.
  t.is((await kubelet.exec("default", "web-0", "sidecar", ["cat", "/data/ready"])).code, 0);
  t.is((await kubelet.exec("default", "web-0", "server", ["cat", "/etc/creds/password"])).stdout, "s3cret");
  // Readiness: the probe failing takes the pod out of Ready; passing again brings it back.
  await kubelet.exec("default", "web-0", "sidecar", ["rm", "/data/ready"]);
  await eventually("web-0 not ready", async () => !ready(await pod("web-0")), 15_000);
  t.true(ready(await pod("web-1")), "the other pod is not affected");
  await kubelet.exec("default", "web-0", "sidecar", ["touch", "/data/ready"]);
  await eventually("web-0 ready again", async () => ready(await pod("web-0")), 15_000);
  // Deletion: SIGTERM first (the server records it), then the pod is gone with its processes.
  await core.deleteNamespacedPod({ name: "web-0", namespace: "default" });
  await eventually(
    "web-0 gone",
    async () =>
      await pod("web-0").then(
        () => false,
        () => true,
      ),
    30_000,
  );
  t.deepEqual(await kubelet.processes("default", "web-0"), []);
});

test("an unknown image waits in ErrImagePull; a crashing container backs off and restarts; a failing liveness probe restarts it", async (t) => {
  const { core, kubelet, pod } = await start(t);
  await core.createNamespacedPod({
    namespace: "default",
    body: {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "nope" },
      spec: { containers: [{ name: "c", image: "example.com/nothing:1" }] },
    } as never,
  });
  const waiting = await eventually(
    "ErrImagePull",
    async () => {
      const s = (await pod("nope")).status?.containerStatuses?.[0];
      return ["ErrImagePull", "ImagePullBackOff"].includes(s?.state?.waiting?.reason) ? s : undefined;
    },
    15_000,
  );
  t.regex(waiting.state.waiting.message, /not known to the fake kubelet/);
  await core.createNamespacedPod({
    namespace: "default",
    body: {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "crash" },
      spec: { containers: [{ name: "c", image: "steward-test/shell", args: ["echo started; exit 3"] }] },
    } as never,
  });
  const crashed = await eventually(
    "two restarts",
    async () => {
      const s = (await pod("crash")).status?.containerStatuses?.[0];
      return s && s.restartCount >= 2 ? s : undefined;
    },
    30_000,
  );
  t.is(crashed.lastState.terminated.exitCode, 3);
  await core.createNamespacedPod({
    namespace: "default",
    body: {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "live" },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "c",
            image: "steward-test/shell",
            args: ["touch /tmp/alive; sleep 3600"],
            livenessProbe: { exec: { command: ["test", "-e", "/tmp/alive"] }, periodSeconds: 1, failureThreshold: 2 },
          },
        ],
      },
    } as never,
  });
  await eventually(
    "live running",
    async () => (await pod("live")).status?.containerStatuses?.[0]?.state?.running !== undefined,
    15_000,
  );
  t.is((await pod("live")).status.containerStatuses[0].restartCount, 0);
  await kubelet.exec("default", "live", "c", ["rm", "/tmp/alive"]);
  const restarted = await eventually(
    "a restart after the liveness probe failed",
    async () => {
      const s = (await pod("live")).status?.containerStatuses?.[0];
      return s?.restartCount >= 1 && s.state.running ? s : undefined;
    },
    30_000,
  );
  t.is(restarted.restartCount, 1);
  t.regex(await kubelet.logs("default", "live", "c"), /liveness probe failed: killing the container/);
});

test("a StatefulSet's claim outlives its pod; a claim deleted and made again starts empty", async (t) => {
  const { apps, core, kubelet, pod } = await start(t);
  await apps.createNamespacedStatefulSet({
    namespace: "default",
    body: {
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      metadata: { name: "db" },
      spec: {
        replicas: 1,
        serviceName: "db",
        selector: { matchLabels: { app: "db" } },
        template: {
          metadata: { labels: { app: "db" } },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [
              { name: "db", image: "steward-test/shell", volumeMounts: [{ name: "state", mountPath: "/var/lib/db" }] },
            ],
          },
        },
        volumeClaimTemplates: [
          {
            metadata: { name: "state" },
            spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
          },
        ],
      },
    } as never,
  });
  await eventually(
    "db-0 running",
    async () => (await pod("db-0")).status?.containerStatuses?.[0]?.state?.running !== undefined,
    30_000,
  );
  t.is((await kubelet.exec("default", "db-0", "db", ["sh", "-c", "echo kept > /var/lib/db/file"])).code, 0);
  const uid = (await pod("db-0")).metadata.uid;
  await core.deleteNamespacedPod({ name: "db-0", namespace: "default" });
  await eventually(
    "db-0 back as a new pod",
    async () => {
      const p = await pod("db-0").catch(() => undefined);
      return p && p.metadata.uid !== uid && p.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
    },
    30_000,
  );
  t.is((await kubelet.exec("default", "db-0", "db", ["cat", "/var/lib/db/file"])).stdout, "kept\n");
  // The node and its disk lost: the claim goes with the pod; the StatefulSet makes both again.
  const uid2 = (await pod("db-0")).metadata.uid;
  await core.deleteNamespacedPersistentVolumeClaim({ name: "state-db-0", namespace: "default" });
  await core.deleteNamespacedPod({ name: "db-0", namespace: "default" });
  await eventually(
    "db-0 back with a new claim",
    async () => {
      const p = await pod("db-0").catch(() => undefined);
      return p && p.metadata.uid !== uid2 && p.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
    },
    30_000,
  );
  t.not((await kubelet.exec("default", "db-0", "db", ["cat", "/var/lib/db/file"])).code, 0, "the new claim is empty");
});

test("a mounted Secret is brought up to date in a running pod: keys changed, added and removed", async (t) => {
  const { core, kubelet, pod } = await start(t);
  const b64 = (v: string): string => Buffer.from(v).toString("base64");
  await core.createNamespacedSecret({
    namespace: "default",
    body: { metadata: { name: "tokens" }, data: { a: b64("one"), gone: b64("x") } },
  });
  await core.createNamespacedPod({
    namespace: "default",
    body: {
      metadata: { name: "reader" },
      spec: {
        volumes: [{ name: "t", secret: { secretName: "tokens" } }],
        containers: [
          {
            name: "c",
            image: "steward-test/shell",
            volumeMounts: [{ name: "t", mountPath: "/etc/tokens", readOnly: true }],
          },
        ],
      },
    } as never,
  });
  await eventually("the pod running", async () => (await pod("reader")).status?.phase === "Running", 20_000);
  const cat = async (f: string): Promise<string> =>
    (await kubelet.exec("default", "reader", "c", ["cat", `/etc/tokens/${f}`])).stdout;
  t.is(await cat("a"), "one");
  await core.replaceNamespacedSecret({
    name: "tokens",
    namespace: "default",
    body: { metadata: { name: "tokens" }, data: { a: b64("two"), b: b64("new") } },
  });
  const ls = async (): Promise<string> =>
    (await kubelet.exec("default", "reader", "c", ["ls", "/etc/tokens"])).stdout
      .split("\n")
      .filter(Boolean)
      .sort()
      .join(",");
  // Keys are brought up to date one by one (as upstream, a removed key's entry goes last): wait for all of it.
  await eventually(
    "the new content in the running container, the removed key's file gone",
    async () => (await cat("a")) === "two" && (await cat("b")) === "new" && (await ls()) === "a,b",
    30_000,
  );
  t.is(await cat("a"), "two");
  t.is(await ls(), "a,b", "the removed key's file is gone");
});

/** A test image: calls the API server every 300 ms as a pod does ("Accessing the Kubernetes API from a Pod"), reading its token each time. */
const IN_CLUSTER_CLIENT = `
const https = require("node:https"); const fs = require("node:fs"); const crypto = require("node:crypto");
const dir = "/var/run/secrets/kubernetes.io/serviceaccount";
setInterval(() => {
  const token = fs.readFileSync(dir + "/token", "utf8");
  const ns = fs.readFileSync(dir + "/namespace", "utf8");
  const req = https.request({ host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT, path: "/api/v1/namespaces/" + ns + "/configmaps/kube-root-ca.crt", ca: fs.readFileSync(dir + "/ca.crt"), headers: { authorization: "Bearer " + token } }, (res) => {
    res.resume();
    console.log(res.statusCode + " " + crypto.createHash("sha256").update(token).digest("hex").slice(0, 12));
  });
  req.on("error", (e) => console.log("error " + e.message));
  req.end();
}, 300);
`;

test("a pod's ServiceAccount: its token, the CA and its namespace mounted, the API server in its environment; the kubelet rotates the token before it expires, and an expired one is refused", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-kubelet-sa-"));
  await writeFile(join(dir, "client.js"), IN_CLUSTER_CLIENT);
  const kubelet = new ProcessKubelet({
    dataDir: join(dir, "node"),
    images: { "steward-test/client": { entrypoint: [process.execPath, join(dir, "client.js")] } },
    maxGraceSeconds: 2,
    secretRefreshMs: 300,
  });
  // Tokens live 8 s here (kube-apiserver's maximum lowered): the kubelet renews them after 80 %, so a
  // periodic sync late by up to 1.6 s on a busy machine still finds the token valid (3 s left 0.6 s).
  const api = await FakeKubeApi.start({ kubelet, listen: "0.0.0.0", serviceAccountTokenMaxSeconds: 8 });
  const kube = new kubernetes.KubeApi(kubernetes.parseKubeconfig(api.kubeconfig()));
  t.teardown(async () => {
    kube.close();
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });
  await publishApiServer(kube, kubelet.gateway, Number(new URL(api.url).port));
  const R = kubernetes.KUBE_RESOURCES;
  await kube.create(R.namespaces, { metadata: { name: "shop" } });
  await kube.create(R.roles, {
    metadata: { name: "ca-reader", namespace: "shop" },
    rules: [{ apiGroups: [""], resources: ["configmaps"], resourceNames: ["kube-root-ca.crt"], verbs: ["get"] }],
  });
  await kube.create(R.roleBindings, {
    metadata: { name: "ca-reader", namespace: "shop" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "ca-reader" },
    subjects: [{ kind: "ServiceAccount", name: "default", namespace: "shop" }],
  });
  await eventually(
    "the default ServiceAccount",
    async () => !!(await kube.find(R.serviceAccounts, "default", { namespace: "shop" })),
  );
  await kube.create(R.pods, {
    metadata: { name: "client", namespace: "shop" },
    spec: { containers: [{ name: "c", image: "steward-test/client" }] },
  });

  const lines = async (): Promise<string[]> => (await kubelet.logs("shop", "client", "c")).split("\n").filter(Boolean);
  // Generous: a pod's first Node start on a machine that is also running two CPU burners took over 20 s.
  await eventually("the pod's calls answered", async () => (await lines()).length >= 3, 90_000);
  const exec = async (cmd: string[]): Promise<string> => (await kubelet.exec("shop", "client", "c", cmd)).stdout.trim();
  t.is(await exec(["cat", "/var/run/secrets/kubernetes.io/serviceaccount/namespace"]), "shop");
  t.is(await exec(["cat", "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"]), api.caCert.trim());
  const first = await exec(["cat", "/var/run/secrets/kubernetes.io/serviceaccount/token"]);
  // Several tokens in turn, every call answered 200 throughout.
  await eventually(
    "three tokens in turn",
    async () => new Set((await lines()).map((l) => l.split(" ")[1])).size >= 3,
    60_000,
  );
  t.deepEqual(
    (await lines()).filter((l) => !l.startsWith("200 ")),
    [],
    "no call refused or failed",
  );
  const asFirst = new kubernetes.KubeApi(
    new kubernetes.KubeConnection({
      server: api.url,
      caCert: api.caCert,
      namespace: "shop",
      credential: { token: first },
    }),
  );
  t.teardown(() => asFirst.close());
  await t.notThrowsAsync(
    eventually(
      "the first token, once expired, refused (401)",
      async () =>
        (await asFirst.get(R.configMaps, "kube-root-ca.crt").then(
          () => 0,
          (e: unknown) => (e as kubernetes.KubeApiError).code,
        )) === 401,
      10_000,
    ),
  );
});

test("a claim's volume is given the pod's fsGroup as the kubelet documents it: group rw, setgid directories, OnRootMismatch skipping a root that matches", async (t) => {
  const root = await mkdtemp(join(tmpdir(), "steward-fsgroup-"));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  await mkdir(join(root, "data"), { mode: 0o700 });
  await writeFile(join(root, "data", "PG_VERSION"), "15\n", { mode: 0o600 });
  await writeFile(join(root, "run.sh"), "#!/bin/sh\n", { mode: 0o700 });
  await symlink("/etc/hostname", join(root, "link"));
  await chmod(root, 0o700);
  const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o7777;
  const gid = async (path: string): Promise<number> => (await stat(path)).gid;

  await applyVolumeOwnership(root, undefined);
  t.is(await mode(join(root, "data")), 0o700, "no fsGroup: left as it is");

  await applyVolumeOwnership(root, { fsGroup: 4242 });
  t.is(await mode(root), 0o2770);
  t.is(await mode(join(root, "data")), 0o2770, "directories: group rwx and setgid, OR'd with their mode");
  t.is(await mode(join(root, "data", "PG_VERSION")), 0o660, "files: group rw");
  t.is(await mode(join(root, "run.sh")), 0o760, "files gain group rw, never exec");
  t.is(await gid(join(root, "data", "PG_VERSION")), 4242);
  t.not((await lstat(join(root, "link"))).gid, 4242, "symbolic links are skipped");

  // The workload puts its modes back; OnRootMismatch leaves them when the root already matches.
  await chmod(join(root, "data"), 0o700);
  await applyVolumeOwnership(root, { fsGroup: 4242, fsGroupChangePolicy: "OnRootMismatch" });
  t.is(await mode(join(root, "data")), 0o700);
  // Always (the default) walks the volume again at every mount.
  await applyVolumeOwnership(root, { fsGroup: 4242, fsGroupChangePolicy: "Always" });
  t.is(await mode(join(root, "data")), 0o2770);
  // A root that does not match: OnRootMismatch walks it too.
  await chmod(join(root, "data"), 0o700);
  await chmod(root, 0o700);
  await applyVolumeOwnership(root, { fsGroup: 4242, fsGroupChangePolicy: "OnRootMismatch" });
  t.is(await mode(join(root, "data")), 0o2770);
});
