export {
  KubeApi,
  KubeApiError,
  KubeGoneError,
  KubeUnreachableError,
  isAlreadyExists,
  isConflict,
  isGone,
  isInvalid,
  isNotFound,
} from "./kube-api";
export type {
  CallOptions,
  DeleteOptions,
  KubeApiOptions,
  ListOptions,
  ObjectOptions,
  Stored,
  WatchOptions,
  WriteOptions,
} from "./kube-api";
export {
  KubeConnection,
  connectionOfCredential,
  credentialOfConnection,
  flattenKubeconfig,
  loadKubeconfig,
  parseKubeconfig,
} from "./kubeconfig";
export { SERVICE_ACCOUNT_DIR, inClusterConnection } from "./in-cluster";
export type { InClusterOptions } from "./in-cluster";
export type { KubeConnectionOptions, KubeCredential, KubeconfigOptions } from "./kubeconfig";
export { KUBE_RESOURCES, apiVersionOf, resourceName } from "./resources";
export { imageWithTag, openKubernetesRollout, ordinalOf } from "./replica-rollout";
export type { KubernetesRollout, KubernetesRolloutOptions, KubernetesTarget } from "./replica-rollout";
export type {
  Condition,
  ConfigMap,
  ContainerStatus,
  EndpointSlice,
  KubeList,
  KubeObject,
  KubeResource,
  KubeScale,
  KubeStatus,
  LabelSelector,
  Namespace,
  ObjectMeta,
  PersistentVolumeClaim,
  Pod,
  PodProbeSettings,
  ResourceAttributes,
  Secret,
  SelfSubjectAccessReview,
  Service,
  ServicePort,
  StatefulSet,
  WatchEvent,
  WatchEventType,
} from "./resources";
export { deniedRights, describeRight, describeRights } from "./access-review";
export { describeClusterFailure } from "./cluster-failures";
export { observe } from "./observe";
export type { ObserveOptions, Observed } from "./observe";
export {
  DEFAULT_POD_PROBES,
  LABELS,
  MANAGED_BY,
  POD_PATHS,
  AGENT_CONTAINER,
  TEMPLATE_HASH,
  agentsSecretManifest,
  agentsSecretName,
  endpointsServiceName,
  namespaceManifest,
  podName,
  selectorOf,
  serviceManifests,
  statefulSetManifest,
} from "./unit-pods";
export type { UnitPodsSpec } from "./unit-pods";
export {
  BOOTSTRAPPED_KEY,
  CONTROLLER_API_PORT,
  CONTROLLER_LABELS,
  DEFAULT_CONTROLLER_IMAGE,
  CONTROLLER_POD_PATHS,
  MAX_CONTROLLER_PODS,
  SEED_KEY,
  controllerEnrolSecretName,
  controllerManifests,
  controllerSecretManifest,
  controllerSeedSecretName,
  clientServiceDnsName,
  peersServiceName,
  replicaClaimName,
  replicaDnsName,
  replicaTokenKey,
} from "./controller-pods";
export type { ControllerPodsSpec } from "./controller-pods";
export {
  bootstrapOnKubernetes,
  finishKubernetesBootstrap,
  kubernetesControllerObjects,
  newKubernetesControllerSeed,
} from "./controller-bootstrap";
export type {
  KubernetesBootstrapPlan,
  KubernetesControllerAccess,
  KubernetesControllerSeed,
} from "./controller-bootstrap";
export { KubernetesApplicationPods } from "./application-pods";
export { KubernetesVolumes } from "./volumes";
export {
  DEFAULT_STORAGE_ROOT,
  STORAGE_CLASS_ATTRIBUTE,
  STORAGE_ID_ANNOTATION,
  claimNameOf,
  storageMountPath,
  storageTemplateName,
} from "./storage-claims";
export type { KubernetesPlacement } from "./application-pods";
export { WORKLOAD_VOLUME, workloadPodParts } from "./workload-pods";
export type { WorkloadPodParts } from "./workload-pods";
export { updateSecretData } from "./secret-data";
export { MODEL_NAMESPACE_RIGHTS, checkClusterCredential, checkModelCluster } from "./cluster-checks";
