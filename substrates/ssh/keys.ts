/**
 * New ed25519 SSH key pairs in OpenSSH's own formats (what sshd reads as a host key and
 * `authorized_keys` lists), made with Node's crypto: the `openssh-key-v1` private key container,
 * unencrypted, as `ssh-keygen -t ed25519 -N ""` writes it (PROTOCOL.key in OpenSSH's sources).
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { fingerprint } from "./ssh-session";

export interface SshKeyPair {
  /** `-----BEGIN OPENSSH PRIVATE KEY-----…` */
  privateKey: string;
  /** `ssh-ed25519 AAAA… comment` */
  publicKey: string;
  /** `SHA256:…`, as `ssh-keygen -lf` prints it. */
  fingerprint: string;
}

const sshString = (b: Buffer | string): Buffer => {
  const data = typeof b === "string" ? Buffer.from(b) : b;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  return Buffer.concat([len, data]);
};
const uint32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

export function generateSshKeyPair(comment: string): SshKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const pub = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
  const seed = Buffer.from(privateKey.export({ format: "jwk" }).d!, "base64url");
  const blob = Buffer.concat([sshString("ssh-ed25519"), sshString(pub)]);
  const check = randomBytes(4);
  let secret = Buffer.concat([
    check,
    check,
    sshString("ssh-ed25519"),
    sshString(pub),
    sshString(Buffer.concat([seed, pub])),
    sshString(comment),
  ]);
  // Padded with 1, 2, 3, … to the cipher's block size (8 for "none").
  const pad = (8 - (secret.length % 8)) % 8;
  secret = Buffer.concat([secret, Buffer.from(Array.from({ length: pad }, (_, i) => i + 1))]);
  const body = Buffer.concat([
    Buffer.from("openssh-key-v1\0"),
    sshString("none"),
    sshString("none"),
    sshString(""),
    uint32(1),
    sshString(blob),
    sshString(secret),
  ]);
  const lines = body.toString("base64").match(/.{1,70}/g)!;
  return {
    privateKey: `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines.join("\n")}\n-----END OPENSSH PRIVATE KEY-----\n`,
    publicKey: `ssh-ed25519 ${blob.toString("base64")} ${comment}`,
    fingerprint: fingerprint(blob),
  };
}
