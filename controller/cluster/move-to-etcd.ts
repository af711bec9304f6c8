/**
 * Moving a single replica from the embedded store into a new etcd cluster (the first step of
 * `enable-ha` on a controller bootstrapped without one). Runs while the controller is stopped, so
 * the embedded store is quiet: every document is copied (lease-bound keys are not: presence and
 * campaigns are re-established by the processes that own them), then the configuration is switched.
 * The configuration file is written last, so a crash part-way just redoes the move on restart; the
 * embedded store is kept beside it as `store.before-etcd`.
 *
 * Revisions restart in etcd. Agents compare data versions for equality only, so the worst a
 * different number does is run one relation-changed or leader-settings-changed hook again.
 */
import { rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../../api";
import type { ControllerConfig, MemberConfig } from "../config";
import { advertisedHost, dataFiles } from "../config";
import { EmbeddedStore, openStore } from "../store";
import type { Op } from "../store";
import type { HaConfig, MemberDoc, SpareDoc } from "../state";
import { DEFAULT_HA_CONFIG, classifyKey, clusterKeys, docs, put, readDoc } from "../state";
import { EtcdMember, peerUrl, replicaName } from "./etcd-member";

/** What enable-ha asked for, kept in the data directory until the move is done. */
export interface HaPending {
  ha: HaConfig;
  spares: SpareDoc[];
}

const BATCH = 100; // etcd allows 128 operations per transaction

export async function moveToEtcd(
  dataDir: string,
  config: ControllerConfig,
  pending: HaPending,
  tls: { caCert: string; cert: string; key: string },
  log: Logger,
): Promise<ControllerConfig> {
  const host = advertisedHost(config);
  const embedded = await EmbeddedStore.open({ dir: join(dataDir, dataFiles.store) });
  const info = (await readDoc(embedded, docs.controller))?.doc;
  const name = replicaName(host);
  const member: MemberConfig = {
    name,
    host,
    initialCluster: `${name}=${peerUrl(host)}`,
    initialState: "new",
    clusterToken: `steward-${info?.uuid ?? config.name}`,
  };
  log.info("moving the controller's state from the embedded store into a new etcd cluster", { member: name });
  // A half-done earlier attempt left an etcd data directory for a member name no longer used.
  await rm(join(dataDir, "etcd"), { recursive: true, force: true });
  const etcd = new EtcdMember({
    member,
    dataDir,
    tls: {
      caFile: join(dataDir, dataFiles.caCert),
      certFile: join(dataDir, dataFiles.serverCert),
      keyFile: join(dataDir, dataFiles.serverKey),
    },
    log,
    onRemoved: () => undefined,
  });
  const storeConfig = { backend: "etcd" as const, endpoints: [etcd.localClientUrl], tls: true };
  try {
    await etcd.start();
    await etcd.waitServing(30_000);
    const target = await openStore(storeConfig, "", tls);
    try {
      const { kvs } = await embedded.range("/");
      // The embedded store's cluster documents describe no cluster, except the replica cloud set for this growth.
      const copied = kvs.filter((kv) => !kv.lease && (!isClusterDoc(kv.key) || kv.key === clusterKeys.replicaCloud));
      for (let i = 0; i < copied.length; i += BATCH) {
        await target.txn({
          success: copied.slice(i, i + BATCH).map((kv): Op => ({ type: "put", key: kv.key, value: kv.value })),
        });
      }
      const doc: MemberDoc = {
        name,
        host,
        apiPort: config.listen.port,
        state: "member",
        addedAt: new Date().toISOString(),
        ...(config.instance ? { instance: config.instance } : {}),
      };
      const ops: Op[] = [
        put(docs.clusterMember, name, doc),
        put(docs.clusterConfig, { ...DEFAULT_HA_CONFIG, ...pending.ha }),
        ...pending.spares.map((s) => put(docs.clusterSpare, s.host, s)),
      ];
      await target.txn({ success: ops });
      log.info("state copied into etcd", { documents: copied.length });
    } finally {
      await target.close();
    }
  } finally {
    await etcd.stop();
    await embedded.close();
  }
  const next: ControllerConfig = { ...config, store: storeConfig, member: { ...member, initialState: "existing" } };
  await writeFile(join(dataDir, dataFiles.config), JSON.stringify(next, null, 2) + "\n", { mode: 0o600 });
  await rm(join(dataDir, "store.before-etcd"), { recursive: true, force: true });
  await rename(join(dataDir, dataFiles.store), join(dataDir, "store.before-etcd"));
  await rm(join(dataDir, dataFiles.haPending), { force: true });
  return next;
}

/** Whether `key` is one of the cluster's own documents (a `cluster-*` kind of the registry). */
function isClusterDoc(key: string): boolean {
  return classifyKey(key)?.kind.name.startsWith("cluster-") ?? false;
}
