/**
 * What a Kubernetes model is made of on its cluster, as manifests (pure functions, so the
 * provisioner, the Pulumi program and the tests read the same thing). As in Juju on Kubernetes, an
 * application is a StatefulSet and unit N is its pod N; each pod runs the Steward agent as a
 * container (the sidecar), which finds its unit's agent configuration by the pod's ordinal in the
 * application's Secret, keeps its hook state on the pod's own claim (so a pod deleted and made again
 * is the same unit, and runs `start` again as after a reboot), and answers the pod's probes:
 * liveness from the agent alone, never from the controller (juju#21512), readiness from its unit
 * (the operator's `readiness-set`, else an active workload).
 *
 * An operator's workload containers (`containers:` in operator.yaml) run beside the agent with the
 * workload supervisor as their entrypoint, placed by an init container (workload-pods.ts).
 *
 * Two headless Services per application: `<app>-endpoints` publishes every pod, ready or not (the
 * StatefulSet's governing Service: stable DNS names `<app>-N.<app>-endpoints`, for peers that are
 * still assembling), `<app>` only ready ones (what clients of the application use).
 */
import { createHash } from "node:crypto";
import { POD_HEALTH_PORT, POD_LIVENESS_PATH, POD_READINESS_PATH, podAgentConfigKey } from "../../api/core";
import type { WorkloadContainer } from "../../api/core";
import type { PodStorage } from "../brokers";
import type { Namespace, PodProbeSettings, Secret, Service, StatefulSet } from "./resources";
import { CLAIM_ROLE_LABEL, storageParts } from "./storage-claims";
import { STEWARD_USER, workloadPodParts } from "./workload-pods";

/** Labels every object made for a model carries (how the provisioner finds its own). */
export const LABELS = {
  managedBy: "app.kubernetes.io/managed-by",
  app: "app.kubernetes.io/name",
  model: "steward.io/model",
} as const;
export const MANAGED_BY = "steward";
/** On a StatefulSet: a hash of the pod template it was last written with (a changed one is patched in). */
export const TEMPLATE_HASH = "steward.io/template-hash";

/** Where the agent keeps its state in the pod (the claim) and reads its configuration (the Secret). */
export const POD_PATHS = { agentDir: "/var/lib/steward/agent", configs: "/etc/steward/agents" } as const;
export const AGENT_CONTAINER = "steward-agent";
/** The claim template of the agent's state (`agent-state-<app>-<N>`). */
export const AGENT_STATE_TEMPLATE = "agent-state";

/** Juju's defaults: liveness every 5 s, timeout 1 s, 3 failures; startup every 1 s, 30 failures. */
export const DEFAULT_POD_PROBES: PodProbeSettings = {
  liveness: { periodSeconds: 5, timeoutSeconds: 1, failureThreshold: 3 },
  readiness: { periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 1 },
  startup: { periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 30 },
};

export interface UnitPodsSpec {
  /** The model's uuid. */
  model: string;
  namespace: string;
  app: string;
  replicas: number;
  /** The agent's image (the controller's `kubernetes.agentImage`). */
  agentImage: string;
  /** Size of each pod's claim for the agent's state. @default "64Mi" */
  stateSize?: string;
  probes?: PodProbeSettings;
  /** @default 30 */
  terminationGracePeriodSeconds?: number;
  /** The operator's workload containers (workload-pods.ts); none when absent. */
  containers?: Record<string, WorkloadContainer>;
  /** The stores each unit has (storage-claims.ts); none when absent. */
  storage?: PodStorage[];
}

const labelsOf = (model: string, app?: string): Record<string, string> => ({
  [LABELS.managedBy]: MANAGED_BY,
  [LABELS.model]: model,
  ...(app ? { [LABELS.app]: app } : {}),
});
/** Selects a model's objects (all of them, or one application's). */
export const selectorOf = (model: string, app?: string): string =>
  Object.entries(labelsOf(model, app))
    .map(([k, v]) => `${k}=${v}`)
    .join(",");

export const agentsSecretName = (app: string): string => `${app}-steward-agents`;
export const endpointsServiceName = (app: string): string => `${app}-endpoints`;
export const podName = (app: string, ordinal: number): string => `${app}-${ordinal}`;

export function namespaceManifest(model: string, name: string): Namespace {
  return { apiVersion: "v1", kind: "Namespace", metadata: { name, labels: labelsOf(model) } };
}

/** The application's agent configurations by pod ordinal (keys: api/kubernetes-pods.ts). */
export function agentsSecretManifest(
  s: Pick<UnitPodsSpec, "model" | "namespace" | "app">,
  configs: ReadonlyMap<number, string>,
): Secret {
  const data: Record<string, string> = {};
  for (const [ordinal, text] of [...configs].sort((a, b) => a[0] - b[0]))
    data[podAgentConfigKey(ordinal)] = Buffer.from(text).toString("base64");
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: agentsSecretName(s.app), namespace: s.namespace, labels: labelsOf(s.model, s.app) },
    type: "Opaque",
    data,
  };
}

export function serviceManifests(s: Pick<UnitPodsSpec, "model" | "namespace" | "app">): Service[] {
  const selector = { [LABELS.model]: s.model, [LABELS.app]: s.app };
  const meta = (name: string) => ({ name, namespace: s.namespace, labels: labelsOf(s.model, s.app) });
  return [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: meta(endpointsServiceName(s.app)),
      spec: { clusterIP: "None", selector, publishNotReadyAddresses: true },
    },
    { apiVersion: "v1", kind: "Service", metadata: meta(s.app), spec: { clusterIP: "None", selector } },
  ];
}

export function statefulSetManifest(s: UnitPodsSpec): StatefulSet {
  const probes = s.probes ?? DEFAULT_POD_PROBES;
  const labels = labelsOf(s.model, s.app);
  const probe = (path: string, p: PodProbeSettings["liveness"]) => ({
    httpGet: { path, port: "steward-health" },
    ...p,
  });
  const workload = workloadPodParts(s.agentImage, s.containers, probes);
  const storage = storageParts(s.storage ?? [], labels);
  const withStorage = <C extends { name: string; image: string }>(c: C): C =>
    storage.mounts.length
      ? { ...c, volumeMounts: [...((c as { volumeMounts?: unknown[] }).volumeMounts ?? []), ...storage.mounts] }
      : c;
  const template = {
    metadata: { labels },
    spec: {
      terminationGracePeriodSeconds: s.terminationGracePeriodSeconds ?? 30,
      // The agent talks to the controller, never to the Kubernetes API.
      automountServiceAccountToken: false,
      // Claims and the shared /steward volume belong to group 10001, the images' (images/): the agent
      // runs as 10001, workload containers as their images say, and both reach the supervisor's socket.
      securityContext: { fsGroup: 10001 },
      volumes: [
        { name: "agent-configs", secret: { secretName: agentsSecretName(s.app), defaultMode: 0o400 } },
        ...workload.volumes,
      ],
      ...(workload.initContainers.length ? { initContainers: workload.initContainers } : {}),
      containers: [
        {
          name: AGENT_CONTAINER,
          image: s.agentImage,
          securityContext: STEWARD_USER,
          args: ["--pod", "--dir", POD_PATHS.agentDir, "--configs", POD_PATHS.configs, ...workload.agentArgs],
          env: [
            { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
            { name: "POD_UID", valueFrom: { fieldRef: { fieldPath: "metadata.uid" } } },
            { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
          ],
          ports: [{ name: "steward-health", containerPort: POD_HEALTH_PORT }],
          volumeMounts: [
            { name: "agent-state", mountPath: POD_PATHS.agentDir },
            { name: "agent-configs", mountPath: POD_PATHS.configs, readOnly: true },
            ...workload.agentMounts,
            ...storage.mounts,
          ],
          startupProbe: probe(POD_LIVENESS_PATH, probes.startup),
          livenessProbe: probe(POD_LIVENESS_PATH, probes.liveness),
          readinessProbe: probe(POD_READINESS_PATH, probes.readiness),
        },
        ...workload.containers.map(withStorage),
      ],
    },
  };
  const hash = createHash("sha256").update(JSON.stringify(template)).digest("hex").slice(0, 16);
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: s.app, namespace: s.namespace, labels, annotations: { [TEMPLATE_HASH]: hash } },
    spec: {
      replicas: s.replicas,
      serviceName: endpointsServiceName(s.app),
      // Units come and go independently: no pod waits for a lower ordinal to be Ready.
      podManagementPolicy: "Parallel",
      selector: { matchLabels: { [LABELS.model]: s.model, [LABELS.app]: s.app } },
      template,
      volumeClaimTemplates: [
        {
          metadata: { name: AGENT_STATE_TEMPLATE, labels: { ...labels, [CLAIM_ROLE_LABEL]: "agent-state" } },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: s.stateSize ?? "64Mi" } } },
        },
        ...storage.templates,
      ],
      // The storage's claims outlive their pods and units (storage-claims.ts). A removed unit's
      // agent-state claim is deleted by the pod broker instead: its hook state must not greet a
      // later unit that gets its number.
      persistentVolumeClaimRetentionPolicy: { whenScaled: "Retain", whenDeleted: "Retain" },
    },
  };
}
