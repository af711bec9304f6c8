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

/** How much of a credential's hash a moved model's record keeps per machine (128 bits: 32 hex digits, half the size). */
export const KEPT_HASH_DIGITS = 32;

/** Whether `secret` hashes to one starting with `keptHash` (a hash cut to {@link KEPT_HASH_DIGITS}). */
export function credentialMatchesKept(secret: string, keptHash: string): boolean {
  const a = Buffer.from(hashCredential(secret).slice(0, KEPT_HASH_DIGITS), "hex");
  const b = Buffer.from(keptHash, "hex");
  return keptHash.length === KEPT_HASH_DIGITS && a.length === b.length && timingSafeEqual(a, b);
}

export function credentialMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashCredential(secret), "hex");
  const b = Buffer.from(storedHash, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The longest a user token may live, whatever it claims: a token is refused once it claims more. */
export const MAX_TOKEN_LIFETIME_MS = 24 * 3600 * 1000;
/** Clocks of replicas may differ a little; a token issued "in the future" by this much is still accepted. */
const CLOCK_SKEW_MS = 60 * 1000;

export interface TokenClaims {
  user: string;
  /** Random id, so one token can be revoked (logout) without the others. */
  id: string;
  issuedAt: number;
  expiresAt: number;
}

function encodeBody(c: TokenClaims): string {
  return Buffer.from(JSON.stringify({ u: c.user, j: c.id, i: c.issuedAt, e: c.expiresAt })).toString("base64url");
}

function signature(body: string, key: string): string {
  return createHmac("sha256", key).update(body).digest("base64url");
}

export function newTokenId(): string {
  return randomBytes(12).toString("base64url");
}

export function signToken(claims: TokenClaims, key: string): string {
  const body = encodeBody(claims);
  return `${body}.${signature(body, key)}`;
}

/**
 * Returns the claims of a valid, unexpired token, or undefined. Only the exact encoding the
 * controller issues is accepted (no trailing bytes, no re-encoded variants), and a token that
 * claims to live longer than {@link MAX_TOKEN_LIFETIME_MS} is refused even if its signature holds.
 */
export function verifyToken(token: string, key: string, now = Date.now()): TokenClaims | undefined {
  if (token.length > 1024 || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  const body = token.slice(0, token.indexOf("."));
  const expected = Buffer.from(`${body}.${signature(body, key)}`);
  const given = Buffer.from(token);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let c: TokenClaims;
  try {
    const raw = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as {
      u: unknown;
      j: unknown;
      i: unknown;
      e: unknown;
    };
    if (
      typeof raw.u !== "string" ||
      typeof raw.j !== "string" ||
      !Number.isSafeInteger(raw.i) ||
      !Number.isSafeInteger(raw.e)
    )
      return undefined;
    c = { user: raw.u, id: raw.j, issuedAt: raw.i as number, expiresAt: raw.e as number };
  } catch {
    return undefined;
  }
  if (encodeBody(c) !== body) return undefined;
  if (c.expiresAt < now || c.issuedAt > now + CLOCK_SKEW_MS) return undefined;
  if (c.expiresAt - c.issuedAt > MAX_TOKEN_LIFETIME_MS || c.expiresAt > now + MAX_TOKEN_LIFETIME_MS + CLOCK_SKEW_MS)
    return undefined;
  return c;
}
