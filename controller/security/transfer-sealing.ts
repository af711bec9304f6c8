/**
 * Secrets in motion (issue 33): a model's secret contents are sealed with the controller's own key
 * (sealing.ts), which no other controller holds. When the model leaves (a migration, an export file)
 * each value is opened and sealed again for its reader, under a *transfer key* that only the reader
 * can rebuild:
 *
 * - to a controller: X25519. The target gives the source a public key for this one migration; the
 *   source makes an ephemeral key pair per export, and the transfer key is HKDF-SHA256 of the shared
 *   secret (salted with both public keys). The target's private key is derived from its CA key and the
 *   migration id ({@link migrationKeyPair}), so every target replica has it and nothing is stored.
 * - to a file: a passphrase, through scrypt at the cost backups use (passphrase-key.ts), with a key
 *   check so a wrong passphrase is told apart from a damaged file.
 *
 * Each value is AES-256-GCM under the transfer key with its purpose (`secret/<id>/<rev>`) as
 * additional data, so a value moved to another revision or secret does not open. The way a file or
 * stream is sealed ({@link TransferSealing}) travels in it, in the clear; nothing in it opens a value.
 */
import type { KeyObject } from "node:crypto";
import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { StewardError } from "../../api";
import { dataFiles } from "../config";
import type { ScryptParams } from "./passphrase-key";
import { SCRYPT, derivePassphraseKey, scryptCostProblem } from "./passphrase-key";
import { ALTERED, FORMAT, aeadOpen, aeadSeal } from "./sealing";

/** How the secret values of an export are sealed. */
export type TransferSealing =
  | { kind: "x25519"; recipient: string; ephemeral: string }
  | { kind: "passphrase"; kdf: ScryptParams & { name: "scrypt"; salt: string }; keyCheck: string };

const VERSION = "t1";
const X25519_BYTES = 32;
/** PKCS#8 DER of an X25519 private key, up to its 32 raw bytes (RFC 8410). */
const X25519_PKCS8_PREFIX = Buffer.from("302e020100300506032b656e04220420", "hex");
const PASSPHRASE_MIN_CHARS = 8;

/** Why a transfer could not be opened: a refusal of the request (400), never naming a value. */
export class TransferSealError extends StewardError {
  constructor(message: string) {
    super("invalid-request", message);
    this.name = "TransferSealError";
  }
}

/** Seals and opens values under one transfer key. */
export class TransferSealer {
  constructor(private readonly key: Buffer) {}

  seal(purpose: string, plaintext: string): string {
    return aeadSeal(this.key, VERSION, purpose, plaintext);
  }

  /** Throws a {@link TransferSealError} when `sealed` was not sealed under this key for `purpose`, or was altered. */
  open(purpose: string, sealed: string): string {
    const opened = aeadOpen(this.key, VERSION, purpose, sealed);
    if (opened === FORMAT)
      throw new TransferSealError(`the sealed value of ${purpose} is not in a format this controller knows`);
    if (opened === ALTERED)
      throw new TransferSealError(
        `the sealed value of ${purpose} does not open: it was altered, moved, or sealed for another reader`,
      );
    return opened.plaintext;
  }
}

const b64u = (b: Buffer): string => b.toString("base64url");

function rawPublicKey(key: KeyObject): Buffer {
  return Buffer.from(key.export({ format: "jwk" }).x as string, "base64url");
}

function publicKeyOf(raw: string, what: string): KeyObject {
  const bytes = Buffer.from(raw, "base64url");
  if (bytes.length !== X25519_BYTES || b64u(bytes) !== raw)
    throw new TransferSealError(`${what} is not an X25519 public key (32 bytes, base64url)`);
  return createPublicKey({ key: { kty: "OKP", crv: "X25519", x: raw }, format: "jwk" });
}

/** The X25519 shared secret; OpenSSL refuses a low-order public key (all-zero result), as we do. */
function agree(privateKey: KeyObject, publicKey: KeyObject): Buffer {
  try {
    return diffieHellman({ privateKey, publicKey });
  } catch {
    throw new TransferSealError("the X25519 public key is of low order: refused");
  }
}

function transferKey(shared: Buffer, ephemeral: Buffer, recipient: Buffer): Buffer {
  // An all-zero shared secret means a low-order public key: it would give everybody the same key.
  if (shared.every((b) => b === 0)) throw new TransferSealError("the X25519 public key is of low order: refused");
  return Buffer.from(
    hkdfSync("sha256", shared, Buffer.concat([ephemeral, recipient]), "steward secrets in transfer v1", 32),
  );
}

/** A sealer to the holder of the X25519 public key `recipient` (base64url), and how it sealed (to write beside the values). */
export function sealerToPublicKey(recipient: string): { sealer: TransferSealer; sealing: TransferSealing } {
  const recipientKey = publicKeyOf(recipient, "the target's sealing key");
  const eph = generateKeyPairSync("x25519");
  const ephemeral = rawPublicKey(eph.publicKey);
  const shared = agree(eph.privateKey, recipientKey);
  return {
    sealer: new TransferSealer(transferKey(shared, ephemeral, Buffer.from(recipient, "base64url"))),
    sealing: { kind: "x25519", recipient, ephemeral: b64u(ephemeral) },
  };
}

/** The X25519 private key from its 32 raw bytes. */
function privateKeyOf(raw: Buffer): KeyObject {
  return createPrivateKey({ key: Buffer.concat([X25519_PKCS8_PREFIX, raw]), format: "der", type: "pkcs8" });
}

/**
 * The key pair a target gives migration `id`: derived from its CA key (as the sealing key is), so
 * any of its replicas rebuilds the private key when the staged model is activated, and another
 * migration gets another pair.
 */
export function migrationKeyPair(caKeyPem: string, id: string): { privateKey: KeyObject; publicKey: string } {
  const raw = Buffer.from(hkdfSync("sha256", Buffer.from(caKeyPem), Buffer.from(id), "steward migration key v1", 32));
  const privateKey = privateKeyOf(raw);
  return { privateKey, publicKey: b64u(rawPublicKey(createPublicKey(privateKey))) };
}

/** A migration's key pair, by migration id. */
export type MigrationKeys = (id: string) => { privateKey: KeyObject; publicKey: string };

/** The migration keys of the controller whose data directory is `dataDir` (reads its CA key). */
export async function migrationKeysForDataDir(dataDir: string): Promise<MigrationKeys> {
  const caKeyPem = await readFile(join(dataDir, dataFiles.caKey), "utf8");
  return (id) => migrationKeyPair(caKeyPem, id);
}

/** The sealer that opens what {@link sealerToPublicKey} sealed to `privateKey`'s public key. */
export function sealerFromPrivateKey(privateKey: KeyObject, sealing: TransferSealing): TransferSealer {
  if (sealing.kind !== "x25519")
    throw new TransferSealError(`the secrets are sealed to a ${sealing.kind}, not to this controller's key`);
  const mine = b64u(rawPublicKey(createPublicKey(privateKey)));
  if (mine !== sealing.recipient)
    throw new TransferSealError(
      "the secrets are sealed to another controller's key (or another migration's): stage the model again",
    );
  const ephemeral = publicKeyOf(sealing.ephemeral, "the sender's ephemeral key");
  const shared = agree(privateKey, ephemeral);
  return new TransferSealer(
    transferKey(shared, Buffer.from(sealing.ephemeral, "base64url"), Buffer.from(mine, "base64url")),
  );
}

const keyCheck = (key: Buffer): Buffer => createHmac("sha256", key).update("steward model export key check").digest();

/** Refuses a passphrase too short to seal with. */
export function passphraseProblem(passphrase: string): string | undefined {
  return passphrase.length < PASSPHRASE_MIN_CHARS
    ? `an export passphrase must be at least ${PASSPHRASE_MIN_CHARS} characters`
    : undefined;
}

/** A sealer under `passphrase` (a new salt), and how it sealed. */
export async function sealerForPassphrase(
  passphrase: string,
): Promise<{ sealer: TransferSealer; sealing: TransferSealing }> {
  const problem = passphraseProblem(passphrase);
  if (problem) throw new TransferSealError(problem);
  const kdf = { name: "scrypt" as const, ...SCRYPT, salt: randomBytes(16).toString("base64") };
  const key = await derivePassphraseKey(passphrase, kdf);
  return { sealer: new TransferSealer(key), sealing: { kind: "passphrase", kdf, keyCheck: b64u(keyCheck(key)) } };
}

/** The sealer that opens what {@link sealerForPassphrase} sealed; a wrong passphrase is refused as such. */
export async function sealerFromPassphrase(passphrase: string, sealing: TransferSealing): Promise<TransferSealer> {
  if (sealing.kind !== "passphrase")
    throw new TransferSealError(`the secrets are sealed to a ${sealing.kind}, not to a passphrase`);
  const costProblem = scryptCostProblem(sealing.kdf);
  if (costProblem)
    throw new TransferSealError(
      `the export's key derivation asks for scrypt ${costProblem}, more than Steward writes: the file was altered`,
    );
  const key = await derivePassphraseKey(passphrase, sealing.kdf);
  const check = Buffer.from(sealing.keyCheck, "base64url");
  const want = keyCheck(key);
  if (check.length !== want.length || !timingSafeEqual(check, want))
    throw new TransferSealError("wrong passphrase for this model export's secrets (or the file was altered)");
  return new TransferSealer(key);
}
