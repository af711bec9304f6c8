/**
 * @module agent
 * The machine agent: controller connection, per-unit hook scheduling (uniter), hook tools and the
 * agent's persisted state.
 */
export { Agent } from "./agent";
export type { AgentOptions, AgentState } from "./agent";
export { nextHook, commitHook, configHash } from "./resolver";
export type { HookName, Decision } from "./resolver";
export { initialUnitState } from "./unit-state";
export type { UnitLocalState } from "./unit-state";
export { runTool, tools } from "./hook-tools/tools";
export type { HookContext, ToolResult } from "./hook-tools/tools";
