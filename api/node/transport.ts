/**
 * How a {@link ControllerClient} reaches the controller, apart from what it asks: it pins the
 * controller CA, fails over between replica addresses (and follows the addresses replicas announce),
 * logs in lazily with a password or uses a token, follows a model that moved to another controller,
 * keeps one request id across a write's retries, and rebuilds wire errors into {@link StewardError}s.
 * `call(routes.x, params, body)` sends a route of the table in api/routes.ts, typed by it.
 */
import { randomUUID } from "node:crypto";
import { Agent, request } from "node:https";
import { StewardError, errorFromWire, isUnavailable } from "../errors";
import type { AnswerOf, BodyOf, ParamsOf, QueryOf, RouteSpec, SchemaName } from "../routes";
import { methodOf, pathOf, routes } from "../routes";
import { ADDRESSES_HEADER, CONTROLLER_TLS_NAME, MUTATING_METHODS, REQUEST_ID_HEADER, VERSION_HEADER } from "../wire";
import { STEWARD_VERSION, versionProblem } from "../versions";
import type { ModelMoved } from "../migration";
import { isModelMoved } from "../migration";

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
export interface MovedTo {
  addresses: string[];
  caCert: string;
  user?: string;
  password?: string;
  token?: string;
}

/** A replica that does not even accept the connection this fast is treated as down. */
const CONNECT_TIMEOUT_MS = 3000;

/** A login told to wait at most this long is retried; longer (failed-login limits) is reported. */
const MAX_LOGIN_WAIT_SECONDS = 5;

const CONNECTION_ERRORS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

// TLS verification failures: the replica is up, but its certificate is not from the pinned CA.
export const UNTRUSTED_CERTIFICATE_ERRORS = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_SIGNATURE_FAILURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_UNTRUSTED",
  "CERT_HAS_EXPIRED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** The error for a replica whose certificate the pinned CA did not sign; its reason lets callers name the controller. */
export function untrustedCertificate(address: string, code: string, cause: unknown): StewardError {
  return new StewardError(
    "unavailable",
    `the controller at ${address} presented a certificate that the CA this client trusts for it does not accept (${code}): either the controller was re-created with a new CA, or something else answers at that address`,
    { cause, reason: "untrusted-certificate", details: { reason: "untrusted-certificate", address } },
  );
}

/** The connection half of {@link ControllerClient}: what every call goes through. */
export class ControllerTransport {
  protected opts: ControllerClientOptions;
  protected agent: Agent;
  protected token: string | undefined;
  protected preferred = 0;
  /** The replicas' addresses, kept current from the controller's answers (replicas can move). */
  protected list: string[];
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
  get addresses(): string[] {
    return [...this.list];
  }

  /** The current token, for callers that persist it (the CLI). */
  get currentToken(): string | undefined {
    return this.token;
  }

  close(): void {
    this.agent.destroy();
  }

  async login(): Promise<string> {
    if (!this.opts.user || !this.opts.password)
      throw new StewardError("unauthorized", "no password to log in with: run `steward login` first");
    for (let attempt = 1; ; attempt++) {
      try {
        // A token still held goes along: the controller checks a login renewing a valid one first.
        const res = await this.raw<AnswerOf<typeof routes.login>>(
          methodOf(routes.login),
          routes.login.path,
          { user: this.opts.user, password: this.opts.password },
          this.token !== undefined,
        );
        this.token = res.token;
        return res.token;
      } catch (err) {
        // Told to wait a moment (the controller is busy checking passwords): wait and try again, a few times.
        const wait =
          StewardError.isInstance(err) && err.code === "rate-limited" ? Number(err.details.retryAfterSeconds) : NaN;
        if (!(wait <= MAX_LOGIN_WAIT_SECONDS) || attempt >= 3) throw err;
        await new Promise((resolve) => setTimeout(resolve, wait * 1000));
      }
    }
  }

  /**
   * Sends one request: a route of the table (`call(routes.deploy, { model }, body)`, typed by it), or
   * a method and path. On 401 with a password at hand, logs in again once and repeats it; a model that
   * moved is followed when `onMoved` says where. A mutating request keeps one request id across
   * every try, so its retries are answered, not redone.
   *
   * @internal The route-typed form is left out of the published declarations (tsconfig.types.json
   * strips it): its types reach the request schemas, and through them zod's own declarations, which a
   * Pulumi project's default compiler options (no skipLibCheck, no esModuleInterop) cannot read.
   */
  call<R extends RouteSpec>(route: R, params: ParamsOf<R>, ...rest: BodyAndQuery<R>): Promise<AnswerOf<R>>;
  call<T>(method: string, path: string, body?: unknown): Promise<T>;
  call(how: RouteSpec | string, where: unknown, body?: unknown, query?: unknown): Promise<unknown> {
    if (typeof how === "string") return this.send(how, where as string, body);
    return this.send(methodOf(how), pathOf(how, where as ParamsOf<typeof how>, query as QueryOf<typeof how>), body);
  }

  private async send<T>(method: string, path: string, body?: unknown): Promise<T> {
    try {
      return await this.callHere<T>(method, path, body);
    } catch (err) {
      if (!StewardError.isInstance(err) || err.code !== "moved" || !this.opts.onMoved || !isModelMoved(err.details))
        throw err;
      const next = await this.opts.onMoved(err.details);
      if (!next) throw err;
      this.retarget(next);
      return this.callHere<T>(method, path, body);
    }
  }

  /** From now on this client talks to another controller (the one a model moved to). */
  private retarget(next: MovedTo): void {
    this.agent.destroy();
    this.opts = {
      ...this.opts,
      addresses: next.addresses,
      caCert: next.caCert,
      ...(next.user !== undefined ? { user: next.user, password: next.password, token: next.token } : {}),
    };
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

  protected async raw<T>(method: string, path: string, body: unknown, auth: boolean, requestId?: string): Promise<T> {
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
          if (StewardError.isInstance(err) && isUnavailable(err)) {
            answeredUnavailable = true;
            continue;
          }
          const code = (err as NodeJS.ErrnoException).code;
          if (code && UNTRUSTED_CERTIFICATE_ERRORS.has(code)) {
            lastErr = untrustedCertificate(address, code, err);
            continue;
          }
          if (!code || !CONNECTION_ERRORS.has(code)) throw err;
        }
      }
      // Nothing answered at all: the replicas may have moved where announcements do not say (reachable).
      if (!answeredUnavailable && !asked && this.opts.reachable) {
        asked = true;
        const fresh = (await this.opts.reachable().catch(() => [])).filter((a) => !tried.includes(a));
        if (fresh.length > 0) {
          this.list = [...fresh, ...this.list];
          this.preferred = 0;
          continue;
        }
      }
      // A replica answered but could not serve (an election under way): another round soon may.
      const pause = Math.min(250 * 2 ** round, 2000);
      if (!answeredUnavailable || Date.now() + pause > giveUpAt) break;
      await new Promise((r) => setTimeout(r, pause));
    }
    if (StewardError.isInstance(lastErr)) throw lastErr;
    throw new StewardError(
      "unavailable",
      `no controller answered at ${tried.join(", ")}: ${(lastErr as Error)?.message}. Is the controller running?`,
      { cause: lastErr, reason: "controller-unreachable" },
    );
  }

  private once<T>(
    address: string,
    method: string,
    path: string,
    body: unknown,
    auth: boolean,
    requestId?: string,
  ): Promise<T> {
    const [host, port] = splitAddress(address);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = { accept: "application/json", [VERSION_HEADER]: STEWARD_VERSION };
    if (payload) {
      headers["content-type"] = "application/json";
      headers["content-length"] = String(payload.length);
    }
    if (auth && this.token) headers.authorization = `Bearer ${this.token}`;
    if (requestId) headers[REQUEST_ID_HEADER] = requestId;
    this.requestCount++;
    return new Promise<T>((resolve, reject) => {
      const req = request(
        {
          host,
          port,
          method,
          path,
          headers,
          agent: this.agent,
          servername: CONTROLLER_TLS_NAME,
          timeout: this.opts.timeoutMs ?? 30_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", reject);
          res.on("end", () => {
            this.follow(address, res.headers[ADDRESSES_HEADER]);
            // An older controller may not know this client's version is outside the window: check its own.
            const theirs = res.headers[VERSION_HEADER];
            const problem = typeof theirs === "string" ? versionProblem("client", STEWARD_VERSION, theirs) : undefined;
            if (problem) {
              reject(new StewardError("invalid-request", problem, { reason: "version-incompatible" }));
              return;
            }
            const text = Buffer.concat(chunks).toString("utf8");
            let parsed: unknown = undefined;
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              parsed = text;
            }
            if ((res.statusCode ?? 500) >= 400) reject(errorFromWire(parsed, res.statusCode ?? 500));
            else resolve(parsed as T);
          });
        },
      );
      req.on("timeout", () =>
        req.destroy(Object.assign(new Error(`request to ${address} timed out`), { code: "ETIMEDOUT" })),
      );
      // A host that is gone does not refuse the connection; do not wait the whole request timeout for it.
      req.on("socket", (socket) => {
        if (!socket.connecting) return;
        const t = setTimeout(
          () => req.destroy(Object.assign(new Error(`could not connect to ${address}`), { code: "ETIMEDOUT" })),
          CONNECT_TIMEOUT_MS,
        );
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

  /** GETs `path` from the preferred replica and hands each line of the answer to `onLine`, without a timeout. */
  protected streamLines(path: string, onLine: (line: string) => void, signal?: AbortSignal): Promise<void> {
    const [host, port] = splitAddress(this.list[this.preferred]!);
    const headers: Record<string, string> = {
      accept: "application/x-ndjson",
      [VERSION_HEADER]: STEWARD_VERSION,
      ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
    };
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        resolve();
        return;
      }
      const req = request(
        { host, port, method: "GET", path, headers, ca: this.opts.caCert, servername: CONTROLLER_TLS_NAME },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          if ((res.statusCode ?? 500) >= 400) {
            res.on("data", (c: string) => {
              text += c;
            });
            res.on("end", () => {
              let body: unknown = text;
              try {
                body = JSON.parse(text);
              } catch {
                /* not JSON */
              }
              reject(errorFromWire(body, res.statusCode ?? 500));
            });
            return;
          }
          res.on("data", (c: string) => {
            text += c;
            const lines = text.split("\n");
            text = lines.pop() ?? "";
            try {
              for (const l of lines) onLine(l);
            } catch (err) {
              req.destroy();
              reject(err as Error);
            }
          });
          res.on("end", () => {
            if (text) onLine(text);
            resolve();
          });
          res.on("error", reject);
        },
      );
      const onAbort = (): void => {
        req.destroy();
        resolve();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      req.on("close", () => signal?.removeEventListener("abort", onAbort));
      req.on("error", (err) => {
        if (signal?.aborted) resolve();
        else
          reject(
            new StewardError("unavailable", `log stream from ${host}:${port} broke: ${err.message}`, {
              cause: err,
              reason: "stream-broken",
            }),
          );
      });
      req.end();
    });
  }
}

/** After a route's path parameters: its body when it takes one, then its query. */
type BodyAndQuery<R extends RouteSpec> = R extends { body: SchemaName } | { rawBody: true }
  ? [body: BodyOf<R>, query?: QueryOf<R>]
  : [body?: undefined, query?: QueryOf<R>];

export function splitAddress(address: string): [string, number] {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  if (!m) throw new StewardError("invalid-request", `controller address "${address}" is not host:port`);
  return [m[1]!, Number(m[2])];
}
