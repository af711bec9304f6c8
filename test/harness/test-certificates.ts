/**
 * A throwaway CA and a server certificate it signed (openssl, RSA 2048, two days), for tests of
 * TLS from a user's secret: the PEM texts, and the CA's file for a client's verify-ca.
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface TestCertificates {
  caPem: string;
  certPem: string;
  keyPem: string;
  /** The CA's certificate as a file in `dir`. */
  caFile: string;
}

/** Makes them in `dir` (the server's subject is CN=`commonName`). */
export async function makeTestCertificates(dir: string, commonName = "postgresql"): Promise<TestCertificates> {
  const o = (...args: string[]) => run("openssl", args, { cwd: dir });
  await o(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-subj",
    "/CN=test-ca",
    "-days",
    "2",
  );
  await o(
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "server.key",
    "-out",
    "server.csr",
    "-subj",
    `/CN=${commonName}`,
  );
  await o(
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.crt",
    "-days",
    "2",
  );
  const pem = (f: string): Promise<string> => readFile(join(dir, f), "utf8");
  return {
    caPem: await pem("ca.crt"),
    certPem: await pem("server.crt"),
    keyPem: await pem("server.key"),
    caFile: join(dir, "ca.crt"),
  };
}
