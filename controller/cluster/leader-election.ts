/**
 * {@link LeaderElection}: one controller replica leads, chosen through the store: a campaign key
 * bound to a short lease (1 s with etcd, see timing.ts), renewed four times per TTL by its holder. The others watch the key and
 * campaign when it goes. The leader fences itself on its own clock: if no renewal has succeeded
 * for most of the TTL it stops leading before the store could have handed leadership on; and
 * every leader-only write is fenced on its term ({@link LeaderElection.fenced}), so a deposed leader's write fails.
 *
 * A campaign sent while etcd has no leader would hang until the store's 5 s deadline; each attempt
 * therefore gives up after {@link CAMPAIGN_ATTEMPT_MS} and the next follows at once (a short pause),
 * so takeover happens within one attempt of etcd electing a leader again.
 */
import type { Logger } from "../../api";
import { keys } from "../state";
import type { Store, Watcher } from "../store";
import { absent } from "../store";
import type { Leadership } from "../workers";
import { fencedStore } from "./fenced-store";

export const LEADER_KEY = keys.clusterLeader;

/** How long one campaign step (lease grant, then the claim) may wait for the store. */
const CAMPAIGN_ATTEMPT_MS = 600;
/** Pause between failed campaign attempts while the leader key is free. */
const CAMPAIGN_RETRY_MS = 150;

export interface LeaderElectionOptions {
  store: Store;
  replicaId: string;
  /** Published in the campaign key, for status. */
  addresses: () => string[];
  log: Logger;
  /**
   * The campaign lease. A dead leader's successor is chosen about this long (plus one etcd
   * election timeout) after etcd has a leader again: see timing.ts.
   */
  ttlSeconds: number;
  /** Also told to every {@link LeaderElection.watch} listener. */
  onElected?(): void;
  onDeposed?(): void;
}

export class LeaderElection implements Leadership {
  private leading = false;
  private readonly listeners = new Set<(leading: boolean) => void>();
  private createRevision = 0;
  private leaseId = "";
  private lastRenewal = 0;
  private renewTimer?: NodeJS.Timeout;
  private retryTimer?: NodeJS.Timeout;
  private watcher?: Watcher;
  private stopped = false;
  private campaigning = false;
  private lastFailureLog = 0;

  constructor(private readonly o: LeaderElectionOptions) {}

  get isLeader(): boolean {
    return this.leading;
  }
  private get ttl(): number {
    return this.o.ttlSeconds;
  }
  /** Renewals are this far apart, and a leader that could not renew for the TTL minus this stops. */
  private get renewMs(): number {
    return (this.ttl * 1000) / 4;
  }

  start(): void {
    this.watcher = this.o.store.watch(
      LEADER_KEY,
      (events) => {
        if (events.some((e) => e.type === "delete")) this.campaign();
      },
      { onError: () => this.campaign() },
    );
    // Also retry on a timer: a watch can miss the moment (reconnects), a timer cannot.
    this.retryTimer = setInterval(() => this.campaign(), this.ttl * 1000);
    this.retryTimer.unref();
    this.campaign();
  }

  /** Calls `listener` on each election and deposition (synchronously, before a deposed leader's lease is revoked). */
  watch(listener: (leading: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The store with every write fenced on this term (see fenced-store.ts): on the campaign key this
   * replica holds now. A pass of a term that ended still drains after a quick re-election (a lease
   * not renewed in time under load, won again a second later); its writes must fail, not pass on the
   * new term's key.
   */
  fenced(): Store {
    const term = this.leading ? this.createRevision : -1;
    return fencedStore(this.o.store, () => [
      { key: LEADER_KEY, target: "createRevision", value: this.leading && this.createRevision === term ? term : -1 },
    ]);
  }

  private tell(leading: boolean): void {
    if (leading) this.o.onElected?.();
    else this.o.onDeposed?.();
    for (const l of [...this.listeners]) l(leading);
  }

  private campaign(): void {
    if (this.stopped || this.leading || this.campaigning) return;
    this.campaigning = true;
    this.tryCampaign().then(
      () => {
        this.campaigning = false;
      },
      (err: unknown) => {
        this.campaigning = false;
        if (Date.now() - this.lastFailureLog > 5000) {
          this.lastFailureLog = Date.now();
          this.o.log.warn("leader campaign failed; retrying until the store answers", { err });
        }
        // The store did not answer (no etcd leader yet): try again at once rather than at the next timer tick.
        const again = setTimeout(() => this.campaign(), CAMPAIGN_RETRY_MS);
        again.unref();
      },
    );
  }

  private async tryCampaign(): Promise<void> {
    const call = { timeoutMs: CAMPAIGN_ATTEMPT_MS };
    const lease = await this.o.store.grantLease(this.ttl, call);
    let res;
    try {
      res = await this.o.store.txn(
        {
          compare: [absent(LEADER_KEY)],
          success: [
            {
              type: "put",
              key: LEADER_KEY,
              value: JSON.stringify({
                replica: this.o.replicaId,
                addresses: this.o.addresses(),
                since: new Date().toISOString(),
              }),
              lease: lease.id,
            },
          ],
        },
        call,
      );
    } catch (err) {
      // The claim may still land after we gave up: revoking its lease releases it for the next try
      // (not awaited: without an etcd leader the revoke would wait as long as the claim did).
      void this.o.store.revokeLease(lease.id).catch(() => undefined);
      throw err;
    }
    if (!res.succeeded || this.stopped) {
      await this.o.store.revokeLease(lease.id).catch(() => undefined);
      return;
    }
    this.leaseId = lease.id;
    this.createRevision = res.revision;
    this.lastRenewal = Date.now();
    this.leading = true;
    this.o.log.info("this replica is now the controller leader", { replica: this.o.replicaId });
    this.renewTimer = setInterval(() => {
      this.renew().catch(() => undefined);
    }, this.renewMs);
    this.renewTimer.unref();
    this.tell(true);
  }

  private async renew(): Promise<void> {
    if (!this.leading) return;
    // Self-fence on our own clock before the store can have let the lease go.
    if (Date.now() - this.lastRenewal > this.ttl * 1000 - this.renewMs)
      return this.depose("leadership lease not renewed in time");
    try {
      await this.o.store.keepAlive(this.leaseId);
      this.lastRenewal = Date.now();
    } catch (err) {
      if (
        Date.now() - this.lastRenewal > this.ttl * 1000 - this.renewMs ||
        (err as { code?: string }).code === "not-found"
      )
        this.depose(`renewal failed: ${(err as Error).message}`);
    }
  }

  private depose(why: string): void {
    if (!this.leading) return;
    this.leading = false;
    clearInterval(this.renewTimer);
    this.o.log.warn("this replica is no longer the controller leader", { why });
    this.tell(false);
    this.campaign();
  }

  /** Steps down (handing leadership on at once) and stops campaigning. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.retryTimer);
    this.watcher?.close();
    if (this.leading) {
      this.leading = false;
      clearInterval(this.renewTimer);
      this.tell(false);
      await this.o.store.revokeLease(this.leaseId).catch(() => undefined);
    }
  }
}
