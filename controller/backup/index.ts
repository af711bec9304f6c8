/** Controller backups: making, keeping and restoring them (docs/backups.md). */
export { BACKUP_FORMAT_VERSION, BackupFileError, openBackup, readBackupHeader, sealBackup } from "./backup-cipher";
export type { BackupHeader } from "./backup-cipher";
export { BACKUP_EXCLUDED_PREFIXES, BACKUP_PREFIXES, parseSnapshot, takeSnapshot } from "./snapshot";
export type { Snapshot, SnapshotManifest } from "./snapshot";
export { DEFAULT_BACKUP_QUOTA, KeptBackups, checkBackupId } from "./kept-backups";
export type { BackupQuota, BackupRecord } from "./kept-backups";
export { createBackup } from "./create-backup";
export type { CreatedBackup } from "./create-backup";
export { checkBackup, restoreControllerDir, restoredKeys } from "./restore";
export type { RestoreOptions, RestoreResult } from "./restore";
