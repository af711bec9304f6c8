export { CLUSTER_CHANGED, StateCache } from "./cache";
export type { ModelIndex, CacheListener } from "./cache";
export { StateOps, validateConfig, effectiveConfig } from "./operations";
export { RelationOps } from "./relation-ops";
export { LeadershipOps } from "./leadership-ops";
export { buildModelStatus, buildAgentView, buildUnitDetails } from "./views";
export { StatusRenderer, renderModelStatus } from "./status-json";
export { keys } from "./keys";
export * from "./documents";
