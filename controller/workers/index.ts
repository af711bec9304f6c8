/**
 * The worker kit: long-running work as {@link Worker}s (run until a signal aborts, then drain), the
 * {@link Reconciler} loop, groups that start and stop them together, and the leader-scoped group.
 * It sits just above state/ (DESIGN.md §2): everything else in controller/ may use it.
 */
export { aborted, service, sleep, withCleanup } from "./worker";
export type { Worker } from "./worker";
export { Reconciler, periodic } from "./reconciler";
export type { ReconcilerOptions } from "./reconciler";
export { DEFAULT_STOP_TIMEOUT_MS, WorkerGroup } from "./worker-group";
export type { WorkerGroupOptions } from "./worker-group";
export { leaderScoped } from "./leader-scoped";
export type { Leadership, LeaderScopedOptions } from "./leader-scoped";
