/**
 * Documents typed by kind: each kind of the registry bound once to its TypeScript type and to the
 * key builder of keys.ts, so that a read returns the kind's type with no cast and a write builds
 * its key and JSON in one place (`get(docs.app, uuid, name)`, `put(docs.app, uuid, name, app)`).
 *
 * Kept beside the registry rather than in it: registry.ts is one homogeneous list the cache, export
 * and import walk at run time, with generic `(model, id)` paths; keys.ts already holds each kind's
 * typed id (relation numbers, sortable task ids, `<relation>/<unit>` scopes). A binding reuses both
 * and adds only the type; test/state-registry.test.ts checks that every binding's keys are its kind's.
 * Reads apply the registry's `upgrade` of a kind whose shape changed, so a model read is a current
 * one whatever an older store held. Sequences and chunks are plain strings, not documents: not here.
 */
import type { BackupRecord, ControllerUpgrade, StatusInfo, WorkloadStatus } from "../../api";
import type { KeyValue, Op, Store } from "../store";
import type {
  ControllerLeaderDoc,
  HaConfig,
  KeeperDoc,
  MemberDoc,
  ReplicaCloudDoc,
  ReplicaDoc,
  SpareDoc,
} from "./cluster-docs";
import type {
  AccessDoc,
  ApplicationDoc,
  ControllerDoc,
  CredentialDoc,
  DataBag,
  LeaderDoc,
  LeaderHandoverDoc,
  MachineDoc,
  MachineInfoDoc,
  MachineInstallDoc,
  MigrationArrivalDoc,
  MigrationDoc,
  MigrationStageDoc,
  ModelDoc,
  OperationDoc,
  OperatorDoc,
  OperatorUploadDoc,
  PresenceDoc,
  QueuedTaskDoc,
  RegistrationDoc,
  RelationDoc,
  ReleaseDoc,
  ReleaseKeysDoc,
  StoreMigrationDoc,
  ReleaseSourceDoc,
  RestoreEpochDoc,
  RevokedTokenDoc,
  StatusHistoryDoc,
  TaskDoc,
  UnitDoc,
  UnitFailureDoc,
  UnitStatusDoc,
  UserDoc,
} from "./documents";
import type { EnrolmentDoc } from "./enrolment-ops";
import type { ImportedRevisionsDoc } from "./imported-revisions";
import type { ReportDoc } from "./migration-reports";
import type { ResponseRecordDoc } from "./request-records";
import { requestKeys } from "./request-records";
import type { StorageDoc, StoragePoolDoc } from "./storage-docs";
import type { SecretDoc, SecretRevisionDoc } from "./secret-docs";
import type { KindName } from "./registry";
import { KIND, keyOf, storedValue } from "./registry";
import { keys } from "./keys";

/** A kind (`N`) bound to its document type `T`, its key from arguments `A`, and (for listed kinds) its prefix from `P`. */
export interface DocKind<A extends unknown[], T, P extends unknown[] = never, N extends KindName = KindName> {
  readonly kind: N;
  readonly key: (...id: A) => string;
  /** Where a range read of several documents of the kind starts (absent for singletons). */
  readonly prefix?: (...within: P) => string;
  /** What is stored, in the current shape (the registry's upgrade when the kind's shape has changed). */
  readonly decode: (stored: unknown) => T;
}

/** The two-step form lets `T` be given while `A` and `P` are inferred from the builders. */
function bind<T>() {
  return <N extends KindName, A extends unknown[], P extends unknown[] = never>(
    kind: N,
    key: (...id: A) => string,
    prefix?: (...within: P) => string,
  ): DocKind<A, T, P, N> => {
    const upgrade = KIND[kind].upgrade;
    return {
      kind,
      key,
      ...(prefix ? { prefix } : {}),
      decode: upgrade ? (stored) => upgrade(stored) as T : (stored) => stored as T,
    };
  };
}

export const docs = {
  // controller-wide
  controller: bind<ControllerDoc>()("controller-info", () => keys.controller),
  /** The key tokens are signed with (a string). */
  tokenKey: bind<string>()("token-key", () => keys.tokenKey),
  user: bind<UserDoc>()("user", keys.user, () => keys.usersPrefix),
  registration: bind<RegistrationDoc>()("registration", keys.registration, () => keys.registrationsPrefix),
  revokedToken: bind<RevokedTokenDoc>()("revoked-token", keys.revokedToken, () => keys.revokedTokensPrefix),
  /** A model's uuid, by the model's name. */
  modelName: bind<string>()("model-name", keys.modelName),
  operator: bind<OperatorDoc>()("operator", keys.operator, () => "/operators/"),
  operatorUpload: bind<OperatorUploadDoc>()("operator-upload", keys.operatorUpload, () => keys.operatorUploads),
  credential: bind<CredentialDoc>()("credential", keys.credential, () => keys.credentialsPrefix),
  enrolment: bind<EnrolmentDoc>()("enrolment", keys.enrolment, () => keys.enrolmentsPrefix),
  restoreEpoch: bind<RestoreEpochDoc>()("restore-epoch", () => keyOf(KIND["restore-epoch"], "")),
  clusterLeader: bind<ControllerLeaderDoc>()("cluster-leader", () => keys.clusterLeader),
  clusterReplica: bind<ReplicaDoc>()(
    "cluster-replica",
    (id: string) => keys.clusterReplicas + id,
    () => keys.clusterReplicas,
  ),
  clusterConfig: bind<HaConfig>()("cluster-config", () => keys.clusterConfig),
  clusterMember: bind<MemberDoc>()("cluster-member", keys.clusterMember, () => keys.clusterMembers),
  clusterSpare: bind<SpareDoc>()("cluster-spare", keys.clusterSpare, () => keys.clusterSpares),
  clusterKeeper: bind<KeeperDoc>()("cluster-keeper", () => keys.clusterKeeper),
  clusterReplicaCloud: bind<ReplicaCloudDoc>()("cluster-replica-cloud", () => keys.clusterReplicaCloud),
  clusterUpgrade: bind<ControllerUpgrade>()("cluster-upgrade", () => keys.clusterUpgrade),
  storeMigration: bind<StoreMigrationDoc>()("store-migration", () => keys.storeMigration),
  migration: bind<MigrationDoc>()("migration", keys.migration),
  migrationReport: bind<ReportDoc>()("migration-report", keys.migrationReport, keys.migrationReports),
  migrationStage: bind<MigrationStageDoc>()("migration-stage", keys.migrationStage, () => keys.migrationStages),
  migrationArrival: bind<MigrationArrivalDoc>()("migration-arrival", keys.migrationArrival),
  /** A request's kept answer (request-records.ts); its steps are plain strings. */
  requestResponse: bind<ResponseRecordDoc>()("request-record", requestKeys.response),
  backup: bind<BackupRecord>()("backup", keys.backup, () => keys.backupsPrefix),
  release: bind<ReleaseDoc>()("release", keys.release, () => keys.releasesPrefix),
  releaseSource: bind<ReleaseSourceDoc>()("release-source", () => keys.releaseSource),
  releaseKeys: bind<ReleaseKeysDoc>()("release-keys", () => keys.releaseKeys),

  // one model's
  model: bind<ModelDoc>()("model", keys.model),
  access: bind<AccessDoc>()("access", keys.access, keys.accessOf),
  machine: bind<MachineDoc>()("machine", keys.machine, keys.machinesOf),
  machineInfo: bind<MachineInfoDoc>()("machine-info", keys.machineInfo),
  machineInstall: bind<MachineInstallDoc>()("machine-install", keys.machineInstall),
  app: bind<ApplicationDoc>()("app", keys.app, keys.appsOf),
  /** A model's units, or (given `app`) one application's. */
  unit: bind<UnitDoc>()("unit", keys.unit, (m: string, app?: string) =>
    app === undefined ? `${keys.modelPrefix(m)}units/` : keys.unitsOf(m, app),
  ),
  /** The application status its leader set (status-set --application). */
  appStatus: bind<StatusInfo<WorkloadStatus>>()("app-status", keys.appStatus),
  unitStatus: bind<UnitStatusDoc>()("unit-status", keys.unitStatus),
  /** Storage instances by id (`data/0`); they outlive their units. */
  storage: bind<StorageDoc>()("storage", keys.storage, keys.storageOf),
  /** Storage pools users made, by name. */
  storagePool: bind<StoragePoolDoc>()("storage-pool", keys.storagePool, keys.storagePoolsOf),
  /** Secrets' metadata by id; their revisions' sealed content apart (never cached). */
  secret: bind<SecretDoc>()("secret", keys.secret, keys.secretsOf),
  secretRevision: bind<SecretRevisionDoc>()("secret-revision", keys.secretRevision, keys.secretRevisionsOf),
  unitFailure: bind<UnitFailureDoc>()("unit-failure", keys.unitFailure),
  /** The ports a unit opened, sorted. */
  ports: bind<string[]>()("ports", keys.ports),
  relation: bind<RelationDoc>()("relation", keys.relation, keys.relationsPrefix),
  scope: bind<{ since: string }>()("scope", keys.scope),
  unitBag: bind<DataBag>()("relation-data", keys.unitBag),
  appBag: bind<DataBag>()("relation-data", keys.appBag),
  leader: bind<LeaderDoc>()("leader", keys.leader),
  leaderData: bind<DataBag>()("leader-data", keys.leaderData),
  leaderHandover: bind<LeaderHandoverDoc>()("leader-handover", keys.leaderHandover),
  taskQueue: bind<QueuedTaskDoc>()("task-queue", keys.taskQueue, keys.taskQueueOf),
  task: bind<TaskDoc>()("task", keys.task, keys.tasksOf),
  operation: bind<OperationDoc>()("operation", keys.operation, keys.operationsOf),
  statusHistory: bind<StatusHistoryDoc>()("status-history", keys.statusHistory),
  presence: bind<PresenceDoc>()("presence", keys.presence),
  importedRevisions: bind<ImportedRevisionsDoc>()(
    "imported-revisions",
    (m: string) => `${keys.modelPrefix(m)}imported-revisions`,
  ),
};

export type PutOp = Extract<Op, { type: "put" }>;

/** Each bound kind's document type, by kind name: what the state cache keeps of a key of that kind. */
export type DocOfKind = {
  [B in keyof typeof docs as (typeof docs)[B]["kind"]]: ReturnType<(typeof docs)[B]["decode"]>;
};
export type BoundKindName = keyof DocOfKind;

const BY_NAME = new Map<KindName, { decode: (stored: unknown) => unknown }>(
  Object.values(docs).map((d): [KindName, { decode: (stored: unknown) => unknown }] => [d.kind, d]),
);

/** A stored value of kind `name` as its bound type, in the current shape (the registry's upgrade applied). */
export function decodeKind<N extends BoundKindName>(name: N, value: string): DocOfKind[N] {
  const d = BY_NAME.get(name);
  if (!d) throw new Error(`documents of kind ${name} are not bound to a type`);
  return d.decode(JSON.parse(value)) as DocOfKind[N];
}

/** A document as read, with the revision it was read at (for the write's compare). */
export interface Read<T> {
  doc: T;
  rev: number;
}

/** The document a key-value holds, in its kind's type and current shape. */
export function decode<T>(d: DocKind<never, T, never>, value: string): T {
  return d.decode(JSON.parse(value));
}

/** A stored key-value read as a document of `d`'s kind. */
export function readKv<T>(d: DocKind<never, T, never>, kv: KeyValue): Read<T> {
  return { doc: decode(d, kv.value), rev: kv.modRevision };
}

/** The document of kind `d` with id `id`, if stored. */
export async function readDoc<A extends unknown[], T>(
  store: Pick<Store, "get">,
  d: DocKind<A, T, never>,
  ...id: A
): Promise<Read<T> | undefined> {
  const kv = await store.get(d.key(...id));
  return kv ? readKv(d, kv) : undefined;
}

/** Every document of kind `d` under its prefix for `within`, in key order, with its key. */
export async function readDocs<P extends unknown[], T>(
  store: Pick<Store, "range">,
  d: DocKind<never, T, P>,
  ...within: P
): Promise<(Read<T> & { key: string })[]> {
  if (!d.prefix) throw new Error(`documents of kind ${d.kind} are not listed by prefix`);
  return (await store.range(d.prefix(...within))).kvs.map((kv) => ({ key: kv.key, ...readKv(d, kv) }));
}

/** The write of document `doc` of kind `d` with id `id` (the last argument is the document). */
export function put<A extends unknown[], T>(d: DocKind<A, T, never>, ...idAndDoc: [...A, NoInfer<T>]): PutOp {
  const doc = idAndDoc[idAndDoc.length - 1];
  const id = idAndDoc.slice(0, -1) as A;
  return { type: "put", key: d.key(...id), value: storedValue(KIND[d.kind], doc) };
}

/** The write of `doc` back where listed document `listed` was read (same kind, so same type). */
export function putBack<T>(listed: { key: string; doc: T }, doc: NoInfer<T>): PutOp {
  return { type: "put", key: listed.key, value: JSON.stringify(doc) };
}

/** The delete of the document of kind `d` with id `id`. */
export function del<A extends unknown[]>(d: DocKind<A, unknown, never>, ...id: A): Op {
  return { type: "delete", key: d.key(...id) };
}
