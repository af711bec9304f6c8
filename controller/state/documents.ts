/** The documents kept in the store, one JSON value per key (layout in keys.ts). */
import type {
  ActionValue,
  AgentStatus,
  AppliedChange,
  Constraints,
  CredentialSubstrate,
  Life,
  MigrationProgress,
  MigrationTarget,
  ModelPlacement,
  ModelSubstrate,
  OperatorMeta,
  StatusInfo,
  StatusLogEntry,
  TaskInfo,
  WorkloadStatus,
} from "../../api";

export type ConfigValues = Record<string, string | number | boolean>;

export interface ControllerDoc {
  uuid: string;
  name: string;
  createdAt: string;
  /** The store's format (api STORE_FORMAT): what the documents' shapes are; a build refuses a newer one. */
  schemaVersion: number;
}
/**
 * `/controller/store-migration`: the leader's migration of the store from format `from` to `to`
 * (store-format.ts), written as it starts (with the controller document's bump to `to`), as it goes and
 * when it is done; a new leader resumes one without `doneAt`.
 */
export interface StoreMigrationDoc {
  from: number;
  to: number;
  startedAt: string;
  /** Documents rewritten so far. */
  rewritten: number;
  /** The replica that last worked on it. */
  replica: string;
  updatedAt: string;
  doneAt?: string;
}
/**
 * `/controller/restore`, written by a restore: the store went back to `revision`. etcd 3.4 cannot
 * bump revisions on restore, so revisions seen after `revision` before the restore may be reused:
 * whoever remembers revisions (agents, caches) checks `clusterId` and resynchronises when it changes.
 */
export interface RestoreEpochDoc {
  /** New at every restore. */
  clusterId: string;
  /** Restores so far in this controller's life. */
  epoch: number;
  /** The backup's revision: history up to it is shared with the store before the restore. */
  revision: number;
  backupId: string;
  restoredAt: string;
  /** Each model's task sequence at the backup (agents must not skip task ids given out again). */
  taskSeqs: Record<string, number>;
}
export interface UserDoc {
  name: string;
  /** Absent for a user added for registration until they register (`steward register`): no password logs in. */
  passwordHash?: string;
  superuser: boolean;
  createdAt: string;
  /** The superuser who added the user (absent for the bootstrap admin and older documents). */
  createdBy?: string;
  /** Epoch ms of the last password change or disabling: tokens issued before it are refused on every replica. */
  tokensValidAfter?: number;
  /** A disabled user cannot log in or register, and their tokens stop working (`steward disable-user`). */
  disabled?: boolean;
}
/**
 * `/registrations/<user>`: the one-time secret of a registration string (`steward add-user`), stored
 * only as its SHA-256. Kept once used (with `usedAt`), so a second try with the same string is told
 * it was used; one per user, so there are never more than users. Goes into backups (the whole store
 * does); not exported with models (controller-wide).
 */
export interface RegistrationDoc {
  user: string;
  /** SHA-256 (hex) of the secret: 32 random bytes, so a fast hash is enough (nothing to guess). */
  secretHash: string;
  createdAt: string;
  createdBy: string;
  /** Epoch ms after which the string is refused. */
  expiresAt: number;
  /** When the string was used; from then on it is refused. */
  usedAt?: string;
}
/** A token revoked by logout, kept until it would have expired anyway. */
export interface RevokedTokenDoc {
  user: string;
  expiresAt: number;
}
export interface ModelDoc {
  uuid: string;
  name: string;
  owner: string;
  life: Life;
  createdAt: string;
  config: { updateStatusInterval: number; automaticallyRetryHooks?: boolean };
  /**
   * Where machines for units placed without `--to` come from: the substrate kind, the stored
   * credential they are made with and the kind's settings. Documents written before held
   * `substrate`, `credential` and one bag named after the kind (`aws: {…}` for an EC2 model):
   * model-placement.ts reads both.
   */
  placement: ModelPlacement;
  /** The default constraints of machines made for it (kinds whose machines are cloud instances). */
  constraints?: Constraints;
}
/**
 * A credential for a substrate: its attributes sealed (security/sealing.ts), never in plain text;
 * `shown` holds what `steward credentials` may show of them.
 */
export interface CredentialDoc {
  name: string;
  substrate: CredentialSubstrate;
  owner: string;
  createdAt: string;
  updatedAt?: string;
  shown: Record<string, string>;
  sealed: string;
  /** Models made with it (some may be gone since): it cannot be removed while one of them is alive. */
  models: string[];
}
export interface OperatorDoc {
  hash: string;
  name: string;
  version: string;
  meta: OperatorMeta;
  bytes: number;
  chunks: number;
  uploadedAt: string;
  /** Last deploy or upgrade to it: unused operators are deleted a grace period after this or the upload. */
  lastUsedAt?: string;
  /** Users who uploaded this content: it counts against each one's operator quota while it is stored. */
  uploadedBy?: string[];
}
/** Chunks being written before their operator document exists; lets the collector find abandoned uploads. */
export interface OperatorUploadDoc {
  hash: string;
  startedAt: string;
}
/**
 * A signed release the controller verified and holds for every replica (controller/releases/): its
 * agent bundle is stored in chunks under `/blobs/releases/<version>/<hash>/`, the document last.
 */
export interface ReleaseDoc {
  version: string;
  /** The content hash of its agent bundle (api/operator.ts bundleHash), checked again on every read. */
  hash: string;
  bytes: number;
  chunks: number;
  /** When its publisher signed it (its manifest's `created`), with which key, and the SHA-256 of the manifest signed. */
  signedAt: string;
  signedBy: string;
  manifest: string;
  heldAt: string;
}
/** The keys trusted to sign releases, as a superuser last set them (`steward release-keys`). */
export interface ReleaseKeysDoc {
  keys: string[];
  changedBy: string;
  changedAt: string;
}
/** What the last look at the release source found wrong: releases refused and why, or why it could not be read. */
export interface ReleaseSourceDoc {
  refused: { version: string; reason: string }[];
  problem?: string;
}
export interface ApplicationDoc {
  name: string;
  operator: { hash: string; name: string; version: string };
  /** 1 at deploy, one more each time the operator's content changes (a refresh); absent means 1 (written before it existed). */
  operatorRevision?: number;
  /** Only the values set by users; defaults come from the operator's metadata. */
  config: ConfigValues;
  life: Life;
  /** Next unit number; unit numbers are never reused within an application (but in kubernetes models, where they are pod ordinals). */
  nextUnit: number;
  createdAt: string;
  /** Constraints of the machines made for its units, merged over the model's. */
  constraints?: Constraints;
  /** What storage each new unit gets, by store name (deploy's `--storage`, or the operator's minimum). */
  storage?: Record<string, StorageDirective>;
  /** Its units' leadership lease in seconds (api/leadership.ts); absent: the controller's. */
  leadershipLeaseSeconds?: number;
}
/** The storage a unit of an application gets of one store (issue 32). */
export interface StorageDirective {
  pool: string;
  /** MiB */
  size: number;
  count: number;
}
export interface UnitDoc {
  name: string;
  app: string;
  machine: string;
  life: Life;
  createdAt: string;
  /** A `steward resolve` for a unit in error, until its agent acts on it. */
  resolve?: "retry" | "no-retry";
}
export interface UnitStatusDoc {
  workload: StatusInfo<WorkloadStatus>;
  agent: StatusInfo<Exclude<AgentStatus, "lost">>;
  version: string;
  /** What its hooks last ran with, as its agent reported going idle. */
  applied?: AppliedChange;
}
/** A unit's last failed hook, as its agent reported it; not cached (only `show-unit` reads it). */
/**
 * An action queued for a unit (`/models/<m>/task-queue/<unit>/<id>`): in its agent's view until the
 * agent reports it finished. The task's full record lives apart (see {@link TaskDoc}).
 */
export interface QueuedTaskDoc {
  id: number;
  action: string;
  params: Record<string, ActionValue>;
  state: "pending" | "running";
}
/** A task's record (`/tasks/<model>/<id>`): not cached, read by show-task and operations. */
export type TaskDoc = TaskInfo;
/** One `steward run` (`/operations/<model>/<id>`): not cached. */
export interface OperationDoc {
  id: number;
  action: string;
  enqueued: string;
  by: string;
  targets: string[];
  tasks: { id: number; unit: string }[];
}
/** A unit's recent status changes, oldest first (at most STATUS_HISTORY_ENTRIES). */
export type StatusHistoryDoc = StatusLogEntry[];
export interface UnitFailureDoc {
  hook: string;
  /** The last lines of the hook's output, control characters removed. */
  output: string;
  /** ISO 8601 time the controller recorded it. */
  since: string;
}
export type Substrate = ModelSubstrate;
/** A placement as a new model is asked for: the kind's settings not yet completed with its defaults. */
export interface PlacementRequest {
  substrate: Substrate;
  credential?: string | undefined;
  settings?: unknown;
}
export interface MachineDoc {
  id: string;
  substrate: Substrate;
  life: Life;
  /** SHA-256 of the agent's credential; absent until one is issued. */
  credentialHash?: string;
  /** The unit this machine was created for; the machine goes when that unit goes and none remain. */
  createdFor?: string;
  createdAt: string;
  /** SSH machines: where, as whom, and the host key pinned (recorded on first use if asked). */
  ssh?: { host: string; port: number; user: string; hostKey: string };
  /** SSH machines: the block devices declared for its units' storage (`add-machine --storage-device`; the `device` pool). */
  storageDevices?: string[];
  /** Cloud machines: what it must have, fixed when it is made (the model's, its application's or its own merged). */
  constraints?: Constraints;
  /** A local machine that came by migration: the directory its agent runs in, under the source controller's (the agent stays where it is). */
  localDir?: string;
  /** The agent release `steward upgrade-model` asked this machine's agent to run (api/agent-protocol.ts). */
  agentRelease?: { version: string; hash: string; attempt: number; trialSeconds: number; requestedAt?: string };
}
/** Progress of installing a machine's agent (SSH machines) or of launching its instance (clouds). */
export interface MachineInstallDoc {
  state: "installing" | "installed" | "failed";
  step: string;
  changed?: boolean;
  bytesUploaded?: number;
  /** The cloud instance the machine is: its id, zone and state as the cloud last reported them. */
  instance?: InstanceRecord;
  /** What the instance has, as the substrate said when it started it. */
  hardware?: Constraints;
  at: string;
}
export interface InstanceRecord {
  id: string;
  zone?: string;
  state: string;
  address?: string;
}
export interface MachineInfoDoc {
  hostname: string;
  address: string;
  os: string;
  agentVersion: string;
  firstSeen: string;
  /** The last agent release the agent went back from, and why. */
  agentUpgradeFailure?: { version: string; attempt: number; message: string };
}
export interface AccessDoc {
  access: "read" | "write" | "admin";
}
/** Presence of an agent connection, bound to the lease of the replica that holds the connection. */
export interface PresenceDoc {
  replica: string;
  since: string;
  /** The connection that wrote it (of two of one machine's connections, only its own deletes it). */
  conn?: string;
}

export interface RelationEndpoint {
  app: string;
  endpoint: string;
  role: "provider" | "requirer" | "peer";
  interface: string;
}
export interface RelationDoc {
  id: number;
  /** Sorted `app:endpoint` names, space-separated: what makes two integrations the same. */
  key: string;
  /** Two endpoints, or one for a peer relation. */
  endpoints: RelationEndpoint[];
  life: Life;
  createdAt: string;
}
/** A relation or leader databag. */
export type DataBag = Record<string, string>;
export interface LeaderDoc {
  unit: string;
  since: string;
  lease: string;
  /** The TTL `lease` was granted with (absent: written before it was recorded, the controller's then). */
  leaseSeconds?: number;
  /**
   * A shorter application lease was asked for: renewals promise the shorter one from then on, and
   * `lease` is swapped for a shorter one at this time, once every promise of the longer one has run out.
   */
  shrinkAt?: string;
}
/** leader-resign's hand-over (leadership-ops.ts): for one lease period only `to` may claim, or anyone but `from`. */
export interface LeaderHandoverDoc {
  from: string;
  to?: string;
  at: string;
}

/**
 * A model's migration, kept by the source controller (`/migrations/<model-uuid>`): the master's
 * cursor, so a new leader resumes where the last one was, and after DONE what redirects clients.
 */
export interface MigrationDoc extends MigrationProgress {
  id: string;
  model: string;
  modelName: string;
  target: MigrationTarget;
  /** How the source logs in to the target (`{user, password?, token?}` as JSON), sealed; gone once over. */
  sealedAuth?: string;
  /** Set before the target is first asked to activate: from then on only the target can say whether the model moved. */
  activateAttempted?: boolean;
  /** How long agents have to report in each phase, in seconds. */
  agentWaitSeconds: number;
  /** Set at DONE: the users who had access to the model, the only ones (with superusers) told where it went. */
  usersWithAccess?: string[];
  /** Set at DONE: each machine's agent credential hash, cut short (KEPT_HASH_DIGITS), so only its agents are told where it went. */
  agentCredentials?: Record<string, string>;
}
/** A staged import on the target (`/migration-stages/<migration-id>`); its export is in chunks under `/blobs/`. */
export interface MigrationStageDoc {
  id: string;
  model: string;
  modelName: string;
  source: string;
  chunks: number;
  bytes: number;
  sha256: string;
  createdAt: string;
  heartbeatAt: string;
}
/** On the target: the model `model` arrived by migration `id` (an activation asked again is answered, not redone). */
export interface MigrationArrivalDoc {
  id: string;
  /** The source controller's uuid: a cloud model's instances are tagged with it until the target adopts them. */
  source: string;
  /** The source controller's name, as its export gave it (show-migration on this controller names it). */
  sourceName?: string;
  /** When the source staged the model here (the migration's IMPORT). */
  stagedAt?: string;
  at: string;
  /** When this controller took over the model's cloud instances (cloud models only). */
  adoptedAt?: string;
}

/** How long a leadership claim lasts; agents renew at half of it, so leadership is guaranteed for 30 s. */
export const DEFAULT_LEADERSHIP_LEASE_SECONDS = 60;
export const DEFAULT_UPDATE_STATUS_INTERVAL = 300;

/** A model's settings with the defaults filled in (for what was not given, or stored before a setting existed). */
export function modelSettings(config: Partial<ModelDoc["config"]> = {}): Required<ModelDoc["config"]> {
  return {
    updateStatusInterval: config.updateStatusInterval ?? DEFAULT_UPDATE_STATUS_INTERVAL,
    automaticallyRetryHooks: config.automaticallyRetryHooks ?? true,
  };
}
