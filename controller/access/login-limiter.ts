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

/** A token bucket: at most `burst` tokens, refilled at `perSecond`; each attempt takes one. */
class TokenBucket {
  private tokens: number;
  private last = Date.now();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  take(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Seconds until a token is likely free, for Retry-After. */
  retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((1 - this.tokens) / this.perSecond));
  }
}

export class LoginLimiter {
  private readonly bucket: TokenBucket;
  /** Logins refused so far (for status and benchmarks). */
  refused = 0;

  constructor(o: LoginLimiterOptions = {}) {
    this.bucket = new TokenBucket(o.perSecond ?? 500, o.burst ?? 500);
  }

  /** True when a login may proceed now. */
  take(): boolean {
    if (this.bucket.take()) return true;
    this.refused++;
    return false;
  }

  /** Seconds until a token is likely free, for Retry-After. */
  retryAfterSeconds(): number {
    return this.bucket.retryAfterSeconds();
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
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly maxSources: number;

  constructor(private readonly o: SourceLimiterOptions) {
    this.maxSources = o.maxSources ?? 10_000;
  }

  /** True when `source` may make one more attempt now. */
  take(source: string): boolean {
    const b = this.buckets.get(source) ?? new TokenBucket(this.o.perSecond, this.o.burst);
    // Re-inserted, so the map's order is least recently seen first.
    this.buckets.delete(source);
    this.buckets.set(source, b);
    if (this.buckets.size > this.maxSources) this.buckets.delete(this.buckets.keys().next().value!);
    return b.take();
  }

  /** Seconds until `source` may try again, for Retry-After. */
  retryAfterSeconds(source: string): number {
    return this.buckets.get(source)?.retryAfterSeconds() ?? 1;
  }
}
