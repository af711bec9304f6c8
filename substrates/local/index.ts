export { freePort, isProcessOf, portFree, readPidFile, stopProcess } from "./processes";
export { CONTROLLER_ENV_VARIABLES, controllerEnvironment, initLocalController, removeLocalController, startLocalController } from "./controller-process";
export type { LocalControllerInit, LocalControllerInitResult } from "./controller-process";
export { AGENT_PID_FILE, LocalMachines } from "./machines";
