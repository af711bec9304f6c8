/**
 * Secrets at rest: cloud credentials and the spare pool's SSH keys are kept in the store only
 * sealed (AES-256-GCM), under a key that is never in the store. The key is derived (HKDF-SHA256)
 * from the controller CA's private key, which every replica already holds on its own disk (0600)
 * and which new replicas receive with their certificates: so any replica can open what another
 * sealed, and a copy of the store (an etcd snapshot, a backup) alone opens nothing.
 *
 * Each sealed value is bound to its purpose (`credential/prod`, `spare/10.0.0.7`) as
 * additional authenticated data: a value copied under another name does not open.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { dataFiles } from "../config";

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class Sealer {
  private constructor(private readonly key: Buffer) {}

  /** The sealer of the controller whose data directory is `dataDir` (reads its CA key). */
  static async forDataDir(dataDir: string): Promise<Sealer> {
    return Sealer.fromCaKey(await readFile(join(dataDir, dataFiles.caKey), "utf8"));
  }

  static fromCaKey(caKeyPem: string): Sealer {
    return new Sealer(
      Buffer.from(hkdfSync("sha256", Buffer.from(caKeyPem), Buffer.alloc(0), "steward sealed secrets v1", 32)),
    );
  }

  seal(purpose: string, plaintext: string): string {
    return aeadSeal(this.key, VERSION, purpose, plaintext);
  }

  /** Throws when `sealed` was not sealed by this controller for `purpose`, or was altered. */
  open(purpose: string, sealed: string): string {
    const opened = aeadOpen(this.key, VERSION, purpose, sealed);
    if (opened === FORMAT) throw new Error(`sealed ${purpose} is not in a format this controller knows`);
    if (opened === ALTERED)
      throw new Error(
        `sealed ${purpose} does not open with this controller's key (altered, or sealed by another controller)`,
      );
    return opened.plaintext;
  }

  sealJson(purpose: string, value: unknown): string {
    return this.seal(purpose, JSON.stringify(value));
  }

  openJson<T>(purpose: string, sealed: string): T {
    return JSON.parse(this.open(purpose, sealed)) as T;
  }
}

/** {@link aeadOpen}'s answers when a value does not open: not `<version>.…` at all, or altered (or another key's). */
export const FORMAT = "format";
export const ALTERED = "altered";

/** AES-256-GCM of `plaintext` under `key`, bound to `purpose` (additional data): `<version>.<iv, body, tag as base64url>`. */
export function aeadSeal(key: Buffer, version: string, purpose: string, plaintext: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(purpose));
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return `${version}.${Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64url")}`;
}

/** What {@link aeadSeal} sealed under `key` for `purpose`, or why it does not open. */
export function aeadOpen(
  key: Buffer,
  version: string,
  purpose: string,
  sealed: unknown,
): { plaintext: string } | typeof FORMAT | typeof ALTERED {
  const [v, b64] = typeof sealed === "string" ? sealed.split(".") : [];
  const raw = Buffer.from(b64 ?? "", "base64url");
  if (v !== version || raw.length < IV_BYTES + TAG_BYTES) return FORMAT;
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(purpose));
  decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
  try {
    return {
      plaintext: Buffer.concat([
        decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)),
        decipher.final(),
      ]).toString("utf8"),
    };
  } catch {
    return ALTERED;
  }
}
