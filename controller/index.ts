/**
 * @module controller
 * The Steward controller: store port and backends, domain state, the HTTPS/WebSocket API and the
 * substrates that start machines.
 */
export * from "./store";
export { CLUSTER_CHANGED, StateCache } from "./state";
// Only here, not in store/index.ts: the running controller loads the etcd client on demand.
export { EtcdStore } from "./store/etcd";
export { Controller } from "./controller";
export type { ControllerOptions, ControllerState } from "./controller";
export type { FailedLoginLimiterOptions } from "./server/failed-login-limiter";
// For the test of how login limits group client addresses.
export { addressPrefix } from "./server/address-prefix";
export { MAX_TOKEN_LIFETIME_MS, credentialMatches, signToken, verifyToken } from "./security/credentials";
export { Sealer } from "./security/sealing";
export {
  TransferSealer,
  migrationKeyPair,
  sealerForPassphrase,
  sealerFromPassphrase,
  sealerFromPrivateKey,
  sealerToPublicKey,
} from "./security/transfer-sealing";
export type { TransferSealing } from "./security/transfer-sealing";
export { sendText } from "./server/ws-frames";
// For tests of the wire error: the handler every route's errors go through.
export { installErrorHandling } from "./server/http-api";
// For test doubles of outside services (a fake EC2 endpoint) that need certificates.
export { createCertificateAuthority, issueServerCertificate } from "./security/pki";
export { initControllerDir } from "./bootstrap";
export type { InitControllerOptions } from "./bootstrap";
export {
  AGENT_BUNDLE,
  AGENT_NODE_FLAGS,
  CONTROLLER_BUNDLE,
  CONTROLLER_NODE_FLAGS,
  DEFAULT_AGENT_IMAGE,
  controllerFiles,
  dataFiles,
  readControllerConfig,
  releaseSourceOf,
} from "./config";
export type { ControllerConfig } from "./config";
// Signed releases (releases/), and the release source a controller serves agent releases from.
export {
  ReleaseRefused,
  generateReleaseKey,
  releaseKeyProblem,
  signManifest,
  signRelease,
  verifyRelease,
} from "./releases";
export { AgentReleases } from "./server/agent-releases";
export { ReleaseSource } from "./releases/release-source";
export { ReleaseOps } from "./state";
// Kept here for tests and benchmarks; the CLI and the provider take them from substrates.
import { kubernetes } from "../substrates";
export {
  CONTROLLER_ENV_VARIABLES,
  controllerEntry,
  controllerEnvironment,
  freePort,
  portFree,
  readPidFile,
  removeLocalController,
  startLocalController,
  stopProcess,
} from "../substrates";
export { Supervisor } from "./supervisor";
export type { SupervisorOptions } from "./supervisor";
export {
  CloudReplicaHosts,
  LeaderElection,
  QuorumKeeper,
  REPLICAS_PREFIX,
  clusterAddresses,
  replicaDataFiles,
} from "./cluster";
export type { LeaderElectionOptions } from "./cluster";
// The quorum keeper's pure decision, for its table tests.
export { decide as decideQuorumAction, lostCandidates, observeGone } from "./cluster/quorum-decision";
export type { KeeperAction, KeeperObservation, KeeperView, NamedMember } from "./cluster/quorum-decision";
// The worker kit (workers/), for its tests.
export { Reconciler, WorkerGroup, aborted, leaderScoped, periodic, service, sleep, withCleanup } from "./workers";
export type { Leadership, ReconcilerOptions, Worker } from "./workers";
export { OperatorCollector } from "./operator-collector";
// What the kubernetes provisioner needs of a cluster's user (tests grant exactly this).
/** What a model's cluster user must be allowed in its namespace (substrates/kubernetes/cluster-checks.ts). */
export const MODEL_NAMESPACE_RIGHTS = kubernetes.MODEL_NAMESPACE_RIGHTS;
export {
  AgentViewRound,
  EnrolmentOps,
  RequestScope,
  StateOps,
  buildAgentView,
  keys,
  machineStorageWork,
  pendingMachineWork,
  pendingVolumeWork,
  requestKeys,
  runInRequest,
  storageDirectives,
} from "./state";
export type { ApplicationDoc, MachineDoc, ModelDoc, OperatorDoc, RelationDoc, StorageDoc, UnitDoc } from "./state";
// The registry of document kinds (state/registry.ts), for tests and the export format's tools.
export {
  EXPORTED_KINDS,
  KIND,
  KINDS,
  MODEL_KINDS,
  classifyKey,
  docs,
  keyOf,
  storedValue,
  prefixOf,
  queueId,
  scopeId,
} from "./state";
export { CredentialOps, exportModel, importModel, modelDocOf, replicaCloudDocOf, upgradeModelExport } from "./state";
// The store's migration to this build's format (state/store-migration.ts), for tests.
export { StoreMigrator, migrationWaitsFor } from "./state";
// Secrets (state/secret-*.ts), for tests and the export of sealed content.
export { RelationOps, SecretOps, SecretSchedule, revisionPurpose, secretInfoOf } from "./state";
export type { SecretDoc, SecretRevisionDoc } from "./state";
// Backups (controller/backup/), for tests and benchmarks.
export {
  BACKUP_FORMAT_VERSION,
  KeptBackups,
  checkBackup,
  createBackup,
  openBackup,
  parseSnapshot,
  readBackupHeader,
  restoreControllerDir,
  sealBackup,
  takeSnapshot,
} from "./backup";
export type { BackupRecord } from "./backup";
// Model migration (controller/migration/), for tests.
export { MigrationStaging } from "./migration";
export { MODEL_EXPORT_FORMAT, MODEL_EXPORT_VERSION, exportForReader, exportVersionFor } from "./state";
export type { ModelExport } from "./state";
