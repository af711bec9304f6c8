/**
 * Replica hosts from the replica cloud (`steward set-replica-cloud aws|vsphere …`, or the
 * controller's own StatefulSet on Kubernetes): when the quorum keeper needs a host and the spare
 * pool has none, the leader asks the kind the replica cloud is for its broker (its `replicaHosts()`,
 * substrates/replica-hosts.ts) and hands it what only the controller has: the placement, the
 * stored credential, one-time enrolment tokens and a new replica's data directory, sealed in the
 * store until the replica collects it (it holds the CA key). Which kind it is, and how that kind
 * makes a host, is the kind's own business: nothing here names one.
 */
import type { Logger, ReplicaSubstrate } from "../../api";
import type {
  Progress,
  ReplicaHost,
  ReplicaHostBroker,
  ReplicaHostDeps,
  ReplicaHostsOfKind,
  RetiredReplica,
} from "../../substrates";
import { substrateKind } from "../../substrates";
import type { ControllerConfig } from "../config";
import type { Sealer } from "../security/sealing";
import type { CredentialOps, EnrolmentOps, StateCache } from "../state";
import { replicaDataPurpose } from "../state";
import { replicaDataFiles } from "./replica-data";

export interface CloudReplicaHostsOptions {
  cache: StateCache;
  /** Fenced, like every write of the leader's. */
  enrolments: EnrolmentOps;
  credentials: CredentialOps;
  sealer: Sealer;
  dataDir: string;
  config: ControllerConfig;
  caCert: string;
  controllerAddresses: () => string[];
  log: Logger;
  /**
   * How long a new instance or pod may take to boot and fetch the controller.
   * @default 600000
   */
  stageTimeoutMs?: number;
}

/** A host one kind's broker gave, with that broker (the replica cloud may change before the host goes back). */
interface Owned {
  host: ReplicaHost;
  owner: ReplicaHostBroker;
}
type OwnedHost = ReplicaHost & { owned?: Owned };

export class CloudReplicaHosts implements ReplicaHostBroker<OwnedHost> {
  /** Each kind's broker, made when the replica cloud is first that kind; closed with this. */
  private readonly brokers = new Map<ReplicaSubstrate, ReplicaHostsOfKind>();

  constructor(private readonly o: CloudReplicaHostsOptions) {}

  /** The broker of the kind the replica cloud is now, if it is set and the kind hosts replicas. */
  private current(): ReplicaHostsOfKind | undefined {
    const cloud = this.o.cache.replicaCloud;
    if (!cloud) return undefined;
    let broker = this.brokers.get(cloud.substrate);
    if (!broker) {
      broker = substrateKind(cloud.substrate).replicaHosts?.(this.depsFor(cloud.substrate));
      if (broker) this.brokers.set(cloud.substrate, broker);
    }
    return broker;
  }

  private depsFor(kind: ReplicaSubstrate): ReplicaHostDeps {
    const { cache, enrolments, sealer } = this.o;
    return {
      placement: () => (cache.replicaCloud?.substrate === kind ? cache.replicaCloud : undefined),
      credential: (name) => this.o.credentials.open(name, kind),
      controllerUuid: () => cache.controller?.uuid ?? "",
      issueToken: () => enrolments.issueReplica(),
      staged: (token) => enrolments.replicaStaged(token),
      provideData: async (token, address, name, initialCluster) => {
        const data = await replicaDataFiles(this.o, address, name, initialCluster);
        await enrolments.provideReplicaData(token, sealer.sealJson(replicaDataPurpose(token), data));
      },
      controller: () => ({ addresses: this.o.controllerAddresses(), caCert: this.o.caCert }),
      memberHosts: () => [...cache.clusterMembers.values()].filter((m) => m.state !== "removed").map((m) => m.host),
      log: this.o.log,
      ...(this.o.stageTimeoutMs !== undefined ? { stageTimeoutMs: this.o.stageTimeoutMs } : {}),
    };
  }

  unavailable(): string | undefined {
    const cloud = this.o.cache.replicaCloud;
    if (!cloud) return "no cloud is set for replicas (steward set-replica-cloud)";
    const broker = this.current();
    return broker ? broker.unavailable() : `${cloud.substrate} gives no replica hosts`;
  }

  async acquire(
    nameFor: (address: string, preferred?: string) => string,
    progress: Progress,
    signal?: AbortSignal,
  ): Promise<OwnedHost> {
    const owner = this.current();
    if (!owner || this.unavailable() !== undefined) throw new Error(this.unavailable());
    const host = await owner.acquire(nameFor, progress, signal);
    return { address: host.address, ...(host.instance ? { instance: host.instance } : {}), owned: { host, owner } };
  }

  start(host: OwnedHost, name: string, initialCluster: string, progress: Progress): Promise<void> {
    return host.owned!.owner.start(host.owned!.host, name, initialCluster, progress);
  }

  async joined(address: string): Promise<void> {
    await this.current()?.joined(address);
  }

  failed(host: OwnedHost, why: string): Promise<void> {
    return host.owned!.owner.failed(host.owned!.host, why);
  }

  release(host: OwnedHost): Promise<void> {
    return host.owned!.owner.release(host.owned!.host);
  }

  async abandon(host: OwnedHost): Promise<void> {
    await host.owned!.owner.abandon?.(host.owned!.host);
  }

  async retire(replica: RetiredReplica): Promise<boolean> {
    return (await this.current()?.retire?.(replica)) ?? true;
  }

  async lost(replica: { host: string; instance?: { id: string }; addedAt: string }): Promise<boolean> {
    return (await this.current()?.lost?.(replica)) ?? false;
  }

  close(): void {
    for (const b of this.brokers.values()) b.close();
    this.brokers.clear();
  }
}
