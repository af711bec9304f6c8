export { CLUSTER_CHANGED, StateCache } from "./cache";
export type { ModelIndex, CacheListener } from "./cache";
export { StateOps, validateConfig, effectiveConfig } from "./operations";
export { RelationOps } from "./relation-ops";
export { LeadershipOps } from "./leadership-ops";
export { buildModelStatus, buildAgentView, buildUnitDetails } from "./views";
export { keys } from "./keys";
export * from "./documents";
export { REQUESTS_PREFIX, RequestScope, currentRequest, requestKeys, runInRequest, startRequestRecordSweeper, sweepRequestRecords } from "./request-records";
