/**
 * @module api
 * The wire contract shared by the controller, agents, the CLI and the Pulumi provider: errors with
 * stable codes, request schemas, status shapes, the operator format, the agent protocol and the
 * typed {@link ControllerClient}. Depends on nothing else of ours. `node/` holds what needs Node
 * (the HTTPS client, waits built on it, reading operator directories); `browser.ts` is the part a
 * browser may load (the dashboard).
 */
export * from "./errors";
export * from "./schemas";
export * from "./status";
export { expandStatusColumns, fromColumnTable, statusToColumns, toColumnTable } from "./status-columns";
export type { ColumnTable } from "./status-columns";
export * from "./operator";
export * from "./actions";
export * from "./storage";
export * from "./secrets";
export * from "./ebs-volumes";
export { readOperatorDir } from "./node/operator-dir";
export * from "./agent-protocol";
export * from "./wire";
export * from "./migration";
export * from "./versions";
export type { ControllerInit, ControllerInitResult } from "./controller-init";
export { ControllerClient, splitAddress } from "./node/client";
export type { ControllerClientOptions } from "./node/client";
export * from "./log";
export * from "./limits";
export * from "./ports";
export * from "./node/waits";
export { sleep } from "./node/sleep";
export * from "./status-query";
export { byName, table } from "./table";
export * from "./debug-log";
export * from "./agent-config";
export * from "./kubernetes-pods";
export * from "./workload-containers";
export * from "./substrates";
export * from "./constraints";
export * from "./leadership";
export * from "./dashboard";
export * from "./routes";
export * from "./registration";
