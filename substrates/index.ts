/**
 * @module substrates
 * Where machines and controller hosts come from: `ssh/` installs agents and controller replicas on
 * hosts over SSH (host keys pinned); `local/` runs them as processes on this host. Where controllers
 * run is one hosting object per kind (controller-hosting.ts) and one bootstrap flow
 * (bootstrap-controller.ts). Used by the controller, the CLI and the provider alike; depends on `api` only.
 */
export * as ssh from "./ssh";
export * from "./local";
export type {
  ApplicationBroker,
  ApplicationPods,
  ApplicationPodsChange,
  MachineBroker,
  MachineRef,
  MachineSpec,
  MachineTarget,
  ModelPodsRemoval,
  PodProbeSettings,
  PodStorage,
  PodTarget,
  Progress,
  ReplicaHost,
  ReplicaHostBroker,
  RetiredReplica,
  StartedMachine,
  UnitPod,
  UnitPodSettings,
} from "./brokers";
export * as aws from "./aws";
export * as vsphere from "./vsphere";
export * as kubernetes from "./kubernetes";
export { enrolmentUserData, replicaUserData, sshBootstrapUserData } from "./cloud-init";
export type {
  ControllerHosting,
  ControllerPlan,
  FirstReplica,
  HostedController,
  HostedTarget,
  HostingOptions,
} from "./controller-hosting";
export type { HostingKind, HostingSettings, RecordedHosting, RecordedSettings } from "./registry";
export type { ReplicaStep, ReplicaUpgrade, ReplicaUpgradeContext, ReplicaUpgrader, SshAccess } from "./replica-upgrade";
export { bundleVersion, controllerBundleVersion } from "./replica-upgrade";
export type { LocalControllerSettings } from "./local/controller-hosting";
export type { SshControllerSettings } from "./ssh/controller-hosting";
export type { KubernetesControllerSettings } from "./kubernetes/controller-bootstrap";
export { bootstrapController, destroyController, recordHosting } from "./bootstrap-controller";
export { handOverReplicaCloud, settleController } from "./settle-controller";
export type { BootstrapOptions } from "./settle-controller";
export type { Attributes, CloudInstance, InstanceBroker, MachineHost, MachinesOfKind, SubstrateKind } from "./kind";
export type { MachineStorageFacts, VolumeAttachment, VolumeBroker, VolumeDeps, VolumeSpec } from "./volumes";
export { VolumeNotReady } from "./volumes";
export type { ReplicaHostDeps, ReplicaHostsOfKind } from "./replica-hosts";
export { CONTROLLER_HOSTING, SUBSTRATES, UNRECORDED_HOSTING, hostingOf, substrateKind } from "./registry";
export {
  AGENT_BUNDLE,
  AGENT_NODE_FLAGS,
  BUILD_DIR,
  CLI_BUNDLE,
  RELEASE_DIRS,
  cliEntry,
  CONTROLLER_BUNDLE,
  CONTROLLER_NODE_FLAGS,
  controllerEntry,
  controllerFiles,
  dataFiles,
  enrolmentFiles,
  findOnPath,
  supervisorEntry,
} from "./controller-files";
