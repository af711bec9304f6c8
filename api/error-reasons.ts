/**
 * Reasons: why a call failed, finer than its code, for callers to branch on (`err.reason ===
 * "upgrade-in-progress"`) instead of on message text. Each travels with its code and says whether
 * the same call may succeed if simply tried again; both cross the wire with the error.
 *
 * Append-only, like the codes: never rename, reuse or remove a reason. Reasons that first lived in
 * `details.reason` keep that name, so answers of older controllers still map onto them.
 */
import type { ErrorCode } from "./errors";

export interface ErrorReasonSpec {
  code: ErrorCode;
  /** The default: a throw site may still say otherwise. */
  retryable: boolean;
  /** What it means, for the reader of the registry (and an `explain` command one day). */
  about: string;
}

export const ErrorReasons = {
  "upgrade-in-progress": { code: "conflict", retryable: false, about: "another upgrade-controller run holds the controller's upgrade record and is still refreshing it" },
  "upgrade-record-changed": { code: "conflict", retryable: true, about: "the upgrade record changed while it was written; write it again" },
  "upgrade-by-migration-stopped": { code: "conflict", retryable: false, about: "upgrade-controller --via-migration could not move a model; running the command again moves the rest" },
  "untrusted-certificate": { code: "unavailable", retryable: false, about: "the replica's certificate is not signed by the CA this client pins" },
  "migrating": { code: "conflict", retryable: false, about: "the model is being migrated away and cannot change until that is over" },
  "migration-running": { code: "conflict", retryable: false, about: "the model already has a migration under way" },
  "not-migrating": { code: "conflict", retryable: false, about: "the model has no migration under way to act on" },
  "migration-handed-over": { code: "conflict", retryable: false, about: "the migration is past its point of no return: the model lives on the target" },
  "migration-refused": { code: "conflict", retryable: false, about: "a migration precheck failed (the model or the target is not ready to move)" },
  "activated": { code: "conflict", retryable: false, about: "the staged migration was already activated: the model lives on this controller" },
  "departing": { code: "conflict", retryable: false, about: "the model is being migrated away from this controller and cannot arrive at the same time" },
  "staged-copy-changed": { code: "conflict", retryable: false, about: "the staged copy of a migration is incomplete or changed; it must be staged again" },
  "staged-machine-mismatch": { code: "conflict", retryable: false, about: "a machine's agent runs other units than the staged model places on it" },
  "not-current-migration": { code: "conflict", retryable: false, about: "an agent reported on a migration that is not the model's current one" },
  "migration-phase-mismatch": { code: "conflict", retryable: false, about: "an agent reported on a phase the migration is not in" },
  "local-machines-need-superuser": { code: "forbidden", retryable: false, about: "only a controller superuser may create local machines: they run on the controller's host, beside its keys" },
  "local-model-write-needs-superuser": { code: "forbidden", retryable: false, about: "write on a model that is local or has local machines is a superuser's: its hooks run on the controller's host" },
  "local-machines-disabled": { code: "forbidden", retryable: false, about: "a controller not bootstrapped locally makes no local machines unless its controller.json turns them on" },
  "local-machines-per-host": { code: "quota-exceeded", retryable: false, about: "the controller's host already runs as many local machines as localMachines.maxPerHost allows" },
  "operator-quota": { code: "quota-exceeded", retryable: false, about: "stored operators would exceed a quota (controller, superusers' reserve, model or user); details.quota names which" },
} as const satisfies Record<string, ErrorReasonSpec>;
export type ErrorReason = keyof typeof ErrorReasons;

export function isErrorReason(value: unknown): value is ErrorReason {
  return typeof value === "string" && Object.prototype.hasOwnProperty.call(ErrorReasons, value);
}
