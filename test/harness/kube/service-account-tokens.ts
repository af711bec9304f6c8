/**
 * ServiceAccount tokens of the fake API server, after "Managing Service Accounts", "Service account
 * token volume projection" and the TokenRequest API (`POST …/serviceaccounts/<name>/token`):
 * - a token authenticates as `system:serviceaccount:<ns>:<name>`, groups `system:serviceaccounts`,
 *   `system:serviceaccounts:<ns>` and `system:authenticated`;
 * - it stops working when it expires, when its ServiceAccount is deleted (or made again: another
 *   uid), and, when bound to a pod, once that pod is gone (or made again) or past its deletion;
 * - `expirationSeconds` defaults to 1 hour and may not be under 10 minutes; the server caps it at
 *   its maximum (kube-apiserver's `--service-account-max-token-expiration`), which tests lower to
 *   see tokens rotate; audiences default to the API server's, and a token for other audiences is
 *   not accepted by it.
 * The tokens are opaque random strings, not the real server's signed JWTs (no client here reads
 * their claims); only their hashes are kept.
 */
import { createHash, randomBytes } from "node:crypto";
import { kindFor } from "./kinds";
import type { KubeObject } from "./kinds";
import type { UserInfo } from "./rbac";
import { AUTHENTICATED } from "./rbac";
import type { ApiState } from "./state";
import { badRequest, cause, invalid, notFound } from "./status";

/** What the fake API server names itself as an audience (the real default, with the cluster domain). */
export const API_AUDIENCE = "https://kubernetes.default.svc.cluster.local";

const SERVICE_ACCOUNTS = kindFor("", "v1", "serviceaccounts")!;
const PODS = kindFor("", "v1", "pods")!;
const MIN_SECONDS = 600;
const DEFAULT_SECONDS = 3600;

interface Issued {
  namespace: string;
  name: string;
  uid: string;
  audiences: string[];
  expires: number;
  pod?: { name: string; uid: string };
}

export interface TokenRequestSpec {
  audiences?: string[];
  expirationSeconds?: number;
  boundObjectRef?: { kind?: string; apiVersion?: string; name?: string; uid?: string };
}

export class ServiceAccountTokens {
  private readonly issued = new Map<string, Issued>();

  /** @param maxSeconds the longest a token lives, whatever is asked */
  constructor(
    private readonly state: ApiState,
    private readonly maxSeconds = 365 * 24 * 3600,
  ) {}

  /** The TokenRequest subresource: a new token for the ServiceAccount, as a TokenRequest object. */
  request(namespace: string, name: string, body: unknown): KubeObject {
    const spec = ((body as { spec?: TokenRequestSpec } | undefined)?.spec ?? {}) as TokenRequestSpec;
    const { token, expirationTimestamp, expirationSeconds, audiences } = this.issue(namespace, name, spec);
    return {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      metadata: { name, namespace, creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, "Z") },
      spec: { ...spec, audiences, expirationSeconds },
      status: { token, expirationTimestamp },
    };
  }

  /** A token for `namespace/name` (the kubelet asks for its pods' projected volumes this way). */
  issue(
    namespace: string,
    name: string,
    spec: TokenRequestSpec = {},
  ): { token: string; expirationTimestamp: string; expirationSeconds: number; audiences: string[] } {
    const account = this.state.find(SERVICE_ACCOUNTS, namespace, name);
    if (!account) throw notFound(SERVICE_ACCOUNTS, name);
    const asked = spec.expirationSeconds ?? DEFAULT_SECONDS;
    if (!Number.isInteger(asked) || asked < MIN_SECONDS) {
      throw invalid({ ...SERVICE_ACCOUNTS, kind: "TokenRequest", group: "authentication.k8s.io" }, name, [
        cause(
          "spec.expirationSeconds",
          `Invalid value: ${JSON.stringify(asked)}: may not specify a duration less than 10 minutes`,
        ),
      ]);
    }
    const expirationSeconds = Math.min(asked, this.maxSeconds);
    let pod: Issued["pod"];
    const ref = spec.boundObjectRef;
    if (ref) {
      if (ref.kind !== "Pod")
        throw badRequest(`boundObjectRef.kind: the fake binds tokens to pods only, not ${JSON.stringify(ref.kind)}`);
      const p = this.state.find(PODS, namespace, ref.name ?? "");
      if (!p) throw notFound(PODS, ref.name ?? "");
      if (ref.uid && ref.uid !== p.metadata.uid)
        throw badRequest(
          `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
        );
      pod = { name: p.metadata.name!, uid: p.metadata.uid! };
    }
    const audiences = spec.audiences?.length ? spec.audiences : [API_AUDIENCE];
    const token = randomBytes(32).toString("base64url");
    const expires = Date.now() + expirationSeconds * 1000;
    // Expired tokens are forgotten as new ones come (the kubelet asks again for every pod as they rotate).
    for (const [key, t] of this.issued) if (t.expires <= Date.now()) this.issued.delete(key);
    this.issued.set(hash(token), {
      namespace,
      name,
      uid: account.metadata.uid!,
      audiences,
      expires,
      ...(pod ? { pod } : {}),
    });
    return {
      token,
      expirationTimestamp: new Date(expires).toISOString().replace(/\.\d+Z$/, "Z"),
      expirationSeconds,
      audiences,
    };
  }

  /** Who a bearer token is, if it is a live token of this server's audience. */
  authenticate(token: string): UserInfo | undefined {
    const key = hash(token);
    const t = this.issued.get(key);
    if (!t) return undefined;
    const account = this.state.find(SERVICE_ACCOUNTS, t.namespace, t.name);
    const pod = t.pod && this.state.find(PODS, t.namespace, t.pod.name);
    const podGone =
      !!t.pod &&
      (!pod ||
        pod.metadata.uid !== t.pod.uid ||
        (!!pod.metadata.deletionTimestamp && Date.parse(pod.metadata.deletionTimestamp) <= Date.now()));
    if (Date.now() >= t.expires || account?.metadata.uid !== t.uid || podGone) {
      this.issued.delete(key);
      return undefined;
    }
    if (!t.audiences.includes(API_AUDIENCE)) return undefined;
    return {
      name: `system:serviceaccount:${t.namespace}:${t.name}`,
      groups: ["system:serviceaccounts", `system:serviceaccounts:${t.namespace}`, AUTHENTICATED],
    };
  }
}

const hash = (token: string): string => createHash("sha256").update(token).digest("base64url");
