/** Size limits that keep any one document bounded (etcd refuses requests over 1.5 MiB). */

/** Most bytes (as JSON) one unit or application databag, or one application's leader data, may hold. */
export const DATABAG_LIMIT_BYTES = 64 * 1024;

/**
 * Most bytes one application config value may hold (UTF-8). Hooks pass values to commands as
 * arguments, and Linux refuses a single argument over 128 KiB ("Argument list too long").
 */
export const CONFIG_VALUE_LIMIT_BYTES = 64 * 1024;
/** Most bytes (as JSON) all config values set on one application may hold together. */
export const CONFIG_TOTAL_LIMIT_BYTES = 256 * 1024;
