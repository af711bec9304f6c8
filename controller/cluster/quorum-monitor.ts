/**
 * {@link QuorumMonitor}: whether this replica's own etcd member currently follows a raft leader. A
 * member cut off from the majority has none once its election timeout passes; asking it costs one
 * loopback call and needs no quorum. The API uses this to refuse writes at once (503, so clients
 * go to another replica) instead of letting each one wait out the store's 5 s deadline.
 *
 * An ordinary election also leaves members leaderless for one or two election timeouts; only a
 * longer spell counts, so a write during a normal election still waits for it and succeeds (and
 * one that meets a split vote is answered 503 and retried elsewhere, with its request id).
 */
import type { EtcdMembership } from "../store/etcd";
import { ETCD_ELECTION_TIMEOUT_MS } from "./timing";

export interface QuorumMonitorOptions {
  membership: EtcdMembership;
  /** @default half an election timeout */
  pollMs?: number;
  /** Leaderless this long means cut off, not electing. @default three election timeouts */
  cutOffAfterMs?: number;
}

export class QuorumMonitor {
  private leaderlessSince: number | undefined;
  private timer?: NodeJS.Timeout;
  private polling = false;

  constructor(private readonly o: QuorumMonitorOptions) {}

  start(): void {
    this.timer = setInterval(
      () => {
        void this.poll();
      },
      this.o.pollMs ?? ETCD_ELECTION_TIMEOUT_MS / 2,
    );
    this.timer.unref();
  }

  /** True once the member has had no leader for longer than an election takes. */
  get cutOff(): boolean {
    return (
      this.leaderlessSince !== undefined &&
      Date.now() - this.leaderlessSince > (this.o.cutOffAfterMs ?? 3 * ETCD_ELECTION_TIMEOUT_MS)
    );
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const { leaderId } = await this.o.membership.status();
      if (leaderId !== "0") this.leaderlessSince = undefined;
      else this.leaderlessSince ??= Date.now();
    } catch {
      // Our own member does not answer at all: as good as cut off.
      this.leaderlessSince ??= Date.now();
    } finally {
      this.polling = false;
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
