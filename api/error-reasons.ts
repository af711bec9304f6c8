/**
 * Reasons: why a call failed, finer than its code, for callers to branch on (`err.reason ===
 * "upgrade-in-progress"`) instead of on message text. Each travels with its code and says whether
 * the same call may succeed if simply tried again; both cross the wire with the error.
 *
 * Append-only, like the codes: never rename, reuse or remove a reason. Reasons that first lived in
 * `details.reason` keep that name, so answers of older controllers still map onto them.
 */
import type { ErrorCode } from "./error-codes";

export interface ErrorReasonSpec {
  code: ErrorCode;
  /** The default: a throw site may still say otherwise. */
  retryable: boolean;
  /** What it means, for the reader of the registry (and an `explain` command one day). */
  about: string;
}

export const ErrorReasons = {
  "upgrade-in-progress": {
    code: "conflict",
    retryable: false,
    about: "another upgrade-controller run holds the controller's upgrade record and is still refreshing it",
  },
  "upgrade-record-changed": {
    code: "conflict",
    retryable: true,
    about: "the upgrade record changed while it was written; write it again",
  },
  "upgrade-by-migration-stopped": {
    code: "conflict",
    retryable: false,
    about: "upgrade-controller --via-migration could not move a model; running the command again moves the rest",
  },
  "untrusted-certificate": {
    code: "unavailable",
    retryable: false,
    about: "the replica's certificate is not signed by the CA this client pins",
  },
  "migrating": {
    code: "conflict",
    retryable: false,
    about: "the model is being migrated away and cannot change until that is over",
  },
  "migration-running": { code: "conflict", retryable: false, about: "the model already has a migration under way" },
  "not-migrating": { code: "conflict", retryable: false, about: "the model has no migration under way to act on" },
  "migration-handed-over": {
    code: "conflict",
    retryable: false,
    about: "the migration is past its point of no return: the model lives on the target",
  },
  "migration-refused": {
    code: "conflict",
    retryable: false,
    about: "a migration precheck failed (the model or the target is not ready to move)",
  },
  "activated": {
    code: "conflict",
    retryable: false,
    about: "the staged migration was already activated: the model lives on this controller",
  },
  "departing": {
    code: "conflict",
    retryable: false,
    about: "the model is being migrated away from this controller and cannot arrive at the same time",
  },
  "staged-copy-changed": {
    code: "conflict",
    retryable: false,
    about: "the staged copy of a migration is incomplete or changed; it must be staged again",
  },
  "staged-machine-mismatch": {
    code: "conflict",
    retryable: false,
    about: "a machine's agent runs other units than the staged model places on it",
  },
  "not-current-migration": {
    code: "conflict",
    retryable: false,
    about: "an agent reported on a migration that is not the model's current one",
  },
  "migration-phase-mismatch": {
    code: "conflict",
    retryable: false,
    about: "an agent reported on a phase the migration is not in",
  },
  "local-machines-need-superuser": {
    code: "forbidden",
    retryable: false,
    about: "only a controller superuser may create local machines: they run on the controller's host, beside its keys",
  },
  "local-model-write-needs-superuser": {
    code: "forbidden",
    retryable: false,
    about:
      "write on a model that is local or has local machines is a superuser's: its hooks run on the controller's host",
  },
  "local-machines-disabled": {
    code: "forbidden",
    retryable: false,
    about: "a controller not bootstrapped locally makes no local machines unless its controller.json turns them on",
  },
  "local-machines-per-host": {
    code: "quota-exceeded",
    retryable: false,
    about: "the controller's host already runs as many local machines as localMachines.maxPerHost allows",
  },
  "operator-quota": {
    code: "quota-exceeded",
    retryable: false,
    about:
      "stored operators would exceed a quota (controller, superusers' reserve, model or user); details.quota names which",
  },
  // Why something could not be done now (code unavailable); timeouts and cancellations have codes of their own.
  "not-leader": {
    code: "unavailable",
    retryable: false,
    about:
      "this replica is no longer the controller leader: its leader-only write was refused, the new leader carries on",
  },
  "port-in-use": {
    code: "unavailable",
    retryable: false,
    about: "the port the controller is to listen on is taken by another process",
  },
  "upload-corrupted": {
    code: "unavailable",
    retryable: true,
    about: "a file uploaded to a host arrived with another checksum than was sent; sending it again may work",
  },
  "controller-unreachable": {
    code: "unavailable",
    retryable: true,
    about: "no address of the controller answered at all (no connection, as opposed to an answer that refused)",
  },
  "stream-broken": {
    code: "unavailable",
    retryable: true,
    about: "a long-lived stream from the controller (logs, status) broke or was closed by the controller",
  },
  "connection-lost": {
    code: "unavailable",
    retryable: true,
    about: "the agent's connection to the controller was lost while a call was waiting for its answer",
  },
  "host-unreachable": {
    code: "unavailable",
    retryable: true,
    about: "a host (over SSH, through a jump host, or a migration target) could not be reached",
  },
  "remote-command-failed": {
    code: "unavailable",
    retryable: true,
    about: "a step run on a host over SSH exited with a failure; the message holds the end of its output",
  },
  "operator-download-failed": {
    code: "unavailable",
    retryable: true,
    about: "the agent could not download an operator's content from any controller address",
  },
  "instance-gone": {
    code: "unavailable",
    retryable: false,
    about: "a cloud instance or VM launched for a controller went away before it ran",
  },
  "store-unreachable": {
    code: "unavailable",
    retryable: true,
    about: "the controller's store (etcd) did not answer: a majority of replicas must be up",
  },
  "store-failed": {
    code: "unavailable",
    retryable: false,
    about: "the embedded store failed writing to disk; the controller must be restarted",
  },
  "cut-off-from-majority": {
    code: "unavailable",
    retryable: true,
    about: "this replica is cut off from the majority of replicas; another replica can serve the call",
  },
  "at-capacity": {
    code: "unavailable",
    retryable: true,
    about: "the controller already serves as many of these (streams, consoles, feeds, logins at once) as its limit",
  },
  "console-not-installed": {
    code: "unavailable",
    retryable: false,
    about: "the controller's host has no CLI bundle to run consoles with",
  },
  "address-gone": {
    code: "unavailable",
    retryable: false,
    about:
      "a replica's configured address is no longer one of its host's addresses and none of them reaches the cluster",
  },
  "controller-not-running": {
    code: "unavailable",
    retryable: false,
    about: "no live controller process runs in the given data directory",
  },
  "controller-did-not-start": {
    code: "unavailable",
    retryable: false,
    about: "a controller process exited instead of serving its API",
  },
  "cluster-not-ready": {
    code: "unavailable",
    retryable: true,
    about:
      "the controller cluster is not in a state an upgrade may start from (no quorum, a replica down or joining, the quorum keeper acting, no leader)",
  },
  "replica-version-unknown": {
    code: "unavailable",
    retryable: false,
    about: "a replica does not report its version (it is down, or older than in-place upgrades)",
  },
  "upgrade-stopped": {
    code: "unavailable",
    retryable: false,
    about:
      "upgrade-controller stopped at a replica or before changing any; the message says what to fix before running it again",
  },
  "kubernetes-unreachable": {
    code: "unavailable",
    retryable: true,
    about: "the Kubernetes API server did not answer a read or a change",
  },
  "units-failed": {
    code: "unavailable",
    retryable: false,
    about: "units failed a hook and their model does not retry hooks: waiting longer cannot help",
  },
  "provisioning-failed": {
    code: "unavailable",
    retryable: false,
    about: "a machine could not be provisioned and was removed again",
  },
  // Users and registration (controller/state/user-ops.ts, steward register).
  "registration-refused": {
    code: "unauthorized",
    retryable: false,
    about:
      "a registration string's secret is wrong, or no registration is pending for its user (answered alike, so the answer does not tell which users exist)",
  },
  "registration-expired": {
    code: "unauthorized",
    retryable: false,
    about: "the registration string expired unused: the administrator issues a new one (add-user NAME --reissue)",
  },
  "registration-used": {
    code: "unauthorized",
    retryable: false,
    about: "the registration string was already used: it works once",
  },
  "registration-string-invalid": {
    code: "invalid-request",
    retryable: false,
    about: "the text given to register is not a registration string (damaged, truncated or not one at all)",
  },
  "user-disabled": {
    code: "unauthorized",
    retryable: false,
    about: "the user is disabled (disable-user): no login, registration or token of theirs works until enabled",
  },
  "own-user": {
    code: "forbidden",
    retryable: false,
    about: "a superuser cannot disable or remove their own user",
  },
  "last-superuser": {
    code: "conflict",
    retryable: false,
    about: "the change would leave the controller without an enabled superuser",
  },
  // Storage (issue 32): requests refused before anything is made.
  "storage-not-supported": {
    code: "invalid-request",
    retryable: false,
    about:
      "the model's substrate has no storage pool for what is asked (no storage yet, or not of that kind, or shared)",
  },
  "storage-pool-unknown": {
    code: "invalid-request",
    retryable: false,
    about: "the storage pool asked for is neither one of the model's substrate's pools nor one made in the model",
  },
  "storage-out-of-range": {
    code: "invalid-request",
    retryable: false,
    about:
      "a storage size or count is outside what the operator declares (minimum-size, multiple.range), or a size outside what the pool's volumes can be (an EBS volume type's sizes)",
  },
  "storage-of-another-application": {
    code: "invalid-request",
    retryable: false,
    about: "the storage instance belongs to another application: it can be attached only to that application's units",
  },
  "storage-attached": {
    code: "conflict",
    retryable: false,
    about:
      "the storage instance is attached to a unit (or still being detached or destroyed): it cannot be attached to another",
  },
  "storage-kept-for-unit-number": {
    code: "invalid-request",
    retryable: false,
    about:
      "on a substrate whose units are pods (kubernetes), kept storage is a claim of one pod ordinal: it comes back only to the new unit with its unit number",
  },
  "storage-pool-in-use": {
    code: "conflict",
    retryable: false,
    about: "the storage pool is used by storage instances or by an application's new units: it cannot be removed",
  },
  "storage-pool-attribute": {
    code: "invalid-request",
    retryable: false,
    about: "a storage pool attribute is not one its type takes, or its value is not one the type accepts",
  },
  "storage-below-minimum": {
    code: "conflict",
    retryable: false,
    about: "detaching the storage would leave the unit fewer instances than its operator needs (multiple.range)",
  },
  "storage-on-another-machine": {
    code: "invalid-request",
    retryable: false,
    about:
      "the storage instance lives on one machine (an SSH host's directory or disk): it can be attached only to a unit on that machine",
  },
  "storage-device-unavailable": {
    code: "invalid-request",
    retryable: false,
    about:
      "the machine has no free storage device for the device pool: declare one (add-machine ssh:… --storage-device /dev/…) or choose another machine",
  },
  "machine-holds-storage": {
    code: "conflict",
    retryable: false,
    about:
      "kept storage lives on the machine (an SSH host's directory or disk): removing the machine would lose it; attach it to a unit there or destroy it first",
  },
  "secret-too-large": {
    code: "quota-exceeded",
    retryable: false,
    about:
      "a secret's content may be at most 64 KiB and 64 keys (api/secrets.ts SECRET_LIMITS); split it or store a reference",
  },
  "secret-revisions-full": {
    code: "quota-exceeded",
    retryable: false,
    about:
      "the secret holds as many revisions as it may (SECRET_LIMITS.revisions): remove revisions no consumer tracks (secret-remove --revision, remove-secret --revision) first",
  },
  "secret-not-readable": {
    code: "forbidden",
    retryable: false,
    about:
      "the unit or user may not read the secret: it is neither its owner nor granted it (or its grant ended with its relation)",
  },
  "model-secrets-full": {
    code: "quota-exceeded",
    retryable: false,
    about:
      "the model holds as many secrets as it may (SECRET_LIMITS.perModel): remove secrets it no longer needs first",
  },
  "secret-metadata-full": {
    code: "quota-exceeded",
    retryable: false,
    about:
      "the secret's metadata (its consumers and their labels, grants, revisions) would pass SECRET_LIMITS.metadataBytes: consumers' shorter labels (or none), grants to applications rather than to each unit, or removing old revisions make room",
  },
  "version-incompatible": {
    code: "invalid-request",
    retryable: false,
    about:
      "the client's or agent's Steward version is outside the controller's compatibility window (api/versions.ts versionProblem): the message names both versions and what to upgrade",
  },
  "agent-release-mismatch": {
    code: "invalid-request",
    retryable: false,
    about:
      "an agent release arrived with content other than the hash the controller named for it: the agent refuses to run it and stays on its release",
  },
  "agent-release-download-failed": {
    code: "unavailable",
    retryable: true,
    about: "no controller address answered the agent's download of an agent release: it tries again on the next view",
  },
  "agent-release-unknown": {
    code: "not-found",
    retryable: false,
    about:
      "the controller holds no agent release of that version: it holds the one of its own release and the signed ones of its release source it verified (steward upgrade-model names them, and why a release there was refused)",
  },
  "agent-upgrade-failed": {
    code: "unavailable",
    retryable: false,
    about:
      "a machine's new agent did not come up and report in time and went back to its release: the message says which machine and why; steward upgrade-model run again retries it",
  },
  "agent-upgrade-in-progress": {
    code: "conflict",
    retryable: false,
    about:
      "a machine of the model is still moving to another agent release (another steward upgrade-model may be running): let it end, or finish that upgrade, before moving agents to a third release",
  },
  "store-format-unreadable": {
    code: "unavailable",
    retryable: false,
    about:
      "a controller replica's release cannot read the store's format (the store was migrated by a newer release, or is older than this release reads): the replica refuses to start rather than misread it; run the release the message names",
  },
} as const satisfies Record<string, ErrorReasonSpec>;
export type ErrorReason = keyof typeof ErrorReasons;

export function isErrorReason(value: unknown): value is ErrorReason {
  return typeof value === "string" && Object.prototype.hasOwnProperty.call(ErrorReasons, value);
}
