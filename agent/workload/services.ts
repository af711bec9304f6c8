/**
 * The services a supervisor runs, by its layer: each a process group of its own (so stopping it
 * stops what it started), restarted after it exits as its `on-success`/`on-failure` say, with a
 * back-off that grows by `backoff-factor` up to `backoff-limit` and starts over once it has run
 * that long. Stopping sends SIGTERM, then SIGKILL after `kill-delay`. A service's output goes to
 * the supervisor's own (the container's log).
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import type { Layer, ServiceSpec } from "./layer";
import { sameService } from "./layer";
import type { ReplanResult, ServiceInfo, ServiceState } from "./protocol";

export class ServiceError extends Error {
  constructor(
    readonly code: "not-found" | "failed",
    message: string,
  ) {
    super(message);
  }
}

class Service {
  proc?: ChildProcess;
  exited?: Promise<void>;
  state: ServiceState = "inactive";
  restarts = 0;
  backoffMs = 0;
  timer?: NodeJS.Timeout;
  startedAt = 0;
  lastExit?: ServiceInfo["lastExit"];
  message?: string;
  /** Set while a stop is under way: its exit is wanted, not a failure. */
  stopping = false;
  constructor(
    readonly name: string,
    public spec: ServiceSpec,
  ) {}
}

export interface ServiceManagerOptions {
  /** A service's on-success/on-failure said `shutdown`: the supervisor should end (with this code). */
  onShutdown: (code: number, why: string) => void;
  log: (line: string) => void;
}

export class ServiceManager {
  private readonly services = new Map<string, Service>();
  private closing = false;

  constructor(private readonly o: ServiceManagerOptions) {}

  list(): ServiceInfo[] {
    return [...this.services.values()]
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((s) => ({
        name: s.name,
        startup: s.spec.startup,
        current: s.state,
        restarts: s.restarts,
        ...(s.proc?.pid !== undefined && s.state === "active" ? { pid: s.proc.pid } : {}),
        ...(s.state === "backoff" ? { backoffMs: s.backoffMs } : {}),
        ...(s.lastExit ? { lastExit: s.lastExit } : {}),
        ...(s.message ? { message: s.message } : {}),
      }));
  }

  /**
   * Replaces the layer and replans: services gone are stopped, running ones whose definition changed
   * are restarted, and every `startup: enabled` service not running is started.
   */
  async replan(layer: Layer): Promise<ReplanResult> {
    const result: ReplanResult = { started: [], stopped: [], restarted: [] };
    for (const [name, s] of [...this.services]) {
      if (layer.services[name]) continue;
      if (s.state === "active" || s.state === "backoff") {
        await this.stopOne(s);
        result.stopped.push(name);
      }
      this.services.delete(name);
    }
    for (const [name, spec] of Object.entries(layer.services)) {
      const s = this.services.get(name);
      if (!s) {
        this.services.set(name, new Service(name, spec));
        continue;
      }
      if (sameService(s.spec, spec)) continue;
      const running = s.state === "active" || s.state === "backoff";
      if (running) await this.stopOne(s);
      s.spec = spec;
      if (running) {
        await this.startOne(s);
        result.restarted.push(name);
      }
    }
    for (const s of this.services.values()) {
      if (
        s.spec.startup === "enabled" &&
        s.state !== "active" &&
        s.state !== "backoff" &&
        !result.restarted.includes(s.name)
      ) {
        await this.startOne(s);
        result.started.push(s.name);
      }
    }
    return result;
  }

  private find(names: string[]): Service[] {
    if (names.length === 0) throw new ServiceError("not-found", "name at least one service");
    return names.map((n) => {
      const s = this.services.get(n);
      if (!s)
        throw new ServiceError(
          "not-found",
          `no service "${n}" in the layer (services: ${[...this.services.keys()].sort().join(", ") || "none; set a layer first"})`,
        );
      return s;
    });
  }

  /** Starts services not running (a running one is left as it is). */
  async start(names: string[]): Promise<void> {
    for (const s of this.find(names))
      if (s.state !== "active") {
        clearTimeout(s.timer);
        await this.startOne(s);
      }
  }

  async stop(names: string[]): Promise<void> {
    await Promise.all(this.find(names).map((s) => this.stopOne(s)));
  }

  async restart(names: string[]): Promise<void> {
    for (const s of this.find(names)) {
      await this.stopOne(s);
      await this.startOne(s);
    }
  }

  /** The supervisor is ending: every service gets SIGTERM (then SIGKILL after its kill-delay). */
  async stopAll(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.services.values()].map((s) => this.stopOne(s)));
  }

  /** Spawns the service; resolves once it runs, rejects (state error) if it could not be started. */
  private startOne(s: Service): Promise<void> {
    if (this.closing) return Promise.reject(new ServiceError("failed", "the supervisor is shutting down"));
    s.stopping = false;
    s.message = undefined;
    const { command, environment, workingDir } = s.spec;
    const proc = spawn(command[0]!, command.slice(1), {
      env: { ...process.env, ...environment },
      ...(workingDir ? { cwd: workingDir } : {}),
      stdio: ["ignore", "inherit", "inherit"],
      detached: true,
    });
    s.proc = proc;
    s.startedAt = Date.now();
    let spawned = false;
    // A process that never started (no such program) has no exit to act on: its error says it all.
    s.exited = new Promise((resolve) =>
      proc.once("close", (code, signal) => {
        if (spawned) this.exited(s, proc, code, signal);
        resolve();
      }),
    );
    return new Promise((resolve, reject) => {
      proc.once("spawn", () => {
        spawned = true;
        s.state = "active";
        this.o.log(`service ${s.name} started (pid ${proc.pid})`);
        resolve();
      });
      proc.once("error", (err) => {
        s.state = "error";
        s.message = `could not start ${command[0]}: ${err.message}`;
        s.proc = undefined;
        this.o.log(`service ${s.name}: ${s.message}`);
        reject(new ServiceError("failed", `service ${s.name} ${s.message}`));
      });
    });
  }

  private exited(s: Service, proc: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (s.proc !== proc) return;
    s.proc = undefined;
    s.lastExit = { code, signal, at: new Date().toISOString() };
    if (s.stopping || this.closing) {
      s.state = "inactive";
      return;
    }
    const success = code === 0;
    const action = success ? s.spec.onSuccess : s.spec.onFailure;
    this.o.log(
      `service ${s.name} exited (${signal ? `signal ${signal}` : `code ${code}`}); ${success ? "on-success" : "on-failure"}: ${action}`,
    );
    if (action === "shutdown") {
      s.state = success ? "inactive" : "error";
      this.o.onShutdown(
        success ? 0 : 1,
        `service ${s.name} exited and its ${success ? "on-success" : "on-failure"} is shutdown`,
      );
      return;
    }
    if (action === "ignore") {
      s.state = success ? "inactive" : "error";
      if (!success) s.message = `exited with ${signal ?? `code ${code}`} (on-failure: ignore)`;
      return;
    }
    // A service that ran as long as the back-off limit was healthy: its next failure starts the back-off over.
    if (Date.now() - s.startedAt >= s.spec.backoffLimitMs) s.backoffMs = 0;
    s.backoffMs =
      s.backoffMs === 0 ? s.spec.backoffDelayMs : Math.min(s.backoffMs * s.spec.backoffFactor, s.spec.backoffLimitMs);
    s.state = "backoff";
    s.timer = setTimeout(() => {
      if (s.state !== "backoff" || this.closing) return;
      s.restarts++;
      this.startOne(s).catch(() => undefined); // its state says why
    }, s.backoffMs);
  }

  private async stopOne(s: Service): Promise<void> {
    clearTimeout(s.timer);
    s.stopping = true;
    const proc = s.proc;
    if (!proc || proc.pid === undefined) {
      if (s.state === "backoff") s.state = "inactive";
      s.backoffMs = 0;
      return;
    }
    signalGroup(proc.pid, "SIGTERM");
    const kill = setTimeout(() => signalGroup(proc.pid!, "SIGKILL"), s.spec.killDelayMs);
    await s.exited;
    clearTimeout(kill);
    // Whatever the service left in its group goes with it.
    signalGroup(proc.pid, "SIGKILL");
    s.backoffMs = 0;
    this.o.log(`service ${s.name} stopped`);
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    /* gone */
  }
}
