/**
 * {@link Uniter} drives one unit: whenever its view or local state changes it asks the resolver for
 * the next hook, runs it under the machine lock, commits the outcome to disk, and reports status.
 * A failed hook leaves the unit in `error` and is retried with backoff (5 s doubling to 5 min).
 */
import { randomUUID } from "node:crypto";
import { appendFile, mkdir, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { AgentView, Logger, UnitView } from "../api/core";
import type { ControllerConnection } from "./connection";
import { runHook } from "./hook-runner";
import type { HookToolServer } from "./hook-tools/server";
import type { HookContext } from "./hook-tools/tools";
import type { MachineLock } from "./machine-lock";
import type { OperatorStore } from "./operators";
import type { HookName } from "./resolver";
import { commitHook, nextHook } from "./resolver";
import type { StatusReporter } from "./status-reporter";
import type { UnitLocalState } from "./unit-state";
import { loadUnitState, saveUnitState } from "./unit-state";

export interface UniterDeps {
  agentDir: string;
  model: () => AgentView["model"];
  machine: string;
  conn: ControllerConnection;
  reporter: StatusReporter;
  tools: HookToolServer;
  operators: OperatorStore;
  lock: MachineLock;
  log: Logger;
  controllerAddresses: () => string[];
}

const RETRY_MIN_MS = 5_000;
const RETRY_MAX_MS = 300_000;

const beforeHookStatus: Partial<Record<HookName, string>> = {
  install: "installing operator",
  stop: "stopping operator",
  remove: "cleaning up prior to removal",
};

export class Uniter {
  private view: UnitView;
  private state!: UnitLocalState;
  private running = false;
  private again = false;
  private closed = false;
  private updateStatusDue = false;
  private updateStatusTimer?: NodeJS.Timeout;
  private retryTimer?: NodeJS.Timeout;
  private retryAt = 0;
  private failures = 0;
  /** The last hook failed, so the workload shows `error` until a hook succeeds. */
  private wasInError = false;
  private readonly abort = new AbortController();
  private intervalS = 300;
  readonly unitDir: string;
  /** Resolves when the unit is gone (dead and cleaned up). */
  readonly done: Promise<void>;
  private markDone!: () => void;

  protected constructor(view: UnitView, private readonly d: UniterDeps) {
    this.view = view;
    this.unitDir = unitDirOf(d.agentDir, view.name);
    this.done = new Promise((r) => (this.markDone = r));
  }

  static async start(view: UnitView, deps: UniterDeps, updateStatusIntervalS: number): Promise<Uniter> {
    const u = new Uniter(view, deps);
    u.state = await loadUnitState(u.unitDir);
    await mkdir(join(u.unitDir, "data"), { recursive: true, mode: 0o700 });
    u.intervalS = updateStatusIntervalS;
    u.kick();
    return u;
  }

  get name(): string { return this.view.name; }
  get localState(): Readonly<UnitLocalState> { return this.state; }

  update(view: UnitView, updateStatusIntervalS: number): void {
    this.view = view;
    if (updateStatusIntervalS !== this.intervalS) { this.intervalS = updateStatusIntervalS; this.scheduleUpdateStatus(); }
    this.kick();
  }

  private kick(): void {
    if (this.closed) return;
    if (this.running) { this.again = true; return; }
    this.running = true;
    this.loop()
      .catch((err: unknown) => {
        this.d.log.error("unit loop failed; retrying", { unit: this.name, err });
        this.scheduleRetry();
      })
      .finally(() => { this.running = false; if (this.again) { this.again = false; this.kick(); } });
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      this.again = false;
      const decision = nextHook(this.view, this.state, this.updateStatusDue);
      if (decision.kind === "idle") return;
      if (decision.kind === "dead") { await this.die(); return; }
      if (this.state.failedHook && Date.now() < this.retryAt && this.view.life === "alive") return; // the retry timer kicks us
      await this.d.lock.run(() => this.runOne(decision.hook));
    }
  }

  private async runOne(hook: HookName): Promise<void> {
    if (this.closed) return;
    const log = this.d.log.child({ unit: this.name, hook });
    const view = this.view;
    const operatorDir = await this.d.operators.ensure(view.operator.hash);
    const before = beforeHookStatus[hook];
    this.d.reporter.post(this.name, {
      ...(before && (hook !== "install" || !this.state.statusSet) ? { workload: { current: "maintenance" as const, message: before } } : {}),
      agent: { current: "executing", message: `running ${hook} hook` },
    });
    const contextId = randomUUID();
    const unregister = this.d.tools.register(contextId, this.hookContext(hook));
    let result;
    try {
      result = await runHook({ operatorDir, hook, env: this.hookEnv(hook, operatorDir, contextId), logPath: join(this.unitDir, "hooks.log"), signal: this.abort.signal });
    } finally {
      unregister();
    }
    if (this.closed) return;
    if (result.exitCode === 0) {
      this.state = commitHook(this.state, hook, view);
      if (hook === "update-status") this.updateStatusDue = false;
      await saveUnitState(this.unitDir, this.state);
      this.failures = 0;
      if (result.ran) log.info("hook completed");
      const report: Parameters<StatusReporter["post"]>[1] = { agent: { current: "idle", message: "" } };
      if (hook === "start" && !this.state.statusSet) report.workload = { current: "unknown", message: "" };
      if (this.wasInError) {
        // Back from error: show what the operator last said, as Juju does after a successful retry.
        report.workload = this.state.statusSet ? { current: this.state.workload.status as "active", message: this.state.workload.message } : { current: this.state.started ? "unknown" : "maintenance", message: "" };
        this.wasInError = false;
      }
      this.d.reporter.post(this.name, report);
      if (hook === "start" || hook === "update-status") this.scheduleUpdateStatus();
    } else {
      this.state = { ...this.state, failedHook: hook };
      await saveUnitState(this.unitDir, this.state);
      const delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** this.failures++);
      this.retryAt = Date.now() + delay;
      this.wasInError = true;
      log.warn("hook failed; will retry", { exit: result.exitCode, retry_in_s: delay / 1000, output: result.tail.split("\n").slice(-3).join(" | ") });
      this.d.reporter.post(this.name, { workload: { current: "error", message: `hook failed: "${hook}"` }, agent: { current: "error", message: `hook failed: "${hook}"` } });
      this.scheduleRetry(delay);
    }
  }

  private scheduleRetry(delay = RETRY_MIN_MS): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.kick(), delay);
    this.retryTimer.unref();
  }

  private scheduleUpdateStatus(): void {
    clearTimeout(this.updateStatusTimer);
    if (!this.state.started || this.closed) return;
    const ms = this.intervalS * 1000 * (0.8 + Math.random() * 0.4); // 80–120 %, as Juju, so units do not fire in step
    this.updateStatusTimer = setTimeout(() => { this.updateStatusDue = true; this.kick(); }, ms);
    this.updateStatusTimer.unref();
  }

  private hookContext(hook: string): HookContext {
    return {
      unit: this.name,
      hook,
      view: () => this.view,
      workloadStatus: () => this.state.workload,
      setWorkloadStatus: async (status, message) => {
        await this.d.reporter.report(this.name, { workload: { current: status as "active", message } });
        this.state.statusSet = true;
        this.state.workload = { status, message };
      },
      setVersion: (version) => this.d.reporter.report(this.name, { version }),
      log: (level, message) => {
        this.d.log.info("operator log", { unit: this.name, level, message });
        appendFile(join(this.unitDir, "hooks.log"), `${new Date().toISOString()} ${level} ${message}\n`).catch(() => undefined);
      },
    };
  }

  private hookEnv(hook: string, operatorDir: string, contextId: string): Record<string, string> {
    const model = this.d.model();
    return {
      PATH: [this.d.tools.toolsDir, dirname(process.execPath), process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin"].join(":"),
      HOME: process.env.HOME ?? "/",
      LANG: process.env.LANG ?? "C.UTF-8",
      STEWARD_UNIT_NAME: this.name,
      STEWARD_APPLICATION_NAME: this.view.app,
      STEWARD_MODEL_NAME: model.name,
      STEWARD_MODEL_UUID: model.uuid,
      STEWARD_MACHINE_ID: this.d.machine,
      STEWARD_HOOK_NAME: hook,
      STEWARD_OPERATOR_DIR: operatorDir,
      STEWARD_UNIT_DATA: join(this.unitDir, "data"),
      STEWARD_CONTEXT_ID: contextId,
      STEWARD_AGENT_SOCKET: this.d.tools.socketPath,
      STEWARD_API_ADDRESSES: this.d.controllerAddresses().join(" "),
    };
  }

  /** The unit ran stop and remove: tell the controller, then forget it locally. */
  private async die(): Promise<void> {
    await this.d.conn.call("unit.dead", { unit: this.name });
    this.d.reporter.forget(this.name);
    await this.cleanup();
  }

  /**
   * The unit left the view without dying (force-removed): run stop and remove if it had got that
   * far, so its workload does not linger, but never fail on them.
   */
  async vanish(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.updateStatusTimer);
    await this.d.lock.run(async () => {
      const operatorDir = await this.d.operators.ensure(this.state.operatorHash || this.view.operator.hash).catch(() => undefined);
      if (!operatorDir) return;
      for (const hook of [this.state.started && !this.state.stopped ? "stop" : "", this.state.installed && !this.state.removed ? "remove" : ""].filter(Boolean)) {
        await runHook({ operatorDir, hook, env: this.hookEnv(hook, operatorDir, "none"), logPath: join(this.unitDir, "hooks.log"), timeoutMs: 60_000 }).catch(() => undefined);
      }
    });
    this.d.reporter.forget(this.name);
    await this.cleanup();
  }

  private async cleanup(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.updateStatusTimer);
    await rm(this.unitDir, { recursive: true, force: true });
    this.d.log.info("unit removed", { unit: this.name });
    this.markDone();
  }

  /** Stops driving the unit (agent shutdown); a running hook is killed and will run again on restart. */
  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.updateStatusTimer);
    this.abort.abort();
  }
}

export function unitDirOf(agentDir: string, unit: string): string {
  return join(agentDir, "units", unit.replace("/", "-"));
}
