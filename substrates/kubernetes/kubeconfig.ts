/**
 * Reads a kubeconfig (the file `kubectl` uses; "Organizing Cluster Access Using kubeconfig Files")
 * into what {@link KubeApi} needs: the API server's https URL, the CA that signs it (pinned), and
 * one credential — a bearer token (`token`, `tokenFile`) or a client certificate and key (`-data`
 * inline or as files, relative paths from the kubeconfig's folder, as kubectl resolves them) — for
 * the named context or the current one. `exec` and `auth-provider` users (cloud plugins) are refused
 * by name: they run programs, which a controller replica cannot be trusted to have.
 * The credential never shows when the connection is logged, inspected or serialised.
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { inspect } from "node:util";
import YAML from "yaml";

export interface KubeCredential {
  token?: string;
  /** A file holding the token, read again whenever it changes (a pod's rotated ServiceAccount token). */
  tokenFile?: string;
  clientCert?: string;
  clientKey?: string;
}

export interface KubeConnectionOptions {
  /** `https://host:port`, perhaps with a path prefix. */
  server: string;
  /** The cluster CA (PEM), trusted instead of the system's; undefined: the system's roots. */
  caCert?: string;
  credential: KubeCredential;
  /** @default "default" */
  namespace?: string;
  /** The kubeconfig context it came from, for messages. */
  context?: string;
  /** `insecure-skip-tls-verify`: for a throwaway test cluster only. @default false */
  insecure?: boolean;
  /** The TLS name to verify, when it differs from the server's host (`tls-server-name`). */
  tlsServerName?: string;
}

/** One cluster and identity from a kubeconfig; its credential is hidden from logs. */
export class KubeConnection {
  readonly #credential: KubeCredential;
  readonly server: string;
  readonly caCert: string | undefined;
  readonly namespace: string;
  readonly context: string;
  readonly insecure: boolean;
  readonly tlsServerName: string | undefined;

  constructor(o: KubeConnectionOptions) {
    const where = `kubeconfig${o.context ? ` context "${o.context}"` : ""}`;
    const c = o.credential;
    if (!c.token && !c.tokenFile && !(c.clientCert && c.clientKey))
      throw new Error(`${where}: the user has neither a token nor a client certificate and key`);
    let u: URL;
    try {
      u = new URL(o.server);
    } catch {
      throw new Error(
        `${where}: the cluster's server ${JSON.stringify(o.server)} is not a URL (e.g. https://10.0.0.1:6443)`,
      );
    }
    if (u.protocol !== "https:") throw new Error(`${where}: the cluster's server ${o.server} must be https://`);
    this.#credential = { ...c };
    this.server = o.server.replace(/\/+$/, "");
    this.caCert = o.caCert;
    this.namespace = o.namespace || "default";
    this.context = o.context ?? "";
    this.insecure = o.insecure ?? false;
    this.tlsServerName = o.tlsServerName;
  }

  /** The credential, for the client only. */
  credential(): KubeCredential {
    return { ...this.#credential };
  }

  /** What a log may show: everything but the credential. */
  describe(): Record<string, unknown> {
    const c = this.#credential;
    return {
      server: this.server,
      context: this.context,
      namespace: this.namespace,
      auth: c.token ? "token" : c.tokenFile ? `token file ${c.tokenFile}` : "client certificate",
      caPinned: !!this.caCert,
      insecure: this.insecure,
    };
  }
  toJSON(): Record<string, unknown> {
    return this.describe();
  }
  [inspect.custom](): string {
    return `KubeConnection ${inspect(this.describe())}`;
  }
}

type Named<T> = { name?: unknown; [k: string]: unknown } & Partial<Record<string, T>>;

export interface KubeconfigOptions {
  /** The context to use; default the file's `current-context`. */
  context?: string;
  /** The file the text came from, for relative paths and messages. */
  path?: string;
}

/** Reads a kubeconfig file (see {@link parseKubeconfig}). */
export function loadKubeconfig(path: string, o: Omit<KubeconfigOptions, "path"> = {}): KubeConnection {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new Error(`cannot read the kubeconfig ${path}: ${(err as Error).message}`);
  }
  return parseKubeconfig(text, { ...o, path });
}

export function parseKubeconfig(text: string, o: KubeconfigOptions = {}): KubeConnection {
  const where = o.path ? `kubeconfig ${o.path}` : "kubeconfig";
  let doc: unknown;
  try {
    doc = YAML.parse(text);
  } catch (err) {
    throw new Error(`${where} is not YAML: ${(err as Error).message}`);
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc))
    throw new Error(`${where} is not a kubeconfig (expected a mapping with clusters, users and contexts)`);
  const cfg = doc as Record<string, unknown>;
  const contextName = o.context ?? (typeof cfg["current-context"] === "string" ? cfg["current-context"] : "");
  if (!contextName) throw new Error(`${where} has no current-context: name a context`);
  const pick = (list: string, name: string, field: string): Record<string, unknown> => {
    const entries = Array.isArray(cfg[list]) ? (cfg[list] as Named<unknown>[]) : [];
    const e = entries.find((x) => x && x.name === name);
    if (!e)
      throw new Error(
        `${where}: ${list.replace(/s$/, "")} "${name}" not found (${list}: ${entries.map((x) => String(x?.name)).join(", ") || "none"})`,
      );
    const inner = e[field];
    if (!inner || typeof inner !== "object")
      throw new Error(`${where}: ${list.replace(/s$/, "")} "${name}" has no ${field}`);
    return inner as Record<string, unknown>;
  };
  const context = pick("contexts", contextName, "context");
  if (typeof context.cluster !== "string" || typeof context.user !== "string")
    throw new Error(`${where}: context "${contextName}" must name a cluster and a user`);
  const cluster = pick("clusters", context.cluster, "cluster");
  const user = pick("users", context.user, "user");
  const base = o.path ? dirname(o.path) : process.cwd();
  const file = (p: unknown, what: string): string => {
    if (typeof p !== "string" || !p) throw new Error(`${where}: ${what} must be a file path`);
    const full = isAbsolute(p) ? p : resolve(base, p);
    try {
      return readFileSync(full, "utf8");
    } catch (err) {
      throw new Error(`${where}: cannot read ${what} ${full}: ${(err as Error).message}`);
    }
  };
  const data = (v: unknown, what: string): string => {
    if (typeof v !== "string") throw new Error(`${where}: ${what} must be base64 text`);
    const s = Buffer.from(v, "base64").toString("utf8");
    if (!s.includes("-----BEGIN")) throw new Error(`${where}: ${what} is not base64 of a PEM block`);
    return s;
  };
  if (user.exec !== undefined || user["auth-provider"] !== undefined)
    throw new Error(
      `${where}: user "${context.user}" authenticates with ${user.exec !== undefined ? "an exec plugin" : "an auth-provider"}, which Steward does not run: give it a token (e.g. a ServiceAccount token) or a client certificate`,
    );
  if (user.username !== undefined || user.password !== undefined)
    throw new Error(
      `${where}: user "${context.user}" uses basic authentication, which Kubernetes no longer accepts: give it a token or a client certificate`,
    );
  const token =
    typeof user.token === "string" && user.token
      ? user.token
      : user.tokenFile !== undefined
        ? file(user.tokenFile, `user "${context.user}" tokenFile`).trim()
        : undefined;
  const clientCert =
    user["client-certificate-data"] !== undefined
      ? data(user["client-certificate-data"], `user "${context.user}" client-certificate-data`)
      : user["client-certificate"] !== undefined
        ? file(user["client-certificate"], `user "${context.user}" client-certificate`)
        : undefined;
  const clientKey =
    user["client-key-data"] !== undefined
      ? data(user["client-key-data"], `user "${context.user}" client-key-data`)
      : user["client-key"] !== undefined
        ? file(user["client-key"], `user "${context.user}" client-key`)
        : undefined;
  if (!!clientCert !== !!clientKey)
    throw new Error(
      `${where}: user "${context.user}" has a client certificate without its key, or a key without its certificate`,
    );
  const caCert =
    cluster["certificate-authority-data"] !== undefined
      ? data(cluster["certificate-authority-data"], `cluster "${context.cluster}" certificate-authority-data`)
      : cluster["certificate-authority"] !== undefined
        ? file(cluster["certificate-authority"], `cluster "${context.cluster}" certificate-authority`)
        : undefined;
  if (typeof cluster.server !== "string") throw new Error(`${where}: cluster "${context.cluster}" has no server`);
  const insecure = cluster["insecure-skip-tls-verify"] === true;
  if (insecure && caCert)
    throw new Error(`${where}: cluster "${context.cluster}" has both a CA and insecure-skip-tls-verify: keep the CA`);
  const namespace = typeof context.namespace === "string" && context.namespace ? context.namespace : "default";
  const tlsServerName = typeof cluster["tls-server-name"] === "string" ? cluster["tls-server-name"] : undefined;
  return new KubeConnection({
    server: cluster.server,
    caCert,
    namespace,
    context: contextName,
    insecure,
    tlsServerName,
    credential: { ...(token ? { token } : {}), ...(clientCert ? { clientCert, clientKey } : {}) },
  });
}

/**
 * A kubeconfig holding only `c`'s cluster, user and context, everything inline: what `steward
 * add-k8s` stores, since the controller cannot read the files a user's kubeconfig points to.
 */
export function flattenKubeconfig(c: KubeConnection): string {
  const name = c.context || "steward";
  const b64 = (pem: string): string => Buffer.from(pem).toString("base64");
  const cred = c.credential();
  const cluster: Record<string, unknown> = { server: c.server };
  if (c.caCert) cluster["certificate-authority-data"] = b64(c.caCert);
  if (c.insecure) cluster["insecure-skip-tls-verify"] = true;
  if (c.tlsServerName) cluster["tls-server-name"] = c.tlsServerName;
  const token = cred.token ?? (cred.tokenFile ? readFileSync(cred.tokenFile, "utf8").trim() : undefined);
  const user: Record<string, unknown> = token
    ? { token }
    : { "client-certificate-data": b64(cred.clientCert!), "client-key-data": b64(cred.clientKey!) };
  return YAML.stringify({
    apiVersion: "v1",
    kind: "Config",
    "current-context": name,
    clusters: [{ name, cluster }],
    users: [{ name, user }],
    contexts: [{ name, context: { cluster: name, user: name, namespace: c.namespace } }],
  });
}

/** A stored `kubernetes` credential's attributes for a connection (what `steward add-k8s` stores: a flattened kubeconfig, its server and context). */
export function credentialOfConnection(c: KubeConnection): Record<string, string> {
  return { kubeconfig: flattenKubeconfig(c), server: c.server, ...(c.context ? { context: c.context } : {}) };
}

/** The connection a stored `kubernetes` credential holds (see {@link credentialOfConnection}). */
export function connectionOfCredential(attributes: Record<string, string>): KubeConnection {
  return parseKubeconfig(attributes.kubeconfig ?? "", attributes.context ? { context: attributes.context } : {});
}
