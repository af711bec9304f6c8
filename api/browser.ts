/**
 * @module api/browser
 * The part of the wire contract a browser may load (the dashboard): error codes, status shapes,
 * the REST answers' types and the route table, config values, actions' types and the live feed. Nothing here imports
 * Node; the dashboard's build (esbuild, platform browser) fails if that ever changes.
 */
export * from "./errors";
export * from "./status";
export * from "./wire";
export * from "./dashboard";
export * from "./config-values";
export type {
  ActionSpec,
  ActionParam,
  ActionValue,
  OperationInfo,
  RunActionResult,
  TaskInfo,
  TaskStatus,
} from "./actions";
export type { DebugLogRecord } from "./debug-log";
export { NAME_PATTERN } from "./names";
export { methodOf, pathOf, routes } from "./routes";
export type { AnswerOf, BodyOf, ParamsOf, QueryOf, RouteSpec } from "./routes";
export * from "./registration";
export type { StorageInfo, StorageDirectiveView, StorageType } from "./storage";
export { formatSizeMiB } from "./storage";
export type { RevealedSecret, SecretGrantInfo, SecretInfo, SecretRevisionInfo } from "./secrets";
