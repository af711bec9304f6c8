/**
 * The archive inside a backup: the controller's whole store read at ONE revision (one read-only
 * transaction over every folder the registry knows, which both backends answer as a single snapshot:
 * the embedded store at once, etcd in pages pinned to the first page's revision), plus what a restore needs that is not in the store: the CA's
 * certificate and key (the key also derives the sealing key of stored cloud credentials, see
 * security/sealing.ts). Gzipped JSON lines: a manifest, the secrets, one line per key, an end line
 * with the count (so a short archive is refused even if it decrypted).
 *
 * Kept backups themselves (`/backups/`, `/blobs/backups/`) are left out: a backup never contains
 * the backups before it.
 */
import { gunzipSync, gzipSync } from "node:zlib";
import type { KeyValue, Store } from "../store";
import { KINDS, decode, docs, keys } from "../state";
import { StewardError } from "../../api";
import { BACKUP_FORMAT_VERSION, BackupFileError } from "./backup-cipher";

/** Prefixes never put in a backup: the kept backups. */
export const BACKUP_EXCLUDED_PREFIXES = [keys.backupsPrefix, keys.backupChunksPrefix];

/**
 * What a backup reads: the top folder of every kind in the registry, `/blobs/` by its own folders,
 * leaving out the kept backups without reading them (up to the quota's 256 MiB).
 */
export const BACKUP_PREFIXES: readonly string[] = [
  ...new Set(KINDS.map((k) => (k.path[0] === "blobs" ? `/blobs/${k.path[1] as string}/` : `/${k.path[0] as string}/`))),
].filter((p) => !BACKUP_EXCLUDED_PREFIXES.includes(p));

export interface SnapshotManifest {
  format: number;
  controller: { uuid: string; name: string };
  revision: number;
  createdAt: string;
  keys: number;
  models: { uuid: string; name: string }[];
}

export interface Snapshot {
  manifest: SnapshotManifest;
  secrets: { caCert: string; caKey: string };
  kvs: KeyValue[];
}

type Line =
  { manifest: SnapshotManifest } | { secrets: Snapshot["secrets"] } | { kv: KeyValue } | { end: { keys: number } };

/** Reads the store at one revision and makes the (plaintext, gzipped) archive. */
export async function takeSnapshot(
  store: Store,
  secrets: Snapshot["secrets"],
): Promise<{ archive: Buffer; manifest: SnapshotManifest }> {
  // One read-only transaction: one revision (etcd pins its pages to the first one's).
  const res = await store.txn({ success: BACKUP_PREFIXES.map((prefix) => ({ type: "range" as const, prefix })) });
  const { revision } = res;
  const kvs = res.responses.flat();
  const info = kvs.find((kv) => kv.key === keys.controller);
  if (!info) throw new StewardError("internal", "the store holds no controller record: nothing to back up");
  const controller = decode(docs.controller, info.value);
  const models = kvs
    .filter((kv) => /^\/models\/[^/]+$/.test(kv.key))
    .map((kv) => ({ uuid: kv.key.slice("/models/".length), name: decode(docs.model, kv.value).name }));
  const manifest: SnapshotManifest = {
    format: BACKUP_FORMAT_VERSION,
    controller: { uuid: controller.uuid, name: controller.name },
    revision,
    createdAt: new Date().toISOString(),
    keys: kvs.length,
    models,
  };
  const lines: string[] = [JSON.stringify({ manifest } satisfies Line), JSON.stringify({ secrets } satisfies Line)];
  for (const kv of kvs) lines.push(JSON.stringify({ kv } satisfies Line));
  lines.push(JSON.stringify({ end: { keys: kvs.length } } satisfies Line));
  return { archive: gzipSync(lines.join("\n") + "\n"), manifest };
}

/** Parses an archive back; anything missing or malformed is a {@link BackupFileError}. */
export function parseSnapshot(archive: Buffer): Snapshot {
  let text: string;
  try {
    text = gunzipSync(archive).toString("utf8");
  } catch {
    throw new BackupFileError("the backup's archive does not decompress (damaged)");
  }
  let manifest: SnapshotManifest | undefined;
  let secrets: Snapshot["secrets"] | undefined;
  const kvs: KeyValue[] = [];
  let ended = false;
  for (const raw of text.split("\n")) {
    if (!raw) continue;
    if (ended) throw new BackupFileError("the backup's archive has data after its end");
    const line = JSON.parse(raw) as Line;
    if ("manifest" in line) manifest = line.manifest;
    else if ("secrets" in line) secrets = line.secrets;
    else if ("kv" in line) kvs.push(line.kv);
    else if ("end" in line) {
      if (line.end.keys !== kvs.length)
        throw new BackupFileError(`the backup's archive promises ${line.end.keys} keys but holds ${kvs.length}`);
      ended = true;
    }
  }
  if (!manifest || !secrets || !ended)
    throw new BackupFileError("the backup's archive is incomplete (no manifest, secrets or end)");
  if (manifest.format !== BACKUP_FORMAT_VERSION)
    throw new BackupFileError(
      `the backup's archive is in format ${manifest.format}; this Steward reads ${BACKUP_FORMAT_VERSION}`,
    );
  return { manifest, secrets, kvs };
}
