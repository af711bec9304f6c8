/**
 * A lightweight simulated agent for benchmarks: one real TLS WebSocket speaking the agent protocol,
 * no hooks. Thousands fit in one process.
 */
import WebSocket from "ws";
import type { AgentView } from "../api";
import { CONTROLLER_TLS_NAME } from "../api";

export class SimAgent {
  view?: AgentView;
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

  static connect(address: string, caCert: string, model: string, machine: string, credential: string): Promise<SimAgent> {
    const ws = new WebSocket(`wss://${address}/v1/agent`, { ca: caCert, servername: CONTROLLER_TLS_NAME, headers: { authorization: `Agent ${model}/${machine}/${credential}` } } as WebSocket.ClientOptions);
    const agent = new SimAgent(ws);
    return new Promise((resolve, reject) => { ws.once("open", () => resolve(agent)); ws.once("error", reject); });
  }

  listen(l: (v: AgentView, at: number) => void): void { this.onView.push(l); }

  call<T>(method: string, params: unknown): Promise<T> {
    const n = ++this.id;
    return new Promise<T>((resolve) => { this.pending.set(n, resolve as (v: unknown) => void); this.ws.send(JSON.stringify({ t: "req", id: n, method, params })); });
  }

  close(): void { this.ws.terminate(); }
}
