/**
 * The Kubernetes resource types the substrate uses and the few object shapes the client itself
 * reads (metadata, Status, Scale, watch events). Each type says where it lives in the API
 * (`/api/v1/…` for the core group, `/apis/<group>/<version>/…` otherwise) and whether it is
 * namespaced, and carries the (partial) shape of its objects, so `get(KUBE_RESOURCES.pods, …)`
 * answers a {@link Pod}; fields not written here pass through untouched.
 */
export interface KubeResource<T extends KubeObject = KubeObject> {
  /** Never set: it carries the type of the resource's objects to the client's methods. */
  readonly objectType?: T;
  /** "" for the core group. */
  readonly group: string;
  readonly version: string;
  /** The resource name in paths: `statefulsets`. */
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

const resource = <T extends KubeObject>(
  group: string,
  plural: string,
  kind: string,
  namespaced = true,
): KubeResource<T> => ({ group, version: "v1", plural, kind, namespaced });
const RBAC = "rbac.authorization.k8s.io";

export const KUBE_RESOURCES = {
  namespaces: resource<Namespace>("", "namespaces", "Namespace", false),
  services: resource<Service>("", "services", "Service"),
  secrets: resource<Secret>("", "secrets", "Secret"),
  configMaps: resource<ConfigMap>("", "configmaps", "ConfigMap"),
  serviceAccounts: resource<KubeObject>("", "serviceaccounts", "ServiceAccount"),
  pods: resource<Pod>("", "pods", "Pod"),
  persistentVolumeClaims: resource<PersistentVolumeClaim>("", "persistentvolumeclaims", "PersistentVolumeClaim"),
  storageClasses: resource<StorageClass>("storage.k8s.io", "storageclasses", "StorageClass", false),
  statefulSets: resource<StatefulSet>("apps", "statefulsets", "StatefulSet"),
  endpointSlices: resource<EndpointSlice>("discovery.k8s.io", "endpointslices", "EndpointSlice"),
  leases: resource<KubeObject>("coordination.k8s.io", "leases", "Lease"),
  roles: resource<KubeObject>(RBAC, "roles", "Role"),
  roleBindings: resource<KubeObject>(RBAC, "rolebindings", "RoleBinding"),
  clusterRoles: resource<KubeObject>(RBAC, "clusterroles", "ClusterRole", false),
  clusterRoleBindings: resource<KubeObject>(RBAC, "clusterrolebindings", "ClusterRoleBinding", false),
  podDisruptionBudgets: resource<KubeObject>("policy", "poddisruptionbudgets", "PodDisruptionBudget"),
  /** Created only (`kubectl auth can-i`): the answer is in the returned object's status, nothing is stored. */
  selfSubjectAccessReviews: resource<SelfSubjectAccessReview>(
    "authorization.k8s.io",
    "selfsubjectaccessreviews",
    "SelfSubjectAccessReview",
    false,
  ),
} as const;

export const apiVersionOf = (r: KubeResource): string => (r.group ? `${r.group}/${r.version}` : r.version);
/** `statefulsets.apps`, `pods`: how messages name a resource type, as the API server does. */
export const resourceName = (r: KubeResource): string => (r.group ? `${r.plural}.${r.group}` : r.plural);

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: {
    apiVersion: string;
    kind: string;
    name: string;
    uid: string;
    controller?: boolean;
    blockOwnerDeletion?: boolean;
  }[];
  [key: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** `metav1.Status`: what the API server answers on failure (and for some deletions). */
export interface KubeStatus {
  kind: "Status";
  apiVersion?: string;
  status?: "Success" | "Failure";
  message?: string;
  reason?: string;
  code?: number;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    uid?: string;
    causes?: { reason?: string; message?: string; field?: string }[];
    retryAfterSeconds?: number;
  };
}

/** `autoscaling/v1` Scale, the `/scale` subresource. */
export interface KubeScale extends KubeObject {
  spec: { replicas?: number };
  status?: { replicas: number; selector?: string };
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: WatchEventType;
  object: T;
}

export interface KubeList<T extends KubeObject = KubeObject> {
  items: T[];
  /** The list's resourceVersion: watch from it to see every later change. */
  resourceVersion: string;
}

// ---- the shapes of the objects the substrate reads (the fields it uses; the rest passes through) ----

type Open = { [key: string]: unknown };
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}
export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface Namespace extends KubeObject {
  status?: { phase?: "Active" | "Terminating" } & Open;
}
export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
  immutable?: boolean;
}
/** `data` values are base64; `stringData` is write-only (the server folds it into data). */
export interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  immutable?: boolean;
}
export interface ServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
  protocol?: "TCP" | "UDP" | "SCTP";
  nodePort?: number;
}
export interface Service extends KubeObject {
  spec?: {
    type?: string;
    selector?: Record<string, string>;
    ports?: ServicePort[];
    clusterIP?: string;
    clusterIPs?: string[];
    publishNotReadyAddresses?: boolean;
  } & Open;
  status?: Open;
}
export interface ContainerStatus {
  name: string;
  ready: boolean;
  started?: boolean;
  restartCount: number;
  image: string;
  state?: Open;
  lastState?: Open;
  containerID?: string;
}
export interface Pod extends KubeObject {
  spec?: {
    containers: ({ name: string; image?: string } & Open)[];
    initContainers?: ({ name: string; image?: string } & Open)[];
    nodeName?: string;
    hostname?: string;
    subdomain?: string;
  } & Open;
  status?: {
    phase?: "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";
    podIP?: string;
    podIPs?: { ip: string }[];
    hostIP?: string;
    startTime?: string;
    conditions?: Condition[];
    containerStatuses?: ContainerStatus[];
    initContainerStatuses?: ContainerStatus[];
  } & Open;
}
export interface PersistentVolumeClaim extends KubeObject {
  spec?: {
    accessModes?: string[];
    resources?: { requests?: Record<string, string> };
    storageClassName?: string;
    volumeName?: string;
  } & Open;
  status?: { phase?: "Pending" | "Bound" | "Lost"; capacity?: Record<string, string> } & Open;
}
export interface StorageClass extends KubeObject {
  provisioner?: string;
  reclaimPolicy?: "Delete" | "Retain";
  volumeBindingMode?: "Immediate" | "WaitForFirstConsumer";
}
export interface StatefulSet extends KubeObject {
  spec?: {
    replicas?: number;
    serviceName?: string;
    selector: LabelSelector;
    podManagementPolicy?: "OrderedReady" | "Parallel";
    template: {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec?: Pod["spec"];
    };
    volumeClaimTemplates?: PersistentVolumeClaim[];
    updateStrategy?: {
      type?: "RollingUpdate" | "OnDelete";
      rollingUpdate?: { partition?: number; maxUnavailable?: number | string };
    };
    persistentVolumeClaimRetentionPolicy?: { whenDeleted?: "Retain" | "Delete"; whenScaled?: "Retain" | "Delete" };
    ordinals?: { start?: number };
  } & Open;
  status?: {
    observedGeneration?: number;
    replicas: number;
    readyReplicas?: number;
    availableReplicas?: number;
    currentReplicas?: number;
    updatedReplicas?: number;
    currentRevision?: string;
    updateRevision?: string;
    collisionCount?: number;
    conditions?: Condition[];
  };
}
/** How often the kubelet probes a container, how long it waits, and after how many failures it acts (per probe kind). */
export type { PodProbeSettings } from "../brokers";

/** What a SelfSubjectAccessReview asks: may I do `verb` on `resource` (of `group`) in `namespace` ("" or absent: all namespaces, or a cluster-scoped resource)? */
export interface ResourceAttributes {
  verb: string;
  group?: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}
/** authorization.k8s.io/v1 SelfSubjectAccessReview: `status.allowed` is the answer; `denied` and `reason` may explain it. */
export interface SelfSubjectAccessReview extends KubeObject {
  spec: { resourceAttributes?: ResourceAttributes; nonResourceAttributes?: { path: string; verb: string } };
  status?: { allowed: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}
export interface EndpointSlice extends KubeObject {
  addressType: "IPv4" | "IPv6" | "FQDN";
  endpoints: {
    addresses: string[];
    conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
    hostname?: string;
    nodeName?: string;
    targetRef?: { kind?: string; name?: string; namespace?: string; uid?: string };
  }[];
  ports?: { name?: string; port?: number; protocol?: string }[];
}
