/**
 * The store's keys, built from the registry of document kinds (registry.ts), which holds the
 * layout. Operator content lives under `/blobs/`, which the state cache never loads.
 */
import type { KindName } from "./registry";
import { KIND, KINDS, keyOf, prefixOf } from "./registry";

const k = (kind: KindName, model: string, id = ""): string => keyOf(KIND[kind], model, id);
const p = (kind: KindName, model: string): string => prefixOf(KIND[kind], model);

export const keys = {
  controller: k("controller-info", ""),
  tokenKey: k("token-key", ""),
  user: (name: string) => k("user", "", name),
  usersPrefix: p("user", ""),
  revokedToken: (id: string) => k("revoked-token", "", id),
  revokedTokensPrefix: p("revoked-token", ""),
  /** A user's pending (or used) registration string, by user name (not cached). */
  registration: (user: string) => k("registration", "", user),
  registrationsPrefix: p("registration", ""),
  modelName: (name: string) => k("model-name", "", name),
  model: (uuid: string) => k("model", uuid),
  modelPrefix: (uuid: string) => `${k("model", uuid)}/`,
  app: (m: string, app: string) => k("app", m, app),
  appsOf: (m: string) => p("app", m),
  unit: (m: string, unit: string) => k("unit", m, unit),
  unitsOf: (m: string, app: string) => `${k("unit", m, app)}/`,
  unitStatus: (m: string, unit: string) => k("unit-status", m, unit),
  /** The last failed hook's output (kept apart from the status, which every status read serves). */
  unitFailure: (m: string, unit: string) => k("unit-failure", m, unit),
  unitHookState: (m: string, unit: string) => k("unit-hook-state", m, unit),
  machine: (m: string, id: string) => k("machine", m, id),
  machinesOf: (m: string) => p("machine", m),
  machineInfo: (m: string, id: string) => k("machine-info", m, id),
  machineSeq: (m: string) => k("machine-seq", m),
  machineInstall: (m: string, id: string) => k("machine-install", m, id),
  relationSeq: (m: string) => k("relation-seq", m),
  relation: (m: string, id: number) => k("relation", m, String(id)),
  relationsPrefix: (m: string) => p("relation", m),
  scope: (m: string, id: number, unit: string) => k("scope", m, `${id}/${unit}`),
  scopePrefix: (m: string, id: number) => `${p("scope", m)}${id}/`,
  unitBag: (m: string, id: number, unit: string) => k("relation-data", m, `${id}/unit/${unit}`),
  appBag: (m: string, id: number, app: string) => k("relation-data", m, `${id}/app/${app}`),
  relationDataPrefix: (m: string, id: number) => `${p("relation-data", m)}${id}/`,
  leader: (m: string, app: string) => k("leader", m, app),
  leaderData: (m: string, app: string) => k("leader-data", m, app),
  leaderHandover: (m: string, app: string) => k("leader-handover", m, app),
  ports: (m: string, unit: string) => k("ports", m, unit),
  /** Task and operation ids share one sequence per model, as in Juju. */
  taskSeq: (m: string) => k("task-seq", m),
  /** Storage ids (`data/<n>`) are numbered model-wide, as in Juju. */
  storageSeq: (m: string) => k("storage-seq", m),
  storage: (m: string, id: string) => k("storage", m, id),
  storageOf: (m: string) => p("storage", m),
  storagePool: (m: string, name: string) => k("storage-pool", m, name),
  storagePoolsOf: (m: string) => p("storage-pool", m),
  operatorSeq: (m: string) => k("operator-seq", m),
  /** Secrets by id (the 20 characters of `secret:<id>`), and each revision's sealed content by `<id>/<revision>`. */
  secret: (m: string, id: string) => k("secret", m, id),
  secretsOf: (m: string) => p("secret", m),
  secretRevision: (m: string, id: string, revision: number) => k("secret-revision", m, `${id}/${revision}`),
  secretRevisionsOf: (m: string, id: string) => `${p("secret-revision", m)}${id}/`,
  /** Written by every secret addition, rename and relabel of the model: they are checked one at a time. */
  secretSeq: (m: string) => k("secret-seq", m),
  taskQueue: (m: string, unit: string, id: number) => k("task-queue", m, `${unit}/${sortableId(id)}`),
  taskQueueOf: (m: string, unit: string) => `${p("task-queue", m)}${unit}/`,
  /** Not cached: task records carry results and logs that only show-task reads. */
  task: (m: string, id: number) => k("task", m, sortableId(id)),
  tasksOf: (m: string) => p("task", m),
  operation: (m: string, id: number) => k("operation", m, sortableId(id)),
  operationsOf: (m: string) => p("operation", m),
  /** Not cached: a unit's recent status changes (show-status-log), kept out of the status every read serves. */
  statusHistory: (m: string, unit: string) => k("status-history", m, unit),
  statusHistoryOf: (m: string) => p("status-history", m),
  appStatus: (m: string, app: string) => k("app-status", m, app),
  access: (m: string, user: string) => k("access", m, user),
  accessOf: (m: string) => p("access", m),
  presence: (m: string, machine: string) => k("presence", m, machine),
  presencePrefix: (m: string) => p("presence", m),
  operator: (hash: string) => k("operator", "", hash),
  operatorChunk: (hash: string, i: number) => k("operator-chunk", "", `${hash}/${i}`),
  operatorChunks: (hash: string) => `${p("operator-chunk", "")}${hash}/`,
  operatorUpload: (hash: string) => k("operator-upload", "", hash),
  operatorUploads: p("operator-upload", ""),
  operatorQuotaSeq: k("operator-quota-seq", ""),
  /** Not cached: read only when a credential is listed or used. */
  credential: (name: string) => k("credential", "", name),
  credentialsPrefix: p("credential", ""),
  /** One-time enrolment tokens of cloud machines, by the token's SHA-256 (not cached). */
  enrolment: (tokenHash: string) => k("enrolment", "", tokenHash),
  enrolmentsPrefix: p("enrolment", ""),
  /** A model's migration, by the model's uuid (the source's). */
  migration: (model: string) => k("migration", "", model),
  migrationReport: (model: string, id: string, phase: string, machine: string) =>
    k("migration-report", "", `${model}/${id}/${phase}/${machine}`),
  migrationReports: (model: string, id: string, phase: string) =>
    `${p("migration-report", "")}${model}/${id}/${phase}/`,
  migrationReportsOf: (model: string) => `${p("migration-report", "")}${model}/`,
  /** An import staged on the target, by migration id, and its chunks. */
  migrationStage: (id: string) => k("migration-stage", "", id),
  migrationStages: p("migration-stage", ""),
  migrationStageChunk: (id: string, i: number) => k("migration-stage-chunk", "", `${id}/${i}`),
  migrationStageChunks: (id: string) => `${p("migration-stage-chunk", "")}${id}/`,
  migrationArrival: (model: string) => k("migration-arrival", "", model),
  /** Idempotency records, by request id (request-records.ts). */
  requestsPrefix: p("request-record", ""),
  /** Kept backups and their chunks (controller/backup/kept-backups.ts). */
  backupsPrefix: p("backup", ""),
  backup: (id: string) => k("backup", "", id),
  backupChunksPrefix: p("backup-chunk", ""),
  /** Releases held (controller/releases/), by version; their bundle's chunks by version and content hash. */
  release: (version: string) => k("release", "", version),
  releasesPrefix: p("release", ""),
  releaseChunk: (version: string, hash: string, i: number) => k("release-chunk", "", `${version}/${hash}/${i}`),
  releaseChunks: (version: string, hash: string) => `${p("release-chunk", "")}${version}/${hash}/`,
  /** What the last look at the release source refused, or why it could not be read. */
  releaseSource: k("release-source", ""),
  releaseKeys: k("release-keys", ""),
  storeMigration: k("store-migration", ""),
  /** The controller leader's campaign key (cluster/leader-election.ts). */
  clusterLeader: k("cluster-leader", ""),
  /** Each replica's lease-bound presence, by replica id (cluster/replicas.ts). */
  clusterReplicas: p("cluster-replica", ""),
  clusterConfig: k("cluster-config", ""),
  clusterMembers: p("cluster-member", ""),
  clusterMember: (name: string) => k("cluster-member", "", name),
  clusterSpares: p("cluster-spare", ""),
  clusterSpare: (host: string) => k("cluster-spare", "", host),
  clusterKeeper: k("cluster-keeper", ""),
  clusterReplicaCloud: k("cluster-replica-cloud", ""),
  clusterUpgrade: k("cluster-upgrade", ""),
};

/** Ids padded so that keys sort as their numbers do. */
function sortableId(id: number): string {
  return String(id).padStart(10, "0");
}

/** Prefixes the state cache follows: the top folder of every kind it keeps. */
export const CACHED_PREFIXES = [...new Set(KINDS.filter((kd) => kd.cached).map((kd) => `/${kd.path[0] as string}/`))];

/** Operator bundles are stored in chunks well under etcd's 1.5 MiB request limit. */
export const CHUNK_BYTES = 512 * 1024;
