/**
 * Where the quorum keeper gets replica hosts: from the first broker that has one (the spare pool
 * first: hosts someone set aside on purpose; then a cloud). Each host goes back to its own broker.
 */
import type { Progress, ReplicaHost, ReplicaHostBroker, RetiredReplica } from "../../substrates";

interface Owned {
  host: ReplicaHost;
  owner: ReplicaHostBroker;
}

export class ReplicaHostChain implements ReplicaHostBroker<ReplicaHost & { owned?: Owned }> {
  constructor(private readonly brokers: ReplicaHostBroker[]) {}

  unavailable(): string | undefined {
    const reasons = this.brokers.map((b) => b.unavailable());
    return reasons.some((r) => r === undefined) ? undefined : reasons.join("; and ");
  }

  async acquire(
    nameFor: (address: string, preferred?: string) => string,
    progress: Progress,
    signal?: AbortSignal,
  ): Promise<ReplicaHost & { owned: Owned }> {
    const owner = this.brokers.find((b) => b.unavailable() === undefined);
    if (!owner) throw new Error(this.unavailable());
    const host = await owner.acquire(nameFor, progress, signal);
    return { address: host.address, ...(host.instance ? { instance: host.instance } : {}), owned: { host, owner } };
  }

  start(
    host: ReplicaHost & { owned?: Owned },
    name: string,
    initialCluster: string,
    progress: Progress,
  ): Promise<void> {
    return host.owned!.owner.start(host.owned!.host, name, initialCluster, progress);
  }

  async joined(address: string): Promise<void> {
    for (const b of this.brokers) await b.joined(address);
  }

  failed(host: ReplicaHost & { owned?: Owned }, why: string): Promise<void> {
    return host.owned!.owner.failed(host.owned!.host, why);
  }

  release(host: ReplicaHost & { owned?: Owned }): Promise<void> {
    return host.owned!.owner.release(host.owned!.host);
  }

  async abandon(host: ReplicaHost & { owned?: Owned }): Promise<void> {
    await host.owned!.owner.abandon?.(host.owned!.host);
  }

  async retire(replica: RetiredReplica): Promise<boolean> {
    let done = true;
    for (const b of this.brokers) if (b.retire && !(await b.retire(replica))) done = false;
    return done;
  }

  async lost(replica: { host: string; instance?: { id: string }; addedAt: string }): Promise<boolean> {
    for (const b of this.brokers) if (await b.lost?.(replica)) return true;
    return false;
  }
}
