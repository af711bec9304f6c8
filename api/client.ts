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
import { Agent, request } from "node:https";
import WebSocket from "ws";
import { StewardError, errorFromWire } from "./errors";
import type { Bundle } from "./operator";
import type { ModelStatus, StatusFilter, UnitDetails } from "./status";

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
}

export interface ModelSettings { updateStatusInterval: number; automaticallyRetryHooks: boolean }
export interface ModelSummary { name: string; uuid: string; life: string; owner: string; applications: number; machines: number; units: number; access: string; config: ModelSettings }
export interface MachineInfo {
  id: string; substrate: string; life: string; address: string; hostname: string; status: string; message: string; units: string[];
  /** SSH machines: the last install's outcome. */
  install?: { state: "installing" | "installed" | "failed"; step: string; changed?: boolean; bytesUploaded?: number };
}
export interface SshMachineRequest {
  host: string; port?: number; user: string; privateKey: string; passphrase?: string; hostKey?: string; trustOnFirstUse?: boolean;
  jump?: { host: string; port?: number; user: string; hostKey: string };
}
export interface ApplicationInfo { name: string; operator: { hash: string; name: string; version: string }; config: Record<string, string | number | boolean>; units: string[]; life: string; configSchema: Record<string, { type: string; default?: unknown; description: string }> }
export interface ControllerInfo {
  name: string; uuid: string; version: string; addresses: string[];
  /** Replicas that are up now (their presence in the store). */
  replicas: { id: string; addresses: string[]; leader: boolean; since: string }[];
  cluster: ClusterInfo;
}
/** What `steward show-controller` shows: membership, votes, health and the quorum keeper. */
export interface ClusterInfo {
  store: "embedded" | "etcd";
  /** Whether the store has a majority (false: the API can read but not change anything). */
  quorum: boolean;
  wantsVote: number;
  replaceAfterSeconds: number;
  maxReplacementsPerHour: number;
  members: {
    name: string; host: string; addresses: string[]; state: string;
    hasVote: boolean; learner: boolean; present: boolean; leader: boolean; etcdLeader: boolean; reason?: string;
  }[];
  spares: { host: string; user: string; hostKey: string; failed?: string }[];
  keeper: { state: string; message: string; history: { at: string; message: string }[] };
  /** Set when the answer comes from this replica alone (no quorum): why. */
  degraded?: string;
}
export interface SpareHost { host: string; port?: number; user: string; privateKey: string; passphrase?: string; hostKey?: string; trustOnFirstUse?: boolean }

/**
 * The name every controller certificate carries, so clients verify the CA-signed identity whatever
 * address (which may change in HA) they dialled.
 */
export const CONTROLLER_TLS_NAME = "steward-controller";

/** Every API answer names the replicas' current addresses here, so clients follow replicas that move. */
export const ADDRESSES_HEADER = "steward-addresses";

const CONNECTION_ERRORS = new Set(["ECONNREFUSED", "ECONNRESET", "EHOSTUNREACH", "ENETUNREACH", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN"]);

export class ControllerClient {
  private readonly opts: ControllerClientOptions;
  private readonly agent: Agent;
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
    const res = await this.raw<{ token: string }>("POST", "/v1/login", { user: this.opts.user, password: this.opts.password }, false);
    this.token = res.token;
    return res.token;
  }

  /** Sends one request; on 401 with a password at hand, logs in again once and repeats it. */
  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    if (!this.token && this.opts.password) await this.login();
    try {
      return await this.raw<T>(method, path, body, true);
    } catch (err) {
      if (StewardError.isInstance(err) && err.code === "unauthorized" && this.opts.password) {
        await this.login();
        return this.raw<T>(method, path, body, true);
      }
      throw err;
    }
  }

  private async raw<T>(method: string, path: string, body: unknown, auth: boolean): Promise<T> {
    const tried = [...this.list];
    const n = tried.length;
    let lastErr: unknown;
    for (let i = 0; i < n; i++) {
      const address = tried[(this.preferred + i) % n]!;
      try {
        const out = await this.once<T>(address, method, path, body, auth);
        this.preferred = Math.max(0, this.list.indexOf(address));
        return out;
      } catch (err) {
        lastErr = err;
        // Try the next replica when this one is unreachable or has lost its store majority (503).
        if (StewardError.isInstance(err) && err.code === "unavailable") continue;
        const code = (err as NodeJS.ErrnoException).code;
        if (!code || !CONNECTION_ERRORS.has(code)) throw err;
      }
    }
    if (StewardError.isInstance(lastErr)) throw lastErr;
    throw new StewardError("unavailable", `no controller answered at ${tried.join(", ")}: ${(lastErr as Error)?.message}. Is the controller running?`, { cause: lastErr });
  }

  private once<T>(address: string, method: string, path: string, body: unknown, auth: boolean): Promise<T> {
    const [host, port] = splitAddress(address);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = { accept: "application/json" };
    if (payload) { headers["content-type"] = "application/json"; headers["content-length"] = String(payload.length); }
    if (auth && this.token) headers.authorization = `Bearer ${this.token}`;
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
  controllerInfo(): Promise<ControllerInfo> { return this.call("GET", "/v1/controller"); }
  /** Grows the controller to `replicas` voters, on `hosts` and the spare pool; from the embedded store it first moves into etcd. */
  enableHa(req: { replicas: number; hosts?: SpareHost[]; replaceAfterSeconds?: number; maxReplacementsPerHour?: number }): Promise<{ moving: boolean; message: string }> { return this.call("POST", "/v1/controller/enable-ha", req); }
  addSpares(hosts: SpareHost[]): Promise<{ spares: { host: string; hostKey: string }[] }> { return this.call("POST", "/v1/controller/spares", { hosts }); }
  createUser(name: string, password: string, superuser = false): Promise<{ name: string }> { return this.call("POST", "/v1/users", { name, password, superuser }); }
  grant(model: string, user: string, access: "read" | "write" | "admin"): Promise<void> { return this.call("PUT", `/v1/models/${enc(model)}/access/${enc(user)}`, { access }); }

  // --- models ---
  listModels(): Promise<ModelSummary[]> { return this.call("GET", "/v1/models"); }
  createModel(name: string, config?: { updateStatusInterval?: number }): Promise<{ name: string; uuid: string }> { return this.call("POST", "/v1/models", { name, ...(config ? { config } : {}) }); }
  /** With `force`, everything is deleted at once without running hooks. */
  destroyModel(name: string, force = false): Promise<void> { return this.call("DELETE", `/v1/models/${enc(name)}${force ? "?force=true" : ""}`); }
  /** The model's status, narrowed by `filter` on the controller (so a large model sends less). */
  status(model: string, filter: StatusFilter = {}): Promise<ModelStatus> {
    const q = new URLSearchParams();
    if (filter.applications?.length) q.set("application", filter.applications.join(","));
    if (filter.units?.length) q.set("unit", filter.units.join(","));
    if (filter.machines?.length) q.set("machine", filter.machines.join(","));
    const query = q.toString();
    return this.call("GET", `/v1/models/${enc(model)}/status${query ? `?${query}` : ""}`);
  }

  // --- operators and applications ---
  uploadOperator(bundle: Bundle): Promise<{ hash: string; name: string; version: string; created: boolean }> { return this.call("POST", "/v1/operators", bundle); }
  hasOperator(hash: string): Promise<boolean> {
    return this.call("HEAD", `/v1/operators/${hash}`).then(() => true, (e: unknown) => { if (StewardError.isInstance(e) && e.code === "not-found") return false; throw e; });
  }
  deploy(model: string, req: { name: string; operator: string; units?: number; config?: Record<string, string | number | boolean>; to?: string[] }): Promise<ApplicationInfo> {
    return this.call("POST", `/v1/models/${enc(model)}/applications`, req);
  }
  getApplication(model: string, app: string): Promise<ApplicationInfo> { return this.call("GET", `/v1/models/${enc(model)}/applications/${enc(app)}`); }
  updateApplication(model: string, app: string, req: { config?: Record<string, string | number | boolean | null>; operator?: string }): Promise<ApplicationInfo> {
    return this.call("PATCH", `/v1/models/${enc(model)}/applications/${enc(app)}`, req);
  }
  removeApplication(model: string, app: string, force = false): Promise<void> { return this.call("DELETE", `/v1/models/${enc(model)}/applications/${enc(app)}${force ? "?force=true" : ""}`); }
  addUnits(model: string, app: string, count: number, to?: string[]): Promise<{ units: string[] }> {
    return this.call("POST", `/v1/models/${enc(model)}/applications/${enc(app)}/units`, { count, ...(to ? { to } : {}) });
  }
  removeUnit(model: string, unit: string, force = false): Promise<void> { return this.call("DELETE", `/v1/models/${enc(model)}/units/${unit.split("/").map(enc).join("/")}${force ? "?force=true" : ""}`); }

  updateModel(model: string, config: { updateStatusInterval?: number; automaticallyRetryHooks?: boolean }): Promise<{ name: string; config: Record<string, unknown> }> {
    return this.call("PATCH", `/v1/models/${enc(model)}`, { config });
  }

  // --- integrations and units ---
  integrate(model: string, a: string, b: string): Promise<{ id: number; key: string }> { return this.call("POST", `/v1/models/${enc(model)}/integrations`, { endpoints: [a, b] }); }
  removeIntegration(model: string, a: string, b: string): Promise<void> { return this.call("DELETE", `/v1/models/${enc(model)}/integrations`, { endpoints: [a, b] }); }
  showUnit(model: string, unit: string): Promise<UnitDetails> { return this.call("GET", `/v1/models/${enc(model)}/units/${unit.split("/").map(enc).join("/")}`); }
  resolve(model: string, unit: string, retry = true): Promise<void> { return this.call("POST", `/v1/models/${enc(model)}/units/${unit.split("/").map(enc).join("/")}/resolve`, { retry }); }

  // --- machines ---
  addMachines(model: string, substrate: "local" | "manual", count = 1): Promise<{ machines: { id: string; credential?: string }[] }> {
    return this.call("POST", `/v1/models/${enc(model)}/machines`, { substrate, count });
  }
  /** Checks the host at once and installs an agent there in the background (see machine status). */
  addSshMachine(model: string, ssh: SshMachineRequest): Promise<{ machines: { id: string; hostKey: string }[] }> {
    return this.call("POST", `/v1/models/${enc(model)}/machines`, { substrate: "ssh", ssh });
  }
  listMachines(model: string): Promise<MachineInfo[]> { return this.call("GET", `/v1/models/${enc(model)}/machines`); }
  removeMachine(model: string, id: string, force = false): Promise<void> { return this.call("DELETE", `/v1/models/${enc(model)}/machines/${enc(id)}${force ? "?force=true" : ""}`); }

  /**
   * Follows a model's status: `onStatus` gets the full status now and after every change
   * (coalesced by the controller). Resolves when `signal` aborts; rejects if the stream breaks.
   */
  async watchStatus(model: string, onStatus: (s: ModelStatus) => void, signal: AbortSignal): Promise<void> {
    if (!this.token) await this.login();
    const address = this.list[this.preferred]!;
    const ws = new WebSocket(`wss://${address}/v1/models/${enc(model)}/watch`, { ca: this.opts.caCert, servername: CONTROLLER_TLS_NAME, headers: { authorization: `Bearer ${this.token}` } } as WebSocket.ClientOptions);
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
      ws.on("error", reject);
      ws.on("close", () => { signal.removeEventListener("abort", onAbort); if (!signal.aborted) reject(new StewardError("unavailable", "status stream closed by the controller")); });
    });
  }
}

function enc(s: string): string { return encodeURIComponent(s); }

export function splitAddress(address: string): [string, number] {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  if (!m) throw new StewardError("invalid-request", `controller address "${address}" is not host:port`);
  return [m[1]!, Number(m[2])];
}
