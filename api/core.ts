/**
 * @module api/core
 * The part of the wire contract a small process needs (the agent, which must stay under 60 MB):
 * errors, status shapes, logging, protocol types, the client and bundle hashing, without the
 * schema and YAML libraries that {@link module:api} also loads (about 20 MB between them).
 */
export * from "./errors";
export * from "./status";
export * from "./log";
export { bundleHash, bundlePathProblem, fileDirectoryClash, operatorHashProblem } from "./operator";
export type { Bundle, BundleFileEntry, OperatorMeta } from "./operator";
export type { AgentFrame, AgentView, UnitView, RelationView, UnitStatusReport, HookCommit } from "./agent-protocol";
export * from "./limits";
export * from "./ports";
export * from "./debug-log";
export { ControllerClient, splitAddress, CONTROLLER_TLS_NAME } from "./client";
export const STEWARD_VERSION = "0.1.0";
