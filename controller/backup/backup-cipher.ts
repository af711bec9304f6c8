/**
 * A backup file's encryption: a passphrase-derived key (scrypt) and AES-256-GCM over the archive in
 * 1 MiB chunks, each with its own tag. The layout:
 *
 * ```
 * "STEWARD-BACKUP\n"  u32 header length  header (JSON, plaintext, authenticated)  { u32 length, chunk }*
 * ```
 *
 * Every chunk's additional data is the header's SHA-256, the chunk's index and whether it is the
 * last: so an edited header, reordered, dropped or appended chunks and a file cut short all fail,
 * each with its own message. The header carries a key check (an HMAC of a fixed string under the
 * derived key), so a wrong passphrase is told apart from a damaged file before anything is opened.
 * The header is read before anything is verified, so its scrypt cost is capped at what this code
 * writes: a forged header must not make a restore derive a key with gigabytes of memory.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { StewardError } from "../../api";
import { SCRYPT, derivePassphraseKey, scryptCostProblem } from "../security/passphrase-key";

export const BACKUP_MAGIC = "STEWARD-BACKUP\n";
/** The file format this code writes and the only one it reads. */
export const BACKUP_FORMAT_VERSION = 1;
const CHUNK_BYTES = 1024 * 1024;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const MAX_HEADER_BYTES = 64 * 1024;

/** What a backup says about itself in the clear (nothing secret: names, sizes, the KDF's salt). */
export interface BackupHeader {
  format: number;
  id: string;
  controller: { uuid: string; name: string };
  /** The store revision the snapshot was read at. */
  revision: number;
  createdAt: string;
  stewardVersion: string;
  kdf: { name: "scrypt"; N: number; r: number; p: number; salt: string };
  cipher: "aes-256-gcm";
  chunkBytes: number;
  /** base64 HMAC-SHA256 of "steward backup key check" under the derived key. */
  keyCheck: string;
}

export class BackupFileError extends StewardError {
  constructor(message: string) {
    super("invalid-request", message);
    this.name = "BackupFileError";
  }
}

const derive = derivePassphraseKey;

const keyCheck = (key: Buffer): Buffer => createHmac("sha256", key).update("steward backup key check").digest();

function aad(headerHash: Buffer, index: number, last: boolean): Buffer {
  const b = Buffer.alloc(headerHash.length + 9);
  headerHash.copy(b, 0);
  b.writeBigUInt64BE(BigInt(index), headerHash.length);
  b[headerHash.length + 8] = last ? 1 : 0;
  return b;
}

/** Encrypts `plain` (the archive) under `passphrase`; `meta` fills the header. */
export async function sealBackup(
  plain: Buffer,
  passphrase: string,
  meta: Pick<BackupHeader, "id" | "controller" | "revision" | "createdAt" | "stewardVersion">,
): Promise<Buffer> {
  if (passphrase.length < 8) throw new BackupFileError("a backup passphrase must be at least 8 characters");
  const kdf = { name: "scrypt" as const, ...SCRYPT, salt: randomBytes(16).toString("base64") };
  const key = await derive(passphrase, kdf);
  const header: BackupHeader = {
    format: BACKUP_FORMAT_VERSION,
    ...meta,
    kdf,
    cipher: "aes-256-gcm",
    chunkBytes: CHUNK_BYTES,
    keyCheck: keyCheck(key).toString("base64"),
  };
  const headerBytes = Buffer.from(JSON.stringify(header));
  const headerHash = createHash("sha256").update(headerBytes).digest();
  const len = Buffer.alloc(4);
  len.writeUInt32BE(headerBytes.length);
  const parts: Buffer[] = [Buffer.from(BACKUP_MAGIC), len, headerBytes];
  const count = Math.max(1, Math.ceil(plain.length / CHUNK_BYTES));
  for (let i = 0; i < count; i++) {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", key, iv);
    cipher.setAAD(aad(headerHash, i, i === count - 1));
    const body = Buffer.concat([cipher.update(plain.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES)), cipher.final()]);
    const chunk = Buffer.concat([iv, body, cipher.getAuthTag()]);
    const l = Buffer.alloc(4);
    l.writeUInt32BE(chunk.length);
    parts.push(l, chunk);
  }
  return Buffer.concat(parts);
}

/** The header alone, checked for magic and format version (no passphrase needed). */
export function readBackupHeader(file: Buffer): { header: BackupHeader; headerBytes: Buffer; bodyOffset: number } {
  const magic = Buffer.from(BACKUP_MAGIC);
  if (file.length < magic.length + 4 || !file.subarray(0, magic.length).equals(magic))
    throw new BackupFileError("this is not a Steward backup file (it does not start with STEWARD-BACKUP)");
  const hlen = file.readUInt32BE(magic.length);
  if (hlen > MAX_HEADER_BYTES || magic.length + 4 + hlen > file.length)
    throw new BackupFileError("the backup file is truncated or damaged: its header is cut short");
  const headerBytes = file.subarray(magic.length + 4, magic.length + 4 + hlen);
  let header: BackupHeader;
  try {
    header = JSON.parse(headerBytes.toString("utf8")) as BackupHeader;
  } catch {
    throw new BackupFileError("the backup file's header is damaged (not JSON)");
  }
  if (header.format !== BACKUP_FORMAT_VERSION) {
    throw new BackupFileError(
      `this backup is in format version ${String(header.format)}; this Steward (format ${BACKUP_FORMAT_VERSION}) cannot restore it: use the Steward release that made it (${String(header.stewardVersion)})`,
    );
  }
  if (header.kdf?.name !== "scrypt" || header.cipher !== "aes-256-gcm")
    throw new BackupFileError("the backup file's header names a key derivation or cipher this Steward does not use");
  const costProblem = scryptCostProblem(header.kdf);
  if (costProblem)
    throw new BackupFileError(
      `the backup file's header asks for scrypt ${costProblem}; Steward writes N=${SCRYPT.N}, r=${SCRYPT.r}, p=${SCRYPT.p} and derives no key above that (the file was not made by Steward, or its header was altered)`,
    );
  return { header, headerBytes, bodyOffset: magic.length + 4 + hlen };
}

/** Decrypts a backup file; a wrong passphrase, an altered or a truncated file each throws a {@link BackupFileError} saying which. */
export async function openBackup(file: Buffer, passphrase: string): Promise<{ header: BackupHeader; plain: Buffer }> {
  const { header, headerBytes, bodyOffset } = readBackupHeader(file);
  const key = await derive(passphrase, header.kdf);
  const check = Buffer.from(header.keyCheck ?? "", "base64");
  const want = keyCheck(key);
  if (check.length !== want.length || !timingSafeEqual(check, want))
    throw new BackupFileError("wrong passphrase for this backup (or its header was altered)");
  const headerHash = createHash("sha256").update(headerBytes).digest();
  const out: Buffer[] = [];
  let off = bodyOffset;
  for (let i = 0; ; i++) {
    if (off === file.length)
      throw new BackupFileError(`the backup file is truncated: it ends after ${i} chunks without its last one`);
    if (off + 4 > file.length) throw new BackupFileError("the backup file is truncated in the middle of a chunk");
    const len = file.readUInt32BE(off);
    if (len < IV_BYTES + TAG_BYTES || len > header.chunkBytes + IV_BYTES + TAG_BYTES || off + 4 + len > file.length)
      throw new BackupFileError(`the backup file is truncated or damaged at chunk ${i}`);
    const chunk = file.subarray(off + 4, off + 4 + len);
    off += 4 + len;
    const last = off === file.length;
    const decipher = createDecipheriv("aes-256-gcm", key, chunk.subarray(0, IV_BYTES));
    decipher.setAAD(aad(headerHash, i, last));
    decipher.setAuthTag(chunk.subarray(len - TAG_BYTES));
    try {
      out.push(decipher.update(chunk.subarray(IV_BYTES, len - TAG_BYTES)), decipher.final());
    } catch {
      // The passphrase is right (the key check passed): the bytes were changed, or the file was cut at a chunk boundary.
      throw new BackupFileError(
        last
          ? `the backup file is truncated or altered: chunk ${i} does not verify as the last one`
          : `the backup file was altered: chunk ${i} does not verify`,
      );
    }
    if (last) return { header, plain: Buffer.concat(out) };
  }
}
