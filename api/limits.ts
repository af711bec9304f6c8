/** Size limits that keep any one document bounded (etcd refuses requests over 1.5 MiB). */

/** Most bytes (as JSON) one unit or application databag, or one application's leader data, may hold. */
export const DATABAG_LIMIT_BYTES = 64 * 1024;

/**
 * Bounds on the controller's request transport (HTTPS and WebSockets), so no client, authenticated
 * or not, can hold the controller's memory or connections with slow or oversized input. Every one
 * can be overridden per controller (ControllerOptions.transport); these are the defaults.
 */
export const TRANSPORT_LIMITS = {
  /** A request's headers must arrive within this (Node's headersTimeout). Answered 408. */
  headersTimeoutMs: 10_000,
  /**
   * A whole request, body included, must arrive within this (Node's requestTimeout): a 32 MiB
   * operator upload needs about 0.5 MiB/s. Answered 408.
   */
  requestTimeoutMs: 60_000,
  /**
   * A connection silent both ways for this long is closed (Fastify's connectionTimeout): longer than
   * the slowest request (an SSH machine install), so only sockets whose peer vanished are reaped.
   */
  idleTimeoutMs: 300_000,
  /**
   * Open connections at once, agents' WebSockets included (twice the 10,000 agents one replica is
   * benchmarked with). Connections beyond it are closed before TLS, so nothing can answer them.
   */
  maxConnections: 20_000,
  /** Bytes of request line and headers together (Node's maxHeaderSize). Answered 431. */
  maxHeaderBytes: 16 * 1024,
  /** Most bytes of one client→server frame on a status watch: watchers send nothing meaningful. */
  watchFrameBytes: 4 * 1024,
  /**
   * Most bytes of one agent→controller frame. The largest legitimate one is a hook commit: a unit's
   * databags for the integrations it changed (each at most DATABAG_LIMIT_BYTES), so this allows a
   * hook to rewrite 60 full databags at once. The agent refuses to send more (the hook fails).
   */
  agentFrameBytes: 4 * 1024 * 1024,
  /**
   * Failed agent logins (bad credentials) one source address may make per second, and in a burst,
   * before it is answered 429 instead of 401. Valid credentials are never refused by this.
   */
  failedAgentLoginsPerSecond: 5,
  failedAgentLoginsBurst: 50,
  /**
   * How often the controller looks at each agent connection. One it has heard nothing from (no
   * frame, ping or pong) since the last look is pinged; one still silent at the next look is closed,
   * so a frozen or cut-off agent's machine shows down and its units lost within 2–3 of these. Agents
   * ping every 5 s themselves, so a live agent is never pinged.
   */
  agentLivenessMs: 15_000,
} as const;
export type TransportLimits = { -readonly [K in keyof typeof TRANSPORT_LIMITS]: number };

/**
 * Most characters of a failed hook's output kept with its unit for `steward show-unit` (the agent
 * sends its last 20 lines, control characters removed).
 */
export const HOOK_FAILURE_OUTPUT_MAX_CHARS = 4096;

/** Largest `operator.yaml` the CLI and the controller parse (checked before parsing). */
export const MAX_OPERATOR_YAML_BYTES = 256 * 1024;
/** Deepest nesting of collections in `operator.yaml` (the format itself needs 4). */
export const MAX_OPERATOR_YAML_DEPTH = 64;
/** Most alias uses (`*name`) in `operator.yaml`, and most nodes one alias may expand to. */
export const MAX_OPERATOR_YAML_ALIASES = 64;

/**
 * Default of a controller's operator quota (`operators.quotaBytes` in controller.json): the most
 * bytes all stored operator bundles may take together.
 */
export const DEFAULT_OPERATOR_QUOTA_BYTES = 128 * 1024 * 1024;
/**
 * Default of `operators.reservedBytes`, as a fraction of `operators.quotaBytes`: the part only
 * superusers' uploads may fill (32 MiB of the default quota: more than the largest operator, 16 MiB,
 * takes once stored), so an admin can always upload and refresh.
 */
export const DEFAULT_OPERATOR_RESERVED_FRACTION = 0.25;
/**
 * Default of `operators.modelQuotaBytes`: the most bytes of distinct operators one model's
 * applications may use (an operator several of them use counts once). Superusers are not bound by it.
 */
export const DEFAULT_OPERATOR_MODEL_QUOTA_BYTES = 64 * 1024 * 1024;
/**
 * Default of `operators.userQuotaBytes`: the most bytes the operators one user uploaded may take
 * while they are stored (used by some application, or within their grace period), across models.
 */
export const DEFAULT_OPERATOR_USER_QUOTA_BYTES = 64 * 1024 * 1024;
/**
 * Default of `operators.unusedGraceSeconds`: an operator no application uses is deleted this long
 * after its upload or last use, so an upload followed by a deploy is never collected in between.
 */
export const DEFAULT_UNUSED_OPERATOR_GRACE_SECONDS = 3600;

/**
 * Most bytes one application config value may hold (UTF-8). Hooks pass values to commands as
 * arguments, and Linux refuses a single argument over 128 KiB ("Argument list too long").
 */
export const CONFIG_VALUE_LIMIT_BYTES = 64 * 1024;
/** Most bytes (as JSON) all config values set on one application may hold together. */
export const CONFIG_TOTAL_LIMIT_BYTES = 256 * 1024;

/**
 * Bounds of what one action run (a task) reports, so its record stays small: its message, its
 * `action-log` lines, the end of its output, and its `action-set` results as JSON.
 */
export const TASK_LIMITS = {
  messageChars: 1024,
  logEntries: 100,
  logChars: 1024,
  outputChars: 4096,
  resultsBytes: DATABAG_LIMIT_BYTES,
} as const;

/**
 * Most machines one request may make that start something (local agent processes, cloud instances,
 * VMs): add-machine's count, or the new machines a deploy or add-unit makes for its units. Manual
 * machines only issue credentials and are not counted (a 10,000-agent benchmark registers them at once).
 */
export const MAX_MACHINES_PER_REQUEST = 100;
/** Default of `localMachines.maxPerHost` in controller.json: most local machines (agent processes) on the controller's host. */
export const DEFAULT_LOCAL_MACHINES_PER_HOST = 32;
