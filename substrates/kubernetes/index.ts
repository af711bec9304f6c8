export { KubeApi, KubeApiError, KubeGoneError, isAlreadyExists, isConflict, isGone, isInvalid, isNotFound } from "./kube-api";
export type { CallOptions, DeleteOptions, KubeApiOptions, ListOptions, ObjectOptions, Stored, WatchOptions, WriteOptions } from "./kube-api";
export { KubeConnection, loadKubeconfig, parseKubeconfig } from "./kubeconfig";
export type { KubeCredential, KubeconfigOptions } from "./kubeconfig";
export { KUBE_RESOURCES, apiVersionOf, resourceName } from "./resources";
export type { KubeList, KubeObject, KubeResource, KubeScale, KubeStatus, ObjectMeta, WatchEvent, WatchEventType } from "./resources";
