/**
 * An HA controller on Kubernetes, on the FAKE API server and FAKE process kubelet (pods are
 * processes in network namespaces; cluster DNS answers Service and pod names): `steward bootstrap
 * kubernetes:` makes a StatefulSet with one pod, the controller grows itself to three replicas by
 * scaling it and taking each pod into etcd, a pod deleted (its volume kept) rejoins under its
 * stable DNS name with a new IP, and a pod deleted with its claim comes back empty and is replaced
 * automatically: three voters again, and no acknowledged write lost.
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClusterInfo } from "../api";
import { ControllerClient } from "../api";
import { bootstrapOnKubernetes } from "../cli";
import { CONTROLLER_BUNDLE, CONTROLLER_NODE_FLAGS } from "../controller";
import { kubernetes } from "../substrates";
import { eventually } from "./harness/eventually";
import { FakeKubeApi } from "./harness/kube";
import { publishApiServer } from "./harness/kube/lab";
import { ProcessKubelet } from "./harness/kube/process-kubelet";

const R = kubernetes.KUBE_RESOURCES;
const NS = "steward";

test("bootstrap on Kubernetes: three replicas by DNS name; a deleted pod rejoins; a lost volume is replaced automatically", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-kube-ctl-"));
  const kubelet = new ProcessKubelet({
    dataDir: join(dir, "node"),
    images: { [kubernetes.DEFAULT_CONTROLLER_IMAGE.replace(/:[^:/]+$/, "")]: { entrypoint: [process.execPath, ...CONTROLLER_NODE_FLAGS, CONTROLLER_BUNDLE] } },
    restartBackoff: { initialMs: 500, maxMs: 5000 },
    maxGraceSeconds: 10,
    secretRefreshMs: 1000,
  });
  const api = await FakeKubeApi.start({ kubelet, listen: "0.0.0.0" });
  const kube = new kubernetes.KubeApi(kubernetes.parseKubeconfig(api.kubeconfig()));
  await publishApiServer(kube, kubelet.gateway);
  let client: ControllerClient | undefined;
  t.teardown(async () => { client?.close(); kube.close(); await api.stop(); await rm(dir, { recursive: true, force: true }); });

  const lines: string[] = [];
  const entry = await bootstrapOnKubernetes({
    name: "ctl", namespace: NS, replicas: 3, image: kubernetes.DEFAULT_CONTROLLER_IMAGE, connection: kubernetes.parseKubeconfig(api.kubeconfig()),
    inClusterServer: api.inClusterUrl, replaceAfterSeconds: 600, timeoutMs: 240_000, progress: (l) => lines.push(l),
  });
  t.log(lines.join("\n"));
  t.is(await kube.find(R.secrets, kubernetes.controllerSeedSecretName("ctl"), { namespace: NS }), undefined, "the seed (with the CA key) is gone");
  t.is((await kube.get(R.statefulSets, "ctl", { namespace: NS })).spec?.replicas, 3, "grown by the controller itself");

  const podAddresses = async (): Promise<string[]> => (await kube.list(R.pods, { namespace: NS })).items.filter((p) => p.status?.podIP).map((p) => `${p.status!.podIP}:${kubernetes.CONTROLLER_API_PORT}`);
  const connect = async (): Promise<ControllerClient> => {
    client?.close();
    client = new ControllerClient({ addresses: await podAddresses(), caCert: entry.caCert, user: "admin", password: entry.password!, timeoutMs: 3000 });
    return client;
  };
  const voters = async (): Promise<ClusterInfo | undefined> => (await (await connect()).controllerInfo().catch(() => undefined))?.cluster;
  const healthy = (c: ClusterInfo | undefined, n: number): boolean => !!c && c.members.filter((m) => m.hasVote && m.present).length === n && !c.members.some((m) => m.learner);
  let cluster = await eventually("3 healthy voters", async () => { const c = await voters(); return healthy(c, 3) ? c : undefined; }, 60_000);
  const hosts = cluster.members.map((m) => m.host ?? "").sort();
  t.deepEqual(hosts, [0, 1, 2].map((n) => kubernetes.replicaDnsName({ name: "ctl", namespace: NS }, n)), "members are addressed by their pods' DNS names");

  // Acknowledged writes, checked at the end.
  const written: string[] = [];
  for (let i = 0; i < 5; i++) { const name = `ack-${i}`; await (await connect()).createModel(name); written.push(name); }

  // A pod deleted with its volume kept: same name, new IP, it rejoins by itself.
  const old1 = await kube.get(R.pods, "ctl-2", { namespace: NS });
  await kube.delete(R.pods, "ctl-2", { namespace: NS });
  await eventually("ctl-2 back with a new IP", async () => { const p = await kube.find(R.pods, "ctl-2", { namespace: NS }); return p && p.metadata?.uid !== old1.metadata?.uid && p.status?.podIP && p.status.podIP !== old1.status?.podIP; }, 60_000);
  cluster = await eventually("3 healthy voters after ctl-2's restart", async () => { const c = await voters(); return healthy(c, 3) ? c : undefined; }, 90_000);
  const ctl2 = cluster.members.find((m) => m.host === kubernetes.replicaDnsName({ name: "ctl", namespace: NS }, 2));
  t.truthy(ctl2, "ctl-2 is the same member");

  for (let i = 5; i < 10; i++) { const name = `ack-${i}`; await (await connect()).createModel(name); written.push(name); }

  // A pod deleted with its claim (its node and disk lost): it comes back empty and the leader replaces its member at once.
  const before = new Set(cluster.members.map((m) => m.name));
  await kube.delete(R.persistentVolumeClaims, "data-ctl-1", { namespace: NS });
  await kube.delete(R.pods, "ctl-1", { namespace: NS });
  cluster = await eventually("3 healthy voters with ctl-1 replaced", async () => {
    const c = await voters();
    return healthy(c, 3) && c!.members.some((m) => m.host === kubernetes.replicaDnsName({ name: "ctl", namespace: NS }, 1) && !before.has(m.name)) ? c : undefined;
  }, 120_000);
  t.regex(cluster.keeper.history.map((h) => h.message).join("\n"), /its host came back with an empty volume/);

  const models = (await (await connect()).listModels()).map((m) => m.name);
  for (const name of written) t.true(models.includes(name), `${name} (acknowledged) is still there`);
});
