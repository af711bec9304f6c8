/**
 * Users and who may do what: adding users (with a password, or for registration with a one-time
 * secret), registering, listing and showing them, disabling and removing them, changing a password
 * (your own, with the current one; anyone's as a superuser), and granting or revoking a user's
 * access to a model. The CA route lets a new user's client fetch the CA it pins by fingerprint.
 */
import type { UserInfo } from "../../../api";
import { StewardError, notFound, routes } from "../../../api";
import type { RegistrationDoc, StateCache, UserDoc, UserOps } from "../../state";
import { DEFAULT_REGISTRATION_LIFETIME_MS, RegistrationRefused } from "../../state";
import { requireSuperuser } from "../../access/auth";
import { LOCAL_WRITE_RULE, runsOnControllerHost } from "../../access/controller-host";
import type { FailedLoginLimiterOptions } from "../failed-login-limiter";
import { FailedLoginLimiter } from "../failed-login-limiter";
import type { PasswordChecks } from "../password-checks";
import type { Route } from "../../access/route";

export interface UserRouteDeps {
  cache: StateCache;
  users: UserOps;
  checks: PasswordChecks;
  caCert: string;
  caFingerprint: string;
  controllerAddresses: () => string[];
  /** Failed registrations are limited as failed logins are, with the same limits (their own counts). */
  failedLogins?: FailedLoginLimiterOptions;
}

export function registerUserRoutes(route: Route, o: UserRouteDeps): void {
  const { cache, users, checks } = o;
  const failedRegistrations = new FailedLoginLimiter(o.failedLogins);

  route(routes.controllerCa, async () => ({ caCert: o.caCert }));

  route(routes.createUser, async ({ principal, body, settled }) => {
    if (body.password !== undefined) {
      if (body.reissue || body.registrationLifetimeSeconds !== undefined)
        throw new StewardError("invalid-request", "a user given a password needs no registration: drop reissue", {
          details: { field: "reissue" },
        });
      await settled(await users.createUser(body.name, body.password, body.superuser ?? false, principal.user));
      return { name: body.name };
    }
    const lifetimeMs = (body.registrationLifetimeSeconds ?? DEFAULT_REGISTRATION_LIFETIME_MS / 1000) * 1000;
    const r = await users.createForRegistration(body.name, {
      superuser: body.superuser ?? false,
      by: principal.user,
      lifetimeMs,
      ...(body.reissue ? { reissue: true } : {}),
    });
    await settled(r.revision);
    return {
      name: body.name,
      registration: {
        controller: cache.controller?.name ?? "",
        addresses: o.controllerAddresses(),
        caFingerprint: o.caFingerprint,
        user: body.name,
        secret: r.secret,
        expiresAt: new Date(r.expiresAt).toISOString(),
      },
    };
  });

  route(routes.register, async ({ req, body, settled }) => {
    const attempt = { user: body.user, source: req.ip, familiar: false, exists: cache.users.has(body.user) };
    const refusal = failedRegistrations.begin(attempt);
    if (refusal)
      throw new StewardError(
        "rate-limited",
        `too many failed registrations from this address's network: try again in ${refusal.waitSeconds} s`,
        { details: { retryAfterSeconds: refusal.waitSeconds, limit: refusal.limit } },
      );
    try {
      // Checked before the password is hashed, so wrong secrets cost no hashing; checked again in the write.
      await users.checkRegistration(body.user, body.secret);
      const passwordHash = await checks.passwords.hash(body.password);
      await settled(await users.register(body.user, body.secret, passwordHash));
    } catch (err) {
      // Only a wrong secret counts as a failure: one who holds the right one is not guessing.
      if (!(err instanceof RegistrationRefused && err.refusal === "wrong")) failedRegistrations.succeeded(attempt);
      throw err;
    }
    failedRegistrations.succeeded(attempt);
    const t = await checks.logIn(req, { user: body.user, password: body.password });
    return {
      token: t.token,
      expiresAt: new Date(t.expiresAt).toISOString(),
      user: t.user,
      controller: cache.controller?.name ?? "",
    };
  });

  route(routes.listUsers, async () => {
    const registrations = await users.registrations();
    return [...cache.users.values()]
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((u) => userInfo(u, registrations.get(u.name)));
  });

  route(routes.showUser, async ({ principal: p, params }) => {
    // Another user is a superuser's business; to anyone else they do not exist.
    if (params.user !== p.user && !p.superuser) throw notFound("user", params.user);
    const u = cache.users.get(params.user);
    if (!u) throw notFound("user", params.user);
    const models: NonNullable<UserInfo["models"]> = [];
    for (const idx of cache.models.values()) {
      const a = idx.access.get(u.name);
      if (a && idx.model) models.push({ name: idx.model.name, access: a.access });
    }
    models.sort((a, b) => a.name.localeCompare(b.name));
    return { ...userInfo(u, await users.registrationOf(u.name)), models };
  });

  route(routes.setUserDisabled, async ({ principal, params, body, settled }) => {
    const r = await users.setDisabled(params.user, body.disabled, principal.user);
    await settled(r.revision);
    return { name: params.user, disabled: body.disabled, changed: r.changed };
  });

  route(routes.removeUser, async ({ principal, params, settled }) => {
    await cache.catchUp();
    await settled(await users.removeUser(params.user, principal.user, [...cache.models.keys()]));
  });

  route(routes.changePassword, async ({ req, principal: p, params, body, settled }) => {
    const name = params.user;
    // Another's password is a superuser's business.
    if (name !== p.user) requireSuperuser(p);
    else {
      // The user's own password: a stolen token alone must not be enough to take the account.
      if (!body.currentPassword)
        throw new StewardError("invalid-request", `"currentPassword" is required to change your own password`, {
          details: { field: "currentPassword" },
        });
      const ok = await checks.check(name, req.ip, body.currentPassword, true);
      if (!ok)
        throw new StewardError("forbidden", "the current password is wrong", { details: { field: "currentPassword" } });
    }
    if (!cache.users.has(name)) throw notFound("user", name);
    await settled(await users.changePassword(name, await checks.passwords.hash(body.password)));
  });

  route(routes.grant, async ({ model: idx, params: { user }, body, settled }) => {
    const grantee = cache.users.get(user);
    if (body.access !== "read" && grantee && !grantee.superuser && runsOnControllerHost(idx)) {
      throw new StewardError(
        "forbidden",
        `${LOCAL_WRITE_RULE}; ${user} is not a superuser: grant read, or use a model on another substrate`,
        {
          reason: "local-model-write-needs-superuser",
          details: { rule: "local-model-write-needs-superuser", field: "access" },
        },
      );
    }
    await settled(await users.grant(idx.uuid, user, body.access));
  });

  route(routes.revoke, async ({ model: idx, params: { user }, settled }) => {
    await settled(await users.revokeAccess(idx.uuid, user));
  });
}

function userInfo(u: UserDoc, reg: RegistrationDoc | undefined): UserInfo {
  const registered = u.passwordHash !== undefined;
  const expired = !registered && (!reg || reg.expiresAt < Date.now());
  return {
    name: u.name,
    superuser: u.superuser,
    disabled: u.disabled ?? false,
    createdAt: u.createdAt,
    ...(u.createdBy ? { createdBy: u.createdBy } : {}),
    state: registered ? "registered" : expired ? "expired" : "pending",
    ...(!registered && reg ? { registrationExpiresAt: new Date(reg.expiresAt).toISOString() } : {}),
  };
}
