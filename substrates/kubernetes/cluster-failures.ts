/**
 * A failed call to a cluster's API server, in words a user can act on: where it was sent and what
 * went wrong (`cannot reach cluster https://10.0.0.1:6443: connection refused`), without the client's
 * internals. Used where provisioning errors are shown (machine status, debug-log) and where a
 * cluster is checked before it is relied on.
 */
import { KubeApiError, KubeUnreachableError } from "./kube-api";

/** The TLS library's verification codes: the server's certificate is not the one the kubeconfig's CA pins. */
const TLS_CODES = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_SIGNATURE_FAILURE",
  "CERT_UNTRUSTED",
]);

const PHRASES: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "the connection was reset",
  ENOTFOUND: "no such host",
  EAI_AGAIN: "its name does not resolve now",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
};

/** `cannot reach cluster <server>: <why>`, `cluster <server> refused the credential: …`, or the error's own message. */
export function describeClusterFailure(err: unknown, server: string): string {
  if (err instanceof KubeUnreachableError) return `cannot reach cluster ${server}: ${unreachablePhrase(err)}`;
  if (err instanceof KubeApiError) {
    if (err.code === 401)
      return `cluster ${server} refused the credential (401 Unauthorized): its token or client certificate is not valid, or has expired`;
    if (err.code === 403) return `cluster ${server} forbids it: ${err.status?.message ?? err.message}`;
    return `cluster ${server}: ${err.message}`;
  }
  return err instanceof Error ? err.message : String(err);
}

function unreachablePhrase(err: KubeUnreachableError): string {
  const cause = err.cause as NodeJS.ErrnoException | undefined;
  if (err.code === "ETIMEDOUT")
    return err.message.includes("no answer in")
      ? err.message.slice(err.message.lastIndexOf("no answer in"))
      : "no answer in time";
  if (TLS_CODES.has(err.code) || err.code.startsWith("ERR_TLS_") || err.code.startsWith("ERR_SSL_")) {
    return `TLS failure: ${cause?.message ?? err.code} (is the kubeconfig's certificate-authority this cluster's, and its server the cluster's address?)`;
  }
  return PHRASES[err.code] ?? cause?.message ?? err.message;
}
