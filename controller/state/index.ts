export { StateCache } from "./cache";
export type { ModelIndex, CacheListener } from "./cache";
export { StateOps, validateConfig, effectiveConfig } from "./operations";
export { buildModelStatus, buildAgentView } from "./views";
export { keys } from "./keys";
export * from "./documents";
