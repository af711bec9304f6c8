/**
 * @module api/core
 * The part of the wire contract a small process needs (the agent, which must stay under 60 MB):
 * errors, status shapes, logging, protocol types, the client and bundle hashing, without the
 * schema and YAML libraries that {@link module:api} also loads (about 20 MB between them). The CLI
 * imports only this too, so `steward status` starts in a fraction of the time.
 */
export * from "./errors";
export * from "./status";
export * from "./log";
export {
  bundleHash,
  configHash,
  shortHash,
  bundlePathProblem,
  checkConfigValue,
  coerceConfigText,
  fileDirectoryClash,
  operatorHashProblem,
} from "./operator";
export type { Bundle, BundleFileEntry, ConfigOptionType, OperatorMeta } from "./operator";
export { readOperatorDir } from "./node/operator-dir";
export type { ActionValue, OperationInfo, RunActionResult, TaskInfo, TaskStatus } from "./actions";
export { NAME_PATTERN } from "./names";
export * from "./node/waits";
export { sleep } from "./node/sleep";
export { QUERY_DEFAULTS, StatusQuery, applicationScope, modelScope, unitScope } from "./status-query";
export type { EntityKind } from "./status-query";
export { byName, sanitizeForTerminal, table } from "./table";
export * from "./registration";
export type {
  AgentFrame,
  AgentView,
  AgentReleaseTarget,
  UnitView,
  RelationView,
  UnitStatusReport,
  HookCommit,
  QueuedAction,
  TaskFinish,
  UnitStorageView,
  MachineStorageWork,
  StorageOnMachineReport,
  UnitSecretView,
  SecretChange,
  SecretGet,
} from "./agent-protocol";
export * from "./secrets";
export {
  MAX_STORAGE_COUNT,
  STORAGE_DEVICE_PATTERN,
  formatSizeMiB,
  parseSizeMiB,
  locationOfWork,
  parsePoolAttributes,
  parseStorageArg,
  storageHooks,
} from "./storage";
export type {
  DeviceMatch,
  MachineVolumeWork,
  StorageDetails,
  StorageInfo,
  StoragePoolInfo,
  StorageType,
} from "./storage";
export { EBS_DEFAULT_VOLUME_TYPE, EBS_POOL_ATTRIBUTES, EBS_VOLUME_TYPES, ebsVolumeOf } from "./ebs-volumes";
export type { EbsVolumeOptions } from "./ebs-volumes";
export * from "./limits";
export * from "./ports";
export * from "./debug-log";
export * from "./substrates";
export * from "./constraints";
export * from "./leadership";
export { AGENT_CONFIG_FILE, agentConfigText, parseAgentConfig } from "./agent-config";
export type { AgentConfig } from "./agent-config";
export * from "./kubernetes-pods";
export * from "./workload-containers";
export * from "./wire";
export * from "./migration";
export * from "./versions";
export type { ControllerInit, ControllerInitResult } from "./controller-init";
export { WEB_CONSOLE_CONTROL_FD, WEB_CONSOLE_ENV } from "./dashboard";
export { answer, methodOf, pathOf, routes } from "./routes";
export type { AnswerOf, BodyOf, ParamsOf, QueryOf, RouteAccess, RouteName, RouteSpec } from "./routes";
export { ControllerClient, splitAddress } from "./node/client";
export type { ControllerClientOptions, MovedTo } from "./node/client";
