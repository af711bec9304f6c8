/**
 * {@link Uniter} drives one unit: whenever its view or local state changes it asks the resolver for
 * the next step, runs hooks under the machine lock, commits each hook's writes to the controller
 * and then its outcome to disk, and keeps the unit's leadership claimed or renewed.
 *
 * A failed hook leaves the unit in `error`; it is retried after 5 s, doubling to 5 min, when the
 * model retries automatically, and otherwise waits for `steward resolve`.
 *
 * Delivery is at least once in one narrow window: an agent killed after the controller took a
 * hook's commit but before the local state was saved runs that hook again on restart. The commit
 * is idempotent (same data, same ports, same scope), so operators see at most a repeated hook,
 * never a lost one.
 */
import { appendFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { randomUUID } from "node:crypto";
import type { AgentLogRecord, AgentView, Logger, QueuedAction, UnitView } from "../api/core";
import { StewardError } from "../api/core";
import { ActionRun } from "./action-run";
import type { ControllerConnection } from "./connection";
import { HookRunContext } from "./hook-context";
import type { HookRunDeps } from "./hook-context";
import type { HookProcessRecord } from "./hook-processes";
import type { HookResult, HookRun } from "./hook-runner";
import { failureTail } from "./hook-output";
import { runHook } from "./hook-runner";
import type { HookToolServer } from "./hook-tools/server";
import { UnitLeadership } from "./leadership";
import type { MachineLock } from "./machine-lock";
import type { OperatorStore } from "./operators";
import type { Decision } from "./resolver";
import { applyDecision, commitHook, configHash, nextAction, nextHook } from "./resolver";
import type { Readiness } from "./readiness";
import { unitReadiness } from "./readiness";
import { reconcileRestore } from "./restore-epoch";
import type { StatusReporter } from "./status-reporter";
import type { WorkloadContainers } from "./workload/containers";
import type { HookSpec, UnitLocalState } from "./unit-state";
import { connectedAddress, machineAddress, unitAddress } from "./unit-address";
import { loadUnitState, saveUnitState } from "./unit-state";

export interface UniterDeps {
  agentDir: string;
  model: () => AgentView["model"];
  settings: () => Pick<AgentView, "updateStatusInterval" | "retryHooks" | "leadershipLeaseSeconds" | "restore">;
  machine: string;
  conn: ControllerConnection;
  reporter: StatusReporter;
  tools: HookToolServer;
  operators: OperatorStore;
  lock: MachineLock;
  /** Where the running hook's process group is recorded, for the agent's successor to kill. */
  hookProcesses: HookProcessRecord;
  log: Logger;
  controllerAddresses: () => string[];
  /** This boot of the machine (see boot-id.ts). */
  bootId?: string;
  /** Hands hook output and operator log lines on to the controller (`steward debug-log`). */
  forwardLog?: (record: AgentLogRecord) => void;
  /** The pod's workload containers (Kubernetes only): their supervisors decide `<container>-workload-ready`. */
  workloads?: WorkloadContainers;
  /**
   * Keep a copy of the unit's hook state in the controller after each save, and take it back when
   * the unit's directory has none (a pod made again on a new, empty claim: its node and disk lost).
   */
  hookStateInController?: boolean;
  /** While true (the model is migrating) no hook or action starts; the one running finishes. */
  paused?: () => boolean;
}

const RETRY_MIN_MS = 5_000;
const RETRY_MAX_MS = 300_000;

/** The operator's files could not be had; the unit's status already says why. */
class OperatorUnavailable extends Error {
  constructor(
    readonly retryInMs: number,
    cause: unknown,
  ) {
    super((cause as Error).message, { cause });
  }
}

const beforeHookStatus: Partial<Record<string, string>> = {
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
  private copying = false;
  private copyWaiting?: string;
  private updateStatusDue = false;
  /** Storage released to the controller whose view has not come yet (then nothing is due for it). */
  private readonly released = new Set<string>();
  private updateStatusTimer?: NodeJS.Timeout;
  private retryTimer?: NodeJS.Timeout;
  private retryAt = 0;
  private failures = 0;
  /** Failed attempts in a row to get the operator's files; spaces out the retries. */
  private operatorFailures = 0;
  /** The last hook failed, so the workload shows `error` until a hook succeeds. */
  private wasInError = false;
  /** The agent status last reported, so idle is sent once per quiet period. */
  private reportedAgent: "executing" | "idle" | "error" | undefined;
  /** The operator and config hash last reported applied (with idle). */
  private reportedApplied: string | undefined;
  private intervalS = 300;
  /** Claims and renews the unit's leadership, and answers is-leader by the local guarantee (leadership.ts). */
  readonly leadership: UnitLeadership;
  /**
   * The unit's context for the read-only tools its processes may run outside hooks (hook-tools/server.ts);
   * kept in the unit's directory, so processes its hooks left running keep it when the agent restarts.
   */
  private unitContextId = "";
  private unregisterUnitContext?: () => void;
  private readonly abort = new AbortController();
  readonly unitDir: string;
  /** Resolves when the unit is gone (dead and cleaned up). */
  readonly done: Promise<void>;
  private markDone!: () => void;
  private writing: Promise<void> = Promise.resolve();

  protected constructor(
    view: UnitView,
    private readonly d: UniterDeps,
  ) {
    this.view = view;
    this.unitDir = unitDirOf(d.agentDir, view.name);
    this.done = new Promise((r) => (this.markDone = r));
    this.leadership = new UnitLeadership({
      unit: view.name,
      call: (method, params) => d.conn.call(method, params),
      leaseSeconds: () => this.view.leadershipLeaseSeconds ?? d.settings().leadershipLeaseSeconds,
      onError: (err) => d.log.debug("leadership claim failed; will try again", { unit: this.name, err }),
    });
  }

  static async start(view: UnitView, deps: UniterDeps): Promise<Uniter> {
    const u = new Uniter(view, deps);
    if (deps.hookStateInController) await u.takeBackHookState();
    u.state = await loadUnitState(u.unitDir);
    await mkdir(join(u.unitDir, "data"), { recursive: true, mode: 0o700 });
    await u.registerUnitContext();
    u.intervalS = deps.settings().updateStatusInterval;
    // A unit started by an earlier incarnation of the agent runs no start hook now, the only other
    // place the timer is armed: arm it here, or update-status never runs after a restart.
    u.scheduleUpdateStatus();
    u.update(view);
    return u;
  }

  get name(): string {
    return this.view.name;
  }

  /** A workload container's supervisor started answering: `<container>-workload-ready` may be due. */
  workloadChanged(): void {
    this.kick();
  }
  /** Hooks may run again (a migration ended or moved the unit): look for what is due. */
  resume(): void {
    this.kick();
  }
  get localState(): Readonly<UnitLocalState> {
    return this.state;
  }

  update(view: UnitView): void {
    this.view = view;
    const { updateStatusInterval } = this.d.settings();
    if (updateStatusInterval !== this.intervalS) {
      this.intervalS = updateStatusInterval;
      this.scheduleUpdateStatus();
    }
    if (!this.closed) this.leadership.follow(view);
    this.kick();
  }

  /** What a process a hook left running may run outside hooks (OUTSIDE_HOOK_TOOLS: reading, and stopping its workload's services). */
  private async registerUnitContext(): Promise<void> {
    const file = join(this.unitDir, "unit-context");
    this.unitContextId = (await readFile(file, "utf8").catch(() => "")).trim();
    if (!/^[0-9a-f-]{36}$/.test(this.unitContextId)) {
      this.unitContextId = randomUUID();
      await writeFile(file, this.unitContextId, { mode: 0o600 });
    }
    const ctx = new HookRunContext({
      ...this.contextDeps(),
      hook: { name: "" },
      appendLog: () => undefined,
      forwardLog: () => undefined,
      onWorkloadStatus: () => undefined,
    });
    this.unregisterUnitContext = this.d.tools.registerUnit(this.unitContextId, ctx);
  }

  // --- the loop ---

  private kick(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    this.loop()
      .catch((err: unknown) => {
        if (err instanceof OperatorUnavailable) return this.scheduleRetry(err.retryInMs); // already reported
        this.d.log.error("unit loop failed; retrying", { unit: this.name, err });
        this.scheduleRetry(RETRY_MIN_MS);
      })
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      this.again = false;
      if (this.d.paused?.()) return;
      const reconciled = reconcileRestore(this.state, this.d.settings().restore);
      if (reconciled) {
        this.d.log.info("the controller was restored from a backup: revisions seen since are not trusted", {
          unit: this.name,
          epoch: reconciled.storeEpoch,
        });
        await this.save(reconciled);
        this.reportAfterRestore();
      }
      if (await this.settleActions()) continue;
      const retryDue = this.d.settings().retryHooks && Date.now() >= this.retryAt;
      const address = connectedAddress(this.d.conn);
      const view = this.view;
      // Forget what was released once the view no longer has it detaching (it may be attached here again).
      for (const id of this.released)
        if (!view.storage?.some((s) => s.id === id && s.life === "dying")) this.released.delete(id);
      const decision = nextHook(view, this.state, {
        updateStatusDue: this.updateStatusDue,
        retryDue,
        ...(address ? { address } : {}),
        ...(this.d.bootId ? { bootId: this.d.bootId } : {}),
        ...(this.d.workloads ? { workloads: this.d.workloads.ready() } : {}),
      });
      switch (decision.kind) {
        case "idle": {
          const task = nextAction(this.view, this.state);
          if (task) {
            await this.d.lock.run(() => (this.d.paused?.() ? Promise.resolve() : this.runAction(task)));
            break;
          }
          // Idle only when nothing is left to do: never between two hooks that are already due. Then the
          // unit has run the hooks for this view's operator and config: said with it, so that a wait
          // after a change can tell this idle from the one before the change reached the unit.
          const applied = { operator: view.operator.hash, config: configHash(view.config) };
          const fresh = this.reportedApplied !== `${applied.operator}/${applied.config}`;
          if (!this.state.failedHook && (this.reportedAgent !== "idle" || fresh)) {
            this.reportedAgent = "idle";
            this.reportedApplied = `${applied.operator}/${applied.config}`;
            this.d.reporter.post(this.name, { agent: { current: "idle", message: "" }, applied });
          }
          return;
        }
        case "dead":
          await this.die();
          return;
        case "leave":
          await this.d.conn.call("relation.leave", { unit: this.name, relationId: decision.relationId });
          await this.save(applyDecision(this.state, decision));
          break;
        case "resign":
          await this.save(applyDecision(this.state, decision));
          break;
        case "release-storage":
          // Told once: the view that follows no longer lists it (the loop runs again when it comes).
          if (this.released.has(decision.storageId)) return;
          await this.d.conn.call("storage.release", { unit: this.name, id: decision.storageId });
          this.released.add(decision.storageId);
          break;
        case "skip":
          await this.skip(decision);
          break;
        case "run": {
          if (this.view.resolve === "retry") await this.d.conn.call("unit.resolved", { unit: this.name });
          // Decided before the lock was had: a migration may have begun meanwhile, and then it waits.
          await this.d.lock.run(() => (this.d.paused?.() ? Promise.resolve() : this.runOne(decision.hook)));
          break;
        }
      }
    }
  }

  /** `steward resolve --no-retry`: the failed hook counts as done without running again. */
  private async skip(d: Extract<Decision, { kind: "skip" }>): Promise<void> {
    await this.save(commitHook(this.state, d.hook, this.view, this.machineNow(connectedAddress(this.d.conn))));
    await this.d.conn.call("unit.resolved", { unit: this.name });
    this.recovered();
  }

  private async runOne(hook: HookSpec): Promise<void> {
    if (this.closed) return;
    const log = this.d.log.child({ unit: this.name, hook: hook.name });
    const view = this.view;
    const operatorDir = await this.operatorDir(view.operator.hash);
    const before = beforeHookStatus[hook.kind];
    this.reportedAgent = "executing";
    this.d.reporter.post(this.name, {
      ...(before && (hook.kind !== "install" || !this.state.statusSet)
        ? { workload: { current: "maintenance" as const, message: before } }
        : {}),
      agent: { current: "executing", message: `running ${hook.name} hook` },
    });
    const ctx = new HookRunContext({ ...this.runDeps(hook.name), hook });
    const contextId = randomUUID();
    const unregister = this.d.tools.register(contextId, ctx);
    // The address this hook is told is the one its commit records (config-changed runs again if it moves).
    const address = connectedAddress(this.d.conn);
    let result;
    try {
      result = await this.runRecorded({
        operatorDir,
        hook: hook.name,
        env: this.hookEnv(hook, operatorDir, contextId, address ?? machineAddress()),
        logPath: join(this.unitDir, "hooks.log"),
        signal: this.abort.signal,
        onLine: (line, stream) => this.forward(hook.name, "hook", stream === "stderr" ? "WARNING" : "INFO", line),
      });
    } finally {
      unregister();
    }
    if (this.closed) return;
    if (result.exitCode === 0) {
      const commit = ctx.commit(
        hook.kind === "relation-created" && hook.relationId !== undefined ? [hook.relationId] : [],
      );
      try {
        if (!HookRunContext.isEmpty(commit)) await this.d.conn.call("hook.commit", commit);
      } catch (err) {
        // The controller refused what the hook wrote (e.g. leadership moved): nothing is committed and the hook counts as failed.
        const why = `its changes were refused: ${(err as Error).message}`;
        return this.failed(hook, why, log, why);
      }
      let next = commitHook(this.state, hook, view, this.machineNow(address));
      if (commit.ports) next = { ...next, ports: ctx.openedPorts() };
      await this.save(next);
      if (hook.kind === "update-status") this.updateStatusDue = false;
      if (result.ran) log.info("hook completed");
      this.recovered(hook.kind === "start" && !this.state.statusSet);
      if (hook.kind === "start" || hook.kind === "update-status") this.scheduleUpdateStatus();
    } else {
      await this.failed(
        hook,
        `exit ${result.exitCode}: ${result.tail.split("\n").slice(-3).join(" | ")}`,
        log,
        `${result.tail}\n(exit status ${result.exitCode})`,
      );
    }
  }

  // --- actions ---

  /**
   * Finishes what an earlier action left: a report the controller has not taken yet is sent (before
   * anything else runs), and an action found still running was cut off by the agent's death: it is
   * reported failed, never run again. Returns whether it did anything.
   */
  private async settleActions(): Promise<boolean> {
    const { unsentTask, runningTask } = this.state;
    if (unsentTask) {
      await this.d.conn.call("task.finish", unsentTask);
      await this.save({ ...this.state, unsentTask: undefined, lastTask: Math.max(this.state.lastTask, unsentTask.id) });
      return true;
    }
    if (runningTask !== undefined) {
      const cut = new ActionRun({ id: runningTask, action: "", params: {} });
      cut.fail("the agent stopped while the action ran; it was not run again");
      await this.save({ ...this.state, runningTask: undefined, unsentTask: cut.report(this.name, -1, "") });
      return true;
    }
    return false;
  }

  /** Runs one queued action; its outcome is saved to be reported (see {@link settleActions}). */
  private async runAction(task: QueuedAction): Promise<void> {
    if (this.closed) return;
    await this.save({ ...this.state, runningTask: task.id });
    try {
      await this.d.conn.call("task.start", { unit: this.name, id: task.id });
    } catch (err) {
      // No longer queued (its unit is going): nothing to run or report.
      if (StewardError.isInstance(err) && err.code === "not-found") {
        await this.save({ ...this.state, runningTask: undefined, lastTask: Math.max(this.state.lastTask, task.id) });
        return;
      }
      await this.save({ ...this.state, runningTask: undefined });
      throw err;
    }
    const log = this.d.log.child({ unit: this.name, action: task.action, task: task.id });
    const operatorDir = await this.operatorDir(this.view.operator.hash);
    this.reportedAgent = "executing";
    this.d.reporter.post(this.name, { agent: { current: "executing", message: `running action ${task.action}` } });
    const action = new ActionRun(task);
    const label = `action ${task.action}`;
    const ctx = new HookRunContext({ ...this.runDeps(label), hook: { name: task.action }, action });
    const contextId = randomUUID();
    const unregister = this.d.tools.register(contextId, ctx);
    let result: HookResult;
    try {
      const env: Record<string, string> = {
        ...this.hookEnv(
          { name: task.action },
          operatorDir,
          contextId,
          connectedAddress(this.d.conn) ?? machineAddress(),
        ),
        STEWARD_ACTION_NAME: task.action,
        STEWARD_ACTION_ID: String(task.id),
      };
      delete env.STEWARD_HOOK_NAME;
      result = await this.runRecorded({
        operatorDir,
        folder: "actions",
        hook: task.action,
        env,
        logPath: join(this.unitDir, "hooks.log"),
        signal: this.abort.signal,
        onLine: (line, stream) => this.forward(label, "hook", stream === "stderr" ? "WARNING" : "INFO", line),
      });
    } finally {
      unregister();
    }
    if (this.closed) return; // the agent is stopping: the next one reports it cut off
    if (!result.ran) action.fail(`the operator has no executable actions/${task.action} (nor a dispatch)`);
    let report = action.report(this.name, result.exitCode, result.tail);
    // What the unit believes open, as after a hook: the next hook or action's opened-ports (and so
    // its close-port of a port it moved away from) starts from what this action left.
    let ports: string[] | undefined;
    if (report.status === "completed") {
      const commit = ctx.commit([]);
      try {
        if (!HookRunContext.isEmpty(commit)) await this.d.conn.call("hook.commit", commit);
        if (commit.ports) ports = ctx.openedPorts();
      } catch (err) {
        action.fail(`its relation data or ports were refused: ${(err as Error).message}`);
        report = action.report(this.name, result.exitCode, result.tail);
      }
    }
    await this.save({ ...this.state, ...(ports ? { ports } : {}), runningTask: undefined, unsentTask: report });
    log.info(
      report.status === "completed" ? "action completed" : "action failed",
      report.message ? { why: report.message } : {},
    );
    // A unit waiting in error shows so again once the action is over.
    if (this.state.failedHook) {
      this.reportedAgent = "error";
      this.d.reporter.post(this.name, {
        agent: { current: "error", message: `hook failed: "${this.state.failedHook.name}"` },
      });
    }
  }

  /** Runs a hook with its process group recorded while it runs (see hook-processes.ts). */
  private async runRecorded(run: HookRun): Promise<HookResult> {
    try {
      return await runHook({ ...run, onSpawn: (pid) => this.d.hookProcesses.started(pid) });
    } finally {
      this.d.hookProcesses.finished();
    }
  }

  /**
   * The unpacked operator. When it cannot be had (download failed, bad content) the unit says why
   * in its status instead of waiting silently, and tries again later with backoff.
   */
  private async operatorDir(hash: string): Promise<string> {
    try {
      const dir = await this.d.operators.ensure(hash);
      this.operatorFailures = 0;
      return dir;
    } catch (err) {
      const message = (err as Error).message;
      this.d.log.warn("operator not available; will retry", { unit: this.name, err });
      this.reportedAgent = "error";
      this.wasInError = true;
      this.d.reporter.post(this.name, {
        workload: { current: "error", message },
        agent: { current: "error", message },
      });
      const delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** this.operatorFailures++);
      throw new OperatorUnavailable(delay, err);
    }
  }

  /** `output`: what the hook printed last, shown by `steward show-unit` while the unit is in error. */
  private async failed(hook: HookSpec, why: string, log: Logger, output: string): Promise<void> {
    await this.save({ ...this.state, failedHook: hook });
    const delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** this.failures++);
    this.retryAt = Date.now() + delay;
    this.wasInError = true;
    this.reportedAgent = "error";
    const retrying = this.d.settings().retryHooks;
    log.warn(retrying ? "hook failed; will retry" : "hook failed; waiting for steward resolve", {
      why,
      ...(retrying ? { retry_in_s: delay / 1000 } : {}),
    });
    this.d.reporter.post(this.name, {
      workload: { current: "error", message: `hook failed: "${hook.name}"` },
      agent: { current: "error", message: `hook failed: "${hook.name}"` },
      failure: { hook: hook.name, output: failureTail(output) },
    });
    if (retrying) this.scheduleRetry(delay);
  }

  /**
   * The restored controller holds this unit's status as it was at the backup (an agent "executing"
   * that has long been idle, an old message): tell it what is true now. The loop reports the agent
   * status again once it is idle or runs something.
   */
  private reportAfterRestore(): void {
    if (!this.state.installed) return;
    if (this.state.failedHook) {
      const message = `hook failed: "${this.state.failedHook.name}"`;
      this.reportedAgent = "error";
      this.d.reporter.post(this.name, {
        workload: { current: "error", message },
        agent: { current: "error", message },
      });
      return;
    }
    this.reportedAgent = undefined;
    this.d.reporter.post(this.name, {
      workload: this.state.statusSet
        ? { current: this.state.workload.status as "active", message: this.state.workload.message }
        : { current: this.state.started ? "unknown" : "maintenance", message: "" },
    });
  }

  /** A hook succeeded; after an error, show again what the operator last said (the loop reports idle once nothing is due). */
  private recovered(neverSetStatus = false): void {
    this.failures = 0;
    this.retryAt = 0;
    let workload: Parameters<StatusReporter["post"]>[1]["workload"];
    if (neverSetStatus) workload = { current: "unknown", message: "" };
    if (this.wasInError) {
      workload = this.state.statusSet
        ? { current: this.state.workload.status as "active", message: this.state.workload.message }
        : { current: this.state.started ? "unknown" : "maintenance", message: "" };
      this.wasInError = false;
      if (this.reportedAgent === "error") this.reportedAgent = "executing";
    }
    if (workload) this.d.reporter.post(this.name, { workload });
  }

  private forward(hook: string, source: "hook" | "operator", level: AgentLogRecord["level"], message: string): void {
    this.d.forwardLog?.({ ts: new Date().toISOString(), level, source, unit: this.name, hook, message });
  }

  /** The unit's readiness (readiness.ts): what /readyz of a pod's agent answers. */
  readiness(): Readiness {
    return unitReadiness(this.name, this.state, this.d.bootId);
  }

  /** What every tool context of this unit shares: a hook's, an action's, and the one outside hooks. */
  private contextDeps(): Omit<HookRunDeps, "hook" | "action" | "appendLog" | "forwardLog" | "onWorkloadStatus"> {
    return {
      unit: this.name,
      view: () => this.view,
      state: () => this.state,
      conn: this.d.conn,
      leadership: this.leadership,
      reporter: this.d.reporter,
      log: this.d.log,
      ...this.readinessDeps(),
      ...(this.d.workloads ? { workload: this.d.workloads } : {}),
    };
  }

  /** A hook's or an action's (`label` in debug-log): its output to hooks.log, its status-set kept in the unit's state. */
  private runDeps(label: string): Omit<HookRunDeps, "hook" | "action"> {
    return {
      ...this.contextDeps(),
      appendLog: (line) => {
        appendFile(join(this.unitDir, "hooks.log"), line + "\n").catch(() => undefined);
      },
      forwardLog: (level, message) => this.forward(label, "operator", level, message),
      onWorkloadStatus: (status, message) => {
        this.state.statusSet = true;
        this.state.workload = { status, message };
      },
    };
  }

  private readinessDeps(): Pick<HookRunDeps, "readiness" | "onReadiness"> {
    return {
      readiness: () => this.readiness(),
      // Saved at once, not at the hook's end: the probe acts on it now, and it must outlive the agent.
      onReadiness: (ready, message) =>
        this.save({
          ...this.state,
          readiness: { ready, message, ...(this.d.bootId ? { bootId: this.d.bootId } : {}) },
        }),
    };
  }

  private async save(next: UnitLocalState): Promise<void> {
    this.state = next;
    // One write at a time, in order: a hook tool (readiness-set) may save while the loop does.
    const write = this.writing.then(() => saveUnitState(this.unitDir, next));
    this.writing = write.catch(() => undefined);
    await write;
    if (this.d.hookStateInController) this.copyHookState(next);
  }

  /**
   * Sends the latest hook state to the controller, one copy in flight, a newer one replacing any
   * still waiting. The copy may lag the disk by the hook just committed: taken back after a lost
   * volume, that one hook runs again (at least once, as after a crash between commit and save).
   */
  private copyHookState(s: UnitLocalState): void {
    this.copyWaiting = JSON.stringify(s);
    if (this.copying) return;
    this.copying = true;
    void (async () => {
      while (this.copyWaiting !== undefined && !this.closed) {
        const text = this.copyWaiting;
        this.copyWaiting = undefined;
        try {
          await this.d.conn.call("unit.hook-state.put", { unit: this.name, state: text });
        } catch (err) {
          if (StewardError.isInstance(err) && err.code === "not-found") break; // the unit is gone
          this.copyWaiting ??= text;
          await new Promise((r) => setTimeout(r, 2000).unref());
        }
      }
      this.copying = false;
    })();
  }

  /** A unit directory without hook state (a new claim) takes the copy the controller keeps, if any. */
  private async takeBackHookState(): Promise<void> {
    if (
      await readFile(join(this.unitDir, "state.json")).then(
        () => true,
        () => false,
      )
    )
      return;
    for (let attempt = 1; ; attempt++) {
      try {
        const { state } = await this.d.conn.call<{ state?: string }>("unit.hook-state.get", { unit: this.name });
        if (state === undefined) return; // a new unit: nothing ran yet
        await saveUnitState(this.unitDir, JSON.parse(state) as UnitLocalState);
        this.d.log.info("took back the unit's hook state from the controller (this pod's volume is new)", {
          unit: this.name,
        });
        return;
      } catch (err) {
        // Starting afresh would run install again: wait for the controller rather than guess.
        if (attempt >= 10) throw err;
        await new Promise((r) => setTimeout(r, Math.min(1000 * 2 ** attempt, 15_000)).unref());
      }
    }
  }

  private scheduleRetry(delay: number): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.kick(), delay);
    this.retryTimer.unref();
  }

  private scheduleUpdateStatus(): void {
    clearTimeout(this.updateStatusTimer);
    if (!this.state.started || this.closed) return;
    const ms = this.intervalS * 1000 * (0.8 + Math.random() * 0.4); // 80–120 %, as Juju, so units do not fire in step
    this.updateStatusTimer = setTimeout(() => {
      this.updateStatusDue = true;
      this.kick();
    }, ms);
    this.updateStatusTimer.unref();
  }

  private machineNow(address: string | undefined): { address?: string; bootId?: string } {
    return { ...(address ? { address } : {}), ...(this.d.bootId ? { bootId: this.d.bootId } : {}) };
  }

  private hookEnv(
    hook: Omit<HookSpec, "kind">,
    operatorDir: string,
    contextId: string,
    address: string,
  ): Record<string, string> {
    const model = this.d.model();
    const env: Record<string, string> = {
      PATH: [this.d.tools.toolsDir, dirname(process.execPath), process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin"].join(
        ":",
      ),
      HOME: process.env.HOME ?? "/",
      LANG: process.env.LANG ?? "C.UTF-8",
      STEWARD_UNIT_NAME: this.name,
      STEWARD_APPLICATION_NAME: this.view.app,
      STEWARD_MODEL_NAME: model.name,
      STEWARD_MODEL_UUID: model.uuid,
      STEWARD_MACHINE_ID: this.d.machine,
      STEWARD_HOOK_NAME: hook.name,
      STEWARD_OPERATOR_DIR: operatorDir,
      STEWARD_UNIT_DATA: join(this.unitDir, "data"),
      STEWARD_CONTEXT_ID: contextId,
      STEWARD_UNIT_CONTEXT_ID: this.unitContextId,
      STEWARD_AGENT_SOCKET: this.d.tools.socketPath,
      STEWARD_TOOLS_MODULE: this.d.tools.clientModule,
      STEWARD_API_ADDRESSES: this.d.controllerAddresses().join(" "),
      STEWARD_UNIT_ADDRESS: address,
    };
    if (hook.relationId !== undefined) {
      const endpoint =
        this.view.relations.find((r) => r.id === hook.relationId)?.endpoint ??
        this.state.relations[String(hook.relationId)]?.endpoint ??
        "";
      env.STEWARD_RELATION = endpoint;
      env.STEWARD_RELATION_ID = `${endpoint}:${hook.relationId}`;
      if (hook.remoteApp) env.STEWARD_REMOTE_APP = hook.remoteApp;
      if (hook.remoteUnit) env.STEWARD_REMOTE_UNIT = hook.remoteUnit;
      if (hook.departingUnit) env.STEWARD_DEPARTING_UNIT = hook.departingUnit;
    }
    if (hook.container) env.STEWARD_WORKLOAD_CONTAINER = hook.container;
    if (hook.storageId) env.STEWARD_STORAGE_ID = hook.storageId;
    if (hook.secretUri) {
      env.STEWARD_SECRET_ID = hook.secretUri;
      if (hook.secretLabel) env.STEWARD_SECRET_LABEL = hook.secretLabel;
      if (hook.secretRevision !== undefined && (hook.name === "secret-expired" || hook.name === "secret-remove"))
        env.STEWARD_SECRET_REVISION = String(hook.secretRevision);
    }
    return env;
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
    this.stopTimers();
    await this.d.lock.run(async () => {
      const operatorDir = await this.d.operators
        .ensure(this.state.operatorHash || this.view.operator.hash)
        .catch(() => undefined);
      if (!operatorDir) return;
      for (const hook of [
        this.state.started && !this.state.stopped ? "stop" : "",
        this.state.installed && !this.state.removed ? "remove" : "",
      ].filter(Boolean)) {
        await this.runRecorded({
          operatorDir,
          hook,
          env: this.hookEnv({ name: hook }, operatorDir, "none", unitAddress(this.d.conn)),
          logPath: join(this.unitDir, "hooks.log"),
          timeoutMs: 60_000,
        }).catch(() => undefined);
      }
    });
    this.d.reporter.forget(this.name);
    await this.cleanup();
  }

  private async cleanup(): Promise<void> {
    this.stopTimers();
    await rm(this.unitDir, { recursive: true, force: true });
    this.d.log.info("unit removed", { unit: this.name });
    this.markDone();
  }

  private stopTimers(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.updateStatusTimer);
    this.leadership.close();
    this.unregisterUnitContext?.();
  }

  /** Stops driving the unit (agent shutdown); a running hook is killed and will run again on restart. */
  close(): void {
    this.stopTimers();
    this.abort.abort();
  }
}

export function unitDirOf(agentDir: string, unit: string): string {
  return join(agentDir, "units", unit.replace("/", "-"));
}
