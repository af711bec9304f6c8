/**
 * @module cli
 * The `steward` command line (clipanion), one command per file under commands/.
 */
export { runCli } from "./cli";
export { KindFlags, kindFlags, kindOfTarget, kindOptions, targetName } from "./kind-flags";
export { buildCli, allCommands, COMMAND_NAMES } from "./command-names";
export { lineWords, splitWords } from "./console/words";
export { WEB_CONSOLE_COMMANDS, restrictedRefusal } from "./console/restricted";
export type { StewardContext } from "./context";
export { loadModelFile } from "./model-file";
export { planChanges, describePlan } from "./plan";
export { formatStatusTabular } from "./status-format";
export { withHeartbeat } from "./heartbeat";
export { nearest } from "./usage-problem";
export { carriesSecretValues, parseValuesText, readSecretValues } from "./secret-values";
export { dataDirOf, loadClientConfig, saveClientConfig, stewardHome, upgradeEntry } from "./client-config";
export type { ClientConfig, ControllerEntry } from "./client-config";
export { startLocalController } from "../substrates";
export { planUpgrade } from "./upgrade/plan";
export type { UpgradePlan, ReplicaStep } from "./upgrade/plan";
export { runUpgrade } from "./upgrade/run-upgrade";
export { unsupportedReplicas } from "./upgrade/plan";
export type { ReplicaUpgrader } from "../substrates";
