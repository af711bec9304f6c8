/**
 * A controller as a StatefulSet on a cluster (controller-pods.ts): the kubernetes hosting of
 * ../controller-hosting.ts for `steward bootstrap kubernetes:CONTEXT NAME`, and the Pulumi component
 * (which declares the same objects itself and runs only {@link finishKubernetesBootstrap}). The bootstrap makes the CA and the admin password, puts
 * pod 0's seed in a Secret, creates the objects with one pod, logs in to it, deletes the seed (it
 * holds the CA key; and an empty volume later must never start a second cluster), sets the
 * controller's own StatefulSet as its replica "cloud", and with `--replicas 3` lets the controller
 * grow: its quorum keeper scales the StatefulSet one pod at a time and takes each new pod into etcd.
 * The controller does that as its pods' ServiceAccount (least privilege: controller-pods.ts); the
 * user's credential is used here only and never stored for it.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { ControllerClient, StewardError } from "../../api/core";
import { settleController } from "../settle-controller";
import type { Progress } from "../brokers";
import type { ControllerHosting, ControllerPlan, FirstReplica } from "../controller-hosting";
import { createControllerCa } from "../local";
import type { ControllerPodsSpec } from "./controller-pods";
import {
  BOOTSTRAPPED_KEY,
  CONTROLLER_API_PORT,
  CONTROLLER_LABELS,
  SEED_KEY,
  controllerEnrolSecretName,
  controllerManifests,
  controllerSecretManifest,
  controllerSeedSecretName,
  replicaDnsName,
} from "./controller-pods";
import { KubeApi } from "./kube-api";
import { kubernetesReplicaUpgrade } from "./replica-rollout";
import type { KubeConnection } from "./kubeconfig";
import type { KubeObject, Secret } from "./resources";
import { updateSecretData } from "./secret-data";
import { KUBE_RESOURCES } from "./resources";

/** A controller as a StatefulSet: the cluster as this client reaches it, its namespace and images. */
export interface KubernetesControllerSettings {
  connection: KubeConnection;
  namespace: string;
  image: string;
  /** The agent image kubernetes models' pods run; default the controller's own default. */
  agentImage?: string;
  /** How clients outside the cluster reach the API; default the pods' IPs, where those are routable. */
  apiAddresses?: string[];
}

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
export interface KubernetesControllerSeed {
  uuid: string;
  adminPassword: string;
  caCert: string;
  caKey: string;
}

export async function newKubernetesControllerSeed(name: string): Promise<KubernetesControllerSeed> {
  const ca = await createControllerCa(name);
  return {
    uuid: randomUUID(),
    adminPassword: randomBytes(18).toString("base64url"),
    caCert: ca.certPem,
    caKey: ca.keyPem,
  };
}

/** Every object of a controller with one pod, Secrets included, in the order to create them (what the Pulumi component declares too). */
export function kubernetesControllerObjects(
  plan: Pick<KubernetesBootstrapPlan, "name" | "namespace" | "replicas" | "image" | "agentImage">,
  seed: KubernetesControllerSeed,
): KubeObject[] {
  const spec: ControllerPodsSpec = {
    name: plan.name,
    namespace: plan.namespace,
    replicas: 1,
    voters: plan.replicas,
    image: plan.image,
  };
  const [ns, ...rest] = controllerManifests(spec);
  const first = {
    name: plan.name,
    uuid: seed.uuid,
    adminPassword: seed.adminPassword,
    caCert: seed.caCert,
    caKey: seed.caKey,
    address: replicaDnsName(spec, 0),
    ...(plan.agentImage ? { agentImage: plan.agentImage } : {}),
  };
  const secrets: Secret[] = [
    controllerSecretManifest(spec, controllerSeedSecretName(plan.name), { [SEED_KEY]: JSON.stringify(first) }),
    controllerSecretManifest(spec, controllerEnrolSecretName(plan.name), { "ca.crt": seed.caCert }),
  ];
  return [ns!, ...secrets, ...rest];
}

/** What a client needs to reach the controller a bootstrap made. */
export interface KubernetesControllerAccess {
  addresses: string[];
  caCert: string;
  adminPassword: string;
  token: string;
}

/**
 * Once the objects exist: waits for pod 0 to serve and marks the cluster bootstrapped (no pod uses
 * the seed again). Its StatefulSet is the replica "cloud" the bootstrap flow sets.
 */
async function podAddressesOf(api: KubeApi, namespace: string, name: string): Promise<string[]> {
  const pods = await api.list(KUBE_RESOURCES.pods, {
    namespace,
    labelSelector: `${CONTROLLER_LABELS.instance}=${name}`,
  });
  return pods.items.filter((p) => p.status?.podIP).map((p) => `${p.status!.podIP}:${CONTROLLER_API_PORT}`);
}

/** Runs `fn` with a client of its own (the bootstrap's is closed by the time the flow grows the controller). */
async function withKubeApi<T>(connection: KubeConnection, fn: (api: KubeApi) => Promise<T>): Promise<T> {
  const api = new KubeApi(connection);
  try {
    return await fn(api);
  } finally {
    api.close();
  }
}

async function firstPod(
  plan: Pick<KubernetesBootstrapPlan, "name" | "namespace" | "replicas" | "apiAddresses" | "timeoutMs">,
  seed: KubernetesControllerSeed,
  api: KubeApi,
  progress: Progress,
): Promise<FirstReplica> {
  const { name, namespace } = plan;
  progress(`Waiting for pod ${name}-0 to start the controller`);
  const deadline = Date.now() + plan.timeoutMs;
  const podAddresses = (): Promise<string[]> => podAddressesOf(api, namespace, name);
  for (;;) {
    const addresses = plan.apiAddresses ?? (await podAddresses());
    if (addresses.length > 0) {
      const client = new ControllerClient({
        addresses,
        caCert: seed.caCert,
        user: "admin",
        password: seed.adminPassword,
        timeoutMs: 3000,
      });
      const token = await client.login().catch(() => undefined);
      client.close();
      if (token) break;
    }
    if (Date.now() > deadline)
      throw new StewardError(
        "deadline-exceeded",
        `pod ${namespace}/${name}-0 did not serve the controller within ${Math.round(plan.timeoutMs / 1000)} s: see kubectl -n ${namespace} describe pod ${name}-0 and its log`,
      );
    await new Promise((r) => setTimeout(r, 1000));
  }
  await updateSecretData(api, namespace, controllerEnrolSecretName(name), (data) =>
    data[BOOTSTRAPPED_KEY]
      ? undefined
      : { ...data, [BOOTSTRAPPED_KEY]: Buffer.from(new Date().toISOString()).toString("base64") },
  );
  return {
    addresses: plan.apiAddresses ?? (await podAddresses()),
    caCert: seed.caCert,
    adminPassword: seed.adminPassword,
    uuid: seed.uuid,
    where: `${namespace}/${name}`,
    callTimeoutMs: 3000,
    replicaCloud: { substrate: "kubernetes", settings: { namespace, statefulSet: name } },
    growing: `Growing to ${plan.replicas} replicas: the controller scales its StatefulSet and takes each pod into etcd`,
    reachable: async () => plan.apiAddresses ?? (await podAddresses()),
  };
}

/**
 * Once the objects exist (the Pulumi component declares them itself): waits for pod 0, then the
 * bootstrap flow (../bootstrap-controller.ts) sets its StatefulSet as the controller's replica
 * "cloud" and grows to `replicas` voters.
 */
export async function finishKubernetesBootstrap(
  plan: Omit<KubernetesBootstrapPlan, "image" | "agentImage" | "connection">,
  seed: KubernetesControllerSeed,
  api: KubeApi,
): Promise<KubernetesControllerAccess> {
  return settleController(await firstPod(plan, seed, api, plan.progress), plan, { progress: plan.progress });
}

/**
 * The kubernetes hosting (../controller-hosting.ts): every object made here, pod 0 waited for; the
 * seed Secret is deleted once the controller has grown (it holds the CA key). Destroying is not
 * this client's: the namespace's objects go with `kubectl delete` or the Pulumi resources that made them.
 */
/** What a client records of a controller on Kubernetes: its namespace and StatefulSet, and the kubeconfig context's name (not its credential). */
export interface KubernetesControllerRecord {
  namespace: string;
  statefulSet: string;
  context?: string;
}

export const kubernetesHosting: ControllerHosting<KubernetesControllerSettings, KubernetesControllerRecord> = {
  async bootstrap(plan, o) {
    const R = KUBE_RESOURCES;
    const { connection, namespace, image, agentImage, apiAddresses } = plan.settings;
    const name = plan.name;
    const api = new KubeApi(connection);
    try {
      if (await api.find(R.statefulSets, name, { namespace })) {
        throw new StewardError(
          "conflict",
          `StatefulSet ${namespace}/${name} already exists: a controller of that name runs there (choose another name or --namespace)`,
        );
      }
      o.progress("Creating the controller's CA and admin password");
      const seed = await newKubernetesControllerSeed(name);
      o.progress(
        `Creating namespace ${namespace}: ServiceAccount and Role, Services ${name}-peers and ${name}, a PodDisruptionBudget, the StatefulSet`,
      );
      for (const obj of kubernetesControllerObjects(
        { name, namespace, replicas: plan.replicas, image, ...(agentImage ? { agentImage } : {}) },
        seed,
      )) {
        const kind = Object.values(R).find((r) => r.kind === obj.kind)!;
        if (obj.kind === "Namespace" && (await api.find(R.namespaces, obj.metadata!.name!))) continue;
        await api.create(kind, obj);
      }
      const first = await firstPod(
        {
          name,
          namespace,
          replicas: plan.replicas,
          timeoutMs: plan.timeoutMs,
          ...(apiAddresses ? { apiAddresses } : {}),
        },
        seed,
        api,
        o.progress,
      );
      return {
        ...first,
        reachable: async () =>
          apiAddresses ?? (await withKubeApi(connection, (a) => podAddressesOf(a, namespace, name))),
        finish: () =>
          withKubeApi(connection, async (a) => {
            await a.delete(R.secrets, controllerSeedSecretName(name), { namespace });
          }),
      };
    } finally {
      api.close();
    }
  },

  async destroy() {
    return [];
  },

  // The context's name only: the cluster's credential stays in the user's kubeconfig (upgrade-controller reads it there).
  record: (plan) => ({
    namespace: plan.settings.namespace,
    statefulSet: plan.name,
    ...(plan.settings.connection.context ? { context: plan.settings.connection.context } : {}),
  }),
  replicaUpgrade: kubernetesReplicaUpgrade,
};

/** `steward bootstrap kubernetes:` as one call (tests, benchmarks): the hosting, then the bootstrap flow. */
export async function bootstrapOnKubernetes(plan: KubernetesBootstrapPlan): Promise<KubernetesControllerAccess> {
  const { connection, namespace, image, agentImage, apiAddresses, ...rest } = plan;
  const settled: ControllerPlan<KubernetesControllerSettings> = {
    ...rest,
    settings: {
      connection,
      namespace,
      image,
      ...(agentImage ? { agentImage } : {}),
      ...(apiAddresses ? { apiAddresses } : {}),
    },
  };
  return settleController(await kubernetesHosting.bootstrap(settled, { progress: plan.progress }), settled, {
    progress: plan.progress,
  });
}
