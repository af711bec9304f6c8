/**
 * What the agent and a workload container's supervisor say over the supervisor's unix socket: one
 * JSON request per connection, a line, answered by one JSON line. Bounded on both sides, so neither
 * can hold the other's memory.
 */

/** The largest request line (a pushed file, base64, fits under it). */
export const MAX_REQUEST_BYTES = 8 * 1024 * 1024;
/** The largest answer line the agent reads (a pulled file or exec output, base64 and JSON). */
export const MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
/** Largest file pushed or pulled. */
export const MAX_FILE_BYTES = 4 * 1024 * 1024;
/** Output kept of each stream of an exec; more is cut and said so. */
export const MAX_EXEC_OUTPUT = 1024 * 1024;
/** How long an exec may run at most, and by default. */
export const MAX_EXEC_TIMEOUT_MS = 600_000;
export const DEFAULT_EXEC_TIMEOUT_MS = 60_000;
/** A request must arrive whole within this. */
export const REQUEST_TIMEOUT_MS = 10_000;

export type ServiceState = "inactive" | "active" | "backoff" | "error";

export interface ServiceInfo {
  name: string;
  startup: "enabled" | "disabled";
  current: ServiceState;
  pid?: number;
  /** Times it was started again after exiting (by its on-success/on-failure policy). */
  restarts: number;
  /** The wait before the next restart, while in backoff. */
  backoffMs?: number;
  /** How it last exited: a code, or a signal. */
  lastExit?: { code: number | null; signal: string | null; at: string };
  /** Why it is in error (could not be started, or failed with on-failure: ignore). */
  message?: string;
}

export type SupervisorRequest =
  | { op: "ping" }
  | { op: "layer"; layer: unknown }
  | { op: "start" | "stop" | "restart"; services: string[] }
  | { op: "services" }
  | {
      op: "exec";
      command: string[];
      environment?: Record<string, string>;
      workingDir?: string;
      timeoutMs?: number;
      stdin?: string;
    }
  | { op: "push"; path: string; content: string; mode?: number; makeDirs?: boolean }
  | { op: "pull"; path: string };

export interface PingResult {
  container: string;
  /** New each time the supervisor starts: a restarted container's supervisor is a new one (its layer is gone). */
  bootId: string;
  pid: number;
}
export interface ReplanResult {
  started: string[];
  stopped: string[];
  restarted: string[];
}
export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  truncated: boolean;
}
export interface PullResult {
  content: string;
  mode: number;
}

export type SupervisorResponse<T = unknown> =
  { ok: true; result: T } | { ok: false; error: { code: string; message: string } };

/** Stable codes of refusals, so the agent's tools can pick their exit status. */
export type SupervisorErrorCode = "bad-request" | "too-large" | "not-found" | "failed" | "shutting-down";
