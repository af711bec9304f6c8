/**
 * A FAKE Kubernetes API server for tests: no kube-apiserver can run here (none in Debian or npm;
 * envtest and kwok download binaries). Real clients (`@kubernetes/client-node`, the product's own
 * client) talk to it over HTTPS on 127.0.0.1 with its own CA, authenticated by bearer token or by a
 * client certificate it issued (401 otherwise), and authorised by RBAC (rbac.ts: 403 otherwise).
 * Checked against the real client in test/fake-kube-api.test.ts and test/fake-kube-rbac.test.ts,
 * never against the substrate.
 *
 * What it serves, following the Kubernetes API concepts page (kubernetes.io/docs/reference/using-api/api-concepts):
 * - core/v1 namespaces, services, secrets, configmaps, serviceaccounts, pods (+ `/status`),
 *   persistentvolumeclaims and persistentvolumes (+ `/status`); storage.k8s.io/v1 storageclasses
 *   (a default one, `standard`); apps/v1 statefulsets (+ `/status`, `/scale` as an
 *   autoscaling/v1 Scale); discovery.k8s.io/v1 endpointslices; coordination.k8s.io/v1 leases;
 *   rbac.authorization.k8s.io/v1 roles, rolebindings, clusterroles, clusterrolebindings (enforced:
 *   rbac.ts); `serviceaccounts/{name}/token` (TokenRequest, service-account-tokens.ts);
 *   authorization.k8s.io/v1 selfsubjectaccessreviews (`kubectl auth can-i`); policy/v1 poddisruptionbudgets with their status and the
 *   `pods/{name}/eviction` subresource (disruption.ts); discovery at /api, /apis, /api/v1,
 *   /apis/<group>/<version>; /version, /healthz.
 * - Verbs: get, list (`labelSelector`, `fieldSelector`, `limit`/`continue` with `remainingItemCount`,
 *   the list's `metadata.resourceVersion`), create (201), update (PUT), patch (merge patch, JSON
 *   patch, server-side apply as described in state.ts; strategic merge patch answers 415), delete
 *   (DeleteOptions in the body or query: propagationPolicy, gracePeriodSeconds, preconditions),
 *   deletecollection, `dryRun=All`.
 * - Watch (`?watch=true`): a chunked stream of `{"type","object"}` lines, ADDED/MODIFIED/DELETED;
 *   from `resourceVersion` N the changes after N, from none (or "0") a synthetic ADDED per existing
 *   object first; an object that stops (starts) matching the selector is seen DELETED (ADDED), as
 *   the watch cache does; `allowWatchBookmarks` adds BOOKMARK events carrying only the current
 *   resourceVersion (every `bookmarkIntervalMs`); a version older than the kept history gets an
 *   ERROR event holding a 410 Expired Status ("too old resource version"), as the real server's
 *   watch does, and the stream ends; `timeoutSeconds` ends it too.
 * - Users: the static tokens and the client certificates it issues are administrators (group
 *   `system:masters`, as kubeadm's admin.conf); ServiceAccount tokens (service-account-tokens.ts)
 *   are their ServiceAccount, allowed only what RBAC grants it.
 * - Errors as `Status` objects (status.ts); written objects validated by kinds.ts; semantics of
 *   writes, deletion and garbage collection in state.ts; pods admitted by the ServiceAccount plugin
 *   (service-account-admission.ts).
 * - A scheduler (binds every new pod to the kubelet's node), a kubelet behind a seam (kubelet.ts),
 *   the StatefulSet controller (statefulset-controller.ts), the persistent volume controller and a
 *   host-path provisioner (persistentvolume-controller.ts), the EndpointSlice controller
 *   (endpointslice-controller.ts), the disruption controller (disruption.ts), and the ServiceAccount
 *   and root CA publisher controllers (service-account-controllers.ts).
 * Not modelled: other admission plugins (see state.ts), protobuf and CBOR (JSON only), the legacy
 * `/watch/` paths, Table output, `resourceVersionMatch=Exact` other than for the current version.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:https";
import type { Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import YAML from "yaml";
import { createCertificateAuthority, issueServerCertificate } from "../../../controller";
import { KINDS, apiVersionOf, kindFor } from "./kinds";
import type { KindInfo, KubeObject } from "./kinds";
import { SimpleKubelet, setCondition } from "./kubelet";
import type { Kubelet } from "./kubelet";
import { parseFieldSelector, parseLabelSelector } from "./selectors";
import { ApiState } from "./state";
import type { DeleteOptions, PatchType, PropagationPolicy, StoreEvent } from "./state";
import { DisruptionController, evict } from "./disruption";
import { EndpointSliceController } from "./endpointslice-controller";
import { StatefulSetController } from "./statefulset-controller";
import { DEFAULT_CLASS_ANNOTATION, FAKE_PROVISIONER, PersistentVolumeController } from "./persistentvolume-controller";
import { AUTHENTICATED, MASTERS, authorize, forbiddenError, resourceAttributes } from "./rbac";
import type { RequestAttributes, UserInfo } from "./rbac";
import { ServiceAccountControllers } from "./service-account-controllers";
import { ServiceAccountTokens } from "./service-account-tokens";
import { KubeStatusError, badRequest, expired } from "./status";

export interface FakeKubeApiOptions {
  /**
   * Bearer tokens accepted besides ServiceAccount tokens: token → a user name (an administrator, in
   * `system:masters`) or a user and the groups it is in (allowed only what RBAC grants).
   * @default one random token for user "admin"
   */
  tokens?: Record<string, string | { user: string; groups?: string[] }>;
  /** The longest a ServiceAccount token lives, whatever is asked (`--service-account-max-token-expiration`). @default one year */
  serviceAccountTokenMaxSeconds?: number;
  /** @default a {@link SimpleKubelet} */
  kubelet?: Kubelet;
  /** Changes kept for watches; an older resourceVersion is Expired. @default 1000 */
  historySize?: number;
  /** How often a watch that allows bookmarks gets one. @default 60000 (about what the real server does) */
  bookmarkIntervalMs?: number;
  /**
   * How long a watch without `timeoutSeconds` lasts. @default a random 1800–3600 s, as the real
   * server spreads watches over its minimum request timeout and twice that
   */
  watchTimeoutSeconds?: number;
  /** Run the StatefulSet controller. @default true */
  statefulSetController?: boolean;
  /** Run the EndpointSlice controller. @default true */
  endpointSliceController?: boolean;
  /** Where the host-path provisioner makes its volumes (the node's disk). @default a new directory under the system's temporary directory */
  volumesDir?: string;
  /** Make the default StorageClass `standard` (host-path, Delete, Immediate), as kind and minikube clusters have one. @default true */
  defaultStorageClass?: boolean;
  /** @default "127.0.0.1"; "0.0.0.0" lets pods reach it too, as `kubernetes.default.svc` ({@link FakeKubeApi.inClusterUrl}). */
  listen?: string;
}

export interface FakeKubeRequest {
  method: string;
  path: string;
  query: string;
  user: string;
  status: number;
  contentType?: string;
  /** The code of the Status a watch ended with in an ERROR event (410 when too old). */
  watchError?: number;
}

const MAX_BODY = 3 * 1024 * 1024;
const CONTINUE_TTL_MS = 5 * 60_000;
const PATCH_TYPES: Record<string, PatchType> = {
  "application/merge-patch+json": "merge",
  "application/json-patch+json": "json",
  "application/apply-patch+yaml": "apply",
};

type Target = { kind: KindInfo; namespace?: string; name?: string; subresource?: string };

export class FakeKubeApi {
  readonly state: ApiState;
  readonly kubelet: Kubelet;
  /** Every request answered (not the bodies), for assertions. */
  readonly requests: FakeKubeRequest[] = [];
  url = "";
  /** The server as pods address it (through cluster DNS; reachable when it listens on 0.0.0.0). */
  inClusterUrl = "";
  caCert = "";
  /** A token accepted for user "admin" (the first of `tokens`). */
  token = "";
  private server?: Server;
  private ca?: Awaited<ReturnType<typeof createCertificateAuthority>>;
  private readonly tokens: Map<string, UserInfo>;
  private readonly serviceAccountTokens: ServiceAccountTokens;
  private serviceAccounts?: ServiceAccountControllers;
  private readonly watches = new Set<ServerResponse>();
  private readonly continues = new Map<string, { items: KubeObject[]; rv: string; at: number }>();
  private controller?: StatefulSetController;
  private endpoints?: EndpointSliceController;
  private disruption?: DisruptionController;
  private volumes?: PersistentVolumeController;
  private unsubscribe?: () => void;

  private constructor(private readonly o: FakeKubeApiOptions) {
    this.state = new ApiState({ historySize: o.historySize });
    this.kubelet = o.kubelet ?? new SimpleKubelet();
    const tokens = o.tokens ?? { [randomBytes(24).toString("base64url")]: "admin" };
    this.tokens = new Map(
      Object.entries(tokens).map(([token, u]) => [
        token,
        typeof u === "string"
          ? { name: u, groups: [MASTERS, AUTHENTICATED] }
          : { name: u.user, groups: [...new Set([...(u.groups ?? []), AUTHENTICATED])] },
      ]),
    );
    this.serviceAccountTokens = new ServiceAccountTokens(this.state, o.serviceAccountTokenMaxSeconds);
    this.token = [...this.tokens.keys()][0] ?? "";
  }

  static async start(o: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
    const api = new FakeKubeApi(o);
    await api.listen();
    return api;
  }

  private async listen(): Promise<void> {
    const host = this.o.listen ?? "127.0.0.1";
    this.ca = await createCertificateAuthority("fake-kube-api");
    this.caCert = this.ca.certPem;
    // The kubelet first: its pod network's addresses exist once it has started, and the certificate names them.
    await this.kubelet.start({
      read: (plural, ns, name) => {
        const k = KINDS.find((x) => x.plural === plural);
        return k ? this.state.find(k, ns, name) : undefined;
      },
      list: (plural, ns) => {
        const k = KINDS.find((x) => x.plural === plural);
        return k ? this.state.list(k, ns) : [];
      },
      updatePodStatus: (ns, name, uid, mutate) => this.state.updateStatus(PODS, ns, name, uid, mutate),
      podTerminated: (ns, name, uid) => this.state.podTerminated(ns, name, uid),
      requestToken: (ns, serviceAccount, spec) => this.serviceAccountTokens.issue(ns, serviceAccount, spec),
    });
    const local = host === "0.0.0.0" ? "127.0.0.1" : host;
    // Listening everywhere, pods reach it at the node's address on their network, which its
    // certificate names, as a real server's names its advertised address and the kubernetes Service's.
    const everywhere = host === "0.0.0.0" && this.kubelet.gateway ? [this.kubelet.gateway] : [];
    let server: Server;
    try {
      const cert = await issueServerCertificate(this.ca, [
        local,
        ...everywhere,
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
      ]);
      // Client certificates are asked for, not required: a token is the other way in.
      server = createServer(
        { cert: cert.certPem, key: cert.keyPem, ca: [this.ca.certPem], requestCert: true, rejectUnauthorized: false },
        (req, res) => void this.handle(req, res),
      );
      await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, host, resolve));
    } catch (err) {
      await this.kubelet.close();
      throw err;
    }
    this.server = server;
    this.url = `https://${local}:${(server.address() as AddressInfo).port}`;
    this.inClusterUrl = `https://kubernetes.default.svc:${(server.address() as AddressInfo).port}`;
    this.unsubscribe = this.state.subscribe((e) => this.schedule(e));
    this.serviceAccounts = new ServiceAccountControllers(this.state, this.caCert);
    if (this.o.statefulSetController !== false) this.controller = new StatefulSetController(this.state);
    if (this.o.endpointSliceController !== false) this.endpoints = new EndpointSliceController(this.state);
    this.disruption = new DisruptionController(this.state);
    this.volumes = new PersistentVolumeController(
      this.state,
      this.o.volumesDir ?? mkdtempSync(join(tmpdir(), "fake-kube-volumes-")),
    );
    if (this.o.defaultStorageClass !== false)
      this.state.create(STORAGE_CLASSES, undefined, {
        apiVersion: "storage.k8s.io/v1",
        kind: "StorageClass",
        metadata: { name: "standard", annotations: { [DEFAULT_CLASS_ANNOTATION]: "true" } },
        provisioner: FAKE_PROVISIONER,
        reclaimPolicy: "Delete",
        volumeBindingMode: "Immediate",
      });
  }

  /** Watch streams open now. */
  get openWatches(): number {
    return this.watches.size;
  }

  /** A client certificate (and key) this server accepts. */
  async issueClientCertificate(): Promise<{ certPem: string; keyPem: string }> {
    if (!this.ca) throw new Error("the fake Kubernetes API server is not started");
    return issueServerCertificate(this.ca, []);
  }

  /** A kubeconfig (YAML) for this server: its CA, and the token (or the client certificate given). */
  kubeconfig(
    o: { context?: string; namespace?: string; clientCert?: { certPem: string; keyPem: string }; token?: string } = {},
  ): string {
    const name = o.context ?? "fake";
    const user = o.clientCert
      ? {
          "client-certificate-data": Buffer.from(o.clientCert.certPem).toString("base64"),
          "client-key-data": Buffer.from(o.clientCert.keyPem).toString("base64"),
        }
      : { token: o.token ?? this.token };
    return YAML.stringify({
      apiVersion: "v1",
      kind: "Config",
      "current-context": name,
      clusters: [
        {
          name,
          cluster: { server: this.url, "certificate-authority-data": Buffer.from(this.caCert).toString("base64") },
        },
      ],
      users: [{ name, user }],
      contexts: [{ name, context: { cluster: name, user: name, ...(o.namespace ? { namespace: o.namespace } : {}) } }],
    });
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.controller?.stop();
    this.endpoints?.stop();
    this.disruption?.stop();
    this.volumes?.stop();
    this.serviceAccounts?.stop();
    for (const w of this.watches) w.end();
    this.watches.clear();
    const server = this.server;
    this.server = undefined;
    if (server) {
      const closed = new Promise((r) => server.close(r));
      server.closeAllConnections();
      await closed;
    }
    await this.kubelet.close();
  }

  /** The scheduler and the kubelet's feed, from the store's changes. */
  private schedule(e: StoreEvent): void {
    if (e.kind !== PODS) return;
    const pod = e.object;
    const { namespace, name, uid } = pod.metadata as { namespace: string; name: string; uid: string };
    if (e.type === "ADDED" && !pod.spec?.nodeName && !pod.metadata.deletionTimestamp) {
      setImmediate(() =>
        this.state.mutate(PODS, namespace, name, uid, (p) => {
          p.spec.nodeName = this.kubelet.nodeName;
          p.status ??= {};
          setCondition(p.status, "PodScheduled", true);
        }),
      );
      return;
    }
    if (pod.spec?.nodeName !== this.kubelet.nodeName) return;
    if (e.type === "DELETED") this.kubelet.killPod(pod, true);
    else if (pod.metadata.deletionTimestamp) this.kubelet.killPod(pod, pod.metadata.deletionGracePeriodSeconds === 0);
    else this.kubelet.syncPod(pod);
  }

  // ---- HTTP ----

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "https://fake");
    const entry: FakeKubeRequest = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.search,
      user: "",
      status: 0,
      ...(req.headers["content-type"] ? { contentType: req.headers["content-type"] } : {}),
    };
    if (this.requests.length < 100_000) this.requests.push(entry);
    try {
      if (["/healthz", "/livez", "/readyz"].includes(url.pathname)) return this.text(res, entry, 200, "ok");
      if (url.pathname === "/version")
        return this.json(res, entry, 200, {
          major: "1",
          minor: "33",
          gitVersion: "v1.33.0-fake",
          platform: "linux/amd64",
        });
      const user = this.authenticate(req);
      entry.user = user.name;
      const body = await readBody(req);
      await this.route(req, res, url, body, entry, user);
    } catch (err) {
      const e =
        err instanceof KubeStatusError
          ? err
          : new KubeStatusError(
              500,
              "InternalError",
              `Internal error occurred: ${(err as Error)?.stack ?? String(err)}`,
            );
      if (res.headersSent) {
        res.end();
        return;
      }
      this.json(res, entry, e.code, e.toStatus());
    }
  }

  private authenticate(req: IncomingMessage): UserInfo {
    const auth = req.headers.authorization;
    if (auth) {
      const m = /^Bearer\s+(\S+)$/i.exec(auth);
      const given = Buffer.from(m?.[1] ?? "");
      for (const [token, user] of this.tokens) {
        const want = Buffer.from(token);
        if (want.length === given.length && timingSafeEqual(want, given)) return user;
      }
      const account = m ? this.serviceAccountTokens.authenticate(m[1]!) : undefined;
      if (account) return account;
      throw new KubeStatusError(401, "Unauthorized", "Unauthorized");
    }
    const socket = req.socket as TLSSocket;
    if (socket.authorized)
      return {
        name: [socket.getPeerCertificate().subject?.CN ?? "client-certificate"].flat()[0]!,
        groups: [MASTERS, AUTHENTICATED],
      };
    throw new KubeStatusError(401, "Unauthorized", "Unauthorized");
  }

  /** Who may do what: RBAC over the request's attributes (rbac.ts); a refusal is thrown as 403. */
  private authorize(user: UserInfo, a: RequestAttributes): void {
    if (!authorize(this.state, user, a)) throw forbiddenError(user, a);
  }

  private async route(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    body: Buffer,
    entry: FakeKubeRequest,
    user: UserInfo,
  ): Promise<void> {
    const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
    const method = req.method ?? "GET";
    const t = target(parts);
    if (url.pathname === SSAR_PATH) {
      this.authorize(user, {
        verb: method === "POST" ? "create" : method.toLowerCase(),
        resource: { group: "authorization.k8s.io", resource: "selfsubjectaccessreviews" },
      });
      if (method !== "POST") throw methodNotAllowed(method, url.pathname);
      return this.json(res, entry, 201, this.selfSubjectAccessReview(user, parseJson(body)));
    }
    this.authorize(
      user,
      t ? resourceAttributes(method, t.kind, t, url.searchParams) : { verb: method.toLowerCase(), path: url.pathname },
    );
    // Discovery.
    if (method === "GET") {
      if (url.pathname === "/api")
        return this.json(res, entry, 200, {
          kind: "APIVersions",
          versions: ["v1"],
          serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: new URL(this.url).host }],
        });
      if (url.pathname === "/apis")
        return this.json(res, entry, 200, { kind: "APIGroupList", apiVersion: "v1", groups: groups() });
      if (url.pathname === "/api/v1") return this.json(res, entry, 200, resourceList("", "v1"));
      if (parts[0] === "apis" && parts.length === 3) {
        if (!KINDS.some((k) => k.group === parts[1] && k.version === parts[2])) throw notFoundPath(url.pathname);
        return this.json(res, entry, 200, resourceList(parts[1]!, parts[2]!));
      }
    }
    if (!t) throw notFoundPath(url.pathname);
    const q = url.searchParams;
    const dryRun = q.getAll("dryRun").includes("All");
    const k = t.kind;
    if (t.subresource === "eviction" && k === PODS && t.name !== undefined) {
      if (method !== "POST") throw methodNotAllowed(method, url.pathname);
      return this.json(res, entry, 201, evict(this.state, t.namespace!, t.name, parseJson(body)));
    }
    if (t.subresource === "token" && k === SERVICE_ACCOUNTS && t.name !== undefined) {
      if (method !== "POST") throw methodNotAllowed(method, url.pathname);
      return this.json(res, entry, 201, this.serviceAccountTokens.request(t.namespace!, t.name, parseJson(body)));
    }
    if (t.subresource && !((t.subresource === "status" && k.status) || (t.subresource === "scale" && k.scale)))
      throw notFoundPath(url.pathname);
    if (t.name === undefined) {
      if (method === "GET")
        return q.get("watch") === "true" || q.get("watch") === "1"
          ? this.watch(res, entry, t, q)
          : this.list(res, entry, t, q);
      if (method === "POST") {
        if (k.namespaced && !t.namespace) throw methodNotAllowed(method, url.pathname);
        return this.json(res, entry, 201, this.state.create(k, t.namespace, parseJson(body), { dryRun }));
      }
      if (method === "DELETE") {
        const opts = deleteOptions(body, q);
        const label = parseLabelSelector(q.get("labelSelector")),
          field = parseFieldSelector(q.get("fieldSelector"), fieldsOf(k));
        const items = this.state
          .list(k, t.namespace, (o) => label(o.metadata.labels) && field(o as Record<string, unknown>))
          .map((o) => {
            try {
              return this.state.delete(k, t.namespace, o.metadata.name!, opts);
            } catch (err) {
              if (err instanceof KubeStatusError && err.code === 404) return undefined;
              throw err;
            }
          })
          .filter((o): o is KubeObject => !!o);
        return this.json(res, entry, 200, {
          kind: `${k.kind}List`,
          apiVersion: apiVersionOf(k),
          metadata: { resourceVersion: this.state.resourceVersion },
          items: items.map(bare),
        });
      }
      throw methodNotAllowed(method, url.pathname);
    }
    const name = t.name;
    if (t.subresource === "scale") {
      if (method === "GET") return this.json(res, entry, 200, this.state.getScale(k, t.namespace, name));
      if (method === "PUT")
        return this.json(res, entry, 200, this.state.replaceScale(k, t.namespace, name, parseJson(body), { dryRun }));
      if (method === "PATCH")
        return this.json(
          res,
          entry,
          200,
          this.state.patchScale(k, t.namespace, name, patchType(req), body.toString("utf8"), { dryRun }),
        );
      throw methodNotAllowed(method, url.pathname);
    }
    const sub = t.subresource === "status" ? { subresource: "status" as const } : {};
    switch (method) {
      case "GET":
        return this.json(res, entry, 200, this.state.get(k, t.namespace, name));
      case "PUT":
        return this.json(
          res,
          entry,
          200,
          this.state.replace(k, t.namespace, name, parseJson(body), { dryRun, ...sub }),
        );
      case "PATCH": {
        const type = patchType(req);
        const existed = !!this.state.find(k, t.namespace, name);
        const out = this.state.patch(k, t.namespace, name, type, body.toString("utf8"), {
          dryRun,
          ...sub,
          fieldManager: q.get("fieldManager") ?? undefined,
          force: q.get("force") === "true",
        });
        return this.json(res, entry, existed ? 200 : 201, out);
      }
      case "DELETE": {
        if (t.subresource) throw methodNotAllowed(method, url.pathname);
        return this.json(res, entry, 200, this.state.delete(k, t.namespace, name, deleteOptions(body, q)));
      }
      default:
        throw methodNotAllowed(method, url.pathname);
    }
  }

  /** `kubectl auth can-i`: whether RBAC allows the asking user what the review names. */
  private selfSubjectAccessReview(user: UserInfo, body: unknown): unknown {
    const review = body as {
      apiVersion?: string;
      kind?: string;
      spec?: { resourceAttributes?: Record<string, string>; nonResourceAttributes?: { path?: string; verb?: string } };
    };
    const ra = review?.spec?.resourceAttributes,
      na = review?.spec?.nonResourceAttributes;
    if (!ra === !na)
      throw new KubeStatusError(
        422,
        "Invalid",
        `SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified`,
      );
    const a: RequestAttributes = ra
      ? {
          verb: ra.verb ?? "",
          resource: {
            group: ra.group ?? "",
            resource: ra.resource ?? "",
            ...(ra.subresource ? { subresource: ra.subresource } : {}),
            ...(ra.namespace ? { namespace: ra.namespace } : {}),
            ...(ra.name ? { name: ra.name } : {}),
          },
        }
      : { verb: na!.verb ?? "", path: na!.path ?? "" };
    return {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      metadata: { creationTimestamp: null },
      spec: review.spec,
      status: { allowed: authorize(this.state, user, a) },
    };
  }

  private list(res: ServerResponse, entry: FakeKubeRequest, t: Target, q: URLSearchParams): void {
    const k = t.kind;
    const limit = q.get("limit") ? Number(q.get("limit")) : 0;
    if (!Number.isInteger(limit) || limit < 0)
      throw badRequest(`limit: Invalid value: ${JSON.stringify(q.get("limit"))}: must be a non-negative integer`);
    const match = q.get("resourceVersionMatch");
    if (match && !["NotOlderThan", "Exact"].includes(match))
      throw badRequest(`resourceVersionMatch: Unsupported value: ${JSON.stringify(match)}`);
    if (match && !q.get("resourceVersion"))
      throw badRequest("resourceVersionMatch is forbidden unless resourceVersion is provided");
    if (match === "Exact" && q.get("resourceVersion") !== this.state.resourceVersion) {
      if (Number(q.get("resourceVersion")) < Number(this.state.resourceVersion))
        throw expired(`too old resource version: ${q.get("resourceVersion")} (${this.state.resourceVersion})`);
      throw badRequest("the fake serves resourceVersionMatch=Exact only for the current resourceVersion");
    }
    let items: KubeObject[], rv: string;
    for (const [id, c] of this.continues) if (Date.now() - c.at > CONTINUE_TTL_MS) this.continues.delete(id);
    const token = q.get("continue");
    if (token) {
      const c = this.continues.get(token);
      this.continues.delete(token);
      if (!c || Date.now() - c.at > CONTINUE_TTL_MS)
        throw expired(
          "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
        );
      ({ items, rv } = c);
    } else {
      const label = parseLabelSelector(q.get("labelSelector")),
        field = parseFieldSelector(q.get("fieldSelector"), fieldsOf(k));
      items = this.state.list(k, t.namespace, (o) => label(o.metadata.labels) && field(o as Record<string, unknown>));
      rv = this.state.resourceVersion;
    }
    const metadata: Record<string, unknown> = { resourceVersion: rv };
    if (limit > 0 && items.length > limit) {
      const next = randomBytes(16).toString("base64url");
      this.continues.set(next, { items: items.slice(limit), rv, at: Date.now() });
      metadata.continue = next;
      metadata.remainingItemCount = items.length - limit;
      items = items.slice(0, limit);
    }
    this.json(res, entry, 200, {
      kind: `${k.kind}List`,
      apiVersion: apiVersionOf(k),
      metadata,
      items: items.map(bare),
    });
  }

  private watch(res: ServerResponse, entry: FakeKubeRequest, t: Target, q: URLSearchParams): void {
    const k = t.kind;
    const label = parseLabelSelector(q.get("labelSelector")),
      field = parseFieldSelector(q.get("fieldSelector"), fieldsOf(k));
    const matches = (o: KubeObject | undefined): boolean =>
      !!o &&
      (!t.namespace || o.metadata.namespace === t.namespace) &&
      label(o.metadata.labels) &&
      field(o as Record<string, unknown>);
    const from = q.get("resourceVersion") ?? "";
    if (from !== "" && !/^\d+$/.test(from))
      throw badRequest(
        `resourceVersion: Invalid value: ${JSON.stringify(from)}: must be a resourceVersion this server issued`,
      );
    const timeoutSeconds = q.get("timeoutSeconds")
      ? Number(q.get("timeoutSeconds"))
      : (this.o.watchTimeoutSeconds ?? 1800 + Math.random() * 1800);
    res.writeHead(200, {
      "content-type": "application/json",
      "cache-control": "no-cache, private",
      "transfer-encoding": "chunked",
    });
    res.flushHeaders(); // the client's watch starts when the headers come, events or not
    entry.status = 200;
    // Nothing after the stream has ended (a bookmark timer can fire between end() and 'finish').
    const send = (type: string, object: unknown): void => {
      if (!res.writableEnded && !res.destroyed) res.write(JSON.stringify({ type, object }) + "\n");
    };
    const toEvent = (e: StoreEvent): void => {
      if (e.kind !== k) return;
      const now = matches(e.object),
        before = e.type === "MODIFIED" && matches(e.previous);
      if (e.type === "MODIFIED" && before && !now) send("DELETED", e.object);
      else if (e.type === "MODIFIED" && !before && now) send("ADDED", e.object);
      else if (now) send(e.type, e.object);
    };
    let backlog: StoreEvent[];
    try {
      backlog = from === "" || from === "0" ? [] : this.state.eventsAfter(Number(from));
    } catch (err) {
      if (!(err instanceof KubeStatusError)) throw err;
      entry.watchError = err.code;
      send("ERROR", err.toStatus());
      res.end();
      return;
    }
    if (from === "" || from === "0") for (const o of this.state.list(k, t.namespace, matches)) send("ADDED", o);
    for (const e of backlog) toEvent(e);
    const unsubscribe = this.state.subscribe(toEvent);
    this.watches.add(res);
    const timers: NodeJS.Timeout[] = [setTimeout(() => res.end(), timeoutSeconds * 1000)];
    if (q.get("allowWatchBookmarks") === "true")
      timers.push(
        setInterval(
          () =>
            send("BOOKMARK", {
              kind: k.kind,
              apiVersion: apiVersionOf(k),
              metadata: { resourceVersion: this.state.resourceVersion },
            }),
          this.o.bookmarkIntervalMs ?? 60_000,
        ),
      );
    const done = (): void => {
      unsubscribe();
      for (const x of timers) clearTimeout(x);
      this.watches.delete(res);
    };
    res.on("close", done);
    res.on("finish", done);
  }

  private json(res: ServerResponse, entry: FakeKubeRequest, status: number, body: unknown): void {
    entry.status = status;
    const text = JSON.stringify(body);
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
      "cache-control": "no-cache, private",
    });
    res.end(text);
  }

  private text(res: ServerResponse, entry: FakeKubeRequest, status: number, text: string): void {
    entry.status = status;
    res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(text) });
    res.end(text);
  }
}

const PODS = kindFor("", "v1", "pods")!;
const SERVICE_ACCOUNTS = kindFor("", "v1", "serviceaccounts")!;
const STORAGE_CLASSES = kindFor("storage.k8s.io", "v1", "storageclasses")!;
const SSAR_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

/** A list item as the real server writes it: without apiVersion and kind. */
function bare(o: KubeObject): KubeObject {
  const { apiVersion: _a, kind: _k, ...rest } = o;
  return rest as KubeObject;
}

function fieldsOf(k: KindInfo): Record<string, (o: Record<string, unknown>) => string | undefined> {
  return {
    "metadata.name": (o) => (o.metadata as { name?: string }).name,
    "metadata.namespace": (o) => (o.metadata as { namespace?: string }).namespace,
    ...k.fields,
  };
}

/** The kind and object a resource path names, or undefined. */
function target(parts: string[]): Target | undefined {
  let group: string, version: string, rest: string[];
  if (parts[0] === "api" && parts[1] === "v1") {
    group = "";
    version = "v1";
    rest = parts.slice(2);
  } else if (parts[0] === "apis" && parts.length >= 4) {
    group = parts[1]!;
    version = parts[2]!;
    rest = parts.slice(3);
  } else return undefined;
  let namespace: string | undefined;
  // namespaces/<ns>/<plural>… is a namespaced path when <plural> is a namespaced kind; else the namespace itself.
  if (rest[0] === "namespaces" && rest.length >= 3 && kindFor(group, version, rest[2]!)?.namespaced) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const kind = kindFor(group, version, rest[0] ?? "");
  if (!kind || rest.length > 3) return undefined;
  if (!kind.namespaced && namespace) return undefined;
  if (kind.namespaced && !namespace && rest.length > 1) return undefined;
  return {
    kind,
    ...(namespace ? { namespace } : {}),
    ...(rest[1] !== undefined ? { name: rest[1] } : {}),
    ...(rest[2] !== undefined ? { subresource: rest[2] } : {}),
  };
}

function groups(): unknown[] {
  const names = [...new Set(KINDS.filter((k) => k.group).map((k) => k.group))];
  return names.map((g) => {
    const versions = [...new Set(KINDS.filter((k) => k.group === g).map((k) => k.version))].map((v) => ({
      groupVersion: `${g}/${v}`,
      version: v,
    }));
    return { name: g, versions, preferredVersion: versions[0] };
  });
}

function resourceList(group: string, version: string): unknown {
  const resources: unknown[] = [];
  for (const k of KINDS.filter((x) => x.group === group && x.version === version)) {
    resources.push({
      name: k.plural,
      singularName: k.singular,
      namespaced: k.namespaced,
      kind: k.kind,
      verbs: ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
    });
    if (k.status)
      resources.push({
        name: `${k.plural}/status`,
        singularName: "",
        namespaced: k.namespaced,
        kind: k.kind,
        verbs: ["get", "patch", "update"],
      });
    if (k.scale)
      resources.push({
        name: `${k.plural}/scale`,
        singularName: "",
        namespaced: k.namespaced,
        group: "autoscaling",
        version: "v1",
        kind: "Scale",
        verbs: ["get", "patch", "update"],
      });
    if (k.plural === "pods" && !k.group)
      resources.push({
        name: "pods/eviction",
        singularName: "",
        namespaced: true,
        group: "policy",
        version: "v1",
        kind: "Eviction",
        verbs: ["create"],
      });
  }
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: group ? `${group}/${version}` : version,
    resources,
  };
}

const notFoundPath = (path: string): KubeStatusError =>
  new KubeStatusError(404, "NotFound", `the server could not find the requested resource (${path})`, {
    causes: [{ reason: "UnexpectedServerResponse", message: "404 page not found", field: "" }],
  });
const methodNotAllowed = (method: string, path: string): KubeStatusError =>
  new KubeStatusError(
    405,
    "MethodNotAllowed",
    `the server does not allow this method on the requested resource (${method} ${path})`,
  );

function patchType(req: IncomingMessage): PatchType {
  const ct = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  const type = PATCH_TYPES[ct];
  if (type) return type;
  if (ct === "application/strategic-merge-patch+json")
    throw new KubeStatusError(
      415,
      "UnsupportedMediaType",
      "the fake Kubernetes API server does not implement strategic merge patch: use application/merge-patch+json, application/json-patch+json or application/apply-patch+yaml",
    );
  throw new KubeStatusError(
    415,
    "UnsupportedMediaType",
    `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got ${JSON.stringify(ct)})`,
  );
}

function parseJson(body: Buffer): unknown {
  if (body.length === 0) throw badRequest("the request has no body");
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (err) {
    throw badRequest(`the body of the request could not be decoded: ${(err as Error).message}`);
  }
}

function deleteOptions(body: Buffer, q: URLSearchParams): DeleteOptions {
  const o = (body.length ? parseJson(body) : {}) as {
    propagationPolicy?: string;
    gracePeriodSeconds?: number;
    preconditions?: { uid?: string; resourceVersion?: string };
    dryRun?: string[];
    orphanDependents?: boolean;
  };
  if (typeof o !== "object" || o === null) throw badRequest("DeleteOptions must be an object");
  const policy =
    q.get("propagationPolicy") ??
    o.propagationPolicy ??
    (o.orphanDependents === true ? "Orphan" : o.orphanDependents === false ? "Background" : undefined);
  const grace = q.get("gracePeriodSeconds") ?? o.gracePeriodSeconds;
  if (grace !== undefined && grace !== null && !(Number.isInteger(Number(grace)) && Number(grace) >= 0))
    throw badRequest(`gracePeriodSeconds: Invalid value: ${JSON.stringify(grace)}: must be a non-negative integer`);
  return {
    ...(policy ? { propagationPolicy: policy as PropagationPolicy } : {}),
    ...(grace !== undefined && grace !== null ? { gracePeriodSeconds: Number(grace) } : {}),
    ...(o.preconditions ? { preconditions: o.preconditions } : {}),
    dryRun: q.getAll("dryRun").includes("All") || (o.dryRun ?? []).includes("All"),
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (d: Buffer) => {
      size += d.length;
      if (size > MAX_BODY) {
        reject(new KubeStatusError(413, "RequestEntityTooLarge", `Request entity too large: limit is ${MAX_BODY}`));
        req.destroy();
        return;
      }
      chunks.push(d);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}
