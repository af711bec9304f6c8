/**
 * A key from a passphrase, for what leaves the controller under one (a backup file, a model export's
 * secrets): scrypt at a cost that makes guessing slow, with a cap on the cost a file may ask for, as
 * a file's parameters are read before anything in it is verified (a forged one must not make the
 * controller derive a key with gigabytes of memory).
 */
import { scrypt } from "node:crypto";

export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

/** scrypt cost: 2^17 × 8 × 128 B = 128 MiB and ~0.3 s, as OWASP suggests for scrypt. */
export const SCRYPT: ScryptParams = { N: 1 << 17, r: 8, p: 1 };

/** The 32-byte key of `passphrase` (NFC-normalized) under `kdf`. */
export function derivePassphraseKey(passphrase: string, kdf: ScryptParams & { salt: string }): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(
      passphrase.normalize("NFC"),
      Buffer.from(kdf.salt, "base64"),
      32,
      { N: kdf.N, r: kdf.r, p: kdf.p, maxmem: 256 * kdf.N * kdf.r + 1024 * 1024 },
      (err, key) => (err ? reject(err) : resolve(key)),
    );
  });
}

/** Why a file's scrypt parameters are not ones to derive a key with (above {@link SCRYPT}, or invalid), if they are not. */
export function scryptCostProblem(kdf: { N?: unknown; r?: unknown; p?: unknown; salt?: unknown }): string | undefined {
  const show = (v: unknown): string => String(v).slice(0, 24);
  const shown = `N=${show(kdf.N)}, r=${show(kdf.r)}, p=${show(kdf.p)}`;
  const { N, r, p } = kdf;
  if (typeof kdf.salt !== "string") return `${shown} without a salt`;
  if (!Number.isSafeInteger(N) || !Number.isSafeInteger(r) || !Number.isSafeInteger(p))
    return `${shown}, not whole numbers`;
  const [n, rr, pp] = [N as number, r as number, p as number];
  if (n > SCRYPT.N || rr > SCRYPT.r || pp > SCRYPT.p)
    return `${shown} (${Math.round((128 * n * rr) / 2 ** 20)} MiB of memory, ${pp}× the work)`;
  if (n < 2 || (n & (n - 1)) !== 0 || rr < 1 || pp < 1) return `${shown}, not valid scrypt parameters`;
  return undefined;
}
