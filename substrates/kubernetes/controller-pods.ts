/**
 * A controller on Kubernetes, as manifests: a StatefulSet whose pod N is replica N (a controller
 * and its etcd member, data on the pod's own claim), addressed by stable DNS names from a headless
 * Service (`<name>-N.<name>-peers.<ns>.svc.cluster.local`: etcd's peer URLs and the replicas'
 * advertised addresses never name a pod IP, which changes when a pod is made again: Juju's
 * juju#10012), a headless client Service (its name resolves to the ready replicas: agents in the
 * cluster reach one by a single name, with no cluster IP to route), a PodDisruptionBudget keeping a majority, pods spread over nodes
 * (and zones where labelled), a ServiceAccount bound to a Role on its own namespace only.
 *
 * How a pod becomes a replica (controller/main.ts `--pod`): pod 0 at bootstrap initialises its data
 * from the seed Secret (deleted once the bootstrap has logged in); any pod that finds its claim
 * empty afterwards waits for an enrolment token in the enrolment Secret, which the leader writes
 * when the quorum keeper takes the pod (controller/cluster/kubernetes-replicas.ts), and collects
 * its data from the cluster as a cloud replica does. A pod made again on its claim simply restarts.
 */
import type { Namespace, Secret, Service, StatefulSet } from "./resources";
import type { KubeObject } from "./resources";

import { STEWARD_VERSION } from "../../api/core";

export const CONTROLLER_API_PORT = 17070;
/** The controller image a Kubernetes bootstrap runs when none is given (images/: build and push it to your registry). */
export const DEFAULT_CONTROLLER_IMAGE = `steward/controller:${STEWARD_VERSION}`;
export const CONTROLLER_POD_PATHS = {
  data: "/var/lib/steward/controller",
  seed: "/etc/steward/seed",
  enrol: "/etc/steward/enrol",
} as const;
export const CONTROLLER_LABELS = {
  component: "app.kubernetes.io/component",
  instance: "app.kubernetes.io/instance",
  managedBy: "app.kubernetes.io/managed-by",
} as const;

export interface ControllerPodsSpec {
  /** The controller's name: the StatefulSet's and the prefix of everything else. */
  name: string;
  namespace: string;
  /** Pods to start with (bootstrap: 1; the controller grows to its wanted voters itself). */
  replicas: number;
  /** Voters wanted: the disruption budget keeps a majority of them. */
  voters: number;
  image: string;
  /** Size of each replica's claim (its etcd data and the controller's). @default "2Gi" */
  dataSize?: string;
  storageClassName?: string;
}

/** The most pods a controller's StatefulSet has: the most voters (7), each ordinal reused when its pod is replaced. */
export const MAX_CONTROLLER_PODS = 7;

export const peersServiceName = (name: string): string => `${name}-peers`;
/** Pod `ordinal`'s claim (the StatefulSet's `data` template). */
export const replicaClaimName = (name: string, ordinal: number): string => `data-${name}-${ordinal}`;
export const controllerSeedSecretName = (name: string): string => `${name}-seed`;
export const controllerEnrolSecretName = (name: string): string => `${name}-enrol`;
/** Key of pod `ordinal`'s enrolment token in the enrolment Secret. */
export const replicaTokenKey = (ordinal: number): string => `replica-${ordinal}.token`;
/** Key of the seed (pod 0's first data) in the seed Secret. */
export const SEED_KEY = "seed.json";
/** Key in the enrolment Secret once the cluster exists: from then on no pod uses the seed. */
export const BOOTSTRAPPED_KEY = "bootstrapped";

/** The client Service's DNS name: it resolves to the ready replicas' IPs (what agents in the cluster try besides each replica's name). */
export function clientServiceDnsName(
  s: Pick<ControllerPodsSpec, "name" | "namespace">,
  clusterDomain = "cluster.local",
): string {
  return `${s.name}.${s.namespace}.svc.${clusterDomain}`;
}

/** The stable DNS name of replica `ordinal` (what its etcd member and API advertise). */
export function replicaDnsName(
  s: Pick<ControllerPodsSpec, "name" | "namespace">,
  ordinal: number,
  clusterDomain = "cluster.local",
): string {
  return `${s.name}-${ordinal}.${peersServiceName(s.name)}.${s.namespace}.svc.${clusterDomain}`;
}

const labelsOf = (name: string): Record<string, string> => ({
  [CONTROLLER_LABELS.managedBy]: "steward",
  [CONTROLLER_LABELS.component]: "controller",
  [CONTROLLER_LABELS.instance]: name,
});
const meta = (s: Pick<ControllerPodsSpec, "name" | "namespace">, name: string) => ({
  name,
  namespace: s.namespace,
  labels: labelsOf(s.name),
});

/** Everything but the Secrets, in the order to create them. */
export function controllerManifests(s: ControllerPodsSpec): KubeObject[] {
  const labels = labelsOf(s.name);
  const selector = { [CONTROLLER_LABELS.component]: "controller", [CONTROLLER_LABELS.instance]: s.name };
  const namespace: Namespace = { apiVersion: "v1", kind: "Namespace", metadata: { name: s.namespace, labels } };
  const serviceAccount: KubeObject = { apiVersion: "v1", kind: "ServiceAccount", metadata: meta(s, s.name) };
  // Least privilege: exactly what the leader does to its own replicas (controller/cluster/kubernetes-replicas.ts),
  // each object by name, in this namespace only: read the StatefulSet and patch its scale, read and
  // replace the enrolment Secret (tokens in, tokens out), read a replica's claim (is it the one it ran on?).
  const role: KubeObject = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: meta(s, s.name),
    rules: [
      { apiGroups: ["apps"], resources: ["statefulsets"], resourceNames: [s.name], verbs: ["get"] },
      { apiGroups: ["apps"], resources: ["statefulsets/scale"], resourceNames: [s.name], verbs: ["patch"] },
      {
        apiGroups: [""],
        resources: ["secrets"],
        resourceNames: [controllerEnrolSecretName(s.name)],
        verbs: ["get", "update"],
      },
      {
        apiGroups: [""],
        resources: ["persistentvolumeclaims"],
        resourceNames: [...Array(MAX_CONTROLLER_PODS).keys()].map((k) => replicaClaimName(s.name, k)),
        verbs: ["get"],
      },
    ],
  };
  const binding: KubeObject = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: meta(s, s.name),
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: s.name },
    subjects: [{ kind: "ServiceAccount", name: s.name, namespace: s.namespace }],
  };
  const ports = [
    { name: "api", port: CONTROLLER_API_PORT, targetPort: "api" },
    { name: "etcd-client", port: 2379, targetPort: "etcd-client" },
    { name: "etcd-peer", port: 2380, targetPort: "etcd-peer" },
  ];
  // Every replica, ready or not: a member must be reachable by name while it catches up.
  const peers: Service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(s, peersServiceName(s.name)),
    spec: { clusterIP: "None", selector, publishNotReadyAddresses: true, ports },
  };
  // Ready replicas only, by DNS (headless): no kube-proxy or cluster IP is needed to reach one, and
  // clients verify the controller's own TLS name, not this one. Outside the cluster, expose the API
  // with a LoadBalancer or node port Service of your own (`--api-address`).
  const client: Service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(s, s.name),
    spec: { clusterIP: "None", selector, ports: [ports[0]!] },
  };
  const majority = Math.floor(s.voters / 2) + 1;
  const budget: KubeObject = {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: meta(s, s.name),
    spec: { minAvailable: majority, selector: { matchLabels: selector } },
  };
  const probe = (path: string, periodSeconds: number, failureThreshold: number) => ({
    httpGet: { path, port: "api", scheme: "HTTPS" },
    periodSeconds,
    timeoutSeconds: 2,
    failureThreshold,
  });
  const spread = (topologyKey: string, weight: number) => ({
    weight,
    podAffinityTerm: { topologyKey, labelSelector: { matchLabels: selector } },
  });
  const set: StatefulSet = {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: meta(s, s.name),
    spec: {
      replicas: s.replicas,
      serviceName: peersServiceName(s.name),
      // Replicas join one at a time through the quorum keeper, not in ordinal order.
      podManagementPolicy: "Parallel",
      selector: { matchLabels: selector },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: s.name,
          // The image runs as 10001 (images/controller): the claim must be its to write.
          securityContext: { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001 },
          terminationGracePeriodSeconds: 30,
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                spread("kubernetes.io/hostname", 100),
                spread("topology.kubernetes.io/zone", 50),
              ],
            },
          },
          volumes: [
            {
              name: "seed",
              secret: { secretName: controllerSeedSecretName(s.name), optional: true, defaultMode: 0o400 },
            },
            {
              name: "enrol",
              secret: { secretName: controllerEnrolSecretName(s.name), optional: true, defaultMode: 0o400 },
            },
          ],
          containers: [
            {
              name: "controller",
              image: s.image,
              args: [
                "--pod",
                "--data-dir",
                CONTROLLER_POD_PATHS.data,
                "--seed",
                CONTROLLER_POD_PATHS.seed,
                "--enrol",
                CONTROLLER_POD_PATHS.enrol,
                "--peers",
                `${peersServiceName(s.name)}.${s.namespace}`,
              ],
              env: [
                { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
                { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
              ],
              ports: [
                { name: "api", containerPort: CONTROLLER_API_PORT },
                { name: "etcd-client", containerPort: 2379 },
                { name: "etcd-peer", containerPort: 2380 },
              ],
              volumeMounts: [
                { name: "data", mountPath: CONTROLLER_POD_PATHS.data },
                { name: "seed", mountPath: CONTROLLER_POD_PATHS.seed, readOnly: true },
                { name: "enrol", mountPath: CONTROLLER_POD_PATHS.enrol, readOnly: true },
              ],
              // A pod waiting to be taken into the cluster serves nothing yet: startup allows a long wait.
              startupProbe: { tcpSocket: { port: "api" }, periodSeconds: 2, failureThreshold: 900 },
              livenessProbe: probe("/v1/health", 10, 6),
              readinessProbe: probe("/v1/health", 5, 2),
            },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: "data", labels },
          spec: {
            accessModes: ["ReadWriteOnce"],
            resources: { requests: { storage: s.dataSize ?? "2Gi" } },
            ...(s.storageClassName ? { storageClassName: s.storageClassName } : {}),
          },
        },
      ],
      // A replica's data is the cluster's: kept when the StatefulSet shrinks or goes (a human decides).
      persistentVolumeClaimRetentionPolicy: { whenScaled: "Retain", whenDeleted: "Retain" },
    },
  };
  return [namespace, serviceAccount, role, binding, peers, client, budget, set];
}

export function controllerSecretManifest(
  s: Pick<ControllerPodsSpec, "name" | "namespace">,
  name: string,
  data: Record<string, string>,
): Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: meta(s, name),
    type: "Opaque",
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
  };
}
