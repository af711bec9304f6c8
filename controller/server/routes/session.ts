/**
 * Health, login and sessions: a token for scripts and the CLI (`POST /v1/login`), and for the
 * dashboard a session whose token goes into an HttpOnly cookie while the page gets only its CSRF
 * token. Logging out revokes the token on every replica.
 */
import type { SessionInfo } from "../../../api";
import { STEWARD_VERSION, routes } from "../../../api";
import type { StateCache, UserOps } from "../../state";
import type { PasswordChecks } from "../password-checks";
import type { Route } from "../../access/route";
import { clearedSessionCookie, csrfTokenFor, sessionCookie } from "../../access/session-cookie";

export function registerSessionRoutes(
  route: Route,
  o: { cache: StateCache; users: UserOps; checks: PasswordChecks },
): void {
  const { cache, users, checks } = o;

  route(routes.health, async () => ({ ok: true, version: STEWARD_VERSION, revision: cache.revision }));

  route(routes.login, async ({ req, body }) => {
    const t = await checks.logIn(req, body);
    return { token: t.token, expiresAt: new Date(t.expiresAt).toISOString(), user: t.user };
  });

  route(routes.logout, async ({ principal: p, settled }) => {
    await settled(await users.revokeToken(p.token.id, p.user, p.token.expiresAt));
  });

  const sessionInfo = (p: {
    user: string;
    superuser: boolean;
    token: { id: string; expiresAt: number };
  }): SessionInfo => ({
    user: p.user,
    superuser: p.superuser,
    expiresAt: new Date(p.token.expiresAt).toISOString(),
    csrf: csrfTokenFor(p.token.id, cache.tokenKey!),
    controller: cache.controller?.name ?? "",
  });

  route(routes.openSession, async ({ req, reply, body }) => {
    const t = await checks.logIn(req, body);
    reply.header("set-cookie", sessionCookie(t.token, t.expiresAt)).header("cache-control", "no-store");
    return sessionInfo({ user: t.user, superuser: t.superuser, token: { id: t.id, expiresAt: t.expiresAt } });
  });

  route(routes.session, async ({ reply, principal }) => {
    reply.header("cache-control", "no-store");
    return sessionInfo(principal);
  });

  // The cookie is cleared whatever happens next: a session that has already ended is logged out too.
  route(
    routes.closeSession,
    async ({ principal: p, settled }) => {
      await settled(await users.revokeToken(p.token.id, p.user, p.token.expiresAt));
    },
    {
      beforeAccess: (reply) => {
        reply.header("set-cookie", clearedSessionCookie());
      },
    },
  );
}
