export { SshSession, fingerprint, shellQuote } from "./ssh-session";
export { generateSshKeyPair } from "./keys";
export type { SshKeyPair } from "./keys";
export { SshMachines } from "./machines";
export type { SshTarget, RunResult } from "./ssh-session";
export { checkHost, gatherFacts } from "./facts";
export type { HostFacts } from "./facts";
export { installAgent, PATHS } from "./agent-installer";
export { fileSha256, ensureNode, ensureFile } from "./runtime";
export { ensureService } from "./service";
export {
  CONTROLLER_DATA,
  installController,
  stageReplica,
  startReplica,
  uninstallController,
} from "./controller-installer";
export type {
  ControllerFiles,
  ControllerInstallPlan,
  ControllerInstallResult,
  ReplicaInstallPlan,
  Staged,
} from "./controller-installer";
export type { AgentInstallPlan, InstallResult } from "./agent-installer";
export {
  pruneControllerReleases,
  rollbackControllerUpgrade,
  stageControllerUpgrade,
  switchControllerRelease,
} from "./controller-upgrade";
