export { recordedLocalController } from "./controller-hosting";
export { freePort, isProcessOf, portFree, readPidFile, stopProcess } from "./processes";
export {
  CONTROLLER_ENV_VARIABLES,
  controllerEnvironment,
  createControllerCa,
  initLocalController,
  removeLocalController,
  restartLocalController,
  restoreLocalController,
  startLocalController,
  stopLocalController,
} from "./controller-process";
export type {
  LocalControllerInit,
  LocalControllerInitResult,
  LocalControllerRestore,
  LocalControllerRestoreResult,
} from "./controller-process";
export { AGENT_PID_FILE, LocalMachines } from "./machines";
export type { LocalMachinesOptions } from "./machines";
export { DEFAULT_AGENT_USER, localAgentIdentity } from "./agent-user";
export type { AgentIdentity } from "./agent-user";
export { defaultAgentsDir, placeAgentsDir, readableAgentEntry } from "./agents-dir";
export { repointLocalAgents } from "./repoint";
export { localDirRule } from "./dir-rule";
export type { LocalDirCheck } from "./dir-rule";
export {
  currentLocalRelease,
  localControllerEntry,
  pruneLocalReleases,
  runningControllerBuild,
  stageLocalRelease,
  switchLocalRelease,
} from "./controller-release";
