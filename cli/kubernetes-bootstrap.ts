/**
 * `steward bootstrap kubernetes:CONTEXT NAME`: a controller as a StatefulSet on a cluster
 * (substrates/kubernetes/controller-pods.ts). This client makes the CA and the admin password, puts
 * pod 0's seed in a Secret, creates the objects with one pod, logs in to it, deletes the seed (it
 * holds the CA key; and an empty volume later must never start a second cluster), stores the cluster
 * in the controller as its replica "cloud", and with `--replicas 3` lets the controller grow: its
 * quorum keeper scales the StatefulSet one pod at a time and takes each new pod into etcd.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { ControllerClient, StewardError, waitForVoters } from "../api/core";
import type * as Substrates from "../substrates";
import type { ControllerEntry } from "./client-config";

export interface KubernetesBootstrapPlan {
  name: string;
  /** How this client reaches the cluster (its kubeconfig's context). */
  connection: Substrates.kubernetes.KubeConnection;
  /**
   * The API server as the controller's pods reach it (it is stored with the credential the
   * controller manages its StatefulSet with). @default "https://kubernetes.default.svc"
   */
  inClusterServer?: string;
  namespace: string;
  replicas: number;
  image: string;
  /** How clients outside the cluster reach the API (a load balancer, a node port); default the pods' IPs, where those are routable. */
  apiAddresses?: string[];
  replaceAfterSeconds?: number;
  timeoutMs: number;
  progress(line: string): void;
}

export async function bootstrapOnKubernetes(plan: KubernetesBootstrapPlan): Promise<ControllerEntry> {
  const { kubernetes, createControllerCa } = require("../substrates") as typeof Substrates;
  const R = kubernetes.KUBE_RESOURCES;
  const api = new kubernetes.KubeApi(plan.connection);
  const { name, namespace } = plan;
  try {
    if (await api.find(R.statefulSets, name, { namespace })) {
      throw new StewardError("conflict", `StatefulSet ${namespace}/${name} already exists: a controller of that name runs there (choose another name or --namespace)`);
    }
    plan.progress(`Creating the controller's CA and admin password`);
    const ca = await createControllerCa(name);
    const adminPassword = randomBytes(18).toString("base64url");
    const spec = { name, namespace, replicas: 1, voters: plan.replicas, image: plan.image };
    const address = kubernetes.replicaDnsName(spec, 0);
    plan.progress(`Creating namespace ${namespace}: ServiceAccount and Role, Services ${kubernetes.peersServiceName(name)} and ${name}, a PodDisruptionBudget, the StatefulSet`);
    const [ns, ...objects] = kubernetes.controllerManifests(spec);
    if (!(await api.find(R.namespaces, namespace))) await api.create(R.namespaces, ns!);
    const seed = { name, uuid: randomUUID(), adminPassword, caCert: ca.certPem, caKey: ca.keyPem, address };
    await api.create(R.secrets, kubernetes.controllerSecretManifest(spec, kubernetes.controllerSeedSecretName(name), { [kubernetes.SEED_KEY]: JSON.stringify(seed) }));
    await api.create(R.secrets, kubernetes.controllerSecretManifest(spec, kubernetes.controllerEnrolSecretName(name), { "ca.crt": ca.certPem }));
    for (const o of objects) {
      const kind = Object.values(R).find((r) => r.kind === o.kind)!;
      await api.create(kind, o);
    }
    plan.progress(`Waiting for pod ${name}-0 to start the controller`);
    const deadline = Date.now() + plan.timeoutMs;
    let addresses = plan.apiAddresses;
    let client: ControllerClient | undefined;
    let token: string | undefined;
    for (;;) {
      if (!plan.apiAddresses) {
        const pod = await api.find(R.pods, `${name}-0`, { namespace });
        addresses = pod?.status?.podIP ? [`${pod.status.podIP}:${kubernetes.CONTROLLER_API_PORT}`] : undefined;
      }
      if (addresses) {
        client?.close();
        client = new ControllerClient({ addresses, caCert: ca.certPem, user: "admin", password: adminPassword, timeoutMs: 3000 });
        token = await client.login().catch(() => undefined);
        if (token) break;
      }
      if (Date.now() > deadline) throw new StewardError("unavailable", `pod ${namespace}/${name}-0 did not serve the controller within ${Math.round(plan.timeoutMs / 1000)} s: see kubectl -n ${namespace} describe pod ${name}-0 and its log`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    // The seed has done its work; it holds the CA key.
    await api.delete(R.secrets, kubernetes.controllerSeedSecretName(name), { namespace });
    const credential = `${name}-cluster`;
    const inCluster = new kubernetes.KubeConnection({
      server: plan.inClusterServer ?? "https://kubernetes.default.svc", credential: plan.connection.credential(), namespace,
      ...(plan.connection.caCert ? { caCert: plan.connection.caCert } : {}), insecure: plan.connection.insecure, context: plan.connection.context,
    });
    await client!.putCredential(credential, "kubernetes", { kubeconfig: kubernetes.flattenKubeconfig(inCluster), server: inCluster.server, ...(inCluster.context ? { context: inCluster.context } : {}) });
    await client!.setReplicaCloud({ substrate: "kubernetes", credential, kubernetes: { namespace, statefulSet: name } });
    const entry: ControllerEntry = { addresses: addresses!, caCert: ca.certPem, user: "admin", password: adminPassword, generatedPassword: true, token: token!, kubernetes: { namespace, statefulSet: name } };
    if (plan.replicas > 1) {
      plan.progress(`Growing to ${plan.replicas} replicas: the controller scales its StatefulSet and takes each pod into etcd`);
      await client!.enableHa({ replicas: plan.replicas, ...(plan.replaceAfterSeconds ? { replaceAfterSeconds: plan.replaceAfterSeconds } : {}) });
      await waitForVoters(client!, plan.replicas, Math.max(0, deadline - Date.now()), plan.progress);
      if (!plan.apiAddresses) {
        const pods = await api.list(R.pods, { namespace, labelSelector: `${kubernetes.CONTROLLER_LABELS.instance}=${name}` });
        entry.addresses = pods.items.filter((p) => p.status?.podIP).map((p) => `${p.status!.podIP}:${kubernetes.CONTROLLER_API_PORT}`);
      }
    }
    client!.close();
    return entry;
  } finally {
    api.close();
  }
}
