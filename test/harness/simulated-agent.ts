/**
 * A minimal agent for tests of the agent protocol: connects to a controller with a machine's
 * credential over a real WebSocket, keeps the latest view pushed to it and makes calls (hook
 * commits, secret.get…), as the agent process does, without running hooks.
 */
import WebSocket from "ws";
import type { AgentView } from "../../api";
import { CONTROLLER_TLS_NAME, errorFromWire } from "../../api";

export interface SimulatedAgent {
  view: () => AgentView | undefined;
  call: <T>(method: string, params: unknown) => Promise<T>;
  close: () => void;
}

export async function simulatedAgent(
  controller: { addresses: string[]; caCert: string },
  model: string,
  machine: string,
  credential: string,
): Promise<SimulatedAgent> {
  let view: AgentView | undefined;
  let id = 0;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  const ws = new WebSocket(`wss://${controller.addresses[0]}/v1/agent`, {
    ca: controller.caCert,
    servername: CONTROLLER_TLS_NAME,
    headers: { authorization: `Agent ${model}/${machine}/${credential}` },
  } as WebSocket.ClientOptions);
  ws.on("message", (d: Buffer) => {
    const f = JSON.parse(d.toString()) as { t: string; id: number; data?: AgentView; result?: unknown; error?: never };
    if (f.t === "push") view = f.data;
    else if (f.t === "res") {
      const p = pending.get(f.id)!;
      pending.delete(f.id);
      if (f.error) p.reject(errorFromWire(f.error, 400));
      else p.resolve(f.result);
    }
  });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  return {
    view: () => view,
    call: <T>(method: string, params: unknown) =>
      new Promise<T>((resolve, reject) => {
        const n = ++id;
        pending.set(n, { resolve: resolve as (v: unknown) => void, reject });
        ws.send(JSON.stringify({ t: "req", id: n, method, params }));
      }),
    close: () => ws.close(),
  };
}
