/**
 * Who is calling and what they may do. Users send `Authorization: Bearer <token>` (from
 * `POST /v1/login`), or, in the dashboard, the session cookie (see session-cookie.ts); agents send
 * `Authorization: Agent <model-uuid>/<machine-id>/<credential>`.
 */
import type { IncomingHttpHeaders } from "node:http";
import { StewardError, notFound } from "../../api";
import { credentialMatches, verifyToken } from "../security/credentials";
import type { ModelIndex, StateCache } from "../state";
import { localWriteRefused, runsOnControllerHost } from "./controller-host";
import { CSRF_HEADER, csrfMatches, readSessionCookie, sameOrigin } from "./session-cookie";

export type Principal =
  | { kind: "user"; user: string; superuser: boolean; token: { id: string; expiresAt: number } }
  | { kind: "agent"; model: string; machine: string };

export type Access = "read" | "write" | "admin";
const rank: Record<Access, number> = { read: 1, write: 2, admin: 3 };

/**
 * Agents reach their model only through the agent protocol (`/v1/agent`), which shows each one what
 * concerns its own units; REST and status watches would show every unit's data, config and machine.
 */
const AGENTS_USE_THE_AGENT_PROTOCOL =
  "agent credentials may only be used on the agent protocol (/v1/agent) and to download operators; model reads and status watches are for users (steward login)";

/**
 * How a request arrived, for the check a cookie needs on a write: its CSRF token. (An upgrade's
 * Origin is checked where upgrades are routed, against the controller's addresses: upgrades.ts.)
 */
export interface RequestKind {
  /** The HTTP method. @default "GET" */
  method?: string;
}

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export function authenticate(cache: StateCache, headers: IncomingHttpHeaders, how: RequestKind = {}): Principal {
  const header = headers.authorization;
  if (!header) {
    const cookie = readSessionCookie(headers);
    if (cookie) return sessionUser(cache, headers, cookie, how);
    throw new StewardError(
      "unauthorized",
      "no credentials: log in first (steward login) or send Authorization: Bearer <token>",
    );
  }
  const [scheme, value] = [header.slice(0, header.indexOf(" ")), header.slice(header.indexOf(" ") + 1)];
  if (scheme === "Bearer") return tokenUser(cache, value);
  if (scheme === "Agent") {
    const [model, machine, secret] = value.split("/");
    const m = model ? cache.models.get(model)?.machines.get(machine ?? "") : undefined;
    if (!m?.credentialHash || !secret || !credentialMatches(secret, m.credentialHash)) {
      throw new StewardError(
        "unauthorized",
        "agent credential refused: the machine may have been removed, or the credential replaced",
      );
    }
    return { kind: "agent", model: model!, machine: machine! };
  }
  throw new StewardError("unauthorized", `unsupported authorization scheme "${scheme}": use Bearer`);
}

function tokenUser(cache: StateCache, token: string): Extract<Principal, { kind: "user" }> {
  const claims = cache.tokenKey ? verifyToken(token, cache.tokenKey) : undefined;
  const user = claims && cache.users.get(claims.user);
  if (!user) throw new StewardError("unauthorized", "token is invalid or expired: log in again (steward login)");
  if (user.disabled)
    throw new StewardError("unauthorized", `user ${user.name} is disabled: ask a controller superuser to enable it`, {
      reason: "user-disabled",
    });
  // Revoked by logout, or by a password change or disabling (which end every token issued before it).
  if (cache.revokedTokens.has(claims.id) || claims.issuedAt < (user.tokensValidAfter ?? 0)) {
    throw new StewardError(
      "unauthorized",
      "token was revoked (logged out, or the password changed): log in again (steward login)",
    );
  }
  return {
    kind: "user",
    user: user.name,
    superuser: user.superuser,
    token: { id: claims.id, expiresAt: claims.expiresAt },
  };
}

/** A dashboard session: the cookie's token, and proof that our own page sent the request. */
function sessionUser(cache: StateCache, headers: IncomingHttpHeaders, token: string, how: RequestKind): Principal {
  let p: Extract<Principal, { kind: "user" }>;
  try {
    p = tokenUser(cache, token);
  } catch (err) {
    throw new StewardError(
      "unauthorized",
      "the dashboard session has ended (expired, logged out, or the password changed): log in again",
      { details: { session: true, reason: (err as Error).message } },
    );
  }
  if (
    WRITES.has(how.method ?? "GET") &&
    (!csrfMatches(headers[CSRF_HEADER], p.token.id, cache.tokenKey!) ||
      (headers.origin !== undefined && !sameOrigin(headers)))
  ) {
    throw new StewardError(
      "forbidden",
      `a change authenticated by the session cookie needs the session's ${CSRF_HEADER} header (what the dashboard sends); scripts should use a Bearer token (steward login)`,
    );
  }
  return p;
}

export function requireUser(p: Principal): Extract<Principal, { kind: "user" }> {
  if (p.kind !== "user") throw new StewardError("forbidden", AGENTS_USE_THE_AGENT_PROTOCOL);
  return p;
}

export function requireSuperuser(p: Principal): void {
  if (requireUser(p).superuser) return;
  throw new StewardError("forbidden", "only a controller superuser may do this");
}

export function modelAccess(p: Principal, idx: ModelIndex): Access | undefined {
  if (p.kind === "agent") return undefined;
  if (p.superuser) return "admin";
  return idx.access.get(p.user)?.access;
}

/**
 * Refuses a user without `needed` access to the model. One with no access at all gets the answer
 * an unknown name gets (404, naming what was `asked`), so refusals do not tell who has which
 * models; one with some access, who knows the model exists, is told what is missing (403).
 */
export function requireModelAccess(
  p: Principal,
  idx: ModelIndex,
  needed: Access,
  asked: string = idx.model?.name ?? idx.uuid,
): void {
  if (p.kind === "agent") throw new StewardError("forbidden", AGENTS_USE_THE_AGENT_PROTOCOL);
  const has = modelAccess(p, idx);
  if (has && rank[has] >= rank[needed]) {
    // A grant that predates the rule, or a model that gained local machines since, is refused here too.
    if (needed !== "read" && !p.superuser && runsOnControllerHost(idx)) throw localWriteRefused(p.user, idx, needed);
    return;
  }
  if (!has) throw notFound("model", asked);
  throw new StewardError(
    "forbidden",
    `user ${p.user} has ${has} access to model ${idx.model?.name}; this needs ${needed} (an admin can run: steward grant ${p.user} ${needed} ${idx.model?.name})`,
    { details: { needed, has } },
  );
}

/**
 * For a stream opened with read access (a log stream, a live-feed topic): refuses once the access is
 * gone, saying it was revoked, since the user already knew the model.
 */
export function requireReadKept(p: Principal, idx: ModelIndex): void {
  if (p.kind === "user" && !modelAccess(p, idx))
    throw new StewardError("forbidden", `access to model ${idx.model?.name} was revoked`);
  requireModelAccess(p, idx, "read");
}

/** Uploading an operator needs write access to some model (what else could it be for), or superuser. */
export function requireWriteOnSomeModel(p: Principal, cache: StateCache): void {
  const user = requireUser(p);
  if (user.superuser) return;
  for (const idx of cache.models.values()) {
    const has = modelAccess(user, idx);
    if (has && rank[has] >= rank.write && !runsOnControllerHost(idx)) return;
  }
  throw new StewardError(
    "forbidden",
    `user ${user.user} has write access to no model; uploading an operator needs write access to one (an admin can run: steward grant ${user.user} write <model>)`,
    { details: { needed: "write" } },
  );
}

/**
 * Calls `recheck` once a token has expired, for a stream that must not outlive what let it in
 * (watches, live feeds, consoles); armed again while `open()` holds (a timer may fire a hair
 * early). Returns what cancels it.
 */
export function atTokenExpiry(expiresAt: number, recheck: () => void, open: () => boolean): () => void {
  let timer: NodeJS.Timeout;
  const arm = (): void => {
    timer = setTimeout(
      () => {
        recheck();
        if (open()) arm();
      },
      Math.min(Math.max(0, expiresAt - Date.now()) + 1, 2 ** 31 - 1),
    );
    timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}
