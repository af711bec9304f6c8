/**
 * Users and their access as store transactions: adding a user (with a password, or for
 * registration with a one-time secret), registering, changing a password, disabling and enabling,
 * removing, granting and revoking model access, and revoking one token. Ending a user's tokens is
 * one field (`tokensValidAfter`) every replica's cache checks, so it takes effect everywhere at once.
 */
import { StewardError, alreadyExists, notFound } from "../../api";
import type { Compare, Op } from "../store";
import { absent, unchanged } from "../store";
import { credentialMatches, hashCredential, hashPassword, newSecret } from "../security/credentials";
import type { RegistrationDoc, RevokedTokenDoc, UserDoc } from "./documents";
import { keys } from "./keys";
import { docs, put } from "./doc-kinds";
import { StoreTxns } from "./txn";

/** How long a registration string is good for when `add-user` is not told otherwise. */
export const DEFAULT_REGISTRATION_LIFETIME_MS = 24 * 3600 * 1000;
/** The longest a registration string may be good for. */
export const MAX_REGISTRATION_LIFETIME_MS = 30 * 24 * 3600 * 1000;

/** Why a registration was refused: the caller counts `wrong` as a failed attempt, the others are told apart. */
export type RegistrationRefusal = "wrong" | "expired" | "used" | "disabled";

export class RegistrationRefused extends StewardError {
  constructor(
    readonly refusal: RegistrationRefusal,
    message: string,
  ) {
    super("unauthorized", message, {
      reason:
        refusal === "expired"
          ? "registration-expired"
          : refusal === "used"
            ? "registration-used"
            : refusal === "disabled"
              ? "user-disabled"
              : "registration-refused",
    });
  }
}

export class UserOps extends StoreTxns {
  /** Adds a user who logs in with `password` (scripts, the API). */
  async createUser(name: string, password: string, superuser: boolean, by?: string): Promise<number> {
    const doc: UserDoc = {
      name,
      passwordHash: await hashPassword(password),
      superuser,
      createdAt: this.stamp(),
      ...(by ? { createdBy: by } : {}),
    };
    const res = await this.retry(`create user ${name}`, async () => {
      if (await this.store.get(keys.user(name))) throw alreadyExists("user", name);
      return {
        compare: [absent(keys.user(name))],
        ops: [
          put(docs.user, name, doc),
          // A registration left by an earlier user of this name must not let anyone in as this one.
          { type: "delete", key: keys.registration(name) },
        ],
        result: {},
      };
    });
    return res.revision;
  }

  /**
   * Adds a user with no password and a one-time registration secret for them (only its hash is
   * stored), good for `lifetimeMs`. With `reissue`, an existing user who has not registered yet gets
   * a new secret instead (the old one stops working). Returns the secret.
   */
  async createForRegistration(
    name: string,
    o: { superuser: boolean; by: string; lifetimeMs: number; reissue?: boolean },
  ): Promise<{ secret: string; expiresAt: number; revision: number }> {
    const secret = newSecret(32);
    const expiresAt = this.now().getTime() + o.lifetimeMs;
    const registration: RegistrationDoc = {
      user: name,
      secretHash: hashCredential(secret),
      createdAt: this.stamp(),
      createdBy: o.by,
      expiresAt,
    };
    const res = await this.retry(
      `add user ${name}`,
      async () => {
        const existing = await this.get(docs.user, name);
        const ops: Op[] = [put(docs.registration, name, registration)];
        if (!existing) {
          const doc: UserDoc = { name, superuser: o.superuser, createdAt: this.stamp(), createdBy: o.by };
          ops.push(put(docs.user, name, doc));
          return { compare: [absent(keys.user(name))], ops, result: {} };
        }
        if (!o.reissue) throw alreadyExists("user", name);
        if (existing.doc.passwordHash !== undefined)
          throw new StewardError(
            "conflict",
            `user ${name} has already registered (has a password): reset it with steward change-password ${name} instead`,
            { details: { field: "name" } },
          );
        return { compare: [unchanged(keys.user(name), existing.rev)], ops, result: {} };
      },
      { secretResult: true },
    );
    return { secret, expiresAt, revision: res.revision };
  }

  /**
   * Uses `user`'s registration secret once: sets the password (given hashed) and marks the secret
   * used, in one transaction that compares both documents, so of two registrations with the same
   * string exactly one wins. Refuses a wrong secret, an expired or used one, and a disabled user.
   */
  async register(user: string, secret: string, passwordHash: string): Promise<number> {
    const res = await this.retry(
      `register ${user}`,
      async () => {
        const reg = await this.get(docs.registration, user);
        const u = await this.get(docs.user, user);
        this.refuseRegistration(user, secret, reg?.doc, u?.doc);
        if (!reg || !u) return { compare: [], ops: [], result: {} }; // refused above
        const doc: UserDoc = { ...u.doc, passwordHash, tokensValidAfter: this.now().getTime() };
        const used: RegistrationDoc = { ...reg.doc, usedAt: this.stamp() };
        return {
          compare: [unchanged(keys.registration(user), reg.rev), unchanged(keys.user(user), u.rev)],
          ops: [put(docs.user, user, doc), put(docs.registration, user, used)],
          result: {},
        };
      },
      { secretResult: true },
    );
    return res.revision;
  }

  /** Throws the refusal {@link register} would answer now, without writing (checked before a password is hashed). */
  async checkRegistration(user: string, secret: string): Promise<void> {
    const reg = await this.get(docs.registration, user);
    const u = await this.get(docs.user, user);
    this.refuseRegistration(user, secret, reg?.doc, u?.doc);
  }

  private refuseRegistration(
    user: string,
    secret: string,
    reg: RegistrationDoc | undefined,
    u: UserDoc | undefined,
  ): void {
    if (!reg || !u || !credentialMatches(secret, reg.secretHash))
      throw new RegistrationRefused(
        "wrong",
        `the registration string is not valid here (wrong secret, or no registration is pending for ${user}): ask your administrator for a new one (steward add-user ${user} --reissue)`,
      );
    if (reg.usedAt)
      throw new RegistrationRefused(
        "used",
        `this registration string was already used (at ${reg.usedAt}): it works once. If that was not you, tell your administrator; otherwise log in (steward login -u ${user} --password-stdin)`,
      );
    if (reg.expiresAt < this.now().getTime())
      throw new RegistrationRefused(
        "expired",
        `this registration string expired at ${new Date(reg.expiresAt).toISOString()}: ask your administrator for a new one (steward add-user ${user} --reissue)`,
      );
    if (u.disabled)
      throw new RegistrationRefused("disabled", `user ${user} is disabled: ask your administrator to enable it`);
  }

  /** The user's registration, if one was issued (pending, expired or used). */
  async registrationOf(user: string): Promise<RegistrationDoc | undefined> {
    return (await this.get(docs.registration, user))?.doc;
  }

  /** Every registration issued (pending, expired or used), by user: one range read (they are not cached). */
  async registrations(): Promise<Map<string, RegistrationDoc>> {
    return new Map((await this.getAll(docs.registration)).map((r) => [r.doc.user, r.doc]));
  }

  async grant(modelUuid: string, user: string, access: "read" | "write" | "admin"): Promise<number> {
    const res = await this.retry(`grant ${user} ${access}`, async () => {
      const u = await this.store.get(keys.user(user));
      if (!u) throw notFound("user", user);
      const m = await this.store.get(keys.model(modelUuid));
      if (!m) throw notFound("model", modelUuid);
      return {
        compare: [unchanged(keys.user(user), u.modRevision), unchanged(keys.model(modelUuid), m.modRevision)],
        ops: [put(docs.access, modelUuid, user, { access })],
        result: {},
      };
    });
    return res.revision;
  }

  /** Takes away a user's access to a model (their open status watches close; agents are unaffected). */
  async revokeAccess(modelUuid: string, user: string): Promise<number> {
    const res = await this.store.txn({
      compare: [{ key: keys.access(modelUuid, user), target: "createRevision", op: ">", value: 0 }],
      success: [{ type: "delete", key: keys.access(modelUuid, user) }],
    });
    if (!res.succeeded)
      throw new StewardError("not-found", `user "${user}" has no access to this model (nothing to revoke)`, {
        details: { kind: "access", name: user },
      });
    return res.revision;
  }

  /** Sets a user's password (given hashed) and ends every token issued to them before now. */
  async changePassword(name: string, passwordHash: string): Promise<number> {
    const res = await this.retry(`change the password of ${name}`, async () => {
      const u = await this.get(docs.user, name);
      if (!u) throw notFound("user", name);
      const doc: UserDoc = { ...u.doc, passwordHash, tokensValidAfter: this.now().getTime() };
      return {
        compare: [unchanged(keys.user(name), u.rev)],
        ops: [put(docs.user, name, doc)],
        result: {},
      };
    });
    return res.revision;
  }

  /**
   * Disables a user (every token issued before now stops working, on every replica at once, and
   * logins and registration are refused) or enables them again (old tokens stay ended). Refuses to
   * disable `by` itself or the last enabled superuser; the compare on every superuser's document
   * keeps two superusers disabling each other at once from both succeeding.
   */
  async setDisabled(name: string, disabled: boolean, by: string): Promise<{ changed: boolean; revision: number }> {
    if (disabled && name === by)
      throw new StewardError("forbidden", "you cannot disable yourself: ask another superuser", {
        reason: "own-user",
      });
    return this.retry<{ changed: boolean }>(`${disabled ? "disable" : "enable"} user ${name}`, async () => {
      const all = await this.getAll(docs.user);
      const u = all.find((r) => r.doc.name === name);
      if (!u) throw notFound("user", name);
      if ((u.doc.disabled ?? false) === disabled) return { compare: [], ops: [], result: { changed: false } };
      const compare: Compare[] = [unchanged(keys.user(name), u.rev)];
      if (disabled && u.doc.superuser) {
        const others = all.filter((r) => r.doc.superuser && r.doc.name !== name);
        if (!others.some((r) => !r.doc.disabled)) throw lastSuperuser(name, "disable");
        compare.push(...others.map((r) => unchanged(r.key, r.rev)));
      }
      const { disabled: _was, ...rest } = u.doc;
      const doc: UserDoc = disabled ? { ...rest, disabled: true, tokensValidAfter: this.now().getTime() } : rest;
      return {
        compare,
        ops: [put(docs.user, name, doc)],
        result: { changed: true },
      };
    });
  }

  /**
   * Removes a user with their access to every model and their registration. Refuses `by` itself and
   * the last enabled superuser. Every model's access key for the user is compared (present ones
   * unchanged, absent ones still absent), so a grant that lands meanwhile makes it read again
   * rather than leave access for a later user of the same name. Models the user owns stay.
   */
  async removeUser(name: string, by: string, modelUuids: readonly string[]): Promise<number> {
    if (name === by)
      throw new StewardError("forbidden", "you cannot remove yourself: ask another superuser", { reason: "own-user" });
    const res = await this.retry(`remove user ${name}`, async () => {
      const all = await this.getAll(docs.user);
      const u = all.find((r) => r.doc.name === name);
      if (!u) throw notFound("user", name);
      const compare: Compare[] = [unchanged(keys.user(name), u.rev)];
      if (u.doc.superuser) {
        const others = all.filter((r) => r.doc.superuser && r.doc.name !== name);
        if (!others.some((r) => !r.doc.disabled)) throw lastSuperuser(name, "remove");
        compare.push(...others.map((r) => unchanged(r.key, r.rev)));
      }
      const ops: Op[] = [
        { type: "delete", key: keys.user(name) },
        { type: "delete", key: keys.registration(name) },
      ];
      for (const uuid of modelUuids) {
        const kv = await this.store.get(keys.access(uuid, name));
        if (kv) {
          compare.push(unchanged(kv.key, kv.modRevision));
          ops.push({ type: "delete", key: kv.key });
        } else compare.push(absent(keys.access(uuid, name)));
      }
      return { compare, ops, result: {} };
    });
    return res.revision;
  }

  /**
   * Revokes one token (logout) until it would have expired. Revocations already past their expiry
   * are deleted in the same write, so the list stays as short as the tokens still alive.
   */
  async revokeToken(id: string, user: string, expiresAt: number): Promise<number> {
    const now = this.now().getTime();
    const expired = (await this.getAll(docs.revokedToken)).filter(
      (r) => r.doc.expiresAt < now && r.key !== keys.revokedToken(id),
    );
    const doc: RevokedTokenDoc = { user, expiresAt };
    const res = await this.store.txn({
      success: [
        put(docs.revokedToken, id, doc),
        ...expired.slice(0, 100).map((r) => ({ type: "delete" as const, key: r.key })),
      ],
    });
    return res.revision;
  }
}

function lastSuperuser(name: string, what: "disable" | "remove"): StewardError {
  return new StewardError(
    "conflict",
    `${name} is the last enabled superuser: ${what === "disable" ? "disabling" : "removing"} it would leave nobody to manage the controller; make another superuser first (steward add-user NAME --superuser)`,
    { reason: "last-superuser" },
  );
}
