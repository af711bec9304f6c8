/**
 * A lightweight simulated agent for benchmarks: one real TLS WebSocket speaking the agent protocol,
 * no hooks. Thousands fit in one process. Like a real agent it retries a refused login (the login
 * limiter's 503) or a failed dial after a jittered backoff, never sooner than the controller's
 * Retry-After.
 */
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
  constructor(readonly status: number, readonly retryAfterSeconds: number) { super(`Unexpected server response: ${status}`); }
}

export class SimAgent {
  view?: AgentView;
  /** Failed logins (refused with 503 or dropped) before this agent got in. */
  refusals = 0;
  private id = 0;
  private readonly pending = new Map<number, (v: unknown) => void>();
  private readonly onView: ((v: AgentView, at: number) => void)[] = [];

  protected constructor(private readonly ws: WebSocket) {
    ws.on("message", (d: Buffer) => {
      const at = performance.now();
      const f = JSON.parse(d.toString()) as { t: string; id: number; data?: AgentView; result?: unknown; error?: unknown };
      if (f.t === "push") { this.view = f.data!; for (const l of this.onView) l(this.view, at); }
      else if (f.t === "res") { this.pending.get(f.id)?.(f.error ? Promise.reject(f.error) : f.result); this.pending.delete(f.id); }
    });
    ws.on("error", () => undefined);
  }

  /** Logs in, retrying 503 answers and dropped dials with jittered exponential backoff that honours Retry-After. */
  static async connect(address: string, caCert: string, model: string, machine: string, credential: string): Promise<SimAgent> {
    for (let attempt = 0; ; attempt++) {
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
        await sleep(Math.max(backoff, floor));
      }
    }
  }

  private static connectOnce(address: string, caCert: string, model: string, machine: string, credential: string): Promise<SimAgent> {
    const ws = new WebSocket(`wss://${address}/v1/agent`, { ca: caCert, servername: CONTROLLER_TLS_NAME, headers: { authorization: `Agent ${model}/${machine}/${credential}` }, handshakeTimeout: HANDSHAKE_TIMEOUT_MS } as WebSocket.ClientOptions);
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

  listen(l: (v: AgentView, at: number) => void): void { this.onView.push(l); }

  call<T>(method: string, params: unknown): Promise<T> {
    const n = ++this.id;
    return new Promise<T>((resolve) => { this.pending.set(n, resolve as (v: unknown) => void); this.ws.send(JSON.stringify({ t: "req", id: n, method, params })); });
  }

  close(): void { this.ws.terminate(); }
}
