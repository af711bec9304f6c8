/**
 * Kubernetes clusters that cannot be used are said so where the user looks (issue 29). A real
 * controller and the CLI in-process against the FAKE API server (test/harness/kube, its RBAC and
 * SelfSubjectAccessReview as upstream documents them; no kubelet runs pods here, none is needed):
 * - `add-k8s` asks the cluster first: a closed port, a refused token and a foreign CA are refused
 *   naming the address and the failure, a user without rights naming what it misses; nothing is
 *   stored, and `--skip-check` stores it anyway;
 * - `add-model` checks the model's namespace the same way, and a user granted exactly the rights
 *   the provisioner is said to need (MODEL_NAMESPACE_RIGHTS) runs a model with none of its calls refused;
 * - a model whose cluster goes away shows it in its machine's and unit's status and in debug-log;
 *   `destroy-model` says what it waits for and suggests --force, and --force completes without the cluster.
 */
import test from "ava";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import YAML from "yaml";
import { MODEL_NAMESPACE_RIGHTS } from "../controller";
import { kubernetes } from "../substrates";
import type { CliResult } from "./harness/cli";
import { cliRunner } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { fixturesDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { FakeKubeApi } from "./harness/kube/fake-kube-api";

const R = kubernetes.KUBE_RESOURCES;
const TOKENS = {
  admin: "admin-token-0123456789abcdef",
  nobody: "nobody-token-0123456789abcdef",
  shop: "shop-token-0123456789abcdef",
};

let tc: TestController;
let cluster: FakeKubeApi;
let kube: kubernetes.KubeApi;
let home: string;
let steward: (...args: string[]) => Promise<CliResult>;

test.before(async () => {
  tc = await startTestController({ kubernetes: { pollIntervalMs: 500 } });
  cluster = await FakeKubeApi.start({
    tokens: { [TOKENS.admin]: "admin", [TOKENS.nobody]: { user: "nobody" }, [TOKENS.shop]: { user: "shop-operator" } },
  });
  kube = new kubernetes.KubeApi(kubernetes.parseKubeconfig(cluster.kubeconfig()));
  home = await mkdtemp(join(tmpdir(), "steward-k8s-checks-"));
  const entry = { addresses: tc.addresses, caCert: tc.caCert, user: "admin", password: tc.adminPassword };
  await writeFile(join(home, "controllers.json"), JSON.stringify({ current: "t", controllers: { t: entry } }), {
    mode: 0o600,
  });
  steward = cliRunner(home, home);
});
test.after.always(async () => {
  kube?.close();
  await tc?.close();
  await cluster?.stop();
  await doomed?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

/** Writes a kubeconfig for `api` (its server, CA and the given token, context namespace) and answers its path. */
async function kubeconfigFile(
  name: string,
  api: FakeKubeApi,
  o: { token?: string; namespace?: string; server?: string; caCert?: string } = {},
): Promise<string> {
  const doc = YAML.parse(
    api.kubeconfig({ token: o.token ?? TOKENS.admin, ...(o.namespace ? { namespace: o.namespace } : {}) }),
  ) as { clusters: { cluster: Record<string, unknown> }[] };
  if (o.server) doc.clusters[0]!.cluster.server = o.server;
  if (o.caCert) doc.clusters[0]!.cluster["certificate-authority-data"] = Buffer.from(o.caCert).toString("base64");
  const path = join(home, `${name}.kubeconfig`);
  await writeFile(path, YAML.stringify(doc), { mode: 0o600 });
  return path;
}

/** A loopback port nothing listens on (it was bound and closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

const stored = async (name: string): Promise<boolean> =>
  (await tc.admin.listCredentials()).credentials.some((c) => c.name === name);

test.serial(
  "add-k8s refuses a cluster it cannot reach, that does not answer or that refuses the credential, naming the address and the failure; --skip-check stores it anyway",
  async (t) => {
    const port = await closedPort();
    const refused = await steward(
      "add-k8s",
      "gone",
      "--kubeconfig",
      await kubeconfigFile("gone", cluster, { server: `https://127.0.0.1:${port}` }),
    );
    t.not(refused.code, 0);
    t.regex(
      refused.stderr,
      new RegExp(`cluster "gone": cannot reach cluster https://127\\.0\\.0\\.1:${port}: connection refused`),
    );
    t.regex(refused.stderr, /--skip-check/);
    t.false(await stored("gone"), "nothing stored");

    const badToken = await steward(
      "add-k8s",
      "badtoken",
      "--kubeconfig",
      await kubeconfigFile("badtoken", cluster, { token: "not-a-token-of-this-cluster" }),
    );
    t.not(badToken.code, 0);
    t.regex(
      badToken.stderr,
      new RegExp(`cluster ${cluster.url.replace(/\./g, "\\.")} refused the credential \\(401 Unauthorized\\)`),
    );
    t.false(await stored("badtoken"));

    const other = await FakeKubeApi.start();
    try {
      const foreignCa = await steward(
        "add-k8s",
        "foreign",
        "--kubeconfig",
        await kubeconfigFile("foreign", cluster, { caCert: other.caCert }),
      );
      t.not(foreignCa.code, 0);
      t.regex(foreignCa.stderr, /cannot reach cluster https:\/\/127\.0\.0\.1:\d+: TLS failure/);
      t.false(await stored("foreign"));
    } finally {
      await other.stop();
    }

    // A server that takes connections and never answers: refused once the check's time is up, the request not held longer.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
    });
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    try {
      const silentPort = (silent.address() as { port: number }).port;
      const mute = await steward(
        "add-k8s",
        "mute",
        "--kubeconfig",
        await kubeconfigFile("mute", cluster, { server: `https://127.0.0.1:${silentPort}` }),
      );
      t.not(mute.code, 0);
      t.regex(
        mute.stderr,
        new RegExp(`cannot reach cluster https://127\\.0\\.0\\.1:${silentPort}: no answer in 10000 ms`),
      );
      t.false(await stored("mute"));
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((r) => silent.close(r));
    }

    const skipped = await steward(
      "add-k8s",
      "gone",
      "--skip-check",
      "--kubeconfig",
      await kubeconfigFile("gone", cluster, { server: `https://127.0.0.1:${port}` }),
    );
    t.is(skipped.code, 0, skipped.stderr);
    t.true(await stored("gone"));
    // A model on it is checked too, and refused the same way.
    const model = await steward("add-model", "nowhere", "--substrate", "kubernetes:gone");
    t.not(model.code, 0);
    t.regex(
      model.stderr,
      new RegExp(
        `cannot reach cluster https://127\\.0\\.0\\.1:${port}: connection refused.*make the model anyway with --skip-check`,
      ),
    );
    t.false((await tc.admin.listModels()).some((m) => m.name === "nowhere"));
    // Made anyway, its unit's machine says why it does not come.
    t.is((await steward("add-model", "nowhere", "--substrate", "kubernetes:gone", "--skip-check")).code, 0);
    await tc.admin.deploy("nowhere", {
      name: "web",
      operator: await tc.upload(join(fixturesDir, "operators", "recorder")),
      units: 1,
      config: { "record-dir": home },
    });
    const unit = await eventually(
      "the unit says why its machine does not come",
      async () => {
        const u = (await tc.admin.status("nowhere")).applications.web?.units["web/0"];
        return u && /cannot reach cluster/.test(u.workload.message) ? u : undefined;
      },
      30_000,
    );
    t.regex(
      unit.workload.message,
      new RegExp(
        `^waiting for machine \\d+: cannot reach cluster https://127\\.0\\.0\\.1:${port}: connection refused; retrying$`,
      ),
    );
    await tc.admin.destroyModel("nowhere", true);
  },
);

test.serial(
  "a token without the rights Steward needs is refused naming what is missing; one with exactly those runs a model with no call refused; rights withdrawn show in its machines and debug-log until given back",
  async (t) => {
    const nobody = await steward(
      "add-k8s",
      "nobody",
      "--kubeconfig",
      await kubeconfigFile("nobody", cluster, { token: TOKENS.nobody }),
    );
    t.not(nobody.code, 0);
    t.regex(nobody.stderr, /it may not create namespaces, nor work in namespace default/);
    t.regex(
      nobody.stderr,
      new RegExp(
        "Missing: create namespaces, get namespaces default, get/create/update/delete secrets in namespace default, get/create/delete services in namespace default, " +
          "get/list/create/patch/delete statefulsets\\.apps in namespace default, patch statefulsets\\.apps/scale in namespace default, list pods in namespace default, " +
          "get/list/update/delete persistentvolumeclaims in namespace default\\.",
      ),
    );
    t.false(await stored("nobody"));

    // shop-operator: a Role in namespace shop with every right the provisioner needs but scaling.
    await kube.create(R.namespaces, { apiVersion: "v1", kind: "Namespace", metadata: { name: "shop" } });
    const rules = (without?: string) => [
      { apiGroups: [""], resources: ["namespaces"], verbs: ["get"] },
      ...MODEL_NAMESPACE_RIGHTS.filter((r) => `${r.resource}/${r.subresource ?? ""}` !== without).map((r) => ({
        apiGroups: [r.group ?? ""],
        resources: [r.subresource ? `${r.resource}/${r.subresource}` : r.resource],
        verbs: [r.verb],
      })),
    ];
    await kube.create(R.roles, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "steward", namespace: "shop" },
      rules: rules("statefulsets/scale"),
    });
    await kube.create(R.roleBindings, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "steward", namespace: "shop" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "steward" },
      subjects: [{ kind: "User", name: "shop-operator" }],
    });
    const file = await kubeconfigFile("limited", cluster, { token: TOKENS.shop, namespace: "shop" });
    const noScale = await steward("add-k8s", "limited", "--kubeconfig", file);
    t.not(noScale.code, 0);
    t.regex(noScale.stderr, /Missing: create namespaces, patch statefulsets\.apps\/scale in namespace shop\./);
    t.false(await stored("limited"));

    await kube.replace(R.roles, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "steward", namespace: "shop" },
      rules: rules(),
    });
    const added = await steward("add-k8s", "limited", "--kubeconfig", file);
    t.is(added.code, 0, added.stderr);
    // Another namespace: neither there nor may it make one.
    const elsewhere = await steward("add-model", "cafe", "--substrate", "kubernetes:limited");
    t.not(elsewhere.code, 0);
    t.regex(
      elsewhere.stderr,
      /may not run a model in namespace cafe\. Missing: get namespaces cafe, get\/create\/update\/delete secrets in namespace cafe, /,
    );
    t.is((await steward("add-model", "shop", "--substrate", "kubernetes:limited")).code, 0);

    // The model runs under exactly those rights: objects made, scaled, an application's removed, the model's swept.
    const op = await tc.upload(join(fixturesDir, "operators", "recorder"));
    await tc.admin.deploy("shop", { name: "web", operator: op, units: 1, config: { "record-dir": home } });
    await eventually(
      "web's pod recorded as its machine",
      async () => Object.values((await tc.admin.status("shop")).machines).some((m) => m.instance?.id === "shop/web-0"),
      30_000,
    );
    await tc.admin.addUnits("shop", "web", 1);
    await eventually(
      "web scaled to 2",
      async () => (await kube.find(R.statefulSets, "web", { namespace: "shop" }))?.spec?.replicas === 2,
      30_000,
    );
    // Its rights withdrawn, then given back: the machines show the refusal while it lasts, debug-log when it starts and ends.
    const withdrawn = cluster.requests.length;
    const binding = await kube.get(R.roleBindings, "steward", { namespace: "shop" });
    await kube.delete(R.roleBindings, "steward", { namespace: "shop" });
    const forbidden =
      /^provisioning failed: cluster https:\/\/127\.0\.0\.1:\d+ forbids it: namespaces "shop" is forbidden: User "shop-operator" cannot get resource "namespaces"/;
    await eventually(
      "the machines show the refusal",
      async () =>
        Object.values((await tc.admin.status("shop")).machines).every((m) => forbidden.test(m.status.message)),
      30_000,
    );
    await kube.create(R.roleBindings, { ...binding, metadata: { name: "steward", namespace: "shop" } });
    await eventually(
      "the machines provisioned again",
      async () =>
        Object.values((await tc.admin.status("shop")).machines).every(
          (m) => m.status.current !== "error" && !forbidden.test(m.status.message),
        ),
      30_000,
    );
    const givenBack = cluster.requests.length;
    const log = await steward("debug-log", "-m", "shop", "--no-tail", "-i", "web/1");
    t.regex(
      log.stdout,
      /^web\/1 \S+ ERROR controller: provisioning: cluster \S+ forbids it: .*; retrying\nweb\/1 \S+ INFO controller: provisioning: cluster https:\/\/127\.0\.0\.1:\d+ answers again$/m,
    );
    await tc.admin.removeApplication("shop", "web", true);
    await eventually(
      "web's objects deleted",
      async () =>
        !(await kube.find(R.statefulSets, "web", { namespace: "shop" })) &&
        !(await kube.find(R.secrets, kubernetes.agentsSecretName("web"), { namespace: "shop" })),
      30_000,
    );
    const refusedCalls = cluster.requests.filter(
      (r, i) => r.user === "shop-operator" && r.status === 403 && (i < withdrawn || i >= givenBack),
    );
    t.deepEqual(
      refusedCalls.map((r) => `${r.method} ${r.path}`),
      [],
      "no call of the provisioner refused",
    );
    t.true(
      cluster.requests.some(
        (r) =>
          r.user === "shop-operator" &&
          r.method === "PATCH" &&
          r.path.endsWith("/statefulsets/web/scale") &&
          r.status === 200,
      ),
      "scaled through /scale",
    );
    await tc.admin.destroyModel("shop", true);
  },
);

/** A cluster the third test stops, and what its model's machine shows once it is gone. */
let doomed: FakeKubeApi | undefined;
let goneMessage: RegExp | undefined;
let goneMachine = "";

test.serial(
  "a model whose cluster goes away says so in its machine's and its unit's status and in debug-log",
  async (t) => {
    doomed = await FakeKubeApi.start({ tokens: { [TOKENS.admin]: "admin" } });
    t.is((await steward("add-k8s", "doomed", "--kubeconfig", await kubeconfigFile("doomed", doomed))).code, 0);
    t.is((await steward("add-model", "till", "--substrate", "kubernetes:doomed")).code, 0);
    const op = await tc.upload(join(fixturesDir, "operators", "recorder"));
    await tc.admin.deploy("till", { name: "web", operator: op, units: 1, config: { "record-dir": home } });
    await eventually(
      "web's pod recorded as its machine",
      async () => Object.values((await tc.admin.status("till")).machines).some((m) => m.instance?.id === "till/web-0"),
      30_000,
    );

    await doomed.stop();
    const gone = (goneMessage = new RegExp(
      `cannot reach cluster ${doomed.url.replace(/\./g, "\\.")}: connection refused; retrying`,
    ));
    const s = await eventually(
      "the machine's status says the cluster is not reached",
      async () => {
        const st = await tc.admin.status("till");
        return Object.values(st.machines).some((m) => gone.test(m.status.message)) ? st : undefined;
      },
      30_000,
    );
    const machine = Object.values(s.machines)[0]!;
    goneMachine = machine.id;
    t.is(machine.status.current, "error");
    t.regex(machine.status.message, /^provisioning failed: /);
    t.regex(
      s.applications.web!.units["web/0"]!.workload.message,
      new RegExp(`^waiting for machine ${machine.id}: ${gone.source}`),
    );
    const log = await steward("debug-log", "-m", "till", "--no-tail");
    t.is(log.code, 0, log.stderr);
    t.regex(log.stdout, new RegExp(`^web/0 \\S+ ERROR controller: provisioning: ${gone.source}$`, "m"));
  },
);

test.serial(
  "destroy-model of that model says what it waits for and suggests --force; --force completes without the cluster, saying what may be left",
  async (t) => {
    if (!goneMessage) {
      t.fail("the model of the previous test is needed");
      return;
    }
    const waited = await steward("destroy-model", "till", "--yes", "--timeout", "25s");
    t.not(waited.code, 0);
    t.regex(
      waited.stderr,
      new RegExp(
        `waiting for 1 unit to run their teardown hooks: web/0 \\(agent allocating; waiting for machine ${goneMachine}: ${goneMessage.source}`,
      ),
    );
    t.regex(
      waited.stderr,
      /Nothing has changed for 20 s\. If its agents or its cluster cannot be reached, `steward destroy-model till --yes --force` removes the model now/,
    );

    const forced = await steward("destroy-model", "till", "--yes", "--force");
    t.is(forced.code, 0, forced.stderr);
    t.regex(forced.stdout, /Model "till" destroyed\./);
    t.regex(
      forced.stderr,
      /objects in namespace till of cluster doomed are deleted only if the controller reaches the cluster.*`kubectl delete namespace till`/,
    );
    t.false((await tc.admin.listModels()).some((m) => m.name === "till"));
  },
);
