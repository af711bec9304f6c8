/**
 * The REST API's answer shapes and header names: what the controller sends and every client reads
 * (the Node {@link ControllerClient} and the dashboard alike). Browser-safe: no Node imports.
 */
import type { ActionSpec } from "./actions";
import type { ConfigOption } from "./config-values";
import type { Registration } from "./registration";
import type { StorageDirectiveView } from "./storage";
import type { ReplicaSettingsInputByKind, ReplicaSubstrate } from "./substrate-kinds";
import type { CredentialSubstrate } from "./substrates";

export interface ModelSettings {
  updateStatusInterval: number;
  automaticallyRetryHooks: boolean;
}
export interface ModelSummary {
  name: string;
  uuid: string;
  life: string;
  owner: string;
  applications: number;
  machines: number;
  units: number;
  access: string;
  config: ModelSettings;
  /** Where the model's machines come from: its substrate kind (one of MODEL_SUBSTRATES, substrate-kinds.ts). */
  substrate: string;
  /** The stored credential its machines are made with. */
  credential?: string;
  /** The default constraints of its machines, in Juju's syntax. */
  constraints?: string;
  /** Its substrate kind's settings (a kubernetes model's namespace, an aws model's region, …): no secret is among them. */
  settings: Record<string, unknown>;
  /** Its placement in its kind's words (api/substrate-kinds.ts `describe`): "eu-west-1, t3.small", "namespace shop". */
  where: string;
}
/** A stored credential as the API shows it: no secret attribute, masked identifiers. */
export interface CredentialSummary {
  name: string;
  substrate: CredentialSubstrate;
  owner: string;
  createdAt: string;
  updatedAt?: string;
  attributes: Record<string, string>;
  /** Live models made with it. */
  models: string[];
}
/** An agent release the controller holds: its own release's, or a signed one from its release source. */
export interface AgentReleaseInfo {
  version: string;
  /** Content hash of its files (api/operator.ts bundleHash), what agents check the download against. */
  hash: string;
  /** It is the release the controller itself runs. */
  own: boolean;
}

/** A release in the controller's release source that it will not use, and why (its signature or files). */
export interface RefusedRelease {
  version: string;
  reason: string;
}

/** The keys a controller trusts to sign releases: controller.json's, until a superuser changed them (`changed`). */
export interface ReleaseKeys {
  keys: string[];
  changed?: { by: string; at: string };
}

/** What `POST /v1/models/:model/agent-upgrade` set: each machine's new attempt at release `to`. */
export interface AgentUpgradeStarted {
  to: string;
  hash: string;
  machines: { id: string; attempt: number }[];
}

export interface MachineInfo {
  id: string;
  substrate: string;
  life: string;
  address: string;
  hostname: string;
  status: string;
  message: string;
  units: string[];
  /** SSH machines: the last install's outcome. */
  install?: { state: "installing" | "installed" | "failed"; step: string; changed?: boolean; bytesUploaded?: number };
  /** Cloud machines: the instance, as the cloud last reported it. */
  instance?: { id: string; zone?: string; state: string };
  /** What it was asked to have (Juju's syntax: `cores=2 mem=4G`), the model's and its application's merged. */
  constraints?: string;
  /** What it has, where the substrate says (`arch=amd64 cores=2 mem=4G instance-type=t3.medium`). */
  hardware?: string;
}
export interface SshMachineRequest {
  host: string;
  port?: number;
  user: string;
  privateKey: string;
  passphrase?: string;
  hostKey?: string;
  trustOnFirstUse?: boolean;
  jump?: { host: string; port?: number; user: string; hostKey: string };
}
export interface ApplicationInfo {
  name: string;
  operator: { hash: string; name: string; version: string };
  config: Record<string, string | number | boolean>;
  units: string[];
  life: string;
  configSchema: Record<string, ConfigOption>;
  /** The operator's actions (`steward run`), by name. */
  actions: Record<string, ActionSpec>;
  /** Constraints for the machines made for its units (Juju's syntax). */
  constraints?: string;
  /** What each new unit gets of each store its operator declares (absent: it declares none). */
  storage?: Record<string, StorageDirectiveView>;
  /** Its own leadership lease in seconds (absent: the controller's, 60 s unless configured). */
  leadershipLeaseSeconds?: number;
}
/** What every user sees of the controller (`GET /v1/controller`): who it is, and how to reach and recognise it. */
export interface ControllerOverview {
  name: string;
  uuid: string;
  version: string;
  addresses: string[];
  /** SHA-256 fingerprint of the CA clients pin (`AB:CD:…`, as `openssl x509 -fingerprint -sha256` prints it). */
  caFingerprint: string;
  /** Signed releases it holds that are newer than its own version, oldest first (nothing is applied on its own). */
  available?: string[];
}
/** What a superuser sees: the overview and the cluster's layout. */
export interface ControllerInfo extends ControllerOverview {
  /** Replicas that are up now (their presence in the store). */
  replicas: {
    id: string;
    addresses: string[];
    leader: boolean;
    since: string;
    version?: string;
    /** The newest store format the replica's release reads (absent: a release before store formats, 1). */
    storeFormat?: number;
  }[];
  cluster: ClusterInfo;
  /** The store's format, and its migration to a newer one when one ran (absent from controllers before store formats). */
  store?: StoreFormatInfo;
}
/**
 * The format of a controller's store (api STORE_FORMAT): a release that writes a newer one migrates
 * the store in place once every replica runs it (its leader rewrites what changed shape).
 */
export interface StoreFormatInfo {
  format: number;
  migration?: {
    from: number;
    to: number;
    /** Absent while it waits. */
    startedAt?: string;
    /** Documents rewritten so far. */
    rewritten: number;
    doneAt?: string;
    /** Set while it has not started: why (a replica still runs a release that does not read the new format). */
    waitsFor?: string;
  };
}
/** The store's format and its migration: done, under way, or waiting for a replica. */
export function storeFormatLine(store: StoreFormatInfo): string {
  const m = store.migration;
  if (!m) return `Store format ${store.format}`;
  if (m.waitsFor) return `Store format ${store.format}; its migration to ${m.to} waits: ${m.waitsFor}`;
  return m.doneAt
    ? `Store format ${store.format}: migrated from ${m.from} at ${m.doneAt}, ${m.rewritten} documents rewritten`
    : `Store format ${store.format}: migrating from ${m.from} since ${m.startedAt}, ${m.rewritten} documents rewritten so far`;
}
/** Whether a `GET /v1/controller` answer holds the cluster's layout (superusers' answers do). */
export function showsCluster(info: ControllerOverview): info is ControllerInfo {
  return "cluster" in info && "replicas" in info;
}
/**
 * An in-place (patch) upgrade of the controller, as `steward upgrade-controller` records it in the
 * store while it works replica by replica: `show-controller` shows it, and a re-run resumes from it.
 */
export interface ControllerUpgrade {
  /** Which `upgrade-controller` run writes it: another run may take over only once it is stale. */
  run: string;
  from: string;
  to: string;
  /** `running`: under way (or its runner died: a re-run resumes); `failed`: stopped at a replica, which was rolled back; `done`. */
  state: "running" | "failed" | "done";
  startedAt: string;
  /** Every write refreshes it: a `running` record not updated for a while is a run that died. */
  updatedAt: string;
  finishedAt?: string;
  /** In upgrade order (followers first, the leader last). */
  replicas: {
    name: string;
    host: string;
    version: string;
    state: "pending" | "upgrading" | "upgraded" | "rolled-back" | "failed";
    at?: string;
    message?: string;
  }[];
  message: string;
}
/** A `running` upgrade record not written for this long belongs to a run that died: another run may resume it. */
export const UPGRADE_RECORD_STALE_MS = 60_000;
/** What `steward show-controller` shows: membership, votes, health and the quorum keeper. */
export interface ClusterInfo {
  store: "embedded" | "etcd";
  /** Whether the store has a majority (false: the API can read but not change anything). */
  quorum: boolean;
  wantsVote: number;
  replaceAfterSeconds: number;
  maxReplacementsPerHour: number;
  members: {
    name: string;
    host: string;
    addresses: string[];
    state: string;
    hasVote: boolean;
    learner: boolean;
    present: boolean;
    leader: boolean;
    etcdLeader: boolean;
    reason?: string;
    /** A replica the quorum keeper launched on a cloud: its instance. */
    instance?: { id: string; zone?: string };
    /** The Steward version the replica runs (from its presence; absent while it is down). */
    version?: string;
  }[];
  spares: { host: string; user: string; hostKey: string; failed?: string }[];
  /** Where the keeper launches replicas when no spare host is left. */
  /** `credential` absent: the controller's own pods' identity (Kubernetes: their ServiceAccount). */
  replicaCloud?: { substrate: string; credential?: string; summary: string };
  keeper: { state: string; message: string; history: { at: string; message: string }[] };
  /** Set when the answer comes from this replica alone (no quorum): why. */
  degraded?: string;
  /** The last in-place upgrade (`steward upgrade-controller`), if any. */
  upgrade?: ControllerUpgrade;
  /** etcd's raft term as this replica's member sees it: it grows by one (or more) with every etcd election. */
  raftTerm?: number;
}
/** What `debugLog` asks for (see `GET /v1/models/<model>/logs`). */
export interface DebugLogQuery {
  include?: string[];
  exclude?: string[];
  level?: string;
  /** Newest records shown first. @default 10 */
  lines?: number;
  /** All kept records first, whatever `lines` says. */
  replay?: boolean;
  /** Keep following new records. @default true */
  tail?: boolean;
}
export interface SpareHost {
  host: string;
  port?: number;
  user: string;
  privateKey: string;
  passphrase?: string;
  hostKey?: string;
  trustOnFirstUse?: boolean;
}

/**
 * The name every controller certificate carries, so clients verify the CA-signed identity whatever
 * address (which may change in HA) they dialled.
 */
export const CONTROLLER_TLS_NAME = "steward-controller";

/** Every API answer names the replicas' current addresses here, so clients follow replicas that move. */
export const ADDRESSES_HEADER = "steward-addresses";
/**
 * A mutating request carries one id across all its tries (other replicas, after a timeout or a
 * 503); the controller answers a retry with what the first try did. See controller/server/idempotency.ts.
 */
export const REQUEST_ID_HEADER = "steward-request-id";
/**
 * Clients and agents name their Steward version on every request, and the controller its own on every
 * answer, so that each side can refuse a peer outside the compatibility window (api/versions.ts).
 */
export const VERSION_HEADER = "steward-version";
/** The one-time token a cloud instance enrols its agent with (`POST /v1/enrol`). */
export const ENROLMENT_HEADER = "steward-enrolment";
/** Set on an answer the controller recorded for an earlier try of the same request. */
export const REPLAYED_HEADER = "steward-replayed";
/** The methods that change something: they carry a request id. */
export const MUTATING_METHODS: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** The dashboard's session (`POST /v1/session`, `GET /v1/session`); the token itself stays in an HttpOnly cookie. */
export interface SessionInfo {
  user: string;
  superuser: boolean;
  /** ISO 8601. */
  expiresAt: string;
  /** Sent back as the `x-steward-csrf` header on every change the page makes. */
  csrf: string;
  /** The controller's name. */
  controller: string;
}
/** A user as `steward users` and `show-user` show them. */
export interface UserInfo {
  name: string;
  superuser: boolean;
  disabled: boolean;
  /** ISO 8601. */
  createdAt: string;
  createdBy?: string;
  /**
   * `registered`: has a password; `pending`: added for registration, string not used yet; `expired`:
   * the string expired unused (a superuser can reissue one).
   */
  state: "registered" | "pending" | "expired";
  /** ISO 8601, for a pending or expired registration. */
  registrationExpiresAt?: string;
  /** The models the user has access to (show-user only). */
  models?: { name: string; access: "read" | "write" | "admin" }[];
}
/** What `add-user` without a password gets: the parts of the registration string (api/registration.ts). */
export interface CreatedUser {
  name: string;
  registration?: Registration;
}
/** The answer to a registration: a token, as a login's, and the controller's name. */
export interface Registered {
  token: string;
  expiresAt: string;
  user: string;
  controller: string;
}

/** The header a dashboard write carries its session's CSRF token in. */
export const CSRF_HEADER = "x-steward-csrf";

/** A backup kept on the controller (`steward backups`; controller/backup/kept-backups.ts). */
export interface BackupRecord {
  id: string;
  createdAt: string;
  controller: { uuid: string; name: string };
  revision: number;
  bytes: number;
  chunks: number;
  keys: number;
  models: number;
  /** SHA-256 of the file, hex: checked by the client after download. */
  sha256: string;
}

/**
 * Where the quorum keeper launches replicas when no spare host is left, as a client sends it: a
 * placement like a model's (api/substrate-kinds.ts ReplicaPlacement), whose settings may leave out
 * what the controller fills in by default. Written out, not inferred from the request schema,
 * so the published declarations need no zod (api/schemas.ts checks that the two agree).
 */
export type ReplicaCloudSetting = {
  [K in ReplicaSubstrate]: {
    substrate: K;
    credential?: string;
    settings: ReplicaSettingsInputByKind[K];
  };
}[ReplicaSubstrate];
