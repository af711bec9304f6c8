/**
 * Backups kept on the controller, in its store: a record under `/backups/<id>` and the encrypted
 * file in chunks under `/blobs/backups/<id>/` (as operator bundles are, well under etcd's request
 * limit). In the store rather than a replica's data directory because with etcd every member holds
 * the store: a kept backup survives losing any replica, and every replica can serve it. The
 * record is written after the last chunk, so a backup interrupted half-way is never listed (a
 * failed write deletes its chunks). A quota bounds them; the oldest go first.
 */
import type { BackupRecord } from "../../api";
import { randomBytes } from "node:crypto";
import { StewardError, notFound } from "../../api";
import { docs, keys, readDoc, readDocs } from "../state";
import type { Store } from "../store";

export const BACKUP_RECORDS = keys.backupsPrefix;
export const BACKUP_CHUNKS = keys.backupChunksPrefix;
/** Raw bytes per stored chunk (base64 in the store: 683 KiB, under etcd's 1.5 MiB request limit). */
export const BACKUP_CHUNK_BYTES = 512 * 1024;

export interface BackupQuota {
  /** Most backups kept. @default 3 */
  keep?: number;
  /** Most bytes all kept backups take together. @default 256 MiB */
  quotaBytes?: number;
}
/**
 * Modest, because on etcd a removed backup frees its space only once history is compacted (an hour)
 * and the member defragmented, and etcd's whole database is capped at 2 GiB by default.
 */
export const DEFAULT_BACKUP_QUOTA: Required<BackupQuota> = { keep: 3, quotaBytes: 256 * 1024 * 1024 };

export type { BackupRecord };

export function newBackupId(now = new Date()): string {
  return `${now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z")}-${randomBytes(3).toString("hex")}`;
}

const ID = /^\d{8}T\d{6}Z-[0-9a-f]{6}$/;
export function checkBackupId(id: string): string {
  if (!ID.test(id))
    throw new StewardError(
      "invalid-request",
      `"${id}" is not a backup id (as steward backups lists them, e.g. 20261125T001500Z-a1b2c3)`,
    );
  return id;
}

export class KeptBackups {
  constructor(
    private readonly store: Store,
    private readonly quota: Required<BackupQuota> = DEFAULT_BACKUP_QUOTA,
  ) {}

  async list(): Promise<BackupRecord[]> {
    return (await readDocs(this.store, docs.backup))
      .map((r) => r.doc)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  async get(id: string): Promise<BackupRecord> {
    const read = await readDoc(this.store, docs.backup, checkBackupId(id));
    if (!read) throw notFound("backup", id);
    return read.doc;
  }

  /** Keeps `file` under `record.id`, first making room: refused when it alone is over the quota. */
  async keep(record: Omit<BackupRecord, "chunks">, file: Buffer): Promise<BackupRecord> {
    if (file.length > this.quota.quotaBytes) {
      throw new StewardError(
        "invalid-request",
        `this backup is ${file.length} bytes, over the controller's backup quota of ${this.quota.quotaBytes}: raise "backups": {"quotaBytes": …} in controller.json`,
      );
    }
    await this.prune(file.length, 1);
    const chunks = Math.ceil(file.length / BACKUP_CHUNK_BYTES);
    try {
      for (let i = 0; i < chunks; i++) {
        await this.store.put(
          `${BACKUP_CHUNKS}${record.id}/${String(i).padStart(6, "0")}`,
          file.subarray(i * BACKUP_CHUNK_BYTES, (i + 1) * BACKUP_CHUNK_BYTES).toString("base64"),
        );
      }
      const full: BackupRecord = { ...record, chunks };
      await this.store.put(BACKUP_RECORDS + record.id, JSON.stringify(full));
      return full;
    } catch (err) {
      // Never leave chunks without a record (nothing would list or remove them).
      await this.store
        .txn({ success: [{ type: "deletePrefix", prefix: `${BACKUP_CHUNKS}${record.id}/` }] })
        .catch(() => undefined);
      throw err;
    }
  }

  /** Part `part` of a kept backup's file. */
  async part(id: string, part: number): Promise<{ record: BackupRecord; data: Buffer }> {
    const record = await this.get(id);
    if (!Number.isInteger(part) || part < 0 || part >= record.chunks)
      throw new StewardError("invalid-request", `backup ${id} has parts 0 to ${record.chunks - 1}`);
    const kv = await this.store.get(`${BACKUP_CHUNKS}${id}/${String(part).padStart(6, "0")}`);
    if (!kv) throw new StewardError("internal", `part ${part} of backup ${id} is missing from the store`);
    return { record, data: Buffer.from(kv.value, "base64") };
  }

  async remove(id: string): Promise<void> {
    await this.store.txn({
      success: [
        { type: "delete", key: BACKUP_RECORDS + checkBackupId(id) },
        { type: "deletePrefix", prefix: `${BACKUP_CHUNKS}${id}/` },
      ],
    });
  }

  /** Deletes the oldest backups until `incoming` more bytes and `adding` more backups fit. */
  async prune(incoming = 0, adding = 0): Promise<string[]> {
    const list = await this.list();
    const removed: string[] = [];
    let bytes = list.reduce((n, b) => n + b.bytes, 0);
    while (list.length > 0 && (list.length + adding > this.quota.keep || bytes + incoming > this.quota.quotaBytes)) {
      const oldest = list.shift()!;
      await this.remove(oldest.id);
      bytes -= oldest.bytes;
      removed.push(oldest.id);
    }
    return removed;
  }
}
