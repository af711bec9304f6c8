/**
 * Trusting a controller this client has never seen, by the SHA-256 fingerprint of its CA (from a
 * registration string, or given to `add-controller`): the CA is fetched without trusting anything
 * (it is public), kept only if its fingerprint is the one given, and then every request pins it, so
 * a server that merely copied the CA cannot answer (it has no certificate the CA signed).
 */
import { X509Certificate } from "node:crypto";
import { request } from "node:https";
import {
  CONTROLLER_TLS_NAME,
  StewardError,
  colonFingerprint,
  routes,
  sameFingerprint,
  splitAddress,
} from "../api/core";

/** The most a CA answer may be: a PEM certificate is a few kilobytes. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** Fetches the controller's CA from the first address that answers and checks its fingerprint. */
export async function fetchPinnedCa(addresses: string[], fingerprint: string, timeoutMs = 10_000): Promise<string> {
  const failures: string[] = [];
  for (const address of addresses) {
    let caCert: string;
    try {
      caCert = await fetchCa(address, timeoutMs);
    } catch (err) {
      failures.push(`${address}: ${(err as Error).message}`);
      continue;
    }
    let actual: string;
    try {
      actual = new X509Certificate(caCert).fingerprint256;
    } catch {
      failures.push(`${address}: answered something that is not a certificate`);
      continue;
    }
    if (sameFingerprint(actual, fingerprint)) return caCert;
    throw new StewardError(
      "unavailable",
      `the controller at ${address} has a CA with fingerprint ${actual}, not the expected ${colonFingerprint(fingerprint)}: either the string or fingerprint is wrong, or something else answers at that address. Nothing was sent to it`,
      {
        reason: "untrusted-certificate",
        details: { address, expected: colonFingerprint(fingerprint), actual },
      },
    );
  }
  throw new StewardError("unavailable", `no controller answered at ${addresses.join(", ")} (${failures.join("; ")})`, {
    reason: "controller-unreachable",
  });
}

/** GETs the CA route over TLS without verifying the server (what is answered is checked by fingerprint). */
function fetchCa(address: string, timeoutMs: number): Promise<string> {
  const [host, port] = splitAddress(address);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host,
        port,
        method: "GET",
        path: routes.controllerCa.path,
        servername: CONTROLLER_TLS_NAME,
        rejectUnauthorized: false,
        timeout: timeoutMs,
        headers: { accept: "application/json" },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        res.on("data", (c: Buffer) => {
          bytes += c.length;
          if (bytes > MAX_ANSWER_BYTES) req.destroy(new Error("answer too large"));
          else chunks.push(c);
        });
        res.on("error", reject);
        res.on("end", () => {
          if (res.statusCode !== 200) return reject(new Error(`answered HTTP ${res.statusCode}`));
          try {
            const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { caCert?: unknown };
            if (typeof body.caCert !== "string") throw new Error("no caCert");
            resolve(body.caCert);
          } catch {
            reject(new Error("answered something that is not a Steward controller's CA"));
          }
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end();
  });
}
