/**
 * The spare pool: hosts registered with `steward add-spare` (SSH, host keys pinned), from which the
 * quorum keeper takes a host to replace a lost replica — the first {@link ReplicaHostBroker}; a
 * cloud substrate launching instances is another. Installing goes over SSH: the leader issues the
 * new replica's certificate from the controller CA (its key is on every replica), writes its
 * configuration (join the existing etcd cluster as `initialCluster` says) and starts it.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Progress, ReplicaHost, ReplicaHostBroker } from "../../substrates";
import { ssh } from "../../substrates";
import type { ControllerConfig } from "../config";
import { controllerFiles, dataFiles } from "../config";
import type { StateCache } from "../state";
import type { Store } from "../store";
import type { Sealer } from "../security/sealing";
import type { SpareDoc, SpareKey } from "./cluster-docs";
import { clusterKeys, sparePurpose } from "./cluster-docs";

type Staged = Awaited<ReturnType<typeof ssh.stageReplica>>;

/** A spare host taken from the pool, with what was staged on it. */
export interface PooledHost extends ReplicaHost { spare: SpareDoc; staged: Staged }

export interface SparePoolOptions {
  /** A fenced store: the pool's writes fail once this replica is no longer leader. */
  store: Store;
  cache: StateCache;
  dataDir: string;
  config: ControllerConfig;
  /** Opens the spares' sealed SSH keys. */
  sealer: Sealer;
}

export class SparePool implements ReplicaHostBroker<PooledHost> {
  constructor(private readonly o: SparePoolOptions) {}

  unavailable(): string | undefined {
    return this.pick() ? undefined : "no spare host is available: add one with steward add-spare";
  }

  /** The spare registered first among those that have not failed. */
  private pick(): SpareDoc | undefined {
    return [...this.o.cache.spares.values()].filter((s) => !s.failed).sort((a, b) => a.addedAt.localeCompare(b.addedAt))[0];
  }

  private connect(spare: SpareDoc): Promise<ssh.SshSession> {
    const key = this.o.sealer.openJson<SpareKey>(sparePurpose(spare.host), spare.sealedKey);
    return ssh.SshSession.connect({ host: spare.host, port: spare.port ?? 22, user: spare.user, ...key, hostKey: spare.hostKey }, { attempts: 2 });
  }

  async acquire(nameFor: (address: string) => string, progress: Progress): Promise<PooledHost> {
    const spare = this.pick();
    if (!spare) throw new Error(this.unavailable());
    try {
      const s = await this.connect(spare);
      try {
        return { address: spare.host, spare, staged: await ssh.stageReplica(s, nameFor(spare.host), controllerFiles(), progress) };
      } finally {
        s.close();
      }
    } catch (err) {
      await this.setAside(spare, `staging failed: ${(err as Error).message}`);
      throw new Error(`spare host ${spare.host} skipped: staging failed: ${(err as Error).message}`);
    }
  }

  async start(host: PooledHost, name: string, initialCluster: string, progress: Progress): Promise<void> {
    const data = await this.replicaData(host.address, name, initialCluster);
    const s = await this.connect(host.spare);
    try {
      await ssh.startReplica(s, host.staged, { name, files: controllerFiles(), data, progress });
    } finally {
      s.close();
    }
  }

  async joined(address: string): Promise<void> {
    await this.o.store.delete(clusterKeys.spare(address));
  }

  async failed(host: PooledHost, why: string): Promise<void> {
    await this.setAside(host.spare, `install failed: ${why}`);
  }

  /** Keeps a spare that failed in the pool, marked, so `show-controller` says why it is not used. */
  private async setAside(spare: SpareDoc, why: string): Promise<void> {
    await this.o.store.put(clusterKeys.spare(spare.host), JSON.stringify({ ...spare, failed: why } satisfies SpareDoc));
  }

  /** The new replica's data directory: this controller's CA, a certificate for its host, its configuration. */
  private async replicaData(host: string, name: string, initialCluster: string): Promise<Record<string, string>> {
    // eslint-disable-next-line @typescript-eslint/consistent-type-imports
    const { issueServerCertificate } = require("../security/pki") as typeof import("../security/pki");
    const [caCert, caKey] = await Promise.all([dataFiles.caCert, dataFiles.caKey].map((f) => readFile(join(this.o.dataDir, f), "utf8")));
    const cert = await issueServerCertificate({ certPem: caCert!, keyPem: caKey! }, [host]);
    const own = this.o.config.member!;
    const config: ControllerConfig = {
      name: this.o.config.name,
      listen: { host: "0.0.0.0", port: this.o.config.listen.port },
      advertise: [`${host}:${this.o.config.listen.port}`],
      store: { backend: "etcd", endpoints: [`https://127.0.0.1:${own.clientPort ?? 2379}`], tls: true },
      ...(this.o.config.leadershipLeaseSeconds ? { leadershipLeaseSeconds: this.o.config.leadershipLeaseSeconds } : {}),
      member: {
        name, host, initialCluster, initialState: "existing", clusterToken: own.clusterToken,
        ...(own.clientPort ? { clientPort: own.clientPort } : {}), ...(own.peerPort ? { peerPort: own.peerPort } : {}),
        ...(own.heartbeatMs ? { heartbeatMs: own.heartbeatMs } : {}), ...(own.electionMs ? { electionMs: own.electionMs } : {}),
      },
    };
    return {
      [dataFiles.caCert]: caCert!, [dataFiles.caKey]: caKey!, [dataFiles.serverCert]: cert.certPem, [dataFiles.serverKey]: cert.keyPem,
      [dataFiles.config]: JSON.stringify(config, null, 2) + "\n",
    };
  }
}
