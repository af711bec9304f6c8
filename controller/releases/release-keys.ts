/**
 * The keys releases are signed with: ed25519. A public key is named by its text form
 * `ed25519:<base64url of the 32 raw bytes>` (what a controller's configuration lists as trusted,
 * and what a signature names); the private key stays with whoever publishes releases, as a PKCS #8
 * PEM file. Signatures are over the exact bytes of a release's manifest.json.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from "node:crypto";
import type { KeyObject } from "node:crypto";

const PREFIX = "ed25519:";
/** 32 raw bytes in base64url, unpadded. */
const RAW_KEY = /^[A-Za-z0-9_-]{43}$/;

export interface ReleaseKeyPair {
  /** PKCS #8 PEM: keep it secret. */
  privateKeyPem: string;
  /** `ed25519:…`: give it to controllers as trusted. */
  publicKey: string;
}

/** A release signature as `manifest.sig` holds it (JSON). */
export interface ReleaseSignature {
  key: string;
  signature: string;
}

export function generateReleaseKey(): ReleaseKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  return {
    privateKeyPem: privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
    publicKey: publicKeyText(publicKey),
  };
}

function publicKeyText(key: KeyObject): string {
  return PREFIX + String(key.export({ format: "jwk" }).x);
}

/** Why `text` is not a release public key, or undefined. */
export function releaseKeyProblem(text: string): string | undefined {
  if (!text.startsWith(PREFIX))
    return `"${text.slice(0, 60)}" is not an ed25519 public key (ed25519:<43 base64url characters>)`;
  if (!RAW_KEY.test(text.slice(PREFIX.length)))
    return `"${text.slice(0, 60)}" does not hold 32 bytes of key in base64url after "ed25519:"`;
  return undefined;
}

function publicKeyOf(text: string): KeyObject {
  const problem = releaseKeyProblem(text);
  if (problem) throw new Error(problem);
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: text.slice(PREFIX.length) }, format: "jwk" });
}

/** Signs `manifest` (the file's bytes) with a PKCS #8 PEM ed25519 key. */
export function signManifest(manifest: Buffer, privateKeyPem: string): ReleaseSignature {
  const key = createPrivateKey(privateKeyPem);
  if (key.asymmetricKeyType !== "ed25519")
    throw new Error(
      `the signing key is ${key.asymmetricKeyType ?? "not an asymmetric key"}; releases are signed with ed25519`,
    );
  return { key: publicKeyText(createPublicKey(key)), signature: sign(null, manifest, key).toString("base64") };
}

/**
 * Checks `signatureFile` (manifest.sig's text) over `manifest` against the keys trusted; undefined
 * when it holds, else why not (in words a user can act on).
 */
export function signatureProblem(
  manifest: Buffer,
  signatureFile: string,
  trusted: readonly string[],
): string | undefined {
  let sig: Partial<ReleaseSignature>;
  try {
    sig = JSON.parse(signatureFile) as Partial<ReleaseSignature>;
  } catch {
    return "manifest.sig is not JSON ({key, signature})";
  }
  if (typeof sig.key !== "string" || typeof sig.signature !== "string")
    return "manifest.sig lacks its key or its signature ({key, signature})";
  if (!trusted.includes(sig.key))
    return `it is signed by ${sig.key.slice(0, 60)}, which this controller does not trust (trusted: ${trusted.join(", ") || "none"})`;
  const bytes = Buffer.from(sig.signature, "base64");
  if (bytes.length !== 64 || !verify(null, manifest, publicKeyOf(sig.key), bytes))
    return `its signature does not match manifest.json (the manifest was changed after signing, or signed by another key)`;
  return undefined;
}
