/**
 * The spare pool: hosts registered with `steward add-spare` (SSH, host keys pinned), from which the
 * quorum keeper takes a host to replace a lost replica — the first {@link ReplicaHostBroker}; a
 * cloud substrate launching instances is another. Installing goes over SSH: the leader issues the
 * new replica's certificate from the controller CA (its key is on every replica), writes its
 * configuration (join the existing etcd cluster as `initialCluster` says) and starts it.
 */
import type { Progress, ReplicaHost, ReplicaHostBroker } from "../../substrates";
import { ssh } from "../../substrates";
import type { ControllerConfig } from "../config";
import { controllerFiles } from "../config";
import type { StateCache } from "../state";
import type { Store } from "../store";
import type { Sealer } from "../security/sealing";
import type { SpareDoc, SpareKey } from "../state";
import { clusterKeys, sparePurpose } from "../state";
import { replicaDataFiles } from "./replica-data";

type Staged = Awaited<ReturnType<typeof ssh.stageReplica>>;

/** A spare host taken from the pool, with what was staged on it. */
export interface PooledHost extends ReplicaHost {
  spare: SpareDoc;
  staged: Staged;
}

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
    return [...this.o.cache.spares.values()]
      .filter((s) => !s.failed)
      .sort((a, b) => a.addedAt.localeCompare(b.addedAt))[0];
  }

  private connect(spare: SpareDoc): Promise<ssh.SshSession> {
    const key = this.o.sealer.openJson<SpareKey>(sparePurpose(spare.host), spare.sealedKey);
    return ssh.SshSession.connect(
      { host: spare.host, port: spare.port ?? 22, user: spare.user, ...key, hostKey: spare.hostKey },
      { attempts: 2 },
    );
  }

  async acquire(nameFor: (address: string) => string, progress: Progress): Promise<PooledHost> {
    const spare = this.pick();
    if (!spare) throw new Error(this.unavailable());
    try {
      const s = await this.connect(spare);
      try {
        return {
          address: spare.host,
          spare,
          staged: await ssh.stageReplica(s, nameFor(spare.host), controllerFiles(), progress),
        };
      } finally {
        s.close();
      }
    } catch (err) {
      await this.setAside(spare, `staging failed: ${(err as Error).message}`);
      throw new Error(`spare host ${spare.host} skipped: staging failed: ${(err as Error).message}`);
    }
  }

  async start(host: PooledHost, name: string, initialCluster: string, progress: Progress): Promise<void> {
    const data = await replicaDataFiles(this.o, host.address, name, initialCluster);
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

  /** Nothing to give back: the spare was never taken out of the pool (joined() does that). */
  async release(): Promise<void> {}

  async failed(host: PooledHost, why: string): Promise<void> {
    await this.setAside(host.spare, `install failed: ${why}`);
  }

  /** Keeps a spare that failed in the pool, marked, so `show-controller` says why it is not used. */
  private async setAside(spare: SpareDoc, why: string): Promise<void> {
    await this.o.store.put(clusterKeys.spare(spare.host), JSON.stringify({ ...spare, failed: why } satisfies SpareDoc));
  }
}
