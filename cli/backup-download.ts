/**
 * Fetching a kept backup from the controller part by part into a file, checked against the SHA-256
 * the controller recorded when it made it (a download that differs is an error, and no file).
 */
import { createHash } from "node:crypto";
import { open, rename, rm } from "node:fs/promises";
import type { ControllerClient } from "../api/core";
import { StewardError, routes } from "../api/core";
import type { BackupRecord } from "../api/core";

export async function downloadBackup(client: ControllerClient, id: string, path: string): Promise<BackupRecord> {
  const tmp = `${path}.part`;
  const out = await open(tmp, "w", 0o600);
  const hash = createHash("sha256");
  let record: BackupRecord | undefined;
  try {
    for (let part = 0; record === undefined || part < record.chunks; part++) {
      const res = await client.call(routes.backupPart, { id }, undefined, { part });
      record = res.record;
      const data = Buffer.from(res.data, "base64");
      hash.update(data);
      await out.write(data);
    }
    await out.sync();
  } catch (err) {
    await out.close();
    await rm(tmp, { force: true });
    throw err;
  }
  await out.close();
  if (hash.digest("hex") !== record.sha256) {
    await rm(tmp, { force: true });
    throw new StewardError(
      "internal",
      `backup ${id} downloaded with a different SHA-256 than the controller recorded; nothing written`,
    );
  }
  await rename(tmp, path);
  return record;
}

export function defaultBackupFile(controller: string, id: string): string {
  return `steward-backup-${controller}-${id}.sbk`;
}
