/**
 * Checking a user's password the way every route that takes one must: under the failed-login
 * limits, with the work of hashing shared fairly, and without telling which users exist. Login,
 * the dashboard's session and changing one's own password all check through here.
 */
import type { FastifyRequest } from "fastify";
import { StewardError } from "../../api";
import { MAX_TOKEN_LIFETIME_MS, newTokenId, signToken } from "../security/credentials";
import { PasswordWork } from "../security/password-work";
import type { StateCache } from "../state";
import { authenticate } from "../access/auth";
import type { FailedLoginLimiterOptions, LoginRefusal } from "./failed-login-limiter";
import { FailedLoginLimiter } from "./failed-login-limiter";
import { FamiliarSources } from "./familiar-sources";

export interface IssuedToken {
  token: string;
  id: string;
  expiresAt: number;
  user: string;
  superuser: boolean;
}

export class PasswordChecks {
  private readonly failedLogins: FailedLoginLimiter;
  private readonly familiar = new FamiliarSources();
  readonly passwords = new PasswordWork();
  private readonly tokenLifetimeMs: number;

  constructor(
    private readonly cache: StateCache,
    o: { tokenLifetimeMs?: number; failedLogins?: FailedLoginLimiterOptions },
  ) {
    this.failedLogins = new FailedLoginLimiter(o.failedLogins);
    this.tokenLifetimeMs = Math.min(o.tokenLifetimeMs ?? MAX_TOKEN_LIFETIME_MS, MAX_TOKEN_LIFETIME_MS);
  }

  /**
   * Checks a password under the failed-login limits; an attempt refused only for load does not count
   * as failed. A user checked from where they logged in before, or holding a valid token, goes first;
   * only the former eases the limits (a stolen token must not buy more guesses at the password).
   */
  async check(user: string, source: string, password: string, holdsToken: boolean): Promise<boolean> {
    const storedHash = this.cache.users.get(user)?.passwordHash;
    const attempt = { user, source, familiar: this.familiar.has(user, source), exists: storedHash !== undefined };
    const refusal = this.failedLogins.begin(attempt);
    if (refusal) throw tooManyFailures(refusal);
    let ok: boolean;
    try {
      ok = await this.passwords.verify(password, storedHash, attempt.familiar || holdsToken ? "familiar" : "other");
    } catch (err) {
      this.failedLogins.succeeded(attempt);
      throw err;
    }
    if (ok) {
      this.failedLogins.succeeded(attempt);
      this.familiar.loggedIn(user, source);
    }
    return ok;
  }

  /** Checks a login's password (`body` parsed by LoginRequest) and issues a token. */
  async logIn(req: FastifyRequest, body: { user: string; password: string }): Promise<IssuedToken> {
    // Same work and answer for an unknown user and a wrong password: do not reveal which users exist.
    const ok = await this.check(body.user, req.ip, body.password, this.holdsTokenOf(req, body.user));
    const user = this.cache.users.get(body.user);
    if (!ok || !user) throw new StewardError("unauthorized", "wrong user name or password");
    // Told only to one who knows the password.
    if (user.disabled)
      throw new StewardError("unauthorized", `user ${user.name} is disabled: ask a controller superuser to enable it`, {
        reason: "user-disabled",
      });
    const issuedAt = Date.now();
    const expiresAt = issuedAt + this.tokenLifetimeMs;
    const id = newTokenId();
    return {
      token: signToken({ user: user.name, id, issuedAt, expiresAt }, this.cache.tokenKey!),
      id,
      expiresAt,
      user: user.name,
      superuser: user.superuser,
    };
  }

  /** Whether the request carries a valid token (or dashboard session) of `user`: a login to renew it. */
  private holdsTokenOf(req: FastifyRequest, user: string): boolean {
    try {
      const p = authenticate(this.cache, req.headers);
      return p.kind === "user" && p.user === user;
    } catch {
      return false;
    }
  }
}

function tooManyFailures(r: LoginRefusal): StewardError {
  return new StewardError(
    "rate-limited",
    r.limit === "source"
      ? `too many failed logins from this address's network: try again in ${r.waitSeconds} s`
      : `too many failed logins for this user from addresses it has not logged in from: log in from an address you used before, or try again in ${r.waitSeconds} s`,
    { details: { retryAfterSeconds: r.waitSeconds, limit: r.limit } },
  );
}
