/**
 * Passwords, tokens and agent credentials.
 *
 * - User passwords are hashed with scrypt (slow on purpose: people choose guessable passwords).
 * - Agent credentials are 32 random bytes, so a single SHA-256 is enough (nothing to guess) and a
 *   storm of 1,000 reconnecting agents costs microseconds each instead of seconds of scrypt.
 * - User tokens are HMAC-signed with a key kept in the store, so any replica can verify them.
 */
import { createHash, createHmac, randomBytes, scrypt as scryptCb, timingSafeEqual } from "node:crypto";
import { promisify } from "node:util";

const scrypt = promisify(scryptCb) as (pw: string, salt: Buffer, len: number) => Promise<Buffer>;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, 32);
  return `scrypt$${salt.toString("base64")}$${key.toString("base64")}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, saltB64, keyB64] = stored.split("$");
  if (scheme !== "scrypt" || !saltB64 || !keyB64) return false;
  const expected = Buffer.from(keyB64, "base64");
  const actual = await scrypt(password, Buffer.from(saltB64, "base64"), expected.length);
  return timingSafeEqual(actual, expected);
}

export function newSecret(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

export function hashCredential(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

export function credentialMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashCredential(secret), "hex");
  const b = Buffer.from(storedHash, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface TokenClaims { user: string; expiresAt: number }

export function signToken(claims: TokenClaims, key: string): string {
  const body = Buffer.from(JSON.stringify({ u: claims.user, e: claims.expiresAt })).toString("base64url");
  const sig = createHmac("sha256", key).update(body).digest("base64url");
  return `${body}.${sig}`;
}

/** Returns the claims of a valid, unexpired token, or undefined. */
export function verifyToken(token: string, key: string, now = Date.now()): TokenClaims | undefined {
  const [body, sig] = token.split(".");
  if (!body || !sig) return undefined;
  const expected = createHmac("sha256", key).update(body).digest();
  const given = Buffer.from(sig, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    const c = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as { u: string; e: number };
    if (typeof c.u !== "string" || typeof c.e !== "number" || c.e < now) return undefined;
    return { user: c.u, expiresAt: c.e };
  } catch {
    return undefined;
  }
}
