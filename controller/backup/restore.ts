/**
 * Restoring a backup into a controller data directory, which then starts as any other: the CA and
 * its key come back (so agents' pinned CA and the sealed cloud credentials still work), the
 * replica's own TLS certificate is issued afresh for the address it listens on, and the store is
 * written at the backup's revision with every key's revisions as they were (agents compare databag
 * revisions: they must not all change), plus the restore epoch (documents.ts RestoreEpochDoc) one
 * revision later. The restored controller is a single replica on the embedded store; `enable-ha`
 * grows it again.
 *
 * Left out of the restored store: what was bound to the old replicas (their presence, the
 * controller leader, etcd members, the quorum keeper's record) and the presence of agents (they
 * make it anew when they connect). Unit leadership is kept, on leases of the same ids, so no
 * leader changes and no leader hook runs because of the restore.
 */
import { randomUUID } from "node:crypto";
import { mkdir, readdir, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { OLDEST_STORE_FORMAT, STEWARD_VERSION, STORE_FORMAT, StewardError, readsStoreFormat } from "../../api";
import type { ControllerConfig } from "../config";
import { dataFiles } from "../config";
import type { KeyValue } from "../store";
import { writeEmbeddedStore } from "../store";
import type { RestoreEpochDoc } from "../state";
import { DEFAULT_LEADERSHIP_LEASE_SECONDS, KIND, classifyKey, decode, docs, keyOf, keys } from "../state";
import type { BackupHeader } from "./backup-cipher";
import { openBackup } from "./backup-cipher";
import type { Snapshot } from "./snapshot";
import { parseSnapshot } from "./snapshot";

export interface RestoreOptions {
  dataDir: string;
  file: Buffer;
  passphrase: string;
  listen: { host: string; port: number };
  advertise?: string[];
  /** Replace a controller already in `dataDir` (its local machines' directories are kept). */
  force?: boolean;
}

export interface RestoreResult {
  controller: { uuid: string; name: string };
  backupId: string;
  revision: number;
  keys: number;
  models: string[];
  caCert: string;
  epoch: number;
}

/** Kinds bound to the replicas or connections of the controller that was backed up. */
const LEFT_OUT = new Set(["cluster-leader", "cluster-replica", "cluster-member", "cluster-keeper", "presence"]);

/** Opens and parses a backup, writing nothing: what a restore would bring back. */
export async function checkBackup(file: Buffer, passphrase: string): Promise<{ header: BackupHeader; snap: Snapshot }> {
  const { header, plain } = await openBackup(file, passphrase);
  const snap = parseSnapshot(plain);
  if (snap.manifest.revision !== header.revision || snap.manifest.controller.uuid !== header.controller.uuid)
    throw new StewardError("invalid-request", "the backup's header and archive disagree (altered)");
  return { header, snap: { ...snap, kvs: [], secrets: { caCert: snap.secrets.caCert, caKey: "" } } };
}

export async function restoreControllerDir(o: RestoreOptions): Promise<RestoreResult> {
  // Everything is checked before the directory is touched: a bad file restores nothing.
  const { header, plain } = await openBackup(o.file, o.passphrase);
  const snap = parseSnapshot(plain);
  if (snap.manifest.revision !== header.revision || snap.manifest.controller.uuid !== header.controller.uuid)
    throw new StewardError("invalid-request", "the backup's header and archive disagree (altered)");
  refuseUnreadableStore(snap.kvs, header.stewardVersion);
  await clearDataDir(o.dataDir, o.force ?? false);

  const { caCert, caKey } = snap.secrets;
  // eslint-disable-next-line @typescript-eslint/consistent-type-imports
  const { issueServerCertificate } = require("../security/pki") as typeof import("../security/pki");
  const hosts = [
    o.listen.host,
    ...(o.advertise ?? []).map((a) => a.replace(/:\d+$/, "").replace(/^\[|\]$/g, "")),
  ].filter((h) => h !== "0.0.0.0" && h !== "::");
  const server = await issueServerCertificate({ certPem: caCert, keyPem: caKey }, hosts);

  const { kvs, leases, epoch } = restoredKeys(snap.kvs, snap.manifest.revision, header);
  await writeEmbeddedStore(join(o.dataDir, dataFiles.store), snap.manifest.revision + 1, kvs, leases);
  await writeFile(join(o.dataDir, dataFiles.caCert), caCert, { mode: 0o644 });
  await writeFile(join(o.dataDir, dataFiles.caKey), caKey, { mode: 0o600 });
  await writeFile(join(o.dataDir, dataFiles.serverCert), server.certPem, { mode: 0o644 });
  await writeFile(join(o.dataDir, dataFiles.serverKey), server.keyPem, { mode: 0o600 });
  const config: ControllerConfig = {
    name: snap.manifest.controller.name,
    listen: o.listen,
    ...(o.advertise ? { advertise: o.advertise } : {}),
    store: { backend: "embedded" },
  };
  // Last, as bootstrap does: its presence marks a complete directory.
  await writeFile(join(o.dataDir, dataFiles.config), JSON.stringify(config, null, 2) + "\n", { mode: 0o600 });
  return {
    controller: snap.manifest.controller,
    backupId: header.id,
    revision: snap.manifest.revision,
    keys: kvs.length,
    models: snap.manifest.models.map((m) => m.name),
    caCert,
    epoch: epoch.epoch,
  };
}

/** The keys to write, the leases they need, and the new restore epoch (written at revision + 1). */
export function restoredKeys(
  backedUp: KeyValue[],
  revision: number,
  header: Pick<BackupHeader, "id">,
): { kvs: KeyValue[]; leases: { id: string; ttl: number }[]; epoch: RestoreEpochDoc } {
  const kvs: KeyValue[] = [];
  /** Each leader's lease: at least as long as it was granted (its agent counts on it), the default at least. */
  const leases = new Map<string, number>();
  const taskSeqs: Record<string, number> = {};
  let previous: KeyValue | undefined;
  for (const kv of backedUp) {
    const c = classifyKey(kv.key);
    if (c && LEFT_OUT.has(c.kind.name)) continue;
    if (c?.kind.name === "restore-epoch") {
      previous = kv;
      continue;
    }
    if (c?.kind.name === "task-seq") taskSeqs[c.model!] = Number(JSON.parse(kv.value));
    if (kv.lease) {
      // Only unit leadership is worth keeping on a lease; anything else leased belonged to the old replicas.
      if (c?.kind.name !== "leader") continue;
      const granted = (JSON.parse(kv.value) as { leaseSeconds?: number }).leaseSeconds ?? 0;
      leases.set(kv.lease, Math.max(leases.get(kv.lease) ?? 0, granted, DEFAULT_LEADERSHIP_LEASE_SECONDS));
    }
    kvs.push(kv);
  }
  const before = previous ? decode(docs.restoreEpoch, previous.value).epoch : 0;
  const epoch: RestoreEpochDoc = {
    clusterId: randomUUID(),
    epoch: before + 1,
    revision,
    backupId: header.id,
    restoredAt: new Date().toISOString(),
    taskSeqs,
  };
  kvs.push({
    key: keyOf(KIND["restore-epoch"], ""),
    value: JSON.stringify(epoch),
    createRevision: previous?.createRevision ?? revision + 1,
    modRevision: revision + 1,
    version: (previous?.version ?? 0) + 1,
  });
  return { kvs, leases: [...leases].map(([id, ttl]) => ({ id, ttl })), epoch };
}

/**
 * Makes `dir` ready for a restore: absent or empty is fine; a controller there is refused unless
 * `force`, then removed, except the local machines' directories (the agents on this host live there).
 */
async function clearDataDir(dir: string, force: boolean): Promise<void> {
  const entries = await readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return [] as string[];
    throw e;
  });
  const hasController = await stat(join(dir, dataFiles.config)).then(
    () => true,
    () => false,
  );
  if (hasController && !force)
    throw new StewardError(
      "already-exists",
      `${dir} holds a controller; restore over it only with --force (its models are replaced by the backup's)`,
    );
  for (const e of entries) if (e !== dataFiles.machines) await rm(join(dir, e), { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

/** A backup of a store in a format this release does not read is refused before anything is written: it would not start on it. */
function refuseUnreadableStore(kvs: KeyValue[], takenBy: string): void {
  const info = kvs.find((kv) => kv.key === keys.controller);
  const format = info ? decode(docs.controller, info.value).schemaVersion : undefined;
  if (format === undefined || readsStoreFormat(format)) return;
  throw new StewardError(
    "invalid-request",
    `the backup's store is at format ${format} (taken by ${takenBy}), and this release (${STEWARD_VERSION}) reads store formats ${OLDEST_STORE_FORMAT} to ${STORE_FORMAT}: restore it with the steward of the release that took it, or a newer one`,
  );
}
