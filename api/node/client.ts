/**
 * {@link ControllerClient} is the typed client of the controller's REST API, used by the CLI, the
 * Pulumi provider and tests. It pins the controller CA, fails over between addresses, logs in
 * lazily with a password or uses a token, and rebuilds wire errors into {@link StewardError}s.
 *
 * ```ts
 * const client = new ControllerClient({ addresses: ["127.0.0.1:17070"], caCert, user: "admin", password });
 * const status = await client.status("demo");
 * ```
 */
import { randomUUID } from "node:crypto";
import { Agent, request } from "node:https";
import type WebSocket from "ws";
import type { ErrorCode } from "../errors";
import { StewardError, errorFromWire, isUnavailable } from "../errors";
import type { Bundle } from "../operator";
import type { ActionValue, OperationInfo, RunActionResult, TaskInfo } from "../actions";
import type { ModelStatus, StatusFilter, StatusLogEntry, UnitDetails } from "../status";
import type { DebugLogRecord } from "../debug-log";
import type { CredentialSubstrate, ModelSubstrate } from "../substrates";
import type { ReplicaCloudInput } from "../schemas";
import { WATCH_CLOSE_CODES } from "../status";
import { expandStatusColumns } from "../status-columns";
import type { ApplicationInfo, ControllerInfo, ControllerOverview, ControllerUpgrade, CredentialSummary, DebugLogQuery, MachineInfo, ModelSummary, SpareHost, SshMachineRequest } from "../wire";
import { ADDRESSES_HEADER, CONTROLLER_TLS_NAME, MUTATING_METHODS, REQUEST_ID_HEADER, showsCluster } from "../wire";
import type { ControllerHello, ModelMoved } from "../migration";
import { isModelMoved } from "../migration";
export type { ApplicationInfo, ClusterInfo, ControllerInfo, ControllerOverview, CredentialSummary, DebugLogQuery, MachineInfo, ModelSettings, ModelSummary, SpareHost, SshMachineRequest } from "../wire";
export { ADDRESSES_HEADER, CONTROLLER_TLS_NAME, ENROLMENT_HEADER, MUTATING_METHODS, REPLAYED_HEADER, REQUEST_ID_HEADER } from "../wire";

export interface ControllerClientOptions {
  /** `host:port` of each controller replica; tried in order, failing over on connection errors. */
  addresses: string[];
  /** PEM of the controller CA; the only certificate authority trusted. */
  caCert: string;
  user?: string;
  password?: string;
  /** A token from an earlier login; used until it is refused, then the password (if any) is used again. */
  token?: string;
  /**
   * Per-request timeout in milliseconds.
   * @default 30000
   */
  timeoutMs?: number;
  /**
   * How long to keep trying when every replica answers 503 (an election, a replica catching up):
   * rounds over all replicas with growing pauses. Safe for writes: retries carry the request id.
   * @default 15000
   */
  retryUnavailableMs?: number;
  /**
   * A model this client asked about moved to another controller (api/migration.ts): return how to
   * reach and log in to that one, and this client follows it from then on (the request is sent
   * there again); return undefined to get the `moved` error instead. Absent: never follow.
   */
  onMoved?: (moved: ModelMoved) => Promise<MovedTo | undefined> | MovedTo | undefined;
  /**
   * Where the replicas can be reached from here now, asked once per call when none of the known
   * addresses answered, and tried. For a client outside a Kubernetes cluster: replicas announce
   * their cluster DNS names, which do not resolve outside it, and a recreated pod has a new IP, so
   * the API server is asked for the pods' current IPs. Absent: only the known addresses.
   */
  reachable?: () => Promise<string[]>;
}

/** Where a client goes after a model moved: the target's addresses and CA, and credentials if not the same. */
export interface MovedTo { addresses: string[]; caCert: string; user?: string; password?: string; token?: string }

/** A replica that does not even accept the connection this fast is treated as down. */
const CONNECT_TIMEOUT_MS = 3000;


/** A login told to wait at most this long is retried; longer (failed-login limits) is reported. */
const MAX_LOGIN_WAIT_SECONDS = 5;

const CONNECTION_ERRORS = new Set(["ECONNREFUSED", "ECONNRESET", "EHOSTUNREACH", "ENETUNREACH", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN"]);

// TLS verification failures: the replica is up, but its certificate is not from the pinned CA.
const UNTRUSTED_CERTIFICATE_ERRORS = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE", "SELF_SIGNED_CERT_IN_CHAIN", "DEPTH_ZERO_SELF_SIGNED_CERT", "CERT_SIGNATURE_FAILURE",
  "UNABLE_TO_GET_ISSUER_CERT", "UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "CERT_UNTRUSTED", "CERT_HAS_EXPIRED", "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** The error for a replica whose certificate the pinned CA did not sign; its reason lets callers name the controller. */
function untrustedCertificate(address: string, code: string, cause: unknown): StewardError {
  return new StewardError("unavailable", `the controller at ${address} presented a certificate that the CA this client trusts for it does not accept (${code}): either the controller was re-created with a new CA, or something else answers at that address`, { cause, reason: "untrusted-certificate", details: { reason: "untrusted-certificate", address } });
}

export class ControllerClient {
  private opts: ControllerClientOptions;
  private agent: Agent;
  private token: string | undefined;
  private preferred = 0;
  /** The replicas' addresses, kept current from the controller's answers (replicas can move). */
  private list: string[];
  /** How many HTTP requests this client has sent; benchmarks report it. */
  public requestCount = 0;

  constructor(opts: ControllerClientOptions) {
    if (opts.addresses.length === 0) throw new StewardError("invalid-request", "no controller addresses given");
    this.opts = opts;
    this.list = [...opts.addresses];
    this.token = opts.token;
    this.agent = new Agent({ keepAlive: true, ca: opts.caCert, maxSockets: 16 });
  }

  /** The replica addresses this client tries, in order: at first those given; after an answer, the answering one and those it announced. */
  get addresses(): string[] { return [...this.list]; }

  /** The current token, for callers that persist it (the CLI). */
  get currentToken(): string | undefined { return this.token; }

  close(): void { this.agent.destroy(); }

  async login(): Promise<string> {
    if (!this.opts.user || !this.opts.password) throw new StewardError("unauthorized", "no password to log in with: run `steward login` first");
    for (let attempt = 1; ; attempt++) {
      try {
        // A token still held goes along: the controller checks a login renewing a valid one first.
        const res = await this.raw<{ token: string }>("POST", "/v1/login", { user: this.opts.user, password: this.opts.password }, this.token !== undefined);
        this.token = res.token;
        return res.token;
      } catch (err) {
        // Told to wait a moment (the controller is busy checking passwords): wait and try again, a few times.
        const wait = StewardError.isInstance(err) && err.code === "rate-limited" ? Number(err.details.retryAfterSeconds) : NaN;
        if (!(wait <= MAX_LOGIN_WAIT_SECONDS) || attempt >= 3) throw err;
        await new Promise((resolve) => setTimeout(resolve, wait * 1000));
      }
    }
  }

  /**
   * Sends one request; on 401 with a password at hand, logs in again once and repeats it. A
   * mutating request keeps one request id across every try, so its retries are answered, not redone.
   */
  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    try {
      return await this.callHere<T>(method, path, body);
    } catch (err) {
      if (!StewardError.isInstance(err) || err.code !== "moved" || !this.opts.onMoved || !isModelMoved(err.details)) throw err;
      const next = await this.opts.onMoved(err.details);
      if (!next) throw err;
      this.retarget(next);
      return this.callHere<T>(method, path, body);
    }
  }

  /** From now on this client talks to another controller (the one a model moved to). */
  private retarget(next: MovedTo): void {
    this.agent.destroy();
    this.opts = { ...this.opts, addresses: next.addresses, caCert: next.caCert, ...(next.user !== undefined ? { user: next.user, password: next.password, token: next.token } : {}) };
    this.agent = new Agent({ keepAlive: true, ca: next.caCert, maxSockets: 16 });
    this.list = [...next.addresses];
    this.preferred = 0;
    this.token = next.user !== undefined ? next.token : undefined;
  }

  private async callHere<T>(method: string, path: string, body?: unknown): Promise<T> {
    if (!this.token && this.opts.password) await this.login();
    const requestId = MUTATING_METHODS.has(method) ? randomUUID() : undefined;
    try {
      return await this.raw<T>(method, path, body, true, requestId);
    } catch (err) {
      if (StewardError.isInstance(err) && err.code === "unauthorized" && this.opts.password) {
        await this.login();
        return this.raw<T>(method, path, body, true, requestId);
      }
      throw err;
    }
  }

  private async raw<T>(method: string, path: string, body: unknown, auth: boolean, requestId?: string): Promise<T> {
    const giveUpAt = Date.now() + (this.opts.retryUnavailableMs ?? 15_000);
    let tried: string[] = [];
    let lastErr: unknown;
    let asked = false;
    for (let round = 0; ; round++) {
      tried = [...this.list];
      const n = tried.length;
      let answeredUnavailable = false;
      for (let i = 0; i < n; i++) {
        const address = tried[(this.preferred + i) % n]!;
        try {
          const out = await this.once<T>(address, method, path, body, auth, requestId);
          this.preferred = Math.max(0, this.list.indexOf(address));
          return out;
        } catch (err) {
          lastErr = err;
          // Try the next replica when this one is unreachable, has lost its store majority (503) or lags behind it (504).
          if (StewardError.isInstance(err) && isUnavailable(err)) { answeredUnavailable = true; continue; }
          const code = (err as NodeJS.ErrnoException).code;
          if (code && UNTRUSTED_CERTIFICATE_ERRORS.has(code)) { lastErr = untrustedCertificate(address, code, err); continue; }
          if (!code || !CONNECTION_ERRORS.has(code)) throw err;
        }
      }
      // Nothing answered at all: the replicas may have moved where announcements do not say (reachable).
      if (!answeredUnavailable && !asked && this.opts.reachable) {
        asked = true;
        const fresh = (await this.opts.reachable().catch(() => [])).filter((a) => !tried.includes(a));
        if (fresh.length > 0) { this.list = [...fresh, ...this.list]; this.preferred = 0; continue; }
      }
      // A replica answered but could not serve (an election under way): another round soon may.
      const pause = Math.min(250 * 2 ** round, 2000);
      if (!answeredUnavailable || Date.now() + pause > giveUpAt) break;
      await new Promise((r) => setTimeout(r, pause));
    }
    if (StewardError.isInstance(lastErr)) throw lastErr;
    throw new StewardError("unavailable", `no controller answered at ${tried.join(", ")}: ${(lastErr as Error)?.message}. Is the controller running?`, { cause: lastErr, reason: "controller-unreachable" });
  }

  private once<T>(address: string, method: string, path: string, body: unknown, auth: boolean, requestId?: string): Promise<T> {
    const [host, port] = splitAddress(address);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = { accept: "application/json" };
    if (payload) { headers["content-type"] = "application/json"; headers["content-length"] = String(payload.length); }
    if (auth && this.token) headers.authorization = `Bearer ${this.token}`;
    if (requestId) headers[REQUEST_ID_HEADER] = requestId;
    this.requestCount++;
    return new Promise<T>((resolve, reject) => {
      const req = request({ host, port, method, path, headers, agent: this.agent, servername: CONTROLLER_TLS_NAME, timeout: this.opts.timeoutMs ?? 30_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => {
          this.follow(address, res.headers[ADDRESSES_HEADER]);
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed: unknown = undefined;
          try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = text; }
          if ((res.statusCode ?? 500) >= 400) reject(errorFromWire(parsed, res.statusCode ?? 500));
          else resolve(parsed as T);
        });
      });
      req.on("timeout", () => req.destroy(Object.assign(new Error(`request to ${address} timed out`), { code: "ETIMEDOUT" })));
      // A host that is gone does not refuse the connection; do not wait the whole request timeout for it.
      req.on("socket", (socket) => {
        if (!socket.connecting) return;
        const t = setTimeout(() => req.destroy(Object.assign(new Error(`could not connect to ${address}`), { code: "ETIMEDOUT" })), CONNECT_TIMEOUT_MS);
        t.unref();
        socket.once("connect", () => clearTimeout(t));
        socket.once("close", () => clearTimeout(t));
      });
      req.on("error", reject);
      req.end(payload);
    });
  }

  /**
   * Adopts the replica addresses a controller announced. The address that answered is kept first
   * even when not announced: behind a NAT or a tunnel the replica does not know it.
   */
  private follow(answered: string, header: string | string[] | undefined): void {
    const announced = typeof header === "string" ? header.split(",").filter(Boolean) : [];
    if (announced.length === 0) return;
    const next = [...new Set([answered, ...announced])];
    if (next.join() !== this.list.join()) this.list = next;
  }

  // --- controller and users ---
  /** The controller with its cluster's layout: a superuser's view (others get {@link controllerOverview}'s). */
  async controllerInfo(): Promise<ControllerInfo> {
    const info = await this.controllerOverview();
    if (showsCluster(info)) return info;
    throw new StewardError("forbidden", "only a controller superuser sees the controller's replicas and cluster; others see its name, version, addresses and CA fingerprint (steward show-controller)");
  }
  /** What the logged-in user may see of the controller: the overview, and for a superuser the cluster's layout too. */
  controllerOverview(): Promise<ControllerOverview | ControllerInfo> { return this.call("GET", "/v1/controller"); }
  /** Who the controller is, asked without credentials (its CA proves the answer): what a migration checks first. */
  hello(): Promise<ControllerHello> { return this.call("GET", "/v1/migrations/hello"); }
  /** Grows the controller to `replicas` voters, on `hosts` and the spare pool; from the embedded store it first moves into etcd. */
  enableHa(req: { replicas: number; hosts?: SpareHost[]; replaceAfterSeconds?: number; maxReplacementsPerHour?: number }): Promise<{ moving: boolean; message: string }> { return this.call("POST", "/v1/controller/enable-ha", req); }
  /** Records the progress of `steward upgrade-controller` (superusers). */
  recordUpgrade(record: ControllerUpgrade): Promise<ControllerUpgrade> { return this.call("PUT", "/v1/controller/upgrade", record); }
  addSpares(hosts: SpareHost[]): Promise<{ spares: { host: string; hostKey: string }[] }> { return this.call("POST", "/v1/controller/spares", { hosts }); }
  /** The cloud the quorum keeper launches replicas on when no spare host is left (undefined: none). */
  setReplicaCloud(cloud: ReplicaCloudInput | undefined): Promise<unknown> {
    return cloud ? this.call("PUT", "/v1/controller/replica-cloud", cloud) : this.call("DELETE", "/v1/controller/replica-cloud");
  }
  createUser(name: string, password: string, superuser = false): Promise<{ name: string }> { return this.call("POST", "/v1/users", { name, password, superuser }); }
  grant(model: string, user: string, access: "read" | "write" | "admin"): Promise<void> { return this.call("PUT", `/v1/models/${enc(model)}/access/${enc(user)}`, { access }); }
  /** Takes away `user`'s access to `model`. */
  revoke(model: string, user: string): Promise<void> { return this.call("DELETE", `/v1/models/${enc(model)}/access/${enc(user)}`); }
  /** Sets `user`'s password; their existing tokens stop working. Your own needs `currentPassword`. */
  changePassword(user: string, password: string, currentPassword?: string): Promise<void> {
    return this.call("PUT", `/v1/users/${enc(user)}/password`, { password, ...(currentPassword !== undefined ? { currentPassword } : {}) });
  }
  /** Revokes the token in use (on every replica) and forgets it. */
  async logout(): Promise<void> {
    if (!this.token) return;
    await this.raw("POST", "/v1/logout", undefined, true);
    this.token = undefined;
  }

  // --- models ---
  listModels(): Promise<ModelSummary[]> { return this.call("GET", "/v1/models"); }
  /**
   * `substrate` (default `local`) says where machines for units placed without `to` come from, with
   * the stored `credential` they are made with and the kind's `settings` (api/substrate-kinds.ts). A
   * kubernetes model's cluster is checked first (reached, rights in the namespace) unless `skipCheck`.
   */
  createModel(name: string, config?: { updateStatusInterval?: number }, substrate?: ModelSubstrate, placed: { credential?: string | undefined; settings?: object | undefined; constraints?: string | undefined } = {}, o: { skipCheck?: boolean } = {}): Promise<{ name: string; uuid: string; substrate: string; credential?: string; constraints?: string }> {
    return this.call("POST", `/v1/models${o.skipCheck ? "?skipCheck=true" : ""}`, {
      name, ...(config ? { config } : {}), ...(substrate ? { substrate } : {}), ...(placed.credential ? { credential: placed.credential } : {}),
      ...(placed.settings ? { settings: placed.settings } : {}), ...(placed.constraints ? { constraints: placed.constraints } : {}),
    });
  }

  // --- credentials (superusers) ---
  listCredentials(): Promise<{ credentials: CredentialSummary[] }> { return this.call("GET", "/v1/credentials"); }
  /**
   * Stores a credential; the same values again change nothing; other values need `replace`. A
   * kubernetes cluster's is checked first (reached, the rights Steward needs) unless `skipCheck`.
   */
  putCredential(name: string, substrate: CredentialSubstrate, attributes: Record<string, string>, replace = false, o: { skipCheck?: boolean } = {}): Promise<{ name: string; created: boolean; changed: boolean }> {
    const query = [...(replace ? ["replace=true"] : []), ...(o.skipCheck ? ["skipCheck=true"] : [])].join("&");
    return this.call("PUT", `/v1/credentials/${enc(name)}${query ? `?${query}` : ""}`, { substrate, attributes });
  }
  removeCredential(name: string): Promise<void> { return this.call("DELETE", `/v1/credentials/${enc(name)}`); }
  /** With `force`, everything is deleted at once without running hooks. */
  destroyModel(name: string, force = false): Promise<void> { return this.call("DELETE", `/v1/models/${enc(name)}${force ? "?force=true" : ""}`); }
  /** The model's status, narrowed by `filter` on the controller (so a large model sends less). */
  status(model: string, filter: StatusFilter = {}): Promise<ModelStatus> {
    const q = new URLSearchParams();
    if (filter.applications?.length) q.set("application", filter.applications.join(","));
    if (filter.units?.length) q.set("unit", filter.units.join(","));
    if (filter.machines?.length) q.set("machine", filter.machines.join(","));
    // The compact form parses several times faster at scale; a controller that predates it sends plain JSON, read the same.
    q.set("format", "columns");
    return this.call<unknown>("GET", `/v1/models/${enc(model)}/status?${q.toString()}`).then(expandStatusColumns);
  }

  // --- operators and applications ---
  uploadOperator(bundle: Bundle): Promise<{ hash: string; name: string; version: string; created: boolean }> { return this.call("POST", "/v1/operators", bundle); }
  hasOperator(hash: string): Promise<boolean> {
    return this.call("HEAD", `/v1/operators/${hash}`).then(() => true, (e: unknown) => { if (StewardError.isInstance(e) && e.code === "not-found") return false; throw e; });
  }
  /** `constraints` (Juju's syntax) apply to the machines made for its units. */
  deploy(model: string, req: { name: string; operator: string; units?: number; config?: Record<string, string | number | boolean>; to?: string[]; constraints?: string }): Promise<ApplicationInfo> {
    return this.call("POST", `/v1/models/${enc(model)}/applications`, req);
  }
  getApplication(model: string, app: string): Promise<ApplicationInfo> { return this.call("GET", `/v1/models/${enc(model)}/applications/${enc(app)}`); }
  /** `constraints` (Juju's syntax; "" clears them) apply to machines made for its units from now on. */
  updateApplication(model: string, app: string, req: { config?: Record<string, string | number | boolean | null>; operator?: string; constraints?: string }): Promise<ApplicationInfo> {
    return this.call("PATCH", `/v1/models/${enc(model)}/applications/${enc(app)}`, req);
  }
  removeApplication(model: string, app: string, force = false): Promise<void> { return this.call("DELETE", `/v1/models/${enc(model)}/applications/${enc(app)}${force ? "?force=true" : ""}`); }
  addUnits(model: string, app: string, count: number, to?: string[]): Promise<{ units: string[] }> {
    return this.call("POST", `/v1/models/${enc(model)}/applications/${enc(app)}/units`, { count, ...(to ? { to } : {}) });
  }
  removeUnit(model: string, unit: string, force = false): Promise<void> { return this.call("DELETE", `/v1/models/${enc(model)}/units/${unit.split("/").map(enc).join("/")}${force ? "?force=true" : ""}`); }

  updateModel(model: string, config: { updateStatusInterval?: number; automaticallyRetryHooks?: boolean }): Promise<{ name: string; config: Record<string, unknown>; constraints?: string }> {
    return this.call("PATCH", `/v1/models/${enc(model)}`, { config });
  }
  /** The constraints of machines the model makes from now on (Juju's syntax; "" clears them); machines that exist keep theirs. */
  setModelConstraints(model: string, constraints: string): Promise<{ name: string; config: Record<string, unknown>; constraints?: string }> {
    return this.call("PATCH", `/v1/models/${enc(model)}`, { constraints });
  }

  // --- integrations and units ---
  integrate(model: string, a: string, b: string): Promise<{ id: number; key: string }> { return this.call("POST", `/v1/models/${enc(model)}/integrations`, { endpoints: [a, b] }); }
  removeIntegration(model: string, a: string, b: string): Promise<void> { return this.call("DELETE", `/v1/models/${enc(model)}/integrations`, { endpoints: [a, b] }); }
  showUnit(model: string, unit: string): Promise<UnitDetails> { return this.call("GET", `/v1/models/${enc(model)}/units/${unit.split("/").map(enc).join("/")}`); }
  /** The unit's recent workload and agent status changes, oldest first. */
  statusLog(model: string, unit: string): Promise<{ entries: StatusLogEntry[] }> { return this.call("GET", `/v1/models/${enc(model)}/units/${unit.split("/").map(enc).join("/")}/status-log`); }
  resolve(model: string, unit: string, retry = true): Promise<void> { return this.call("POST", `/v1/models/${enc(model)}/units/${unit.split("/").map(enc).join("/")}/resolve`, { retry }); }

  // --- actions ---
  /** Queues `action` on units (`web/0`), leaders (`web/leader`) or whole applications (`web`). */
  runAction(model: string, targets: string[], action: string, params: Record<string, ActionValue> = {}): Promise<RunActionResult> {
    return this.call("POST", `/v1/models/${enc(model)}/actions`, { targets, action, params });
  }
  task(model: string, id: number): Promise<TaskInfo> { return this.call("GET", `/v1/models/${enc(model)}/tasks/${id}`); }
  operations(model: string, limit = 20): Promise<{ operations: OperationInfo[] }> { return this.call("GET", `/v1/models/${enc(model)}/operations?limit=${limit}`); }

  // --- machines ---
  /** `constraints` (Juju's syntax, aws and vsphere) are merged over the model's. */
  addMachines(model: string, substrate: ModelSubstrate, count = 1, constraints?: string): Promise<{ machines: { id: string; credential?: string }[] }> {
    return this.call("POST", `/v1/models/${enc(model)}/machines`, { substrate, count, ...(constraints ? { constraints } : {}) });
  }
  /** Checks the host at once and installs an agent there in the background (see machine status). */
  addSshMachine(model: string, ssh: SshMachineRequest): Promise<{ machines: { id: string; hostKey: string }[] }> {
    return this.call("POST", `/v1/models/${enc(model)}/machines`, { substrate: "ssh", ssh });
  }
  listMachines(model: string): Promise<MachineInfo[]> { return this.call("GET", `/v1/models/${enc(model)}/machines`); }
  removeMachine(model: string, id: string, force = false): Promise<void> { return this.call("DELETE", `/v1/models/${enc(model)}/machines/${enc(id)}${force ? "?force=true" : ""}`); }

  /**
   * A model's agent and hook logs (`steward debug-log`): `onRecord` gets each record, `onDropped`
   * how many the controller skipped because this client read too slowly. Resolves when the stream
   * ends (after the backlog with `tail: false`) or `signal` aborts.
   */
  async debugLog(model: string, q: DebugLogQuery, onRecord: (r: DebugLogRecord) => void, opts: { signal?: AbortSignal; onDropped?: (n: number) => void } = {}): Promise<void> {
    const params = new URLSearchParams();
    for (const e of q.include ?? []) params.append("include", e);
    for (const e of q.exclude ?? []) params.append("exclude", e);
    if (q.level) params.set("level", q.level);
    if (q.lines !== undefined) params.set("lines", String(q.lines));
    if (q.replay) params.set("replay", "true");
    if (q.tail === false) params.set("tail", "false");
    const path = `/v1/models/${enc(model)}/logs?${params.toString()}`;
    if (!this.token && this.opts.password) await this.login();
    try {
      await this.streamLines(path, (line) => parseLogLine(line, onRecord, opts.onDropped), opts.signal);
    } catch (err) {
      if (!(StewardError.isInstance(err) && err.code === "unauthorized" && this.opts.password)) throw err;
      await this.login();
      await this.streamLines(path, (line) => parseLogLine(line, onRecord, opts.onDropped), opts.signal);
    }
  }

  /** GETs `path` from the preferred replica and hands each line of the answer to `onLine`, without a timeout. */
  private streamLines(path: string, onLine: (line: string) => void, signal?: AbortSignal): Promise<void> {
    const [host, port] = splitAddress(this.list[this.preferred]!);
    const headers: Record<string, string> = { accept: "application/x-ndjson", ...(this.token ? { authorization: `Bearer ${this.token}` } : {}) };
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) { resolve(); return; }
      const req = request({ host, port, method: "GET", path, headers, ca: this.opts.caCert, servername: CONTROLLER_TLS_NAME }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        if ((res.statusCode ?? 500) >= 400) {
          res.on("data", (c: string) => { text += c; });
          res.on("end", () => { let body: unknown = text; try { body = JSON.parse(text); } catch { /* not JSON */ } reject(errorFromWire(body, res.statusCode ?? 500)); });
          return;
        }
        res.on("data", (c: string) => {
          text += c;
          const lines = text.split("\n");
          text = lines.pop() ?? "";
          try { for (const l of lines) onLine(l); } catch (err) { req.destroy(); reject(err as Error); }
        });
        res.on("end", () => { if (text) onLine(text); resolve(); });
        res.on("error", reject);
      });
      const onAbort = (): void => { req.destroy(); resolve(); };
      signal?.addEventListener("abort", onAbort, { once: true });
      req.on("close", () => signal?.removeEventListener("abort", onAbort));
      req.on("error", (err) => { if (signal?.aborted) resolve(); else reject(new StewardError("unavailable", `log stream from ${host}:${port} broke: ${err.message}`, { cause: err, reason: "stream-broken" })); });
      req.end();
    });
  }

  /**
   * Follows a model's status: `onStatus` gets the full status now and after every change
   * (coalesced by the controller). Resolves when `signal` aborts; rejects if the stream breaks.
   */
  async watchStatus(model: string, onStatus: (s: ModelStatus) => void, signal: AbortSignal): Promise<void> {
    if (!this.token) await this.login();
    for (;;) {
      let received = false;
      try {
        return await this.watchOnce(model, (s) => { received = true; onStatus(s); }, signal);
      } catch (err) {
        // The token ended (expired, or revoked by a password change): with a password at hand, log
        // in again and carry on; not if the new token was refused before anything arrived.
        if (!StewardError.isInstance(err) || err.code !== "unauthorized" || !this.opts.password || !received) throw err;
        await this.login();
      }
    }
  }

  private async watchOnce(model: string, onStatus: (s: ModelStatus) => void, signal: AbortSignal): Promise<void> {
    const address = this.list[this.preferred]!;
    // Loaded here: only watches need it, and a one-shot CLI command starts faster without it.
    const WebSocketClass = require("ws") as typeof WebSocket;
    const ws = new WebSocketClass(`wss://${address}/v1/models/${enc(model)}/watch`, { ca: this.opts.caCert, servername: CONTROLLER_TLS_NAME, headers: { authorization: `Bearer ${this.token}` } } as WebSocket.ClientOptions);
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void => { ws.close(1000); resolve(); };
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      ws.on("message", (data: Buffer) => {
        const msg = JSON.parse(data.toString("utf8")) as { status?: ModelStatus; error?: unknown };
        if (msg.status) onStatus(msg.status);
        else if (msg.error) reject(errorFromWire(msg.error, 400));
      });
      ws.on("unexpected-response", (_req, res) => reject(new StewardError(res.statusCode === 401 ? "unauthorized" : res.statusCode === 404 ? "not-found" : "unavailable", `watch refused with HTTP ${res.statusCode}`)));
      ws.on("error", (err: NodeJS.ErrnoException) => reject(err.code && UNTRUSTED_CERTIFICATE_ERRORS.has(err.code) ? untrustedCertificate(address, err.code, err) : err));
      ws.on("close", (code: number, reason: Buffer) => {
        signal.removeEventListener("abort", onAbort);
        if (signal.aborted) return;
        if (code === WATCH_CLOSE_CODES.tokenEnded) reject(new StewardError("unauthorized", `status stream closed: ${reason.toString()}`));
        else if (code === WATCH_CLOSE_CODES.accessEnded) reject(new StewardError("forbidden", `status stream closed: ${reason.toString()}`));
        else reject(new StewardError("unavailable", "status stream closed by the controller", { reason: "stream-broken" }));
      });
    });
  }
}

/** The stream of `GET /v1/models/<model>/logs`: one JSON object a line; empty lines are heartbeats. */
function parseLogLine(line: string, onRecord: (r: DebugLogRecord) => void, onDropped?: (n: number) => void): void {
  if (!line.trim()) return;
  const v = JSON.parse(line) as DebugLogRecord | { dropped: number } | { ended: { code: ErrorCode; message: string } };
  if ("ended" in v) throw new StewardError(v.ended.code, `log stream closed: ${v.ended.message}`);
  if ("dropped" in v) onDropped?.(v.dropped);
  else onRecord(v);
}

function enc(s: string): string { return encodeURIComponent(s); }

export function splitAddress(address: string): [string, number] {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  if (!m) throw new StewardError("invalid-request", `controller address "${address}" is not host:port`);
  return [m[1]!, Number(m[2])];
}
