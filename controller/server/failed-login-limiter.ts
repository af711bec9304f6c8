/**
 * {@link FailedLoginLimiter} bounds password guessing while keeping real users in: failures are
 * counted per source network (/24 or /64, see address-prefix.ts), so the attacking source is
 * locked, not the account. A user coming from a network they logged in from ("familiar") is
 * limited only by failures for them from there. Attempts from elsewhere also count against a
 * per-user ceiling, which bounds guessing spread over many networks. An attempt counts as a failure
 * from the moment it starts (so parallel guesses cannot all slip in before the first is counted)
 * and is refunded if it succeeds. Counts decay steadily, so a locked source gets in
 * again after `Retry-After` seconds. Counts are per replica (kept in memory): an attacker spreading
 * over N replicas gets N times the budget, which still bounds guessing.
 */
import { addressPrefix } from "./address-prefix";

export interface FailedLoginLimiterOptions {
  /**
   * Failed logins one user name may have in a window from networks it has not logged in from (all
   * of them together), and from each network it has.
   * @default 20
   */
  perUser?: number;
  /**
   * Failed logins one source network (IPv4 /24, IPv6 /64) may have in a window, for any users.
   * @default 50
   */
  perSource?: number;
  /**
   * The window, in seconds: counts drain at `limit / window` per second.
   * @default 300
   */
  windowSeconds?: number;
  /**
   * Most user names and networks tracked at once (memory bound); the stalest are forgotten first.
   * @default 10000
   */
  maxTracked?: number;
}

/** Why an attempt is refused: its source network failed too often, or (from an unfamiliar network) the user did. */
export interface LoginRefusal {
  waitSeconds: number;
  limit: "source" | "user";
}

interface Count {
  value: number;
  at: number;
}

/** One kind of key (users, networks, users from a network) with its own limit. */
class DecayingCounts {
  private readonly counts = new Map<string, Count>();
  private readonly perMs: number;

  constructor(
    private readonly limit: number,
    windowMs: number,
    private readonly maxTracked: number,
  ) {
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

/** One login attempt, as the limits see it. */
export interface LoginAttempt {
  user: string;
  /** The client's address (its /24 or /64 is what counts). */
  source: string;
  /** The user has logged in from this network before (see FamiliarSources). */
  familiar: boolean;
  /** The user exists: names that do not are counted apart, so guesses at them cannot push real users' counts out. */
  exists: boolean;
}

export class FailedLoginLimiter {
  private readonly users: DecayingCounts;
  /** The same ceiling for names that do not exist (refused alike, so answers do not tell which exist). */
  private readonly unknownUsers: DecayingCounts;
  private readonly sources: DecayingCounts;
  /** Failures per user from one network, what limits a familiar user. */
  private readonly usersFrom: DecayingCounts;

  constructor(o: FailedLoginLimiterOptions = {}) {
    const windowMs = (o.windowSeconds ?? 300) * 1000;
    const maxTracked = o.maxTracked ?? 10_000;
    const perUser = o.perUser ?? 20;
    this.users = new DecayingCounts(perUser, windowMs, maxTracked);
    this.unknownUsers = new DecayingCounts(perUser, windowMs, maxTracked);
    this.sources = new DecayingCounts(o.perSource ?? 50, windowMs, maxTracked);
    this.usersFrom = new DecayingCounts(perUser, windowMs, maxTracked);
  }

  /**
   * Starts an attempt: returns why it must be refused when over a limit, else undefined and counts
   * the attempt as failed until {@link succeeded}.
   */
  begin(a: LoginAttempt, now = Date.now()): LoginRefusal | undefined {
    const prefix = addressPrefix(a.source);
    const pair = `${a.user}\0${prefix}`;
    if (a.familiar) {
      const wait = this.usersFrom.waitSeconds(pair, now);
      if (wait > 0) return { waitSeconds: wait, limit: "source" };
    } else {
      const fromSource = this.sources.waitSeconds(prefix, now);
      if (fromSource > 0) return { waitSeconds: fromSource, limit: "source" };
      const users = a.exists ? this.users : this.unknownUsers;
      const forUser = users.waitSeconds(a.user, now);
      if (forUser > 0) return { waitSeconds: forUser, limit: "user" };
      users.add(a.user, 1, now);
    }
    this.sources.add(prefix, 1, now);
    // Only a real user can be familiar anywhere: made-up names' pairs would only crowd real ones out.
    if (a.exists) this.usersFrom.add(pair, 1, now);
    return undefined;
  }

  /** The attempt begun as `a` succeeded (or was not checked, refused for load): it does not count. */
  succeeded(a: LoginAttempt, now = Date.now()): void {
    const prefix = addressPrefix(a.source);
    if (!a.familiar) (a.exists ? this.users : this.unknownUsers).add(a.user, -1, now);
    this.sources.add(prefix, -1, now);
    if (a.exists) this.usersFrom.add(`${a.user}\0${prefix}`, -1, now);
  }
}
