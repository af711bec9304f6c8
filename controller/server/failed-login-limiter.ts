/**
 * {@link FailedLoginLimiter} bounds password guessing: each user name and each source address may
 * fail only so many logins in a window. An attempt counts as a failure from the moment it starts (so
 * parallel guesses cannot all slip in before the first is counted) and is refunded if it succeeds.
 * Counts decay steadily, so a locked user or address gets in again after `Retry-After` seconds.
 * Counts are per replica (kept in memory): an attacker spreading over N replicas gets N times the
 * budget, which still bounds guessing.
 */

export interface FailedLoginLimiterOptions {
  /**
   * Failed logins one user name may have in a window (from any address).
   * @default 10
   */
  perUser?: number;
  /**
   * Failed logins one source address may have in a window (for any users).
   * @default 50
   */
  perSource?: number;
  /**
   * The window, in seconds: counts drain at `limit / window` per second.
   * @default 300
   */
  windowSeconds?: number;
  /**
   * Most user names and addresses tracked at once (memory bound); the stalest are forgotten first.
   * @default 10000
   */
  maxTracked?: number;
}

interface Count { value: number; at: number }

/** One kind of key (users or addresses) with its own limit. */
class DecayingCounts {
  private readonly counts = new Map<string, Count>();
  private readonly perMs: number;

  constructor(private readonly limit: number, windowMs: number, private readonly maxTracked: number) {
    this.perMs = limit / windowMs;
  }

  private current(key: string, now: number): number {
    const c = this.counts.get(key);
    return c ? Math.max(0, c.value - (now - c.at) * this.perMs) : 0;
  }

  /** Seconds until `key` may try again, or 0 when it may now. */
  waitSeconds(key: string, now: number): number {
    const over = this.current(key, now) - this.limit + 1;
    return over > 0 ? Math.ceil(over / this.perMs / 1000) : 0;
  }

  add(key: string, delta: number, now: number): void {
    const value = this.current(key, now) + delta;
    this.counts.delete(key); // re-inserted last: the map stays ordered stalest first
    if (value > 0) this.counts.set(key, { value, at: now });
    while (this.counts.size > this.maxTracked) this.counts.delete(this.counts.keys().next().value!);
  }
}

export class FailedLoginLimiter {
  private readonly users: DecayingCounts;
  private readonly sources: DecayingCounts;

  constructor(o: FailedLoginLimiterOptions = {}) {
    const windowMs = (o.windowSeconds ?? 300) * 1000;
    const maxTracked = o.maxTracked ?? 10_000;
    this.users = new DecayingCounts(o.perUser ?? 10, windowMs, maxTracked);
    this.sources = new DecayingCounts(o.perSource ?? 50, windowMs, maxTracked);
  }

  /**
   * Starts an attempt: returns the seconds to wait when `user` or `source` is over its limit (the
   * attempt must be refused), else 0 and counts the attempt as failed until {@link succeeded}.
   */
  begin(user: string, source: string, now = Date.now()): number {
    const wait = Math.max(this.users.waitSeconds(user, now), this.sources.waitSeconds(source, now));
    if (wait > 0) return wait;
    this.users.add(user, 1, now);
    this.sources.add(source, 1, now);
    return 0;
  }

  /** The attempt begun for `user` from `source` succeeded: it does not count. */
  succeeded(user: string, source: string, now = Date.now()): void {
    this.users.add(user, -1, now);
    this.sources.add(source, -1, now);
  }
}
