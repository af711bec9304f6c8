/** Size limits that keep any one document bounded (etcd refuses requests over 1.5 MiB). */

/** Most bytes (as JSON) one unit or application databag, or one application's leader data, may hold. */
export const DATABAG_LIMIT_BYTES = 64 * 1024;

/**
 * Most characters of a failed hook's output kept with its unit for `steward show-unit` (the agent
 * sends its last 20 lines, control characters removed).
 */
export const HOOK_FAILURE_OUTPUT_MAX_CHARS = 4096;
