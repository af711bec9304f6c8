/**
 * The dashboard's session: the token `POST /v1/session` issues rides in an HttpOnly, Secure,
 * SameSite=Strict cookie, so page scripts never hold it. A request authenticated by that cookie
 * alone must also prove it comes from our own page: a write carries the session's CSRF token in
 * {@link CSRF_HEADER} (a value another site cannot read), and a WebSocket upgrade, which cannot
 * carry headers from a browser, must name this controller as its Origin.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

export const SESSION_COOKIE = "steward-session";
export { CSRF_HEADER } from "../../api";

/** The Set-Cookie value that holds a session token until it expires. */
export function sessionCookie(token: string, expiresAt: number, now = Date.now()): string {
  const maxAge = Math.max(0, Math.floor((expiresAt - now) / 1000));
  return `${SESSION_COOKIE}=${token}; Max-Age=${maxAge}; Path=/; HttpOnly; Secure; SameSite=Strict`;
}

/** The Set-Cookie value that makes the browser forget the session. */
export function clearedSessionCookie(): string {
  return `${SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict`;
}

/** The session token in a request's Cookie header, if any. */
export function readSessionCookie(headers: IncomingHttpHeaders): string | undefined {
  const header = headers.cookie;
  if (!header || header.length > 8192) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

/** The CSRF token of a session: derived from its token id, so nothing more is stored. */
export function csrfTokenFor(tokenId: string, key: string): string {
  return createHmac("sha256", key).update(`csrf/${tokenId}`).digest("base64url");
}

export function csrfMatches(given: string | string[] | undefined, tokenId: string, key: string): boolean {
  if (typeof given !== "string" || given.length > 100) return false;
  const expected = Buffer.from(csrfTokenFor(tokenId, key));
  const got = Buffer.from(given);
  return got.length === expected.length && timingSafeEqual(got, expected);
}

/** Whether the request's Origin header names the host it was sent to (what our own page sends). */
export function sameOrigin(headers: IncomingHttpHeaders): boolean {
  const origin = headers.origin;
  if (typeof origin !== "string" || typeof headers.host !== "string") return false;
  try {
    const u = new URL(origin);
    return u.protocol === "https:" && u.host === headers.host.toLowerCase();
  } catch {
    return false;
  }
}
