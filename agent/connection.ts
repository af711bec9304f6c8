/**
 * {@link ControllerConnection} keeps one WebSocket to some controller replica: it dials the known
 * addresses in random order with staggered parallel attempts (the first to open wins), reconnects
 * with jittered exponential backoff, and carries request/response calls and pushed views.
 */
import WebSocket from "ws";
import type { AgentFrame, AgentView, Logger } from "../api/core";
import type { MigrationTarget } from "../api/core";
import {
  CONTROLLER_TLS_NAME,
  STEWARD_VERSION,
  StewardError,
  TRANSPORT_LIMITS,
  VERSION_HEADER,
  errorFromWire,
  isModelMoved,
} from "../api/core";

export interface ConnectionOptions {
  addresses: () => string[];
  /** The controller CA the agent pins (read at each dial: a migration changes it). */
  caCert: () => string;
  /** `model/machine/credential`, sent as `Authorization: Agent …`. */
  authorization: string;
  log: Logger;
  onView: (view: AgentView) => void;
  onConnected: () => void;
  /**
   * Delay between parallel dial attempts, in milliseconds.
   * @default 250
   */
  dialStaggerMs?: number;
  /** @default 30000 */
  requestTimeoutMs?: number;
  /**
   * How often the agent pings the controller, in ms; after three intervals without hearing from
   * it the connection is dropped and redialled.
   * @default 5000
   */
  pingMs?: number;
  /**
   * Called once, and the connection stops, when the controller has closed the connection saying the
   * machine was removed (4404) and then refused the agent's credential: it can never log in again.
   */
  onMachineRemoved?: () => void;
  /**
   * The controller answered that the model moved to another controller (api/migration.ts): the
   * agent adopts the target and calls {@link ControllerConnection.redial}. The answer came over TLS
   * pinned to the controller's CA, so it is the controller's own.
   */
  onMoved?: (target: MigrationTarget) => void;
}

/** The controller said the model is elsewhere now. */
class ModelMovedAway extends Error {
  constructor(readonly target: MigrationTarget) {
    super(`the model moved to controller ${target.name}`);
  }
}

type Pending = { resolve: (v: unknown) => void; reject: (e: unknown) => void; timer: NodeJS.Timeout };

const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 30_000;

export class ControllerConnection {
  private ws?: WebSocket;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private closed = false;
  private attempt = 0;
  private reconnectTimer?: NodeJS.Timeout;
  /** The controller said this machine was removed; a refused login afterwards confirms it. */
  private removedSaid = false;
  private local?: string;
  /** Resolves when connected; replaced on every disconnect. */
  private ready!: Promise<void>;
  private markReady!: () => void;

  constructor(private readonly o: ConnectionOptions) {
    this.resetReady();
  }

  get connected(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /**
   * The address this machine reached the controller from (kept after a disconnect): on the network
   * the controller shares with its machines, so where other units can reach this one.
   */
  get localAddress(): string | undefined {
    return this.local;
  }

  private resetReady(): void {
    this.ready = new Promise((r) => (this.markReady = r));
  }

  start(): void {
    this.connectLoop();
  }

  private connectLoop(): void {
    if (this.closed) return;
    this.dial().catch((err: unknown) => {
      if (err instanceof ModelMovedAway && this.o.onMoved) {
        this.o.log.warn("the controller says this model moved; following it", {
          to: err.target.name,
          addresses: err.target.addresses.join(","),
        });
        this.o.onMoved(err.target);
        return;
      }
      // Two answers, not one: a replica whose state lags could say either alone, never both in turn.
      if (this.removedSaid && StewardError.isInstance(err) && err.code === "unauthorized") {
        this.o.log.error(
          "this machine was removed from the controller and its credential is no longer accepted: stopping",
          { err },
        );
        this.closed = true;
        this.o.onMachineRemoved?.();
        return;
      }
      const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.attempt++) * (0.5 + Math.random() / 2);
      // Not a fault of the network: said as the error it is, and tried again (the controller may be upgraded).
      if (StewardError.isInstance(err) && err.reason === "version-incompatible")
        this.o.log.error(`${err.message}; trying again`, { in_ms: Math.round(delay) });
      else this.o.log.warn("cannot reach any controller; retrying", { in_ms: Math.round(delay), err });
      this.reconnectTimer = setTimeout(() => this.connectLoop(), delay);
    });
  }

  /**
   * Tries every address, starting one attempt every `dialStaggerMs`; the first open socket wins and
   * is adopted at once, in its `open` event: frames that came in the same read as the handshake's
   * answer (the replica's first view) are emitted before a promise callback would run.
   */
  private dial(): Promise<void> {
    const addrs = shuffle([...this.o.addresses()]);
    const stagger = this.o.dialStaggerMs ?? 250;
    return new Promise((resolve, reject) => {
      let failures = 0;
      let won = false;
      const sockets: WebSocket[] = [];
      const timers: NodeJS.Timeout[] = [];
      let lastErr: unknown;
      // A credential refused by any replica is the answer that matters, whatever the others did.
      let refused: StewardError | undefined;
      addrs.forEach((addr, i) => {
        timers.push(
          setTimeout(() => {
            if (won || this.closed) return;
            const ws = new WebSocket(`wss://${addr}/v1/agent`, {
              ca: this.o.caCert(),
              servername: CONTROLLER_TLS_NAME,
              headers: { authorization: `Agent ${this.o.authorization}`, [VERSION_HEADER]: STEWARD_VERSION },
              handshakeTimeout: 10_000,
            } as WebSocket.ClientOptions);
            sockets.push(ws);
            let local: string | undefined;
            ws.once("upgrade", (res) => {
              local = res.socket.localAddress;
            });
            ws.once("open", () => {
              if (won || this.closed) {
                ws.close();
                return;
              }
              won = true;
              timers.forEach(clearTimeout);
              for (const other of sockets) if (other !== ws) other.terminate();
              this.adopt(ws, local);
              resolve();
            });
            ws.once("unexpected-response", (_req, res) => {
              lastErr = new StewardError(
                res.statusCode === 401 ? "unauthorized" : "unavailable",
                `controller ${addr} refused the agent with HTTP ${res.statusCode}`,
              );
              if (res.statusCode === 401) refused = lastErr as StewardError;
              if (res.statusCode !== 410 && res.statusCode !== 400) {
                ws.terminate();
                return;
              }
              // 410: the model moved, the body says where; 400: refused, the body says why (this agent's version).
              const chunks: Buffer[] = [];
              res.on("data", (c: Buffer) => {
                if (chunks.length < 64) chunks.push(c);
              });
              res.on("end", () => {
                try {
                  const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
                    details?: Record<string, unknown>;
                  };
                  if (res.statusCode === 400) {
                    const why = errorFromWire(body, 400);
                    lastErr = new StewardError(why.code, `controller ${addr} refused the agent: ${why.message}`, {
                      ...(why.reason ? { reason: why.reason } : {}),
                    });
                  } else if (isModelMoved(body.details)) lastErr = new ModelMovedAway(body.details.target);
                } catch {
                  /* not an answer of ours: an ordinary failure */
                }
                ws.terminate();
              });
            });
            ws.once("error", (err) => {
              lastErr = lastErr ?? err;
            });
            ws.once("close", () => {
              if (!won && ++failures === addrs.length)
                reject(
                  lastErr instanceof ModelMovedAway
                    ? lastErr
                    : (refused ?? lastErr ?? new Error("all dial attempts failed")),
                );
            });
          }, i * stagger),
        );
      });
    });
  }

  private adopt(ws: WebSocket, local: string | undefined): void {
    this.ws = ws;
    if (local) this.local = local;
    this.attempt = 0;
    this.removedSaid = false;
    ws.on("message", (data: Buffer) => this.onMessage(data));
    ws.on("close", (code, reason) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.resetReady();
      for (const [id, p] of this.pending) {
        clearTimeout(p.timer);
        p.reject(
          new StewardError("unavailable", "connection to the controller was lost", { reason: "connection-lost" }),
        );
        this.pending.delete(id);
      }
      if (this.closed) return;
      this.o.log.warn("disconnected from controller", { code, reason: reason.toString() });
      if (code === 4404) {
        this.removedSaid = true;
        this.o.log.error("the controller says this machine was removed");
      }
      this.reconnectTimer = setTimeout(() => this.connectLoop(), BACKOFF_MIN_MS * (0.5 + Math.random()));
    });
    ws.on("error", () => undefined);
    this.watchLiveness(ws);
    this.o.log.info("connected to controller", { url: ws.url });
    this.markReady();
    this.o.onConnected();
  }

  /**
   * A replica whose host lost power or its address sends nothing, not even a close, and the socket
   * would look open until TCP gives up (many minutes). So the agent pings, and a controller silent
   * for three pings is given up: the agent redials the others.
   */
  private watchLiveness(ws: WebSocket): void {
    const every = this.o.pingMs ?? 5000;
    let heard = Date.now();
    const alive = (): void => {
      heard = Date.now();
    };
    ws.on("pong", alive);
    ws.on("ping", alive);
    ws.on("message", alive);
    const timer = setInterval(() => {
      if (Date.now() - heard > 3 * every) {
        this.o.log.warn("the controller stopped answering; reconnecting", {
          url: ws.url,
          silent_ms: Date.now() - heard,
        });
        ws.terminate();
        return;
      }
      ws.ping();
    }, every);
    timer.unref();
    ws.once("close", () => clearInterval(timer));
  }

  private onMessage(data: Buffer): void {
    let frame: AgentFrame;
    try {
      frame = JSON.parse(data.toString("utf8")) as AgentFrame;
    } catch {
      return;
    }
    if (frame.t === "push" && frame.topic === "view") this.o.onView(frame.data as AgentView);
    else if (frame.t === "res") {
      const p = this.pending.get(frame.id);
      if (!p) return;
      this.pending.delete(frame.id);
      clearTimeout(p.timer);
      if (frame.error) p.reject(errorFromWire(frame.error, 400));
      else p.resolve(frame.result);
    }
  }

  /** Calls a controller method, waiting for a connection first (up to the request timeout). */
  async call<T>(method: string, params: unknown): Promise<T> {
    const timeoutMs = this.o.requestTimeoutMs ?? 30_000;
    if (!this.connected) {
      let t: NodeJS.Timeout | undefined;
      await Promise.race([
        this.ready,
        new Promise((_, rej) => {
          t = setTimeout(
            () => rej(new StewardError("deadline-exceeded", `not connected to a controller after ${timeoutMs} ms`)),
            timeoutMs,
          );
        }),
      ]).finally(() => clearTimeout(t));
    }
    const ws = this.ws!;
    const id = this.nextId++;
    const frame = JSON.stringify({ t: "req", id, method, params });
    // The controller closes the socket on a bigger frame, and the agent would retry it forever.
    if (Buffer.byteLength(frame) > TRANSPORT_LIMITS.agentFrameBytes) {
      throw new StewardError(
        "invalid-request",
        `${method} is ${Buffer.byteLength(frame)} bytes, more than the ${TRANSPORT_LIMITS.agentFrameBytes} an agent may send at once: set less data in one hook`,
      );
    }
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new StewardError("deadline-exceeded", `controller did not answer ${method} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      ws.send(frame);
    });
  }

  /** Drops the current connection (if any) and dials again at once, with the addresses and CA as they are now. */
  redial(): void {
    if (this.closed) return;
    clearTimeout(this.reconnectTimer);
    this.attempt = 0;
    const ws = this.ws;
    if (ws) {
      ws.terminate();
      return;
    } // its close handler dials again
    this.connectLoop();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    this.ws?.close(1000, "agent stopping");
  }
}

function shuffle<T>(a: T[]): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}
