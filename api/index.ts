/**
 * @module api
 * The wire contract shared by the controller, agents, the CLI and the Pulumi provider: errors with
 * stable codes, request schemas, status shapes, the operator format, the agent protocol and the
 * typed {@link ControllerClient}. Depends on nothing else of ours.
 */
export * from "./errors";
export * from "./schemas";
export * from "./status";
export { expandStatusColumns, fromColumnTable, statusToColumns, toColumnTable } from "./status-columns";
export type { ColumnTable } from "./status-columns";
export * from "./operator";
export * from "./actions";
export { readOperatorDir } from "./operator-dir";
export * from "./agent-protocol";
export { ADDRESSES_HEADER, ENROLMENT_HEADER, MUTATING_METHODS, REPLAYED_HEADER, REQUEST_ID_HEADER, ControllerClient, splitAddress, CONTROLLER_TLS_NAME } from "./client";
export type { ControllerClientOptions, DebugLogQuery, ModelSettings, ModelSummary, MachineInfo, ApplicationInfo, ControllerInfo, ClusterInfo, CredentialSummary, SpareHost, SshMachineRequest } from "./client";
export { STEWARD_VERSION } from "./core";
export * from "./log";
export * from "./limits";
export * from "./ports";
export * from "./waits";
export * from "./status-query";
export { byName, table } from "./table";
export * from "./debug-log";
export * from "./agent-config";
export * from "./substrates";
export * from "./constraints";
