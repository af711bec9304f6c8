/**
 * An HA controller on Kubernetes, on the FAKE API server and FAKE process kubelet (pods are
 * processes in network namespaces; cluster DNS answers Service and pod names): `steward bootstrap
 * kubernetes:` makes a StatefulSet with one pod, the controller grows itself to three replicas by
 * scaling it and taking each pod into etcd, a pod deleted (its volume kept) rejoins under its
 * stable DNS name with a new IP, and a pod deleted with its claim comes back empty and is replaced
 * automatically: three voters again, and no acknowledged write lost. The controller does all this
 * as its pods' ServiceAccount, under the fake server's RBAC, with tokens that rotate every minute;
 * that identity is refused everything outside its own objects. Then a kubernetes model on the
 * same cluster: its agents (in pods too) are given the controller's client Service (headless: its
 * name resolves to the ready replicas) and then each replica's DNS name.
 */
import test from "ava";
import { join } from "node:path";
import type { ClusterInfo } from "../api";
import { ControllerClient, readOperatorDir, unitIsReady } from "../api";
import { kubernetes } from "../substrates";
import { operatorsDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { CLUSTER_TOKEN_SECONDS, startKubeCluster } from "./harness/kube/lab";

const R = kubernetes.KUBE_RESOURCES;
const NS = "steward";
const TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token";

test("bootstrap on Kubernetes: three replicas by DNS name; a deleted pod rejoins; a lost volume is replaced automatically; a kubernetes model's agents reach it by DNS", async (t) => {
  t.timeout(600_000); // about 80 s on an idle machine, over 120 s on a loaded one
  const cluster0 = await startKubeCluster();
  const { api, kube } = cluster0;
  let client: ControllerClient | undefined;
  t.teardown(async () => {
    client?.close();
    await cluster0.close();
  });

  const lines: string[] = [];
  const entry = await kubernetes.bootstrapOnKubernetes({
    name: "ctl",
    namespace: NS,
    replicas: 3,
    image: kubernetes.DEFAULT_CONTROLLER_IMAGE,
    connection: kubernetes.parseKubeconfig(api.kubeconfig()),
    replaceAfterSeconds: 600,
    timeoutMs: 240_000,
    progress: (l) => lines.push(l),
  });
  t.log(lines.join("\n"));
  t.is(
    await kube.find(R.secrets, kubernetes.controllerSeedSecretName("ctl"), { namespace: NS }),
    undefined,
    "the seed (with the CA key) is gone",
  );
  t.is((await kube.get(R.statefulSets, "ctl", { namespace: NS })).spec?.replicas, 3, "grown by the controller itself");

  const podAddresses = async (): Promise<string[]> =>
    (await kube.list(R.pods, { namespace: NS })).items
      .filter((p) => p.status?.podIP)
      .map((p) => `${p.status!.podIP}:${kubernetes.CONTROLLER_API_PORT}`);
  const connect = async (): Promise<ControllerClient> => {
    client?.close();
    client = new ControllerClient({
      addresses: await podAddresses(),
      caCert: entry.caCert,
      user: "admin",
      password: entry.adminPassword,
      timeoutMs: 3000,
    });
    return client;
  };
  const voters = async (): Promise<ClusterInfo | undefined> =>
    (await (await connect()).controllerInfo().catch(() => undefined))?.cluster;
  const healthy = (c: ClusterInfo | undefined, n: number): boolean =>
    !!c && c.members.filter((m) => m.hasVote && m.present).length === n && !c.members.some((m) => m.learner);
  let cluster = await eventually(
    "3 healthy voters",
    async () => {
      const c = await voters();
      return healthy(c, 3) ? c : undefined;
    },
    60_000,
  );
  const hosts = cluster.members.map((m) => m.host ?? "").sort();
  t.deepEqual(
    hosts,
    [0, 1, 2].map((n) => kubernetes.replicaDnsName({ name: "ctl", namespace: NS }, n)),
    "members are addressed by their pods' DNS names",
  );
  const podToken = async (pod: string): Promise<string> =>
    (await cluster0.kubelet.exec(NS, pod, "controller", ["cat", TOKEN_FILE])).stdout.trim();
  const firstToken = await podToken("ctl-0");
  t.truthy(firstToken, "the kubelet mounted ctl-0's ServiceAccount token");

  // Acknowledged writes, checked at the end.
  const written: string[] = [];
  for (let i = 0; i < 5; i++) {
    const name = `ack-${i}`;
    await (await connect()).createModel(name);
    written.push(name);
  }

  // A pod deleted with its volume kept: same name, new IP, it rejoins by itself.
  const old1 = await kube.get(R.pods, "ctl-2", { namespace: NS });
  await kube.delete(R.pods, "ctl-2", { namespace: NS });
  await eventually(
    "ctl-2 back with a new IP",
    async () => {
      const p = await kube.find(R.pods, "ctl-2", { namespace: NS });
      return p && p.metadata?.uid !== old1.metadata?.uid && p.status?.podIP && p.status.podIP !== old1.status?.podIP;
    },
    60_000,
  );
  cluster = await eventually(
    "3 healthy voters after ctl-2's restart",
    async () => {
      const c = await voters();
      return healthy(c, 3) ? c : undefined;
    },
    90_000,
  );
  const ctl2 = cluster.members.find((m) => m.host === kubernetes.replicaDnsName({ name: "ctl", namespace: NS }, 2));
  t.truthy(ctl2, "ctl-2 is the same member");

  for (let i = 5; i < 10; i++) {
    const name = `ack-${i}`;
    await (await connect()).createModel(name);
    written.push(name);
  }

  // The pods' tokens rotate (they live CLUSTER_TOKEN_SECONDS here): what follows is done with a newer one than the first.
  await eventually(
    "ctl-0's ServiceAccount token rotated",
    async () => (await podToken("ctl-0")) !== firstToken,
    (CLUSTER_TOKEN_SECONDS + 30) * 1000,
  );

  // A pod deleted with its claim (its node and disk lost): it comes back empty and the leader replaces its member at once.
  const before = new Set(cluster.members.map((m) => m.name));
  await kube.delete(R.persistentVolumeClaims, "data-ctl-1", { namespace: NS });
  await kube.delete(R.pods, "ctl-1", { namespace: NS });
  cluster = await eventually(
    "3 healthy voters with ctl-1 replaced",
    async () => {
      const c = await voters();
      return healthy(c, 3) &&
        c!.members.some(
          (m) => m.host === kubernetes.replicaDnsName({ name: "ctl", namespace: NS }, 1) && !before.has(m.name),
        )
        ? c
        : undefined;
    },
    120_000,
  );
  t.regex(cluster.keeper.history.map((h) => h.message).join("\n"), /its host came back with an empty volume/);
  // The leader did that with its pod's ServiceAccount token, rotated since it first used it: read again, never refused.
  t.deepEqual(
    api.requests.filter((r) => r.status === 401).map((r) => `${r.method} ${r.path}`),
    [],
    "no request was refused a token",
  );
  t.true(
    api.requests.some(
      (r) =>
        r.user === "system:serviceaccount:steward:ctl" &&
        r.method === "PATCH" &&
        r.path.endsWith("/statefulsets/ctl/scale") &&
        r.status === 200,
    ),
    "the controller scaled its StatefulSet as its ServiceAccount",
  );

  // That ServiceAccount is allowed its own objects and nothing else (403, not 404: refused before looked up).
  await kube.create(R.namespaces, { apiVersion: "v1", kind: "Namespace", metadata: { name: "elsewhere" } });
  await kube.create(R.secrets, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "not-the-controllers", namespace: NS },
    data: {},
  });
  const asController = new kubernetes.KubeApi(
    new kubernetes.KubeConnection({
      server: api.url,
      caCert: api.caCert,
      namespace: NS,
      credential: { token: await podToken("ctl-0") },
    }),
  );
  t.teardown(() => asController.close());
  t.is((await asController.get(R.statefulSets, "ctl", { namespace: NS })).metadata?.name, "ctl");
  const refusal = async (p: Promise<unknown>): Promise<string> =>
    p.then(
      () => "allowed",
      (e: unknown) => (e instanceof kubernetes.KubeApiError ? `${e.code} ${e.status?.message ?? ""}` : String(e)),
    );
  const user = 'User "system:serviceaccount:steward:ctl"';
  t.is(
    await refusal(asController.list(R.pods, { namespace: "elsewhere" })),
    `403 pods is forbidden: ${user} cannot list resource "pods" in API group "" in the namespace "elsewhere"`,
  );
  t.is(
    await refusal(asController.list(R.pods, { namespace: NS })),
    `403 pods is forbidden: ${user} cannot list resource "pods" in API group "" in the namespace "steward"`,
  );
  t.is(
    await refusal(asController.get(R.secrets, "not-the-controllers", { namespace: NS })),
    `403 secrets "not-the-controllers" is forbidden: ${user} cannot get resource "secrets" in API group "" in the namespace "steward"`,
  );
  t.is(
    await refusal(asController.get(R.secrets, kubernetes.controllerSeedSecretName("ctl"), { namespace: NS })),
    `403 secrets "ctl-seed" is forbidden: ${user} cannot get resource "secrets" in API group "" in the namespace "steward"`,
  );
  t.is(
    await refusal(asController.list(R.secrets, { namespace: NS })),
    `403 secrets is forbidden: ${user} cannot list resource "secrets" in API group "" in the namespace "steward"`,
  );
  t.is(
    await refusal(asController.delete(R.statefulSets, "ctl", { namespace: NS })),
    `403 statefulsets.apps "ctl" is forbidden: ${user} cannot delete resource "statefulsets" in API group "apps" in the namespace "steward"`,
  );
  t.is(
    await refusal(asController.list(R.namespaces)),
    `403 namespaces is forbidden: ${user} cannot list resource "namespaces" in API group "" at the cluster scope`,
  );

  const models = (await (await connect()).listModels()).map((m) => m.name);
  for (const name of written) t.true(models.includes(name), `${name} (acknowledged) is still there`);

  // A kubernetes model on the same cluster: its agents reach the controller by the replicas' DNS names.
  const admin = await connect();
  await admin.putCredential("here", "kubernetes", {
    kubeconfig: kubernetes.flattenKubeconfig(
      new kubernetes.KubeConnection({
        ...kubernetes.parseKubeconfig(api.kubeconfig()),
        server: api.inClusterUrl,
        caCert: api.caCert,
        credential: { token: api.token },
      }),
    ),
  });
  await admin.createModel("shop", { updateStatusInterval: 300 }, "kubernetes", { credential: "here" });
  await admin.deploy("shop", {
    name: "cluster",
    operator: (await admin.uploadOperator((await readOperatorDir(join(operatorsDir, "cluster-secret"))).bundle)).hash,
    units: 2,
  });
  // What the pods printed, shown only when the wait below fails (a failure under load must be readable).
  const podLogs = async (): Promise<string> => {
    const out: string[] = [];
    for (const [ns, container] of [
      ["shop", "steward-agent"],
      [NS, "controller"],
    ] as const) {
      for (const p of (await kube.list(R.pods, { namespace: ns })).items) {
        const text = await cluster0.kubelet.logs(ns, p.metadata!.name!, container);
        out.push(
          `--- ${ns}/${p.metadata!.name} ${container} (${p.status?.phase}, ready ${p.status?.conditions?.find((c) => c.type === "Ready")?.status})\n${text.split("\n").slice(-60).join("\n")}`,
        );
      }
    }
    return out.join("\n");
  };
  const shop = await eventually(
    "2 units active in pods, their agents on the controller's DNS names",
    async () => {
      const s = await (await connect()).status("shop").catch(() => undefined);
      const units = Object.values(s?.applications.cluster?.units ?? {});
      return units.length === 2 && units.every(unitIsReady) ? s : undefined;
    },
    120_000,
  ).catch(async (e: unknown) => {
    t.log(JSON.stringify(await (await connect()).status("shop").catch((err: unknown) => String(err)), null, 1));
    t.log(await podLogs());
    throw e;
  });
  t.regex(shop.applications.cluster!.units["cluster/0"]!.workload.message, /2\/2 units agree/);
  const secret = await kube.get(R.secrets, kubernetes.agentsSecretName("cluster"), { namespace: "shop" });
  const agentConfig = JSON.parse(Buffer.from(secret.data!["agent-0.conf"]!, "base64").toString()) as {
    controllerAddresses: string[];
  };
  const service = kubernetes.clientServiceDnsName({ name: "ctl", namespace: NS });
  t.is(agentConfig.controllerAddresses[0], `${service}:${kubernetes.CONTROLLER_API_PORT}`, "the client Service first");
  t.deepEqual(
    agentConfig.controllerAddresses
      .slice(1)
      .map((a) => a.replace(/:\d+$/, ""))
      .sort(),
    [0, 1, 2].map((n) => kubernetes.replicaDnsName({ name: "ctl", namespace: NS }, n)),
    "then every replica's name",
  );
  // The Service's name leads to the ready replicas, as pods resolve it.
  const readyIps = async (): Promise<string[]> =>
    (await kube.list(R.pods, { namespace: NS })).items
      .filter((p) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"))
      .map((p) => p.status!.podIP!)
      .sort();
  await eventually(
    "the client Service resolving to the 3 ready replicas",
    async () => {
      const [ips, ready] = [(await cluster0.kubelet.resolve(service)).sort(), await readyIps()];
      return ips.length === 3 && ips.join() === ready.join();
    },
    30_000,
  );
});
