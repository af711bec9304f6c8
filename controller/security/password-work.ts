/**
 * {@link PasswordWork} runs password hashing for logins on the libuv thread pool, a few at a time.
 * scrypt is slow on purpose; left unbounded, a flood of logins would fill the pool's four threads
 * and the store's file writes (which share that pool) would queue behind it. Unknown users are
 * checked against a dummy hash of the same cost, so they take as long as a wrong password.
 *
 * Under a flood of guesses the real users must still get in: checks for familiar users (logging in
 * from where they did before, or holding a valid token) wait in a lane of their own that is served
 * first; and checks for names that do not exist take only a few slots of the other lane, past which
 * they are answered as a check would be (after the time one takes now, or 429 when the lane is full)
 * without spending the work, so a flood of made-up names costs little and tells nothing.
 */
import { StewardError } from "../../api";
import { hashPassword, newSecret, verifyPassword } from "./credentials";

export interface PasswordWorkOptions {
  /**
   * Password checks running at once (each holds one of the libuv pool's four threads; the others
   * stay free for file writes).
   * @default 2
   */
  concurrency?: number;
  /**
   * Password checks waiting their turn in each lane; beyond this a login is refused with 429 at once.
   * @default 32
   */
  maxQueued?: number;
  /**
   * Checks for names that do not exist running or waiting at once; past it they are answered
   * without the work.
   * @default 4
   */
  maxUnknownUserChecks?: number;
}

/** Who a check is for: a familiar user's go first. */
export type CheckLane = "familiar" | "other";

export class PasswordWork {
  private readonly concurrency: number;
  private readonly maxQueued: number;
  private readonly maxUnknownUserChecks: number;
  private running = 0;
  private unknownUserChecks = 0;
  private readonly queues: Record<CheckLane, (() => void)[]> = { familiar: [], other: [] };
  private readonly dummyHash: Promise<string>;
  /** How long one check takes lately (a moving average), what an unchecked unknown user waits. */
  private checkMs = 100;

  constructor(o: PasswordWorkOptions = {}) {
    this.concurrency = o.concurrency ?? 2;
    this.maxQueued = o.maxQueued ?? 32;
    this.maxUnknownUserChecks = o.maxUnknownUserChecks ?? 4;
    this.dummyHash = hashPassword(newSecret());
    this.dummyHash.catch(() => undefined); // awaited (and any failure seen) by the first unknown-user login
  }

  /** Checks `password` against `storedHash`; with no hash (unknown user) answers false after the same wait. */
  async verify(password: string, storedHash: string | undefined, lane: CheckLane): Promise<boolean> {
    if (storedHash !== undefined) return this.run(lane, () => verifyPassword(password, storedHash));
    if (this.unknownUserChecks >= this.maxUnknownUserChecks) {
      // What the check would have met in the other lane: refused when full, else its wait and its work.
      if (this.queues.other.length >= this.maxQueued) throw this.busy();
      const waitMs = this.checkMs * (1 + this.queues.other.length / this.concurrency);
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      return false;
    }
    this.unknownUserChecks++;
    try {
      const hash = await this.dummyHash;
      await this.run("other", () => verifyPassword(password, hash));
      return false;
    } finally {
      this.unknownUserChecks--;
    }
  }

  /** Hashes a new password (a password change, by a signed-in user), sharing the same bounded slots. */
  hash(password: string): Promise<string> {
    return this.run("familiar", () => hashPassword(password));
  }

  private busy(): StewardError {
    return new StewardError("rate-limited", "too many logins are being checked right now; try again in a few seconds", {
      details: { retryAfterSeconds: 2 },
    });
  }

  private async run<T>(lane: CheckLane, fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      const queue = this.queues[lane];
      if (queue.length >= this.maxQueued) throw this.busy();
      await new Promise<void>((resolve) => queue.push(resolve));
    } else {
      this.running++;
    }
    const started = performance.now();
    try {
      return await fn();
    } finally {
      this.checkMs = 0.8 * this.checkMs + 0.2 * (performance.now() - started);
      // Hand the slot straight to the next waiter (familiar users first), or free it.
      const next = this.queues.familiar.shift() ?? this.queues.other.shift();
      if (next) next();
      else this.running--;
    }
  }
}
