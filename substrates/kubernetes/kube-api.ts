/**
 * The product's Kubernetes client: narrow and dependency-free, in the spirit of the vSphere SOAP
 * client (soap.ts). JSON over HTTPS with the cluster CA pinned (from the kubeconfig, see
 * kubeconfig.ts), a bearer token or a client certificate; the verbs of the API concepts page on the
 * resource types of resources.ts: get, list (following `continue`), create, replace (optimistic
 * concurrency: a stale `metadata.resourceVersion` is 409 Conflict), merge or JSON patch, server-side
 * apply, delete (propagation policy, grace period, preconditions), watch from a resourceVersion
 * (a chunked `?watch=true` stream; 410 Gone, as an HTTP answer or an ERROR event, is a
 * {@link KubeGoneError}: list again and watch from the list's version), and the `/scale`
 * subresource. Every call takes an AbortSignal and has a timeout; failures are
 * {@link KubeApiError}s naming the verb, the object and the server's `Status` message (a server not
 * reached or silent: {@link KubeUnreachableError}, with the system's error code). The client
 * never logs, and its credential is in private fields: nothing prints it. A token given as a file
 * (a pod's ServiceAccount token, in-cluster.ts) is read again whenever the file changes, since the
 * kubelet rotates it.
 */
import { readFile, stat } from "node:fs/promises";
import { Agent, request } from "node:https";
import type { IncomingMessage } from "node:http";
import { parseKubeconfig } from "./kubeconfig";
import type { KubeConnection, KubeconfigOptions } from "./kubeconfig";
import { apiVersionOf, resourceName } from "./resources";
import type {
  KubeList,
  KubeObject,
  KubeResource,
  ObjectMeta,
  KubeScale,
  KubeStatus,
  WatchEvent,
  WatchEventType,
} from "./resources";

export interface KubeApiOptions {
  /**
   * Per request, in ms (a watch: until its answer starts).
   * @default 30000
   */
  timeoutMs?: number;
  /** @default 64 MiB */
  maxResponseBytes?: number;
}

/** A failed call: `code` is the HTTP status, `reason` the Status reason (`NotFound`, `Conflict`, …). */
export class KubeApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    readonly verb: string,
    readonly target: string,
    readonly status?: KubeStatus,
  ) {
    super(`Kubernetes ${verb} ${target}: ${code} ${reason}${status?.message ? `: ${status.message}` : ""}`);
    this.name = "KubeApiError";
  }
}

/** 410 Gone/Expired: the resourceVersion (or continue token) is too old; list again. */
export class KubeGoneError extends KubeApiError {
  constructor(verb: string, target: string, status?: KubeStatus) {
    super(410, status?.reason ?? "Expired", verb, target, status);
    this.name = "KubeGoneError";
  }
}

/**
 * The API server was not reached or did not answer: no connection, a TLS failure, no answer in time.
 * Nothing is known of what it would have said. `code` is the system's or TLS's error code
 * (`ECONNREFUSED`, `DEPTH_ZERO_SELF_SIGNED_CERT`, `ERR_TLS_CERT_ALTNAME_INVALID`, …), `ETIMEDOUT` for no answer in time.
 */
export class KubeUnreachableError extends Error {
  constructor(
    message: string,
    readonly server: string,
    readonly code: string,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "KubeUnreachableError";
  }
}

const isApiError = (err: unknown, code: number, reason?: string): err is KubeApiError =>
  err instanceof KubeApiError && err.code === code && (!reason || err.reason === reason);
export const isNotFound = (err: unknown): err is KubeApiError => isApiError(err, 404);
export const isConflict = (err: unknown): err is KubeApiError => isApiError(err, 409, "Conflict");
export const isAlreadyExists = (err: unknown): err is KubeApiError => isApiError(err, 409, "AlreadyExists");
export const isInvalid = (err: unknown): err is KubeApiError => isApiError(err, 422);
export const isGone = (err: unknown): err is KubeGoneError => err instanceof KubeGoneError;

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}
export interface ObjectOptions extends CallOptions {
  /** Default: the object's own namespace, else the kubeconfig context's. */
  namespace?: string;
}
export interface WriteOptions extends ObjectOptions {
  dryRun?: boolean;
  fieldManager?: string;
}
export interface ListOptions extends ObjectOptions {
  labelSelector?: string;
  fieldSelector?: string;
  /** Across every namespace (namespaced resources only). */
  allNamespaces?: boolean;
  /**
   * Page size; pages are followed until the end.
   * @default 500
   */
  limit?: number;
}
export interface WatchOptions extends Omit<ListOptions, "limit" | "timeoutMs"> {
  /** Changes after this version; none: the current objects as ADDED first, then changes. */
  resourceVersion?: string;
  /** Ask for BOOKMARK events (yielded: they carry only metadata.resourceVersion). */
  bookmarks?: boolean;
  /**
   * The server ends the stream after this long (then watch again from the last version seen).
   * @default 300
   */
  timeoutSeconds?: number;
}
export interface DeleteOptions extends ObjectOptions {
  /** @default the server's (Background for apps/v1) */
  propagationPolicy?: "Background" | "Foreground" | "Orphan";
  gracePeriodSeconds?: number;
  /** Delete only this incarnation (uid) or version of the object. */
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
}

const PATCH_TYPES = { merge: "application/merge-patch+json", json: "application/json-patch+json" } as const;
const NAME = /^[^/]+$/;

/** An object as the server answers it: what was sent plus the metadata it keeps (uid, resourceVersion, …). */
export type Stored<T extends KubeObject> = T & { apiVersion: string; kind: string; metadata: ObjectMeta };

type Target = { namespace?: string; name?: string; subresource?: "status" | "scale" };
type Call = Target &
  CallOptions & {
    query?: Record<string, string | undefined>;
    body?: unknown;
    contentType?: string;
    objectName?: string;
  };

export class KubeApi {
  readonly #agent: Agent;
  readonly #token?: string;
  readonly #tokenFile?: string;
  /** The token file's content, and which file (inode, change time, size) it was read from. */
  #fileToken?: { token: string; ino: number; mtimeMs: number; size: number };
  private readonly base: URL;
  private closed = false;

  constructor(
    readonly connection: KubeConnection,
    private readonly o: KubeApiOptions = {},
  ) {
    const cred = connection.credential();
    this.#token = cred.token;
    this.#tokenFile = cred.tokenFile;
    this.base = new URL(connection.server);
    this.#agent = new Agent({
      keepAlive: true,
      ...(connection.caCert ? { ca: connection.caCert } : {}),
      ...(cred.clientCert ? { cert: cred.clientCert, key: cred.clientKey } : {}),
      ...(connection.insecure ? { rejectUnauthorized: false } : {}),
      ...(connection.tlsServerName ? { servername: connection.tlsServerName } : {}),
    });
  }

  /** A client for a kubeconfig's text (its named or current context). */
  static fromKubeconfig(text: string, o: KubeconfigOptions & KubeApiOptions = {}): KubeApi {
    return new KubeApi(parseKubeconfig(text, o), o);
  }

  /** The kubeconfig context's namespace. */
  get namespace(): string {
    return this.connection.namespace;
  }

  async get<T extends KubeObject>(r: KubeResource<T>, name: string, o: ObjectOptions = {}): Promise<T> {
    return this.call("get", r, "GET", { ...o, name }) as Promise<T>;
  }

  /** The object, or undefined if there is none. */
  async find<T extends KubeObject>(r: KubeResource<T>, name: string, o: ObjectOptions = {}): Promise<T | undefined> {
    try {
      return await this.get<T>(r, name, o);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Every matching object (pages followed), with the list's resourceVersion to watch from. */
  async list<T extends KubeObject>(r: KubeResource<T>, o: ListOptions = {}): Promise<KubeList<T>> {
    const items: T[] = [];
    let cont: string | undefined;
    for (;;) {
      const page = (await this.call("list", r, "GET", {
        ...o,
        ...(o.allNamespaces ? { namespace: "" } : {}),
        query: {
          labelSelector: o.labelSelector,
          fieldSelector: o.fieldSelector,
          limit: String(o.limit ?? 500),
          continue: cont,
        },
      })) as { metadata?: { resourceVersion?: string; continue?: string }; items?: T[] };
      // A list's items come without apiVersion and kind: put them back.
      for (const i of page.items ?? []) items.push({ apiVersion: apiVersionOf(r), kind: r.kind, ...i });
      cont = page.metadata?.continue || undefined;
      if (!cont) return { items, resourceVersion: page.metadata?.resourceVersion ?? "" };
    }
  }

  async create<T extends KubeObject>(r: KubeResource<T>, obj: T, o: WriteOptions = {}): Promise<Stored<T>> {
    return this.call("create", r, "POST", {
      ...o,
      namespace: this.namespaceFor(r, obj, o),
      body: this.typed(r, obj),
      query: writeQuery(o),
      objectName: obj?.metadata?.name ?? `${obj?.metadata?.generateName ?? ""}*`,
    }) as Promise<Stored<T>>;
  }

  /** PUT: the whole object; with `metadata.resourceVersion` set, a stale one is a 409 Conflict ({@link isConflict}). */
  async replace<T extends KubeObject>(
    r: KubeResource<T>,
    obj: T,
    o: WriteOptions & { subresource?: "status" } = {},
  ): Promise<Stored<T>> {
    return this.call("replace", r, "PUT", {
      ...o,
      name: nameOf(obj),
      namespace: this.namespaceFor(r, obj, o),
      body: this.typed(r, obj),
      query: writeQuery(o),
    }) as Promise<Stored<T>>;
  }

  /** A JSON merge patch (RFC 7386: null removes) or a JSON patch (RFC 6902 operations). */
  async patch<T extends KubeObject>(
    r: KubeResource<T>,
    name: string,
    patch: unknown,
    o: WriteOptions & { type?: "merge" | "json"; subresource?: "status" } = {},
  ): Promise<T> {
    const type = o.type ?? "merge";
    if (type === "json" ? !Array.isArray(patch) : typeof patch !== "object" || patch === null || Array.isArray(patch))
      throw new Error(
        `Kubernetes patch ${resourceName(r)} ${name}: a ${type} patch must be ${type === "json" ? "an array of operations" : "an object"}`,
      );
    return this.call("patch", r, "PATCH", {
      ...o,
      name,
      body: patch,
      contentType: PATCH_TYPES[type],
      query: writeQuery(o),
    }) as Promise<T>;
  }

  /** Server-side apply: creates the object or sets the fields it gives, owned by `fieldManager`. */
  async apply<T extends KubeObject>(
    r: KubeResource<T>,
    obj: T,
    o: WriteOptions & { fieldManager: string; force?: boolean },
  ): Promise<Stored<T>> {
    if (!o.fieldManager)
      throw new Error(`Kubernetes apply ${resourceName(r)} ${nameOf(obj)}: a fieldManager is required`);
    return this.call("apply", r, "PATCH", {
      ...o,
      name: nameOf(obj),
      namespace: this.namespaceFor(r, obj, o),
      body: this.typed(r, obj),
      contentType: "application/apply-patch+yaml",
      query: { ...writeQuery(o), force: o.force ? "true" : undefined },
    }) as Promise<Stored<T>>;
  }

  /** Deletes (or starts deleting: finalizers, graceful pods) the object; answers what the server returns. */
  async delete<T extends KubeObject>(r: KubeResource<T>, name: string, o: DeleteOptions = {}): Promise<T | KubeStatus> {
    const body = {
      apiVersion: "v1",
      kind: "DeleteOptions",
      ...(o.propagationPolicy ? { propagationPolicy: o.propagationPolicy } : {}),
      ...(o.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: o.gracePeriodSeconds } : {}),
      ...(o.preconditions ? { preconditions: o.preconditions } : {}),
      ...(o.dryRun ? { dryRun: ["All"] } : {}),
    };
    return this.call("delete", r, "DELETE", { ...o, name, body }) as Promise<T | KubeStatus>;
  }

  async getScale<T extends KubeObject>(r: KubeResource<T>, name: string, o: ObjectOptions = {}): Promise<KubeScale> {
    return this.call("get", r, "GET", { ...o, name, subresource: "scale" }) as Promise<KubeScale>;
  }

  /** Sets `spec.replicas` through `/scale`; with `resourceVersion`, only if the object is still at it (else 409 Conflict). */
  async scale<T extends KubeObject>(
    r: KubeResource<T>,
    name: string,
    replicas: number,
    o: ObjectOptions & { resourceVersion?: string } = {},
  ): Promise<KubeScale> {
    if (!Number.isInteger(replicas) || replicas < 0)
      throw new Error(
        `Kubernetes scale ${resourceName(r)} ${name}: replicas must be a whole number >= 0, not ${replicas}`,
      );
    if (o.resourceVersion) {
      const namespace = r.namespaced ? (o.namespace ?? this.namespace) : undefined;
      const body = {
        apiVersion: "autoscaling/v1",
        kind: "Scale",
        metadata: { name, ...(namespace ? { namespace } : {}), resourceVersion: o.resourceVersion },
        spec: { replicas },
      };
      return this.call("scale", r, "PUT", { ...o, name, subresource: "scale", body }) as Promise<KubeScale>;
    }
    return this.call("scale", r, "PATCH", {
      ...o,
      name,
      subresource: "scale",
      body: { spec: { replicas } },
      contentType: PATCH_TYPES.merge,
    }) as Promise<KubeScale>;
  }

  /**
   * The changes to matching objects, as they happen, until the server ends the stream
   * (`timeoutSeconds`), the signal aborts, or the caller stops iterating. Throws
   * {@link KubeGoneError} when `resourceVersion` is too old.
   */
  async *watch<T extends KubeObject>(
    r: KubeResource<T>,
    o: WatchOptions = {},
  ): AsyncGenerator<WatchEvent<T>, void, undefined> {
    const timeoutSeconds = o.timeoutSeconds ?? 300;
    const target = this.describe(r, { namespace: o.allNamespaces ? "" : this.namespaceFor(r, undefined, o) });
    const query = {
      watch: "true",
      resourceVersion: o.resourceVersion,
      labelSelector: o.labelSelector,
      fieldSelector: o.fieldSelector,
      allowWatchBookmarks: o.bookmarks ? "true" : undefined,
      timeoutSeconds: String(timeoutSeconds),
    };
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(o.signal?.reason);
    o.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const res = await this.send(
        "watch",
        target,
        "GET",
        this.path(
          r,
          { ...(o.allNamespaces ? { namespace: "" } : { namespace: this.namespaceFor(r, undefined, o) }) },
          query,
        ),
        undefined,
        undefined,
        controller.signal,
        this.o.timeoutMs ?? 30_000,
        true,
      );
      // Nothing for longer than the server's own deadline (plus slack) means the connection is dead.
      res.setTimeout((timeoutSeconds + 30) * 1000, () =>
        res.destroy(new Error(`no event or end of stream in ${timeoutSeconds + 30} s`)),
      );
      let buffered = "";
      for await (const chunk of res as AsyncIterable<Buffer>) {
        buffered += chunk.toString("utf8");
        let nl: number;
        while ((nl = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          if (!line) continue;
          let e: { type?: string; object?: unknown };
          try {
            e = JSON.parse(line) as typeof e;
          } catch {
            throw new KubeApiError(500, "BadWatchEvent", "watch", target, {
              kind: "Status",
              message: `not JSON: ${line.slice(0, 200)}`,
            });
          }
          if (e.type === "ERROR") {
            const status = e.object as KubeStatus;
            if (status?.code === 410) throw new KubeGoneError("watch", target, status);
            throw new KubeApiError(status?.code ?? 500, status?.reason ?? "WatchError", "watch", target, status);
          }
          if (
            !["ADDED", "MODIFIED", "DELETED", "BOOKMARK"].includes(e.type ?? "") ||
            typeof e.object !== "object" ||
            e.object === null
          ) {
            throw new KubeApiError(500, "BadWatchEvent", "watch", target, {
              kind: "Status",
              message: `unexpected event ${line.slice(0, 200)}`,
            });
          }
          yield { type: e.type as WatchEventType, object: e.object as T };
        }
      }
      o.signal?.throwIfAborted();
    } catch (err) {
      if (o.signal?.aborted) throw o.signal.reason;
      if (err instanceof KubeApiError) throw err;
      throw new Error(`Kubernetes watch ${target}: ${(err as Error).message}`);
    } finally {
      o.signal?.removeEventListener("abort", onAbort);
      controller.abort(); // the caller stopped early: close the stream
    }
  }

  /** Closes the connections (watches in progress end). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.#agent.destroy();
  }

  // ---- the wire ----

  private namespaceFor(r: KubeResource, obj: KubeObject | undefined, o: ObjectOptions): string | undefined {
    if (!r.namespaced) return undefined;
    const ns = o.namespace ?? obj?.metadata?.namespace ?? this.namespace;
    if (obj?.metadata?.namespace && obj.metadata.namespace !== ns)
      throw new Error(
        `Kubernetes ${resourceName(r)} ${obj.metadata.name ?? ""}: the object is in namespace ${obj.metadata.namespace}, not ${ns}`,
      );
    return ns;
  }

  private typed<T extends KubeObject>(r: KubeResource, obj: T): T {
    if (!obj || typeof obj !== "object" || !obj.metadata || typeof obj.metadata !== "object")
      throw new Error(`Kubernetes ${resourceName(r)}: an object needs metadata`);
    if (obj.kind !== undefined && obj.kind !== r.kind)
      throw new Error(`Kubernetes ${resourceName(r)}: the object is a ${obj.kind}, not a ${r.kind}`);
    return { ...obj, apiVersion: obj.apiVersion ?? apiVersionOf(r), kind: r.kind };
  }

  /** How messages name the target: `statefulsets.apps shop/web`, `pods in namespace shop`, `namespaces shop`. */
  private describe(r: KubeResource, t: Target, objectName?: string): string {
    const name = t.name ?? objectName;
    const sub = t.subresource ? `/${t.subresource}` : "";
    if (name !== undefined) return `${resourceName(r)} ${t.namespace ? `${t.namespace}/` : ""}${name}${sub}`;
    if (!r.namespaced) return resourceName(r);
    return `${resourceName(r)} in ${t.namespace ? `namespace ${t.namespace}` : "all namespaces"}`;
  }

  private path(r: KubeResource, t: Target, query: Record<string, string | undefined> = {}): string {
    for (const [what, v] of [
      ["namespace", t.namespace],
      ["name", t.name],
    ] as const) {
      if (v !== undefined && v !== "" && (!NAME.test(v) || v === "." || v === ".."))
        throw new Error(`Kubernetes ${resourceName(r)}: ${JSON.stringify(v)} is not a valid ${what}`);
    }
    if (t.name === "") throw new Error(`Kubernetes ${resourceName(r)}: the object has no name`);
    let p = this.base.pathname.replace(/\/+$/, "") + (r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`);
    if (r.namespaced && t.namespace) p += `/namespaces/${encodeURIComponent(t.namespace)}`;
    p += `/${r.plural}`;
    if (t.name !== undefined) p += `/${encodeURIComponent(t.name)}`;
    if (t.subresource) p += `/${t.subresource}`;
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== "") q.set(k, v);
    const qs = q.toString();
    return qs ? `${p}?${qs}` : p;
  }

  private async call(verb: string, r: KubeResource, method: string, c: Call): Promise<unknown> {
    const t: Target = {
      ...(c.name !== undefined ? { name: c.name } : {}),
      ...(c.subresource ? { subresource: c.subresource } : {}),
      namespace: r.namespaced ? (c.namespace ?? this.namespace) : undefined,
    };
    const target = this.describe(r, t, c.objectName);
    const path = this.path(r, t, c.query);
    // The deadline covers the whole exchange, the answer's body included.
    const timeoutMs = c.timeoutMs ?? this.o.timeoutMs ?? 30_000;
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), timeoutMs);
    const signal = c.signal ? AbortSignal.any([c.signal, deadline.signal]) : deadline.signal;
    let res: IncomingMessage, text: string;
    try {
      res = await this.send(verb, target, method, path, c.body, c.contentType, signal, undefined, false);
      text = await this.read(res, verb, target);
    } catch (err) {
      if (c.signal?.aborted) throw c.signal.reason;
      if (deadline.signal.aborted)
        throw new KubeUnreachableError(
          `Kubernetes ${verb} ${target} at ${this.base.host}: no answer in ${timeoutMs} ms`,
          this.connection.server,
          "ETIMEDOUT",
        );
      throw err;
    } finally {
      clearTimeout(timer);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new KubeApiError(res.statusCode ?? 0, "BadResponse", verb, target, {
        kind: "Status",
        message: `not JSON: ${text.slice(0, 200)}`,
      });
    }
  }

  /** The bearer token: the given one, or the token file's current content. */
  private async bearer(verb: string, target: string): Promise<string | undefined> {
    if (!this.#tokenFile) return this.#token;
    const file = this.#tokenFile;
    try {
      const s = await stat(file);
      const had = this.#fileToken;
      // Replaced (a rename: another inode) or rewritten: read it again.
      if (!had || had.ino !== s.ino || had.mtimeMs !== s.mtimeMs || had.size !== s.size)
        this.#fileToken = {
          token: (await readFile(file, "utf8")).trim(),
          ino: s.ino,
          mtimeMs: s.mtimeMs,
          size: s.size,
        };
      return this.#fileToken!.token;
    } catch (err) {
      throw new Error(`Kubernetes ${verb} ${target}: cannot read the token file ${file}: ${(err as Error).message}`);
    }
  }

  /** Sends one request; answers the response once it is a success (2xx), else throws its Status. */
  private async send(
    verb: string,
    target: string,
    method: string,
    path: string,
    body: unknown,
    contentType: string | undefined,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    stream: boolean,
  ): Promise<IncomingMessage> {
    if (this.closed) throw new Error(`Kubernetes ${verb} ${target}: the client is closed`);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const token = await this.bearer(verb, target);
    return new Promise((resolve, reject) => {
      let timedOut = false;
      const req = request(
        {
          host: this.base.hostname.replace(/^\[|\]$/g, ""),
          port: this.base.port || 443,
          path,
          method,
          agent: this.#agent,
          ...(signal ? { signal } : {}),
          headers: {
            accept: "application/json",
            "user-agent": "steward",
            ...(token ? { authorization: `Bearer ${token}` } : {}),
            ...(payload !== undefined
              ? { "content-type": contentType ?? "application/json", "content-length": Buffer.byteLength(payload) }
              : {}),
          },
        },
        (res) => {
          clearTimeout(timer);
          const code = res.statusCode ?? 0;
          if (code >= 200 && code < 300) {
            resolve(res);
            return;
          }
          this.read(res, verb, target).then((text) => {
            let status: KubeStatus | undefined;
            try {
              const s = JSON.parse(text) as KubeStatus;
              if (s && s.kind === "Status") status = s;
            } catch {
              /* not a Status */
            }
            status ??= { kind: "Status", message: text.slice(0, 300) };
            reject(
              code === 410
                ? new KubeGoneError(verb, target, status)
                : new KubeApiError(code, status.reason ?? (res.statusMessage || "Error"), verb, target, status),
            );
          }, reject);
        },
      );
      // Until the answer starts (a watch's stream then has its own idle limit); calls keep their own deadline.
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              timedOut = true;
              req.destroy();
            }, timeoutMs);
      req.on("error", (err) => {
        clearTimeout(timer);
        if (signal?.aborted) reject(signal.reason ?? err);
        else
          reject(
            new KubeUnreachableError(
              `Kubernetes ${verb} ${target} at ${this.base.host}: ${timedOut ? `no answer in ${timeoutMs} ms` : err.message}`,
              this.connection.server,
              timedOut ? "ETIMEDOUT" : ((err as NodeJS.ErrnoException).code ?? ""),
              err,
            ),
          );
      });
      if (stream) req.setNoDelay(true);
      req.end(payload);
    });
  }

  private read(res: IncomingMessage, verb: string, target: string): Promise<string> {
    const max = this.o.maxResponseBytes ?? 64 * 1024 * 1024;
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (d: Buffer) => {
        size += d.length;
        if (size > max) {
          res.destroy(new Error(`answer over ${max} bytes`));
          return;
        }
        chunks.push(d);
      });
      res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      res.on("error", (err) => reject(new Error(`Kubernetes ${verb} ${target}: ${err.message}`)));
      res.on("aborted", () => reject(new Error(`Kubernetes ${verb} ${target}: the answer was cut off`)));
    });
  }
}

const nameOf = (obj: KubeObject): string => {
  const n = obj?.metadata?.name;
  if (!n) throw new Error("Kubernetes: the object has no metadata.name");
  return n;
};
const writeQuery = (o: WriteOptions): Record<string, string | undefined> => ({
  dryRun: o.dryRun ? "All" : undefined,
  fieldManager: o.fieldManager,
});
