/**
 * The Kubernetes resource types the substrate uses and the few object shapes the client itself
 * reads (metadata, Status, Scale, watch events). Each type says where it lives in the API
 * (`/api/v1/…` for the core group, `/apis/<group>/<version>/…` otherwise) and whether it is
 * namespaced; anything else in an object passes through untouched.
 */
export interface KubeResource {
  /** "" for the core group. */
  readonly group: string;
  readonly version: string;
  /** The resource name in paths: `statefulsets`. */
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

const core = (plural: string, kind: string, namespaced = true): KubeResource => ({ group: "", version: "v1", plural, kind, namespaced });

export const KUBE_RESOURCES = {
  namespaces: core("namespaces", "Namespace", false),
  services: core("services", "Service"),
  secrets: core("secrets", "Secret"),
  configMaps: core("configmaps", "ConfigMap"),
  serviceAccounts: core("serviceaccounts", "ServiceAccount"),
  pods: core("pods", "Pod"),
  persistentVolumeClaims: core("persistentvolumeclaims", "PersistentVolumeClaim"),
  statefulSets: { group: "apps", version: "v1", plural: "statefulsets", kind: "StatefulSet", namespaced: true },
  endpointSlices: { group: "discovery.k8s.io", version: "v1", plural: "endpointslices", kind: "EndpointSlice", namespaced: true },
} as const satisfies Record<string, KubeResource>;

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
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }[];
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
  details?: { name?: string; group?: string; kind?: string; uid?: string; causes?: { reason?: string; message?: string; field?: string }[]; retryAfterSeconds?: number };
}

/** `autoscaling/v1` Scale, the `/scale` subresource. */
export interface KubeScale extends KubeObject {
  spec: { replicas?: number };
  status?: { replicas: number; selector?: string };
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
export interface WatchEvent<T extends KubeObject = KubeObject> { type: WatchEventType; object: T }

export interface KubeList<T extends KubeObject = KubeObject> {
  items: T[];
  /** The list's resourceVersion: watch from it to see every later change. */
  resourceVersion: string;
}
