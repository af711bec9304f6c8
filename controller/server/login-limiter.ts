/**
 * A token bucket in front of agent logins, so a reconnect storm (a replica died and its agents all
 * come at once) is spread out instead of stalling the controller with TLS handshakes. A refused
 * agent gets 503 with Retry-After and tries again after its jittered backoff.
 */
export interface LoginLimiterOptions {
  /**
   * Logins allowed per second, on average. A login costs about a millisecond (an ECDSA handshake
   * and a SHA-256 of the credential), so 500 a second lets 10,000 agents in within about 20 s
   * while leaving the controller most of its time.
   * @default 500
   */
  perSecond?: number;
  /**
   * Logins allowed at once after a quiet spell.
   * @default 500
   */
  burst?: number;
}

export class LoginLimiter {
  private tokens: number;
  private last = Date.now();
  private readonly rate: number;
  private readonly burst: number;
  /** Logins refused so far (for status and benchmarks). */
  refused = 0;

  constructor(o: LoginLimiterOptions = {}) {
    this.rate = o.perSecond ?? 500;
    this.burst = o.burst ?? 500;
    this.tokens = this.burst;
  }

  /** True when a login may proceed now. */
  take(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    if (this.tokens >= 1) { this.tokens -= 1; return true; }
    this.refused++;
    return false;
  }

  /** Seconds until a token is likely free, for Retry-After. */
  retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((1 - this.tokens) / this.rate));
  }
}

export interface SourceLimiterOptions {
  /** Attempts allowed per second from one source, on average. */
  perSecond: number;
  /** Attempts allowed at once from one source after a quiet spell. */
  burst: number;
  /**
   * Sources remembered at once; beyond it the oldest is forgotten (a flood from many addresses
   * must not grow memory without bound).
   * @default 10,000
   */
  maxSources?: number;
}

/**
 * A token bucket per source address, for failed logins: a source that keeps sending bad
 * credentials is answered 429 with Retry-After, and its failures never spend the shared budget
 * {@link LoginLimiter} keeps for real agents.
 */
export class SourceLimiter {
  private readonly buckets = new Map<string, { tokens: number; last: number }>();
  private readonly maxSources: number;

  constructor(private readonly o: SourceLimiterOptions) {
    this.maxSources = o.maxSources ?? 10_000;
  }

  /** True when `source` may make one more attempt now. */
  take(source: string): boolean {
    const now = Date.now();
    const b = this.buckets.get(source) ?? { tokens: this.o.burst, last: now };
    b.tokens = Math.min(this.o.burst, b.tokens + ((now - b.last) / 1000) * this.o.perSecond);
    b.last = now;
    // Re-inserted, so the map's order is least recently seen first.
    this.buckets.delete(source);
    this.buckets.set(source, b);
    if (this.buckets.size > this.maxSources) this.buckets.delete(this.buckets.keys().next().value!);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  /** Seconds until `source` may try again, for Retry-After. */
  retryAfterSeconds(source: string): number {
    const b = this.buckets.get(source);
    return Math.max(1, Math.ceil((1 - (b?.tokens ?? 1)) / this.o.perSecond));
  }
}
