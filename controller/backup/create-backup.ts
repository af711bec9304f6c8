/**
 * Making a backup: the store read at one revision with the CA (snapshot.ts), encrypted under the
 * user's passphrase (backup-cipher.ts), checked by opening it again before it is reported made (a
 * backup that cannot be restored is worse than none: Juju #23257), then kept (kept-backups.ts).
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { STEWARD_VERSION } from "../../api";
import { dataFiles } from "../config";
import type { Store } from "../store";
import { openBackup, sealBackup } from "./backup-cipher";
import type { BackupRecord, KeptBackups } from "./kept-backups";
import { newBackupId } from "./kept-backups";
import { parseSnapshot, takeSnapshot } from "./snapshot";

export interface CreatedBackup {
  record: BackupRecord;
  timings: { snapshotMs: number; encryptMs: number; verifyMs: number; keepMs: number };
}

export async function createBackup(o: {
  store: Store;
  dataDir: string;
  passphrase: string;
  kept: KeptBackups;
}): Promise<CreatedBackup> {
  const t0 = Date.now();
  const [caCert, caKey] = await Promise.all(
    [dataFiles.caCert, dataFiles.caKey].map((f) => readFile(join(o.dataDir, f), "utf8")),
  );
  const { archive, manifest } = await takeSnapshot(o.store, { caCert: caCert!, caKey: caKey! });
  const t1 = Date.now();
  const id = newBackupId();
  const file = await sealBackup(archive, o.passphrase, {
    id,
    controller: manifest.controller,
    revision: manifest.revision,
    createdAt: manifest.createdAt,
    stewardVersion: STEWARD_VERSION,
  });
  const t2 = Date.now();
  parseSnapshot((await openBackup(file, o.passphrase)).plain);
  const t3 = Date.now();
  const record = await o.kept.keep(
    {
      id,
      createdAt: manifest.createdAt,
      controller: manifest.controller,
      revision: manifest.revision,
      bytes: file.length,
      keys: manifest.keys,
      models: manifest.models.length,
      sha256: createHash("sha256").update(file).digest("hex"),
    },
    file,
  );
  return { record, timings: { snapshotMs: t1 - t0, encryptMs: t2 - t1, verifyMs: t3 - t2, keepMs: Date.now() - t3 } };
}
