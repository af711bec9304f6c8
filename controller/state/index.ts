export { CLUSTER_CHANGED, StateCache } from "./cache";
export type { ModelIndex, CacheListener } from "./cache";
export { StateOps, modelDeletes } from "./operations";
export { ModelOps } from "./model-ops";
export { OperatorOps } from "./operator-ops";
export { ReleaseOps } from "./release-ops";
export { StoreMigrator, migrationWaitsFor } from "./store-migration";
export { storeFormatInUse, useStoreFormat } from "./store-format-in-use";
export { ApplicationOps } from "./application-ops";
export { MachineOps } from "./machine-ops";
export { UnitReportOps } from "./unit-report-ops";
export { StorageOps, storageDirectives } from "./storage-ops";
export type { StorageDoc, StoragePoolDoc } from "./storage-docs";
export { poolInfos, resolvePool } from "./storage-pools";
export { machineStorageWork, pendingMachineWork, pendingVolumeWork, storageInfoOf } from "./storage-docs";
export {
  DEFAULT_REGISTRATION_LIFETIME_MS,
  MAX_REGISTRATION_LIFETIME_MS,
  RegistrationRefused,
  UserOps,
} from "./user-ops";
export type { RegistrationRefusal } from "./user-ops";
export { validateConfig, effectiveConfig } from "./config";
export { RelationOps } from "./relation-ops";
export { LeadershipOps } from "./leadership-ops";
export { buildModelStatus, buildUnitDetails } from "./views";
export { AgentViewRound, buildAgentView } from "./agent-views";
export { StatusRenderer, modelStatusParts, renderModelStatus, renderModelStatusBytes } from "./status-json";
export type { StatusParts } from "./status-json";
export { keys } from "./keys";
export { decode, del, docs, put, putBack, readDoc, readDocs, readKv } from "./doc-kinds";
export type { DocKind, PutOp, Read } from "./doc-kinds";
export type { OperatorCharge, OperatorQuotas, OperatorUser } from "./operator-quotas";
export * from "./documents";
export {
  REQUESTS_PREFIX,
  RequestScope,
  currentRequest,
  outsideRequest,
  requestKeys,
  runInRequest,
  sweepRequestRecords,
} from "./request-records";
export type { ResponseRecordDoc } from "./request-records";
export { CredentialOps } from "./credential-ops";
export { SecretOps, secretByRef } from "./secret-ops";
export type { AddUserSecret, SecretOpsOptions, UpdateUserSecret } from "./secret-ops";
export { SecretSchedule, secretNeedsTending } from "./secret-schedule";
export type { SecretDoc, SecretRevisionDoc } from "./secret-docs";
export {
  ROTATE_RETRY_SECONDS,
  expiredRevisions,
  manages,
  mayRead,
  obsoleteRevisions,
  ownerSide,
  revisionPurpose,
  secretInfoOf,
} from "./secret-docs";
export { secretRefusal } from "./secret-writes";
export { ActionOps } from "./action-ops";
export type { CredentialInput } from "./credential-ops";
export { ENROLMENT_LIFETIME_MS, EnrolmentOps, replicaDataPurpose } from "./enrolment-ops";
export {
  EXPORTED_KINDS,
  KIND,
  KINDS,
  MODEL_KINDS,
  classifyKey,
  keyOf,
  prefixOf,
  storedValue,
  queueId,
  scopeId,
} from "./registry";
export type { ClassifiedKey, KindName, KindSpec } from "./registry";
export {
  MAX_MODEL_EXPORT_BYTES,
  MODEL_EXPORT_FORMAT,
  MODEL_EXPORT_VERSION,
  exportForReader,
  exportVersionFor,
  upgradeModelExport,
} from "./model-format";
export type { ModelExport, WrittenModelExport } from "./model-format";
export { countSecretValues, importSecretRevisions, sealExportSecrets } from "./secret-transfer";
export type { ExportSealing, ExportSecrets, SecretDestination, ValueCipher } from "./secret-transfer";
export { exportModel } from "./model-export";
export { modelDocOf, settingsOf } from "./model-placement";
export { replicaCloudDocOf } from "./replica-placement";
export { checkLocalDirs, importModel } from "./model-import";
export type { ImportDeps, ImportOptions, ImportResult } from "./model-import";
export { canMove, handedOver, holdsModel, migrationActive, migrationView, movedError } from "./migration-phases";
export { agentReports, recordReport } from "./migration-reports";
export type { AgentReports, ReportDoc } from "./migration-reports";
export * from "./cluster-docs";
