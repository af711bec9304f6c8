/**
 * Secrets (issue 33, Juju 3's model): values an operator or a user gives to applications without
 * putting them in config or relation data. A secret has an owner (an application, a unit, or the
 * model for a user's secret), a series of revisions (each a map of keys to values), grants (who may
 * read it) and consumers (the units that read it, each tracking one revision until it moves on with
 * `secret-get --refresh`). Values are sealed at rest and reach nothing but the agents of units
 * allowed to read them, and a user who asks to reveal them and may.
 *
 * Browser-safe: the dashboard shows secrets' metadata from these types.
 */

/** `secret:` and 20 characters of base32hex (lower case), as Juju's xid-based ids. */
export const SECRET_URI_PREFIX = "secret:";
export const SECRET_ID_PATTERN = /^[0-9a-v]{20}$/;

export function secretUri(id: string): string {
  return `${SECRET_URI_PREFIX}${id}`;
}

/** The id in `secret:<id>` (or a bare id), or undefined when `text` is neither. */
export function secretIdOf(text: string): string | undefined {
  const id = text.startsWith(SECRET_URI_PREFIX) ? text.slice(SECRET_URI_PREFIX.length) : text;
  return SECRET_ID_PATTERN.test(id) ? id : undefined;
}

/** A new random id (agents make the ids of the secrets they add, so `secret-add` can print it at once). */
export function newSecretId(randomBytes: (n: number) => Uint8Array): string {
  const alphabet = "0123456789abcdefghijklmnopqrstuv";
  const bytes = randomBytes(20);
  let id = "";
  for (const b of bytes) id += alphabet[b & 31];
  return id;
}

export const SECRET_LIMITS = {
  /** The bytes of one revision's content: every key and value, as UTF-8. */
  contentBytes: 64 * 1024,
  /** Keys in one revision. */
  keys: 64,
  /** Revisions one secret holds at once: a new one beyond it is refused until old ones are removed. */
  revisions: 50,
  /** Secrets one model holds. */
  perModel: 10_000,
  labelChars: 128,
  descriptionChars: 1024,
  /**
   * The bytes of one secret's metadata document as stored (its consumers and their labels, grants,
   * revisions, description): a write that would grow it past this is refused (`secret-metadata-full`).
   * A third under the store's 1.5 MiB value limit, so that what only the controller adds (the expiry
   * worker's marks) and a document at the bound always fit. About 5,000 consumers with 128-character
   * labels (and 40-character application names), or 16,000 with none, fit in it.
   */
  metadataBytes: 1024 * 1024,
} as const;

/** Keys as Juju takes them: lower case letters, digits and single hyphens, at least 3 characters. */
export const SECRET_KEY_PATTERN = /^[a-z](?:-?[a-z0-9]){2,63}$/;
/** A user secret's name: as application names. */
export const SECRET_NAME_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;

export const ROTATE_POLICIES = ["never", "hourly", "daily", "weekly", "monthly", "quarterly", "yearly"] as const;
export type RotatePolicy = (typeof ROTATE_POLICIES)[number];

/** Seconds between rotations (months and years as Juju counts them: 30 and 365 days). */
export const ROTATE_INTERVAL_SECONDS: Readonly<Record<Exclude<RotatePolicy, "never">, number>> = {
  hourly: 3600,
  daily: 86_400,
  weekly: 7 * 86_400,
  monthly: 30 * 86_400,
  quarterly: 90 * 86_400,
  yearly: 365 * 86_400,
};

/**
 * Who owns a secret: an application (its leader manages it, all its units read it), one unit, or
 * the model (a user's secret, made with `steward add-secret`). Written `application:pg`, `unit:pg/0`, `model`.
 */
export type SecretOwner = { kind: "application"; app: string } | { kind: "unit"; unit: string } | { kind: "model" };

export function ownerText(o: SecretOwner): string {
  return o.kind === "application" ? `application:${o.app}` : o.kind === "unit" ? `unit:${o.unit}` : "model";
}

/**
 * Who a secret is granted to: an application (user secrets: `grant-secret`), or over a relation, to
 * the other side's application or one of its units (`secret-grant --relation ID [--unit U]`). A
 * relation grant ends with its relation.
 */
export interface SecretGrantInfo {
  app: string;
  unit?: string;
  relationId?: number;
}

export interface SecretRevisionInfo {
  revision: number;
  createdAt: string;
  /** When this revision expires (the owner's `secret-expired` hook runs then). */
  expireAt?: string;
  /** The units that track this revision: the #21499 ask, who reads which revision. */
  trackedBy: string[];
}

/** What `steward secrets` and `show-secret` tell of a secret: never its values. */
export interface SecretInfo {
  uri: string;
  /** A user secret's name. */
  name?: string;
  /** The owner's label for it. */
  label?: string;
  description?: string;
  owner: string;
  latestRevision: number;
  rotate: RotatePolicy;
  nextRotateAt?: string;
  /** The latest revision's expiry. */
  expireAt?: string;
  createdAt: string;
  updatedAt: string;
  grants: SecretGrantInfo[];
  revisions: SecretRevisionInfo[];
}

/** `show-secret --reveal`: the metadata with one revision's values. */
export interface RevealedSecret extends SecretInfo {
  content: { revision: number; values: Record<string, string> };
}

/** Why `values` is not a secret's content, or undefined when it is (checked alike by tools, CLI and controller). */
export function secretContentProblem(values: Record<string, string>): string | undefined {
  const keys = Object.keys(values);
  if (keys.length === 0) return "a secret needs at least one key=value";
  if (keys.length > SECRET_LIMITS.keys)
    return `a secret holds at most ${SECRET_LIMITS.keys} keys; this one has ${keys.length}`;
  const bad = keys.find((k) => !SECRET_KEY_PATTERN.test(k));
  if (bad !== undefined)
    return `"${bad.slice(0, 80)}" is not a secret key: use 3 to 64 lower-case letters, digits and single hyphens, starting with a letter`;
  let bytes = 0;
  const enc = new TextEncoder();
  for (const [k, v] of Object.entries(values)) {
    if (typeof v !== "string") return `the value of ${k} must be a string`;
    bytes += enc.encode(k).length + enc.encode(v).length;
  }
  return bytes > SECRET_LIMITS.contentBytes
    ? `a secret's content may be at most ${SECRET_LIMITS.contentBytes} bytes (64 KiB); this one is ${bytes}`
    : undefined;
}

/**
 * `--expire`: an RFC 3339 time, or a duration from now (`90s`, `30m`, `12h`, `7d`); undefined when
 * `text` is neither or the time is not in the future.
 */
export function expiryOf(text: string, now: number): string | undefined {
  const d = /^([1-9][0-9]{0,8})(s|m|h|d)$/.exec(text);
  if (d) {
    const unit = { s: 1, m: 60, h: 3600, d: 86_400 }[d[2] as "s" | "m" | "h" | "d"];
    return new Date(now + Number(d[1]) * unit * 1000).toISOString();
  }
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text)) return undefined;
  const t = Date.parse(text);
  return Number.isFinite(t) && t > now ? new Date(t).toISOString() : undefined;
}
