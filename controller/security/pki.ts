/**
 * The controller's certificate authority. Bootstrap creates an ECDSA P-256 CA (milliseconds, where
 * RSA-2048 in pure JS takes seconds); each replica gets a server certificate that carries the fixed
 * name {@link CONTROLLER_TLS_NAME} plus its addresses, so clients pin the CA and verify that name
 * whichever address they dial.
 */
import "reflect-metadata"; // required by @peculiar/x509 (tsyringe)
import { webcrypto } from "node:crypto";
import { isIP } from "node:net";
import * as x509 from "@peculiar/x509";
import { CONTROLLER_TLS_NAME } from "../../api";

const crypto = webcrypto;
x509.cryptoProvider.set(crypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
const alg = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

export interface CertificateAuthority {
  certPem: string;
  keyPem: string;
}
export interface ServerCertificate {
  certPem: string;
  keyPem: string;
}

const YEAR_MS = 365 * 24 * 3600 * 1000;

export async function createCertificateAuthority(controllerName: string): Promise<CertificateAuthority> {
  const keys = await crypto.subtle.generateKey(alg, true, ["sign", "verify"]);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=steward controller ${controllerName} CA, O=Steward`,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 10 * YEAR_MS),
    signingAlgorithm: alg,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: cert.toString("pem"), keyPem: await keyToPem(keys.privateKey) };
}

/** A server (and client, for etcd peers) certificate for one replica, valid for its hosts and IPs. */
export async function issueServerCertificate(ca: CertificateAuthority, hosts: string[]): Promise<ServerCertificate> {
  const caCert = new x509.X509Certificate(ca.certPem);
  const caKey = await crypto.subtle.importKey("pkcs8", x509.PemConverter.decodeFirst(ca.keyPem), alg, false, ["sign"]);
  const keys = await crypto.subtle.generateKey(alg, true, ["sign", "verify"]);
  const names = [...new Set([CONTROLLER_TLS_NAME, "localhost", "127.0.0.1", ...hosts])].map((h) => ({
    type: isIP(h) ? ("ip" as const) : ("dns" as const),
    value: h,
  }));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: `CN=${CONTROLLER_TLS_NAME}, O=Steward`,
    issuer: caCert.subject,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 2 * YEAR_MS),
    signingAlgorithm: alg,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      new x509.SubjectAlternativeNameExtension(names),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
    ],
  });
  return { certPem: cert.toString("pem"), keyPem: await keyToPem(keys.privateKey) };
}

async function keyToPem(key: webcrypto.CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await crypto.subtle.exportKey("pkcs8", key), "PRIVATE KEY");
}

function randomSerial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] = bytes[0]! & 0x7f; // positive
  return Buffer.from(bytes).toString("hex");
}
