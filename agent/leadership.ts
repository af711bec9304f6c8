/**
 * {@link UnitLeadership} keeps one unit's leadership claimed and renewed, and answers `is-leader`
 * with the local guarantee of DESIGN.md §5: a leader that cannot renew stops answering true before
 * another unit could have claimed.
 *
 * Why it holds: the controller renews (or takes) the store lease only after it received the claim,
 * so a claim *sent* at `s` and answered "leader, lease L" leaves the key in place until at least
 * `s + L`; no other unit can claim before then. Times here are this process's monotonic clock, never
 * the wall clock (which may jump).
 *
 * The rule (`leaderAt`): the record is the newest successful claim, `{sent, leaseMs}`. is-leader
 * answers true at `now` only while `now < sent + leaseMs / 2`, so a true answer always leaves at
 * least half the lease of guaranteed leadership (what the tool promises), and never after
 * `sent + leaseMs`. It follows that:
 * - an answer that arrives later than `sent + lease/2` (a reply TCP delivered after a network cut)
 *   is not true: it is recorded with the time it was sent, already too old;
 * - when the controller cannot be reached, is-leader answers from the record alone, after waiting
 *   at most {@link answerWaitMs} for the controller;
 * - an answer "not the leader" clears the record at once (false is always safe), and so does
 *   leader-resign, before it asks the controller.
 *
 * Claims go one at a time per unit (renewals and is-leader calls share the one in flight), so
 * replies arrive in the order their claims were sent and the newest reply is the newest record. A
 * claim that got no reply leaves the record as it was: the controller only ever lengthens a lease
 * it promised, or promises a shorter one for a new one taken no earlier (leadership-ops.ts).
 *
 * Renewal: while the view says this unit leads, it claims again half a lease after the last claim
 * was sent (the lease being the one last granted, or its application's when shorter); when the view
 * says nobody leads, it claims at once.
 */
import type { UnitView } from "../api/core";

/** The newest successful claim: sent at `sent` (monotonic ms), granting `leaseMs`. */
export interface LeaseRecord {
  sent: number;
  leaseMs: number;
}

/** Whether a unit with `record` may answer is-leader true at `now` (the rule above). */
export function leaderAt(record: LeaseRecord | undefined, now: number): boolean {
  return record !== undefined && now < record.sent + record.leaseMs / 2;
}

/** The least time between two renewals (a renewal that keeps failing is not retried in a tight loop). */
const RENEW_MIN_GAP_MS = 200;

/** How long is-leader waits for the controller before answering from the record: a quarter lease, at most 5 s. */
export function answerWaitMs(leaseMs: number): number {
  return Math.min(leaseMs / 4, 5000);
}

export interface UnitLeadershipDeps {
  unit: string;
  /** Calls the controller (`leader.claim`, `leader.resign`). */
  call: <T>(method: string, params: unknown) => Promise<T>;
  /** The lease (seconds) the unit's view says its application has. */
  leaseSeconds: () => number;
  /** A monotonic clock in ms. @default performance.now */
  now?: () => number;
  onError?: (err: unknown) => void;
}

export class UnitLeadership {
  private record?: LeaseRecord;
  private inFlight?: Promise<void>;
  /** One more at each resign: an answer to a claim sent before it is not recorded. */
  private epoch = 0;
  private renewTimer?: NodeJS.Timeout;
  private closed = false;
  private readonly now: () => number;

  constructor(private readonly d: UnitLeadershipDeps) {
    this.now = d.now ?? (() => performance.now());
  }

  /** The record the rule judges by (for tests and status). */
  get current(): Readonly<LeaseRecord> | undefined {
    return this.record;
  }

  /** The lease to judge a claim by: the one granted, or the view's when the controller says none. */
  private leaseMs(granted: number | undefined): number {
    return (granted ?? this.d.leaseSeconds()) * 1000;
  }

  /** One claim (or the one already in flight): resolves once its answer is recorded, or it failed. */
  claim(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    const sent = this.now();
    const epoch = this.epoch;
    const p = this.d
      .call<{ leader: boolean; leaseSeconds?: number }>("leader.claim", { unit: this.d.unit })
      .then(
        (res) => {
          if (epoch !== this.epoch) return;
          if (res.leader) {
            if (!this.record || sent >= this.record.sent)
              this.record = { sent, leaseMs: this.leaseMs(res.leaseSeconds) };
          } else this.record = undefined;
        },
        (err: unknown) => this.d.onError?.(err),
      )
      .finally(() => {
        if (this.inFlight === p) this.inFlight = undefined;
      });
    this.inFlight = p;
    return p;
  }

  /** is-leader: asks the controller (which renews), waits at most {@link answerWaitMs}, then applies the rule. */
  async isLeader(): Promise<boolean> {
    const wait = answerWaitMs(this.record?.leaseMs ?? this.leaseMs(undefined));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.claim(), new Promise<void>((r) => (timer = setTimeout(r, wait)))]);
    clearTimeout(timer);
    return leaderAt(this.record, this.now());
  }

  /** leader-resign: false at once (before the controller is asked), then the controller drops the key. */
  async resign(to?: string): Promise<void> {
    this.epoch++;
    this.record = undefined;
    this.inFlight = undefined;
    this.stopRenewing();
    await this.d.call("leader.resign", { unit: this.d.unit, ...(to !== undefined ? { to } : {}) });
    this.record = undefined; // a renewal answered meanwhile must not bring it back
  }

  /** Follows the unit's view: claims when nobody leads, renews while this unit does. */
  follow(view: Pick<UnitView, "life" | "leader" | "leaderKnown">): void {
    if (this.closed || view.life !== "alive") {
      this.stopRenewing();
      return;
    }
    if (!view.leaderKnown) void this.claim();
    if (view.leader && !this.renewTimer) this.scheduleRenewal();
    else if (!view.leader) this.stopRenewing();
  }

  private scheduleRenewal(): void {
    clearTimeout(this.renewTimer);
    // Without a record (a restarted agent the view says leads, a failed renewal) at once, but never in a tight loop.
    const leaseMs = Math.min(this.record?.leaseMs ?? Infinity, this.leaseMs(undefined));
    const due = this.record ? this.record.sent + leaseMs / 2 : this.now();
    this.renewTimer = setTimeout(
      () => {
        void this.claim().finally(() => {
          if (this.renewTimer && !this.closed) this.scheduleRenewal();
        });
      },
      Math.max(RENEW_MIN_GAP_MS, due - this.now()),
    );
    this.renewTimer.unref?.();
  }

  private stopRenewing(): void {
    clearTimeout(this.renewTimer);
    this.renewTimer = undefined;
  }

  close(): void {
    this.closed = true;
    this.stopRenewing();
  }
}
