/** Size limits that keep any one document bounded (etcd refuses requests over 1.5 MiB). */

/** Most bytes (as JSON) one unit or application databag, or one application's leader data, may hold. */
export const DATABAG_LIMIT_BYTES = 64 * 1024;
