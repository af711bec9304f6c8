/**
 * The registration string `steward add-user` prints and `steward register` reads (Juju's
 * register): the controller's name and addresses, the SHA-256 fingerprint of its CA (so the new
 * user's client can pin a CA it has never seen), the user's name and a one-time secret, as
 * base64url of a small JSON, one copy-pasteable word. Browser-safe (no Node imports): the
 * dashboard may show one.
 */
import { StewardError } from "./errors";

export interface Registration {
  controller: string;
  addresses: string[];
  /** The CA's SHA-256 fingerprint, `AB:CD:…` as the controller shows it. */
  caFingerprint: string;
  user: string;
  secret: string;
  /** ISO 8601. */
  expiresAt: string;
}

/** Longer than any real string (a few hundred characters with a handful of addresses): refused unread. */
export const MAX_REGISTRATION_STRING_CHARS = 4096;

/** The string for `r`. */
export function encodeRegistration(r: Registration): string {
  const json = JSON.stringify({
    v: 1,
    n: r.controller,
    a: r.addresses,
    f: normaliseFingerprint(r.caFingerprint),
    u: r.user,
    s: r.secret,
    e: Date.parse(r.expiresAt),
  });
  return toBase64Url(new TextEncoder().encode(json));
}

/** The registration in `text`, or an error that says the string is damaged (never what it held). */
export function decodeRegistration(text: string): Registration {
  const word = text.trim();
  const bad = (why: string): StewardError =>
    new StewardError(
      "invalid-request",
      `that is not a registration string (${why}): copy the whole string steward add-user printed, or ask for a new one`,
      { reason: "registration-string-invalid" },
    );
  if (word.length === 0) throw bad("it is empty");
  if (word.length > MAX_REGISTRATION_STRING_CHARS)
    throw bad(`${word.length} characters, at most ${MAX_REGISTRATION_STRING_CHARS}`);
  if (!/^[A-Za-z0-9_-]+$/.test(word)) throw bad("it holds characters other than letters, digits, - and _");
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(fromBase64Url(word)));
  } catch {
    throw bad("it does not decode: damaged or cut short");
  }
  const o = raw as Record<string, unknown>;
  const isText = (v: unknown, max: number): v is string => typeof v === "string" && v.length > 0 && v.length <= max;
  if (typeof raw !== "object" || raw === null || o.v !== 1) throw bad("unknown format");
  if (
    !isText(o.n, 128) ||
    !Array.isArray(o.a) ||
    o.a.length === 0 ||
    o.a.length > 32 ||
    !o.a.every((a) => isText(a, 300)) ||
    !isText(o.f, 64) ||
    !/^[0-9A-F]{64}$/.test(o.f) ||
    !isText(o.u, 63) ||
    !isText(o.s, 128) ||
    typeof o.e !== "number" ||
    !Number.isSafeInteger(o.e)
  )
    throw bad("a field is missing or malformed");
  return {
    controller: o.n,
    addresses: o.a as string[],
    caFingerprint: colonFingerprint(o.f),
    user: o.u,
    secret: o.s,
    expiresAt: new Date(o.e).toISOString(),
  };
}

/** A SHA-256 fingerprint as 64 upper-case hex digits, from `AB:CD:…`, `abcd…` or `SHA256:AB:CD…`. */
export function normaliseFingerprint(fp: string): string {
  return fp
    .trim()
    .replace(/^sha-?256:?/i, "")
    .replace(/[:\s]/g, "")
    .toUpperCase();
}

/** `AB:CD:…`, as the controller and `openssl x509 -fingerprint -sha256` show it. */
export function colonFingerprint(fp: string): string {
  return (normaliseFingerprint(fp).match(/../g) ?? []).join(":");
}

/** Whether two fingerprints, written either way, are the same. */
export function sameFingerprint(a: string, b: string): boolean {
  return normaliseFingerprint(a) === normaliseFingerprint(b);
}

function toBase64Url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): Uint8Array {
  const s = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}
