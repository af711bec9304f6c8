/**
 * @module api/scripting
 * What the package's `steward/client` entry exports, for people scripting against a controller: the
 * typed {@link ControllerClient}, its errors (stable codes), the status shapes and the waits. Its
 * declarations name no schema library, so a user's compile needs nothing beyond Node's types.
 */
export { ControllerClient, splitAddress } from "./node/client";
export type { ControllerClientOptions } from "./node/client";
export type {
  ModelSettings,
  ModelSummary,
  MachineInfo,
  ApplicationInfo,
  ControllerInfo,
  ControllerOverview,
  ClusterInfo,
  CredentialSummary,
  SpareHost,
  SshMachineRequest,
  DebugLogQuery,
} from "./wire";
export * from "./errors";
export * from "./status";
export * from "./node/waits";
export { formatConstraints, parseConstraints } from "./constraints";
export type { Constraints } from "./constraints";
export type { ActionValue, OperationInfo, RunActionResult, TaskInfo, TaskStatus } from "./actions";
export { readOperatorDir } from "./node/operator-dir";
