/**
 * {@link PasswordWork} runs password hashing for logins on the libuv thread pool, a few at a time.
 * scrypt is slow on purpose; left unbounded, a flood of logins would fill the pool's four threads
 * and the store's file writes (which share that pool) would queue behind it. Unknown users are
 * checked against a dummy hash of the same cost, so they take as long as a wrong password.
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
   * Password checks waiting their turn; beyond this a login is refused with 429 at once.
   * @default 32
   */
  maxQueued?: number;
}

export class PasswordWork {
  private readonly concurrency: number;
  private readonly maxQueued: number;
  private running = 0;
  private readonly queue: (() => void)[] = [];
  private readonly dummyHash: Promise<string>;

  constructor(o: PasswordWorkOptions = {}) {
    this.concurrency = o.concurrency ?? 2;
    this.maxQueued = o.maxQueued ?? 32;
    this.dummyHash = hashPassword(newSecret());
    this.dummyHash.catch(() => undefined); // awaited (and any failure seen) by the first unknown-user login
  }

  /** Checks `password` against `storedHash`; with no hash (unknown user) does the same work and answers false. */
  async verify(password: string, storedHash: string | undefined): Promise<boolean> {
    const hash = storedHash ?? (await this.dummyHash);
    const ok = await this.run(() => verifyPassword(password, hash));
    return storedHash !== undefined && ok;
  }

  /** Hashes a new password (a password change), sharing the same bounded slots. */
  hash(password: string): Promise<string> {
    return this.run(() => hashPassword(password));
  }

  private async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.queue.length >= this.maxQueued) {
        throw new StewardError("rate-limited", "too many logins are being checked right now; try again in a few seconds", { details: { retryAfterSeconds: 2 } });
      }
      await new Promise<void>((resolve) => this.queue.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await fn();
    } finally {
      // Hand the slot straight to the next waiter, or free it.
      const next = this.queue.shift();
      if (next) next(); else this.running--;
    }
  }
}
