/**
 * A controller as a StatefulSet on a cluster (controller-pods.ts), for `steward bootstrap
 * kubernetes:CONTEXT NAME` and the Pulumi component (which declares the same objects itself and runs
 * only {@link finishKubernetesBootstrap}). The bootstrap makes the CA and the admin password, puts
 * pod 0's seed in a Secret, creates the objects with one pod, logs in to it, deletes the seed (it
 * holds the CA key; and an empty volume later must never start a second cluster), sets the
 * controller's own StatefulSet as its replica "cloud", and with `--replicas 3` lets the controller
 * grow: its quorum keeper scales the StatefulSet one pod at a time and takes each new pod into etcd.
 * The controller does that as its pods' ServiceAccount (least privilege: controller-pods.ts); the
 * user's credential is used here only and never stored for it.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { ControllerClient, StewardError, waitForVoters } from "../../api/core";
import { createControllerCa } from "../local";
import type { ControllerPodsSpec } from "./controller-pods";
import { BOOTSTRAPPED_KEY, CONTROLLER_API_PORT, CONTROLLER_LABELS, SEED_KEY, controllerEnrolSecretName, controllerManifests, controllerSecretManifest, controllerSeedSecretName, replicaDnsName } from "./controller-pods";
import { KubeApi } from "./kube-api";
import type { KubeConnection } from "./kubeconfig";
import type { KubeObject, Secret } from "./resources";
import { updateSecretData } from "./secret-data";
import { KUBE_RESOURCES } from "./resources";

export interface KubernetesBootstrapPlan {
  name: string;
  /** How this client reaches the cluster (its kubeconfig's context). */
  connection: KubeConnection;
  namespace: string;
  replicas: number;
  image: string;
  /** The agent image kubernetes models' pods run (the controller's `kubernetes.agentImage`); default the controller's own default. */
  agentImage?: string;
  /** How clients outside the cluster reach the API (a load balancer, a node port); default the pods' IPs, where those are routable. */
  apiAddresses?: string[];
  replaceAfterSeconds?: number;
  timeoutMs: number;
  progress(line: string): void;
}

/** What the first replica starts from, made before anything is created (kept secret: it holds the CA key and the admin password). */
export interface KubernetesControllerSeed { uuid: string; adminPassword: string; caCert: string; caKey: string }

export async function newKubernetesControllerSeed(name: string): Promise<KubernetesControllerSeed> {
  const ca = await createControllerCa(name);
  return { uuid: randomUUID(), adminPassword: randomBytes(18).toString("base64url"), caCert: ca.certPem, caKey: ca.keyPem };
}

/** Every object of a controller with one pod, Secrets included, in the order to create them (what the Pulumi component declares too). */
export function kubernetesControllerObjects(plan: Pick<KubernetesBootstrapPlan, "name" | "namespace" | "replicas" | "image" | "agentImage">, seed: KubernetesControllerSeed): KubeObject[] {
  const spec: ControllerPodsSpec = { name: plan.name, namespace: plan.namespace, replicas: 1, voters: plan.replicas, image: plan.image };
  const [ns, ...rest] = controllerManifests(spec);
  const first = { name: plan.name, uuid: seed.uuid, adminPassword: seed.adminPassword, caCert: seed.caCert, caKey: seed.caKey, address: replicaDnsName(spec, 0), ...(plan.agentImage ? { agentImage: plan.agentImage } : {}) };
  const secrets: Secret[] = [
    controllerSecretManifest(spec, controllerSeedSecretName(plan.name), { [SEED_KEY]: JSON.stringify(first) }),
    controllerSecretManifest(spec, controllerEnrolSecretName(plan.name), { "ca.crt": seed.caCert }),
  ];
  return [ns!, ...secrets, ...rest];
}

/** What a client needs to reach the controller a bootstrap made. */
export interface KubernetesControllerAccess { addresses: string[]; caCert: string; adminPassword: string; token: string }

/**
 * Once the objects exist: waits for pod 0 to serve, marks the cluster bootstrapped (no pod uses the
 * seed again), sets its StatefulSet as the controller's replica "cloud", and grows to `replicas` voters.
 */
export async function finishKubernetesBootstrap(plan: Omit<KubernetesBootstrapPlan, "image" | "agentImage" | "connection">, seed: KubernetesControllerSeed, api: KubeApi): Promise<KubernetesControllerAccess> {
  const R = KUBE_RESOURCES;
  const { name, namespace } = plan;
  plan.progress(`Waiting for pod ${name}-0 to start the controller`);
  const deadline = Date.now() + plan.timeoutMs;
  const podAddresses = async (): Promise<string[]> => (await api.list(R.pods, { namespace, labelSelector: `${CONTROLLER_LABELS.instance}=${name}` })).items
    .filter((p) => p.status?.podIP).map((p) => `${p.status!.podIP}:${CONTROLLER_API_PORT}`);
  let client: ControllerClient | undefined;
  let token: string | undefined;
  try {
    for (;;) {
      const addresses = plan.apiAddresses ?? await podAddresses();
      if (addresses.length > 0) {
        client?.close();
        client = new ControllerClient({ addresses, caCert: seed.caCert, user: "admin", password: seed.adminPassword, timeoutMs: 3000 });
        token = await client.login().catch(() => undefined);
        if (token) break;
      }
      if (Date.now() > deadline) throw new StewardError("deadline-exceeded", `pod ${namespace}/${name}-0 did not serve the controller within ${Math.round(plan.timeoutMs / 1000)} s: see kubectl -n ${namespace} describe pod ${name}-0 and its log`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    await updateSecretData(api, namespace, controllerEnrolSecretName(name), (data) =>
      (data[BOOTSTRAPPED_KEY] ? undefined : { ...data, [BOOTSTRAPPED_KEY]: Buffer.from(new Date().toISOString()).toString("base64") }));
    await client!.setReplicaCloud({ substrate: "kubernetes", kubernetes: { namespace, statefulSet: name } });
    if (plan.replicas > 1) {
      plan.progress(`Growing to ${plan.replicas} replicas: the controller scales its StatefulSet and takes each pod into etcd`);
      await client!.enableHa({ replicas: plan.replicas, ...(plan.replaceAfterSeconds ? { replaceAfterSeconds: plan.replaceAfterSeconds } : {}) });
      await waitForVoters(client!, plan.replicas, Math.max(0, deadline - Date.now()), plan.progress);
    }
    return { addresses: plan.apiAddresses ?? await podAddresses(), caCert: seed.caCert, adminPassword: seed.adminPassword, token: token! };
  } finally {
    client?.close();
  }
}

/** `steward bootstrap kubernetes:`: every object made here, then {@link finishKubernetesBootstrap}; the seed Secret is deleted at the end (it holds the CA key). */
export async function bootstrapOnKubernetes(plan: KubernetesBootstrapPlan): Promise<KubernetesControllerAccess> {
  const R = KUBE_RESOURCES;
  const api = new KubeApi(plan.connection);
  const { name, namespace } = plan;
  try {
    if (await api.find(R.statefulSets, name, { namespace })) {
      throw new StewardError("conflict", `StatefulSet ${namespace}/${name} already exists: a controller of that name runs there (choose another name or --namespace)`);
    }
    plan.progress("Creating the controller's CA and admin password");
    const seed = await newKubernetesControllerSeed(name);
    plan.progress(`Creating namespace ${namespace}: ServiceAccount and Role, Services ${name}-peers and ${name}, a PodDisruptionBudget, the StatefulSet`);
    for (const o of kubernetesControllerObjects(plan, seed)) {
      const kind = Object.values(R).find((r) => r.kind === o.kind)!;
      if (o.kind === "Namespace" && await api.find(R.namespaces, o.metadata!.name!)) continue;
      await api.create(kind, o);
    }
    const access = await finishKubernetesBootstrap(plan, seed, api);
    await api.delete(R.secrets, controllerSeedSecretName(name), { namespace });
    return access;
  } finally {
    api.close();
  }
}
