/** Size limits that keep any one document bounded (etcd refuses requests over 1.5 MiB). */

/** Most bytes (as JSON) one unit or application databag, or one application's leader data, may hold. */
export const DATABAG_LIMIT_BYTES = 64 * 1024;

/** Largest `operator.yaml` the CLI and the controller parse (checked before parsing). */
export const MAX_OPERATOR_YAML_BYTES = 256 * 1024;
/** Deepest nesting of collections in `operator.yaml` (the format itself needs 4). */
export const MAX_OPERATOR_YAML_DEPTH = 64;
/** Most alias uses (`*name`) in `operator.yaml`, and most nodes one alias may expand to. */
export const MAX_OPERATOR_YAML_ALIASES = 64;

/**
 * Default of a controller's operator quota (`operators.quotaBytes` in controller.json): the most
 * bytes all stored operator bundles may take together. The embedded store holds them in memory.
 */
export const DEFAULT_OPERATOR_QUOTA_BYTES = 128 * 1024 * 1024;
/**
 * Default of `operators.unusedGraceSeconds`: an operator no application uses is deleted this long
 * after its upload or last use, so an upload followed by a deploy is never collected in between.
 */
export const DEFAULT_UNUSED_OPERATOR_GRACE_SECONDS = 3600;
