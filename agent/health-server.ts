/**
 * The agent's probe endpoint in a Kubernetes pod (plain HTTP; the kubelet probes it inside the pod's
 * network): `GET /livez` and `GET /readyz` answer 200 or 503 with a one-line reason, anything else
 * 404 (405 for other methods). The checks are plain functions of the agent's memory: nothing here
 * waits on the controller, so a controller that cannot be reached never fails a probe.
 */
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { POD_LIVENESS_PATH, POD_READINESS_PATH } from "../api/core";

export interface HealthCheck {
  ok: boolean;
  reason: string;
}

export interface HealthChecks {
  live(): HealthCheck;
  ready(): HealthCheck;
}

/** A reason is a line, not a document: the kubelet keeps only a little of a probe's answer anyway. */
const MAX_REASON = 1024;

export class HealthServer {
  private server?: Server;

  /** `checks` may be swapped while serving (the pod's agent starts after its configuration appears). */
  constructor(private readonly o: { host: string; port: number; checks: () => HealthChecks }) {}

  /** Listens; answers the port (useful when asked for port 0). */
  async start(): Promise<number> {
    const server = createServer((req, res) => this.answer(req, res));
    // A probe is one small request: slow or oversized clients are cut off rather than held.
    server.requestTimeout = 5_000;
    server.headersTimeout = 5_000;
    server.keepAliveTimeout = 5_000;
    server.maxHeadersCount = 50;
    server.on("clientError", (_err, socket) => socket.destroy());
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.o.port, this.o.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    return (server.address() as AddressInfo).port;
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    req.resume();
    const path = (req.url ?? "").split("?")[0];
    let status: number;
    let body: string;
    if (path !== POD_LIVENESS_PATH && path !== POD_READINESS_PATH) {
      [status, body] = [404, `not found: this endpoint serves GET ${POD_LIVENESS_PATH} and GET ${POD_READINESS_PATH}`];
    } else if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      [status, body] = [405, `${req.method ?? "this method"} is not allowed: use GET or HEAD`];
    } else {
      const check = this.run(path === POD_LIVENESS_PATH ? "live" : "ready");
      [status, body] = [check.ok ? 200 : 503, check.reason || (check.ok ? "ok" : "not ok")];
    }
    const text = body.replace(/[\r\n]+/g, " ").slice(0, MAX_REASON) + "\n";
    res.writeHead(status, {
      "content-type": "text/plain; charset=utf-8",
      "cache-control": "no-store",
      "content-length": Buffer.byteLength(text),
    });
    res.end(req.method === "HEAD" ? undefined : text);
  }

  /** A check that throws is a failed check with its message, never a failed server. */
  private run(which: keyof HealthChecks): HealthCheck {
    try {
      return this.o.checks()[which]();
    } catch (err) {
      return { ok: false, reason: `the ${which} check failed: ${(err as Error).message}` };
    }
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
