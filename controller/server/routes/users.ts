/**
 * Users and who may do what: making users (superusers), changing a password (your own, with the
 * current one; anyone's as a superuser), and granting or revoking a user's access to a model.
 */
import { StewardError, notFound, routes } from "../../../api";
import type { StateCache, StateOps } from "../../state";
import { requireSuperuser } from "../../access/auth";
import { LOCAL_WRITE_RULE, runsOnControllerHost } from "../../access/controller-host";
import type { PasswordChecks } from "../password-checks";
import type { Route } from "../../access/route";

export function registerUserRoutes(
  route: Route,
  o: { cache: StateCache; ops: StateOps; checks: PasswordChecks },
): void {
  const { cache, ops, checks } = o;

  route(routes.createUser, async ({ body }) => {
    await ops.createUser(body.name, body.password, body.superuser ?? false);
    return { name: body.name };
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
    await settled(await ops.changePassword(name, await checks.passwords.hash(body.password)));
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
    await settled(await ops.grant(idx.uuid, user, body.access));
  });

  route(routes.revoke, async ({ model: idx, params: { user }, settled }) => {
    await settled(await ops.revokeAccess(idx.uuid, user));
  });
}
