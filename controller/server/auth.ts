/**
 * Who is calling and what they may do. Users send `Authorization: Bearer <token>` (from
 * `POST /v1/login`); agents send `Authorization: Agent <model-uuid>/<machine-id>/<credential>`.
 */
import type { IncomingHttpHeaders } from "node:http";
import { StewardError } from "../../api";
import { credentialMatches, verifyToken } from "../security/credentials";
import type { ModelIndex, StateCache } from "../state";

export type Principal =
  | { kind: "user"; user: string; superuser: boolean; token: { id: string; expiresAt: number } }
  | { kind: "agent"; model: string; machine: string };

export type Access = "read" | "write" | "admin";
const rank: Record<Access, number> = { read: 1, write: 2, admin: 3 };

export function authenticate(cache: StateCache, headers: IncomingHttpHeaders): Principal {
  const header = headers.authorization;
  if (!header) throw new StewardError("unauthorized", "no credentials: log in first (steward login) or send Authorization: Bearer <token>");
  const [scheme, value] = [header.slice(0, header.indexOf(" ")), header.slice(header.indexOf(" ") + 1)];
  if (scheme === "Bearer") {
    const claims = cache.tokenKey ? verifyToken(value, cache.tokenKey) : undefined;
    const user = claims && cache.users.get(claims.user);
    if (!user) throw new StewardError("unauthorized", "token is invalid or expired: log in again (steward login)");
    // Revoked by logout, or by a password change (which ends every token issued before it).
    if (cache.revokedTokens.has(claims.id) || claims.issuedAt < (user.tokensValidAfter ?? 0)) {
      throw new StewardError("unauthorized", "token was revoked (logged out, or the password changed): log in again (steward login)");
    }
    return { kind: "user", user: user.name, superuser: user.superuser, token: { id: claims.id, expiresAt: claims.expiresAt } };
  }
  if (scheme === "Agent") {
    const [model, machine, secret] = value.split("/");
    const m = model ? cache.models.get(model)?.machines.get(machine ?? "") : undefined;
    if (!m?.credentialHash || !secret || !credentialMatches(secret, m.credentialHash)) {
      throw new StewardError("unauthorized", "agent credential refused: the machine may have been removed, or the credential replaced");
    }
    return { kind: "agent", model: model!, machine: machine! };
  }
  throw new StewardError("unauthorized", `unsupported authorization scheme "${scheme}": use Bearer`);
}

export function requireUser(p: Principal): Extract<Principal, { kind: "user" }> {
  if (p.kind !== "user") throw new StewardError("forbidden", "agents may not call this endpoint");
  return p;
}

export function requireSuperuser(p: Principal): void {
  if (requireUser(p).superuser) return;
  throw new StewardError("forbidden", "only a controller superuser may do this");
}

export function modelAccess(p: Principal, idx: ModelIndex): Access | undefined {
  if (p.kind === "agent") return p.model === idx.uuid ? "read" : undefined;
  if (p.superuser) return "admin";
  return idx.access.get(p.user)?.access;
}

export function requireModelAccess(p: Principal, idx: ModelIndex, needed: Access): void {
  const has = modelAccess(p, idx);
  if (has && rank[has] >= rank[needed]) return;
  const who = p.kind === "user" ? `user ${p.user}` : `machine ${p.machine}`;
  throw new StewardError("forbidden", `${who} has ${has ?? "no"} access to model ${idx.model?.name}; this needs ${needed} (an admin can run: steward grant ${p.kind === "user" ? p.user : "<user>"} ${needed} ${idx.model?.name})`, { details: { needed, has: has ?? "none" } });
}
