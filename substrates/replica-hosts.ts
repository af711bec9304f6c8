/**
 * Replica hosts from a substrate kind (its `replicaHosts()`, ./kind.ts): when the quorum keeper
 * needs a host and the spare pool has none, the leader asks the kind its replica cloud is. What the
 * kind needs of the controller (the replica cloud's placement, its credential, one-time enrolment
 * tokens, a staged replica's sealed data) comes in as {@link ReplicaHostDeps}, so the kinds stay
 * below the controller (substrates ← controller).
 *
 * Clouds (aws, vsphere) share one broker, {@link InstanceReplicaHosts}: an instance is launched
 * with user data that installs a controller replica without SSH (./cloud-init.ts `replicaUserData`):
 * it fetches the controller from this cluster, reports itself staged, and collects its data
 * directory (sealed in the store until then: it holds the CA key) once the keeper has added it to
 * etcd. A replica replaced for good has its instance terminated, only after it is out of the etcd
 * cluster. Each cloud gives only its instances ({@link ReplicaInstanceCloud}).
 */
import type { Logger } from "../api/core";
import { sleep } from "../api/core";
import type { Progress, ReplicaHost, ReplicaHostBroker, RetiredReplica } from "./brokers";
import { replicaUserData } from "./cloud-init";
import { enrolmentFiles } from "./controller-files";
import type { Attributes } from "./kind";

/** What a kind's replica host broker is given by the controller (the leader's, fenced). */
export interface ReplicaHostDeps<Settings = unknown> {
  /** The replica cloud now, while it is this kind (it may be changed or cleared at any time). */
  placement(): { settings: Settings; credential?: string } | undefined;
  /** A stored credential's attributes, opened. */
  credential(name: string): Promise<Attributes>;
  /** The UUID the controller's instances are marked with. */
  controllerUuid(): string;
  /** Issues a one-time enrolment token for a replica. */
  issueToken(): Promise<string>;
  /** Whether the replica enrolling with `token` has reported itself staged. */
  staged(token: string): Promise<boolean>;
  /** Leaves the staged replica its data directory (sealed for its token): start as `name` at `address`, joining `initialCluster`. */
  provideData(token: string, address: string, name: string, initialCluster: string): Promise<void>;
  /** How a new replica reaches the controller to fetch it: its API addresses and CA. */
  controller(): { addresses: string[]; caCert: string };
  /** The hosts of the cluster's members that are not removed. */
  memberHosts(): string[];
  log: Logger;
  /**
   * How long a new host may take to boot (or see its token) and report itself staged.
   * @default 600000
   */
  stageTimeoutMs?: number;
}

/** A kind's replica host broker, which holds clients until closed. */
export type ReplicaHostsOfKind = ReplicaHostBroker & { close(): void };

/** One cloud's instances for replicas, seen the same way whatever the cloud. */
export interface ReplicaInstances {
  launch(n: number, userData: Buffer, idempotencyKey: string): Promise<{ id: string; zone?: string }>;
  /** The instance's address once it runs; `gone` once it never will. */
  state(id: string): Promise<{ address?: string; zone?: string; gone: boolean }>;
  /** Live replica instances of this controller. */
  live(): Promise<{ id: string; address?: string }[]>;
  terminate(ids: string[]): Promise<void>;
}

/** What a cloud kind gives {@link InstanceReplicaHosts}: its replica instances for a placement. */
export interface ReplicaInstanceCloud<Settings> {
  /** What a progress line calls the cloud. */
  name: string;
  instances(settings: Settings, credential: Attributes, controllerUuid: string): ReplicaInstances;
  close(): void;
}

/** A host launched for a replica: its instance and the token its user data enrols with. */
export interface CloudHost extends ReplicaHost {
  instance: { id: string; zone?: string };
  token: string;
  cloud: ReplicaInstances;
}

/** The idempotency key of a replica's launch: one per token (the cloud's client hashes it). */
const launchKey = (token: string): string => `replica-launch/${token}`;

/** Replica hosts from a cloud's instances (see this file's header). */
export class InstanceReplicaHosts<Settings> implements ReplicaHostBroker<CloudHost> {
  constructor(
    private readonly d: ReplicaHostDeps<Settings>,
    private readonly cloud: ReplicaInstanceCloud<Settings>,
  ) {}

  unavailable(): string | undefined {
    const p = this.d.placement();
    return p?.credential ? undefined : `no credential is set for replicas on ${this.cloud.name}`;
  }

  private async instances(): Promise<ReplicaInstances | undefined> {
    const p = this.d.placement();
    if (!p?.credential) return undefined;
    return this.cloud.instances(p.settings, await this.d.credential(p.credential), this.d.controllerUuid());
  }

  async acquire(nameFor: (address: string) => string, progress: Progress, signal?: AbortSignal): Promise<CloudHost> {
    const cloud = await this.instances();
    if (!cloud) throw new Error(this.unavailable());
    const token = await this.d.issueToken();
    const files = [...enrolmentFiles().keys()].filter((f) => f !== "node" && f !== "etcd");
    // The n-th live replica instance goes to the n-th subnet or zone, spreading them out.
    const live = await cloud.live();
    progress(`launching an instance on ${this.cloud.name}`);
    const launched = await cloud.launch(
      live.length,
      replicaUserData({ controller: this.d.controller(), token, files }),
      launchKey(token),
    );
    const host = { instance: launched, token, cloud };
    try {
      // Deposed while the instance boots: the next leader cannot know of it, so it is terminated below.
      signal?.throwIfAborted();
      const timeoutMs = this.d.stageTimeoutMs ?? 600_000;
      const deadline = Date.now() + timeoutMs;
      let address: string | undefined;
      for (;;) {
        if (!address) {
          const now = await cloud.state(launched.id);
          if (now.gone) throw new Error(`instance ${launched.id} stopped before it was ready`);
          if (now.address) {
            address = now.address;
            if (now.zone) host.instance = { ...launched, zone: now.zone };
            progress(`instance ${launched.id} running at ${address}; waiting for it to fetch the controller`);
            nameFor(address);
          }
        }
        if (address && (await this.d.staged(token))) return { ...host, address };
        if (Date.now() > deadline)
          throw new Error(
            `instance ${launched.id} did not ${address ? "fetch the controller" : "get an address"} within ${Math.round(timeoutMs / 1000)} s; see /var/lib/steward/enrol-replica.log on it`,
          );
        await sleep(1000, signal);
      }
    } catch (err) {
      await cloud.terminate([launched.id]).catch(() => undefined);
      throw err;
    }
  }

  async start(host: CloudHost, name: string, initialCluster: string, progress: Progress): Promise<void> {
    await this.d.provideData(host.token, host.address, name, initialCluster);
    progress(`data left for instance ${host.instance.id}; it starts the replica once it has collected it`);
  }

  async joined(): Promise<void> {}

  async failed(host: CloudHost, why: string): Promise<void> {
    this.d.log.warn("terminating a replica instance whose install failed", { instance: host.instance.id, why });
    await host.cloud.terminate([host.instance.id]);
  }

  async abandon(host: CloudHost): Promise<void> {
    this.d.log.info("terminating a replica instance launched by a deposed leader", { instance: host.instance.id });
    await host.cloud.terminate([host.instance.id]);
  }

  async release(host: CloudHost): Promise<void> {
    this.d.log.info("terminating a replica instance that was not used", { instance: host.instance.id });
    await host.cloud.terminate([host.instance.id]);
  }

  /**
   * By the instance id the replica was recorded with, not by looking its address up among the live
   * instances: a lookup that comes back empty (a cloud answering late, a placement read mid-change)
   * must not count as "nothing to end". Done only once the cloud says the instance is gone.
   */
  async retire(replica: RetiredReplica): Promise<boolean> {
    if (!replica.instance) return true;
    const cloud = await this.instances();
    if (!cloud) return false;
    const { id } = replica.instance;
    if ((await cloud.state(id)).gone) return true;
    await cloud.terminate([id]);
    this.d.log.info("terminating the instance of a replaced replica", { address: replica.host, instance: id });
    return false;
  }

  close(): void {
    this.cloud.close();
  }
}
