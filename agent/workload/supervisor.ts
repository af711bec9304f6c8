/**
 * The workload supervisor (Pebble's role): the entrypoint of each workload container, placed there
 * by the pod's init container. It serves the agent on a unix socket in the volume the pod's
 * containers share (protocol.ts), runs the services of the layer the operator sets (services.ts),
 * and answers the container's probes on its own HTTP port: alive while it answers, whatever its
 * services do, so a failing service is restarted by its policy, never the container by the kubelet.
 *
 * It never ends because of what it is sent: every request is bounded in size and time, and any
 * problem is an answer `{ ok: false, error }`. It ends on SIGTERM (the container stopping), after
 * passing SIGTERM on to its services, or when a service's policy says `shutdown`.
 */
import { randomUUID } from "node:crypto";
import { createServer as createHttpServer } from "node:http";
import type { Server as HttpServer } from "node:http";
import { createServer } from "node:net";
import type { Server, Socket } from "node:net";
import { chmod, mkdir, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { execCommand } from "./exec";
import { FileError, pullFile, pushFile } from "./files";
import { LayerError, checkLayer } from "./layer";
import type { PingResult, SupervisorErrorCode, SupervisorResponse } from "./protocol";
import {
  DEFAULT_EXEC_TIMEOUT_MS,
  MAX_EXEC_OUTPUT,
  MAX_EXEC_TIMEOUT_MS,
  MAX_FILE_BYTES,
  MAX_REQUEST_BYTES,
  REQUEST_TIMEOUT_MS,
} from "./protocol";
import { ServiceError, ServiceManager } from "./services";

export interface SupervisorOptions {
  container: string;
  socketPath: string;
  /** The port of the container's probes (GET /v1/health); none when absent. */
  healthPort?: number;
  /** @default "0.0.0.0" (the kubelet probes the pod's IP) */
  healthHost?: string;
  log?: (line: string) => void;
  /** A service's policy asked for the supervisor to end (the default ends the process). */
  onShutdown?: (code: number) => void;
}

class RequestError extends Error {
  constructor(
    readonly code: SupervisorErrorCode,
    message: string,
  ) {
    super(message);
  }
}

const OPS = ["ping", "layer", "start", "stop", "restart", "services", "exec", "push", "pull"];
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === "string");

export class Supervisor {
  readonly bootId = randomUUID();
  private server?: Server;
  private http?: HttpServer;
  private readonly services: ServiceManager;
  private readonly sockets = new Set<Socket>();
  private stopping?: Promise<void>;
  /** Changes to the services (layer, start, stop, restart) run one at a time, in arrival order. */
  private changing: Promise<unknown> = Promise.resolve();
  /** The port the probes are served on (when asked for port 0). */
  healthPort = 0;

  private constructor(private readonly o: SupervisorOptions) {
    this.services = new ServiceManager({
      log: (line) => this.log(line),
      onShutdown: (code, why) => {
        this.log(`${why}: the supervisor ends`);
        void this.stop().then(() => (o.onShutdown ?? ((c: number) => process.exit(c)))(code));
      },
    });
  }

  static async start(o: SupervisorOptions): Promise<Supervisor> {
    const s = new Supervisor(o);
    await mkdir(dirname(o.socketPath), { recursive: true });
    await rm(o.socketPath, { force: true }); // left by a previous run of this container
    const server = createServer({ allowHalfOpen: true }, (sock) => s.accept(sock));
    s.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(o.socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    // Only the pod's agent talks here: it runs as user and group 10001, the workload as its image
    // says; the socket's group is the pod's fsGroup (10001, inherited from the shared volume).
    await chmod(o.socketPath, 0o660);
    server.on("error", (err) => s.log(`socket server error: ${err.message}`));
    if (o.healthPort !== undefined) {
      const http = createHttpServer((req, res) => {
        req.resume();
        const ok = (req.url ?? "").split("?")[0] === "/v1/health" && (req.method === "GET" || req.method === "HEAD");
        const body = ok
          ? `{"healthy":true,"container":${JSON.stringify(o.container)}}\n`
          : "not found: GET /v1/health\n";
        res.writeHead(ok ? 200 : 404, {
          "content-type": ok ? "application/json" : "text/plain",
          "content-length": Buffer.byteLength(body),
        });
        res.end(req.method === "HEAD" ? undefined : body);
      });
      http.requestTimeout = 5000;
      http.headersTimeout = 5000;
      http.on("clientError", (_e, sock) => sock.destroy());
      s.http = http;
      await new Promise<void>((resolve, reject) => {
        http.once("error", reject);
        http.listen(o.healthPort, o.healthHost ?? "0.0.0.0", () => {
          http.off("error", reject);
          resolve();
        });
      });
      s.healthPort = (http.address() as { port: number }).port;
    }
    s.log(
      `supervisor of container ${o.container} listening on ${o.socketPath}${o.healthPort !== undefined ? `, probes on port ${s.healthPort}` : ""}`,
    );
    return s;
  }

  private log(line: string): void {
    (this.o.log ?? ((l: string) => process.stderr.write(`${new Date().toISOString()} [supervisor] ${l}\n`)))(line);
  }

  /** One request per connection: a JSON line, answered by a JSON line, then the connection ends. */
  private accept(sock: Socket): void {
    this.sockets.add(sock);
    sock.on("close", () => {
      clearTimeout(timer);
      this.sockets.delete(sock);
    });
    sock.on("error", () => undefined);
    const chunks: Buffer[] = [];
    let size = 0,
      done = false;
    const answer = (res: SupervisorResponse): void => {
      if (done) return;
      done = true;
      // What the peer still sends is read and dropped (closing on unread input would reset the
      // connection and lose this answer); a peer that never closes is cut off by the timer.
      sock.removeAllListeners("data");
      sock.resume();
      sock.end(JSON.stringify(res) + "\n");
      setTimeout(() => sock.destroy(), REQUEST_TIMEOUT_MS).unref();
    };
    const refuse = (code: SupervisorErrorCode, message: string): void =>
      answer({ ok: false, error: { code, message } });
    const timer = setTimeout(
      () => refuse("bad-request", `no whole request line within ${REQUEST_TIMEOUT_MS / 1000} s`),
      REQUEST_TIMEOUT_MS,
    );
    sock.on("data", (d: Buffer) => {
      const nl = d.indexOf(0x0a);
      const part = nl < 0 ? d : d.subarray(0, nl);
      size += part.length;
      if (size > MAX_REQUEST_BYTES) {
        clearTimeout(timer);
        refuse("too-large", `the request is larger than ${MAX_REQUEST_BYTES} bytes`);
        return;
      }
      chunks.push(part);
      if (nl < 0) return;
      clearTimeout(timer); // the request is whole: an exec may take longer than a request may take to arrive
      sock.pause();
      this.handle(Buffer.concat(chunks).toString("utf8"))
        .then((result) => answer({ ok: true, result }))
        .catch((err: unknown) =>
          refuse(
            err instanceof RequestError || err instanceof ServiceError || err instanceof FileError
              ? err.code
              : "failed",
            (err as Error).message,
          ),
        );
    });
    sock.on("end", () => {
      if (!done && !sock.isPaused())
        refuse(
          "bad-request",
          size === 0 ? "empty request: send one JSON object on a line" : "the request line did not end with a newline",
        );
    });
  }

  private async handle(line: string): Promise<unknown> {
    let req: Record<string, unknown>;
    try {
      req = JSON.parse(line) as Record<string, unknown>;
    } catch (err) {
      throw new RequestError("bad-request", `the request is not JSON: ${(err as Error).message}`);
    }
    if (typeof req !== "object" || req === null || Array.isArray(req))
      throw new RequestError("bad-request", "the request must be a JSON object with an op");
    if (typeof req.op !== "string" || !OPS.includes(req.op))
      throw new RequestError(
        "bad-request",
        `unknown op ${JSON.stringify(req.op)?.slice(0, 100)} (known: ${OPS.join(", ")})`,
      );
    if (this.stopping && req.op !== "ping" && req.op !== "services")
      throw new RequestError("shutting-down", `the supervisor of ${this.o.container} is shutting down`);
    switch (req.op) {
      case "ping":
        return { container: this.o.container, bootId: this.bootId, pid: process.pid } satisfies PingResult;
      case "services":
        return this.services.list();
      case "layer": {
        let layer;
        try {
          layer = checkLayer(req.layer);
        } catch (err) {
          if (err instanceof LayerError) throw new RequestError("bad-request", `bad layer: ${err.message}`);
          throw err;
        }
        return this.serially(() => this.services.replan(layer));
      }
      case "start":
      case "stop":
      case "restart": {
        if (!isStrings(req.services)) throw new RequestError("bad-request", "services must be a list of service names");
        const op = req.op,
          names = req.services;
        await this.serially(() => this.services[op](names));
        return { services: this.services.list().filter((s) => (req.services as string[]).includes(s.name)) };
      }
      case "exec": {
        if (!isStrings(req.command) || req.command.length === 0 || req.command[0] === "")
          throw new RequestError("bad-request", "command must be a non-empty list of strings");
        const timeoutMs = req.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
        if (typeof timeoutMs !== "number" || !(timeoutMs > 0 && timeoutMs <= MAX_EXEC_TIMEOUT_MS))
          throw new RequestError("bad-request", `timeoutMs must be from 1 to ${MAX_EXEC_TIMEOUT_MS}`);
        if (
          req.environment !== undefined &&
          (typeof req.environment !== "object" ||
            req.environment === null ||
            !Object.values(req.environment).every((v) => typeof v === "string"))
        )
          throw new RequestError("bad-request", "environment must map names to strings");
        if (req.workingDir !== undefined && (typeof req.workingDir !== "string" || !req.workingDir.startsWith("/")))
          throw new RequestError("bad-request", "workingDir must be an absolute path");
        if (req.stdin !== undefined && (typeof req.stdin !== "string" || req.stdin.length > MAX_EXEC_OUTPUT))
          throw new RequestError("bad-request", `stdin must be a string of at most ${MAX_EXEC_OUTPUT} characters`);
        return execCommand({
          command: req.command,
          timeoutMs,
          ...(req.environment ? { environment: req.environment as Record<string, string> } : {}),
          ...(req.workingDir ? { workingDir: req.workingDir as string } : {}),
          ...(req.stdin !== undefined ? { stdin: req.stdin as string } : {}),
        });
      }
      case "push": {
        if (typeof req.content !== "string")
          throw new RequestError("bad-request", "content must be the file's bytes in base64");
        const mode = req.mode ?? 0o644;
        if (!Number.isInteger(mode) || (mode as number) < 0 || (mode as number) > 0o7777)
          throw new RequestError("bad-request", "mode must be a file mode from 0 to 07777");
        const content = Buffer.from(req.content, "base64");
        if (content.length > MAX_FILE_BYTES)
          throw new RequestError(
            "too-large",
            `the file is ${content.length} bytes; at most ${MAX_FILE_BYTES} bytes may be pushed`,
          );
        await pushFile(req.path, content, mode as number, req.makeDirs !== false);
        return { path: req.path, bytes: content.length };
      }
      case "pull":
        return pullFile(req.path);
    }
    throw new RequestError("bad-request", "unreachable");
  }

  private serially<T>(change: () => Promise<T>): Promise<T> {
    const run = this.changing.then(change, change);
    this.changing = run.catch(() => undefined);
    return run;
  }

  /** Stops serving and stops every service (SIGTERM, then SIGKILL after its kill-delay). */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.log("stopping: passing SIGTERM on to the services");
      await this.services.stopAll();
      this.server?.close();
      this.http?.close();
      for (const s of this.sockets) s.destroy();
      await rm(this.o.socketPath, { force: true }).catch(() => undefined);
      this.log("stopped");
    })();
    return this.stopping;
  }
}
