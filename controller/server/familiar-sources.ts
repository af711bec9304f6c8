/**
 * {@link FamiliarSources} remembers where each user has logged in successfully (their address's
 * /24 or /64), so that during a flood of guesses a real user coming back from there is checked
 * first and is limited only by failures from there: an attacker elsewhere cannot lock them out.
 * Only a right password adds an entry, so an attacker cannot make a source familiar. Kept in memory,
 * per replica: after a restart a user is familiar again from their next login (meanwhile one holding
 * a valid token is still checked first).
 */
import { addressPrefix } from "./address-prefix";

export interface FamiliarSourcesOptions {
  /**
   * Pairs of user and prefix remembered at once; past it the one seen longest ago is forgotten.
   * @default 10000
   */
  maxRemembered?: number;
  /**
   * How long a pair stays familiar after its last successful login, in days.
   * @default 30
   */
  rememberDays?: number;
}

export class FamiliarSources {
  /** `user \0 prefix` → when it last logged in; ordered least recently seen first. */
  private readonly seen = new Map<string, number>();
  private readonly maxRemembered: number;
  private readonly rememberMs: number;

  constructor(o: FamiliarSourcesOptions = {}) {
    this.maxRemembered = o.maxRemembered ?? 10_000;
    this.rememberMs = (o.rememberDays ?? 30) * 24 * 3600 * 1000;
  }

  /** `user` logged in successfully from `address`. */
  loggedIn(user: string, address: string, now = Date.now()): void {
    const key = `${user}\0${addressPrefix(address)}`;
    this.seen.delete(key);
    this.seen.set(key, now);
    while (this.seen.size > this.maxRemembered) this.seen.delete(this.seen.keys().next().value!);
  }

  /** Whether `user` has logged in successfully from `address`'s prefix lately. */
  has(user: string, address: string, now = Date.now()): boolean {
    const at = this.seen.get(`${user}\0${addressPrefix(address)}`);
    return at !== undefined && now - at <= this.rememberMs;
  }
}
