/**
 * @module agent
 * The machine agent: controller connection, per-unit hook scheduling (uniter), hook tools and the
 * agent's persisted state.
 */
export { Agent } from "./agent";
export { ControllerConnection } from "./connection";
export type { AgentOptions, AgentState } from "./agent";
export { nextAction, nextHook, commitHook, applyDecision, configHash } from "./resolver";
export { ActionRun } from "./action-run";
export type { Decision, ResolveOptions } from "./resolver";
export { initialUnitState } from "./unit-state";
export { reconcileRestore } from "./restore-epoch";
export { bundleFilePath, unpackBundle } from "./operators";
export type { UnitLocalState, HookSpec, HookKind } from "./unit-state";
export { runTool, tools } from "./hook-tools/tools";
export type { HookContext, SecretAccess, ToolResult } from "./hook-tools/tools";
export { HookSecrets } from "./hook-secrets";
export { MachineStorage } from "./machine-storage";
export type { MachineStorageOptions } from "./machine-storage";
export { LogForwarder } from "./log-forwarder";
export type { LogForwarderOptions } from "./log-forwarder";
export { LineSplitter, failureTail } from "./hook-output";
export { PodAgent, adoptMountedConfig, podIdentity } from "./pod-agent";
export type { PodAgentOptions, PodIdentity } from "./pod-agent";
export { HealthServer } from "./health-server";
export type { HealthCheck, HealthChecks } from "./health-server";
export { unitReadiness } from "./readiness";
export type { Readiness } from "./readiness";
export { Supervisor } from "./workload/supervisor";
export type { SupervisorOptions } from "./workload/supervisor";
export { SupervisorClient, SupervisorError } from "./workload/supervisor-client";
export { LayerError, checkLayer, splitCommand } from "./workload/layer";
export type { Layer, ServiceSpec } from "./workload/layer";
export type { ExecResult, PingResult, PullResult, ReplanResult, ServiceInfo } from "./workload/protocol";
export { installSupervisor } from "./workload/install";
export { UnitLeadership, answerWaitMs, leaderAt } from "./leadership";
export type { LeaseRecord, UnitLeadershipDeps } from "./leadership";
