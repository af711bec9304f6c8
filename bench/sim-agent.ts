/**
 * A lightweight simulated agent for benchmarks: one real TLS WebSocket speaking the agent protocol,
 * no hooks. Thousands fit in one process. Like a real agent it retries a refused login (the login
 * limiter's 503) or a failed dial after a jittered backoff, never sooner than the controller's
 * Retry-After.
 *
 * Unlike real agents, all of them share this one process: it dials at most
 * {@link SimAgent.maxConcurrentDials} at once, so the benchmark's own TLS handshakes (and the
 * controller's work on logins it would refuse) do not swamp the process and starve the
 * connections already open.
 */
import type { SecureContext } from "node:tls";
import { createSecureContext } from "node:tls";
import WebSocket from "ws";
import type { AgentView } from "../api";
import { CONTROLLER_TLS_NAME } from "../api";
import { sleep } from "./util";

const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 30_000;
/** Give up after this many refusals in a row: a benchmark that cannot log in should fail, not hang. */
const MAX_ATTEMPTS = 40;
/** As a real agent: a handshake lost in a storm (a dropped SYN, a stalled TLS hello) is given up and retried. */
const HANDSHAKE_TIMEOUT_MS = 10_000;

/** A login the controller refused for now (503), with its Retry-After in seconds. */
class LoginRefused extends Error {
  constructor(
    readonly status: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`Unexpected server response: ${status}`);
  }
}

/** The controller closed an agent's connection (or it broke): what was waiting on it fails with this. */
export class AgentDisconnected extends Error {}

/** Dial slots shared by every simulated agent of this process. */
class DialSlots {
  private busy = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(readonly size: () => number) {}
  async take(): Promise<void> {
    if (this.busy < this.size()) {
      this.busy++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.busy--;
  }
}

export class SimAgent {
  /** Dials in flight at once across this process's simulated agents. */
  static maxConcurrentDials = 256;
  private static readonly slots = new DialSlots(() => SimAgent.maxConcurrentDials);

  view?: AgentView;
  /** Failed logins (refused with 503 or dropped) before this agent got in. */
  refusals = 0;
  /** Set once the connection has closed: why. */
  closedBecause?: string;
  private id = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  private readonly onView: ((v: AgentView, at: number) => void)[] = [];
  private readonly onClose: ((why: string) => void)[] = [];

  protected constructor(private readonly ws: WebSocket) {
    ws.on("message", (d: Buffer) => {
      const at = performance.now();
      const f = JSON.parse(d.toString()) as {
        t: string;
        id: number;
        data?: AgentView;
        result?: unknown;
        error?: unknown;
      };
      if (f.t === "push") {
        this.view = f.data!;
        for (const l of this.onView) l(this.view, at);
      } else if (f.t === "res") {
        const p = this.pending.get(f.id);
        this.pending.delete(f.id);
        if (f.error) p?.reject(f.error);
        else p?.resolve(f.result);
      }
    });
    ws.on("error", () => undefined);
    ws.on("close", (code: number, reason: Buffer) => {
      this.closedBecause = `closed with ${code} ${reason.toString()}`.trim();
      for (const p of this.pending.values()) p.reject(new AgentDisconnected(this.closedBecause));
      this.pending.clear();
      for (const l of this.onClose) l(this.closedBecause);
    });
  }

  /** Logs in, retrying 503 answers and dropped dials with jittered exponential backoff that honours Retry-After. */
  static async connect(
    address: string,
    caCert: string,
    model: string,
    machine: string,
    credential: string,
  ): Promise<SimAgent> {
    for (let attempt = 0; ; attempt++) {
      await SimAgent.slots.take();
      let wait: number;
      try {
        const agent = await SimAgent.connectOnce(address, caCert, model, machine, credential);
        agent.refusals = attempt;
        return agent;
      } catch (err) {
        // A refused credential is final; a busy controller (503) or a dropped handshake (a storm
        // overflowing the listen backlog resets connections) is worth another try.
        const retryable = err instanceof LoginRefused ? err.status === 503 : true;
        if (!retryable || attempt + 1 >= MAX_ATTEMPTS) throw err;
        const backoff = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** attempt) * (0.5 + Math.random() / 2);
        // Spread the retries over the second after Retry-After, so they do not come back at once.
        const floor = err instanceof LoginRefused ? err.retryAfterSeconds * 1000 * (1 + Math.random()) : 0;
        wait = Math.max(backoff, floor);
      } finally {
        SimAgent.slots.give();
      }
      await sleep(wait);
    }
  }

  private static connectOnce(
    address: string,
    caCert: string,
    model: string,
    machine: string,
    credential: string,
  ): Promise<SimAgent> {
    const ws = new WebSocket(`wss://${address}/v1/agent`, {
      secureContext: SimAgent.contextFor(caCert),
      servername: CONTROLLER_TLS_NAME,
      headers: { authorization: `Agent ${model}/${machine}/${credential}` },
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
    } as WebSocket.ClientOptions);
    const agent = new SimAgent(ws);
    return new Promise((resolve, reject) => {
      ws.once("unexpected-response", (_req, res) => {
        const retryAfter = Number(res.headers["retry-after"] ?? "1");
        ws.terminate();
        reject(new LoginRefused(res.statusCode ?? 0, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : 1));
      });
      ws.once("open", () => resolve(agent));
      ws.once("error", reject);
    });
  }

  /**
   * One TLS context per CA for every simulated agent: building one per connection (parsing the CA
   * each time) was most of the benchmark process's work when 10,000 agents log in.
   */
  private static contextFor(caCert: string): SecureContext {
    let c = SimAgent.contexts.get(caCert);
    if (!c) SimAgent.contexts.set(caCert, (c = createSecureContext({ ca: caCert })));
    return c;
  }
  private static readonly contexts = new Map<string, SecureContext>();

  listen(l: (v: AgentView, at: number) => void): void {
    this.onView.push(l);
  }

  /** Called once if the connection closes (not when the benchmark closes it itself). */
  listenClose(l: (why: string) => void): void {
    this.onClose.push(l);
  }

  /**
   * Resolves with the view (held now or pushed later) that satisfies `pred`; fails if the connection
   * closes first. Waiting on pushes, not polling: 10,000 agents polling every few ms would load the
   * benchmark's own process more than the controller it measures.
   */
  viewWhere(pred: (v: AgentView) => boolean): Promise<AgentView> {
    if (this.view && pred(this.view)) return Promise.resolve(this.view);
    if (this.closedBecause) return Promise.reject(new AgentDisconnected(this.closedBecause));
    return new Promise((resolve, reject) => {
      let done = false;
      this.listen((v) => {
        if (!done && pred(v)) {
          done = true;
          resolve(v);
        }
      });
      this.listenClose((why) => {
        if (!done) {
          done = true;
          reject(new AgentDisconnected(why));
        }
      });
    });
  }

  call<T>(method: string, params: unknown): Promise<T> {
    if (this.closedBecause) return Promise.reject(new AgentDisconnected(this.closedBecause));
    const n = ++this.id;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(n, { resolve: resolve as (v: unknown) => void, reject });
      this.ws.send(JSON.stringify({ t: "req", id: n, method, params }));
    });
  }

  close(): void {
    this.onClose.length = 0;
    this.ws.terminate();
  }
}
