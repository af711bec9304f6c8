/**
 * {@link Agent} is the machine agent: it connects to the controller, keeps its configuration (and
 * the controller addresses) on disk, and runs a {@link Uniter} for each unit the controller places
 * on its machine.
 *
 * ```ts
 * const agent = await Agent.start({ dir: "/var/lib/steward/agent" });
 * await agent.stop();
 * ```
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { hostname, release } from "node:os";
import { join } from "node:path";
import type { AgentReleaseTarget, AgentView, Bundle, Logger, MigrationTarget } from "../api/core";
import { HANDED_OVER_PHASES, STEWARD_VERSION, createLogger } from "../api/core";
import { MigrationMinion } from "./migration-minion";
import {
  chooseForNextStart,
  confirmRelease,
  pruneReleases,
  readReleaseState,
  recordReleaseFailure,
  stageRelease,
} from "./agent-release";
import { getFromController } from "./controller-get";
import type { AgentConfig } from "./config";
import { readAgentConfig, saveAgentConfig } from "./config";
import { ControllerConnection } from "./connection";
import { HookProcessRecord } from "./hook-processes";
import { forwardingLogger } from "./forwarding-logger";
import { HookToolServer } from "./hook-tools/server";
import { LogForwarder } from "./log-forwarder";
import { MachineLock } from "./machine-lock";
import { MachineStorage } from "./machine-storage";
import { OperatorStore } from "./operators";
import { StatusReporter } from "./status-reporter";
import { unitAddress } from "./unit-address";
import { currentBootId } from "./boot-id";
import { Uniter, unitDirOf } from "./uniter";
import { unitReadiness } from "./readiness";
import type { UnitLocalState } from "./unit-state";
import { loadUnitState } from "./unit-state";
import { WorkloadContainers } from "./workload/containers";

export type AgentState = "INITIALIZED" | "RUNNING" | "STOPPING" | "STOPPED";

export interface AgentOptions {
  /** The agent's directory: `agent.json`, `units/`, `operators/`, `tools/`. */
  dir: string;
  /** @default a logger writing to stderr */
  log?: Logger;
  /** This boot's id (units run `start` again in a new one); a pod passes its uid. @default from boot-id.ts */
  bootId?: string;
  /**
   * The agent runs in a Kubernetes pod (pod-agent.ts): at its machine's end it reports the machine
   * dead and then idles (no uninstall script; the StatefulSet removes the pod), and it answers
   * {@link Agent.readiness} for the pod's probe even before the controller is reached.
   */
  pod?: boolean;
  /** How long one hook or action may hold the machine lock before {@link Agent.liveness} calls the agent wedged. @default 15 minutes */
  wedgedAfterMs?: number;
  /** Where the pod's workload containers' supervisors listen (Kubernetes pods with workload containers). */
  workloadSockets?: string;
  /**
   * Called once another agent release was chosen and this agent stopped (agent-release.ts): the
   * process exits, to be started again on it. @default nothing (the agent stays stopped)
   */
  onReleaseChosen?: () => void;
}

/** An answer of a probe: whether, and if not why. */
export interface ProbeAnswer {
  ok: boolean;
  reason: string;
}

/**
 * Hooks and actions are killed after 10 minutes (hook-runner.ts) and a controller call gives up
 * after 30 s, so the machine lock is never held much past 10 minutes by an agent that works. Held
 * past this, something the agent waits on will never finish: it is wedged, and only a restart
 * (which kills the leftover hook and runs it again) gets the unit going.
 */
const WEDGED_AFTER_MS = 15 * 60_000;

interface AgentSettings {
  pod: boolean;
  wedgedAfterMs: number;
  onReleaseChosen?: () => void;
}

export class Agent {
  private state: AgentState = "INITIALIZED";
  private readonly uniters = new Map<string, Uniter>();
  private readonly starting = new Map<string, Promise<void>>();
  private view?: AgentView;
  private firstView = true;
  /** The last write of the persisted configuration (controller addresses); writes are chained. */
  private saving: Promise<void> = Promise.resolve();
  private readonly conn: ControllerConnection;
  private readonly reporter: StatusReporter;
  private readonly tools: HookToolServer;
  private readonly operators: OperatorStore;
  private readonly lock = new MachineLock();
  private readonly hookProcesses: HookProcessRecord;
  /** Sends log records to the controller for `steward debug-log`. */
  private readonly forwarder: LogForwarder;
  /** The agent's log: written locally and forwarded. */
  private readonly log: Logger;
  /** The pod's agent after its machine was removed: idle until the pod goes. */
  private ended = false;
  /** Pod mode: the units' states on disk, for readiness until the controller's first view. */
  private remembered = new Map<string, UnitLocalState>();
  /** The pod's workload containers, when it has some. */
  private workloads?: WorkloadContainers;
  /** Answers the model's migration and pauses hooks while it holds the model. */
  private readonly minion: MigrationMinion;
  /** The migration this agent switched controllers for (the source's later views are ignored). */
  private switchedFor?: string;
  /** The machine halves of its units' storage attachments (mounts, directories). */
  private readonly storage: MachineStorage;
  /** The agent release being moved to (`version#attempt`), while it is staged and switched to. */
  private releasing?: string;

  protected constructor(
    private readonly dir: string,
    private cfg: AgentConfig,
    localLog: Logger,
    private readonly settings: AgentSettings = { pod: false, wedgedAfterMs: WEDGED_AFTER_MS },
  ) {
    this.forwarder = new LogForwarder({
      send: (batch) => this.conn.call("log.batch", batch),
      connected: () => this.conn.connected,
      log: localLog,
    });
    const log = (this.log = forwardingLogger(localLog, this.forwarder));
    const authorization = `${cfg.model}/${cfg.machine}/${cfg.credential}`;
    this.conn = new ControllerConnection({
      addresses: () => this.cfg.controllerAddresses,
      caCert: () => this.cfg.caCert,
      authorization,
      log,
      onView: (v) => this.onView(v),
      onConnected: () => this.onConnected(),
      onMachineRemoved: () => this.machineGone(),
      onMoved: (target) => {
        void this.switchController(target);
      },
    });
    this.minion = new MigrationMinion({
      conn: this.conn,
      lock: this.lock,
      log,
      authorization,
      units: () => this.view?.units.map((u) => u.name) ?? [],
      switchTo: (target) => this.switchController(target),
      onPausedChange: (paused) => {
        if (!paused) for (const u of this.uniters.values()) u.resume();
      },
    });
    this.reporter = new StatusReporter(this.conn, log);
    this.storage = new MachineStorage({ report: (r) => this.conn.call("storageOnMachine", r), log });
    this.tools = new HookToolServer(dir);
    this.hookProcesses = new HookProcessRecord(dir, log);
    this.operators = new OperatorStore(
      join(dir, "operators"),
      () => this.cfg.controllerAddresses,
      () => this.cfg.caCert,
      authorization,
    );
  }

  static async start(opts: AgentOptions): Promise<Agent> {
    const cfg = await readAgentConfig(opts.dir);
    const log = (opts.log ?? createLogger()).child({ machine: cfg.machine });
    const agent = new Agent(opts.dir, cfg, log, {
      pod: opts.pod ?? false,
      wedgedAfterMs: opts.wedgedAfterMs ?? WEDGED_AFTER_MS,
      ...(opts.onReleaseChosen ? { onReleaseChosen: opts.onReleaseChosen } : {}),
    });
    agent.bootId = opts.bootId ?? (await currentBootId());
    if (agent.settings.pod) agent.remembered = await rememberedUnits(opts.dir);
    // Before anything runs: a hook the previous incarnation left running (it was killed with
    // SIGKILL, which it could not pass on) must not overlap the re-run of the same hook.
    await agent.hookProcesses.killLeftover();
    await agent.tools.start();
    if (opts.workloadSockets) {
      agent.workloads = new WorkloadContainers({
        dir: opts.workloadSockets,
        log,
        onChange: () => {
          for (const u of agent.uniters.values()) u.workloadChanged();
        },
      });
      agent.workloads.start();
    }
    agent.conn.start();
    agent.state = "RUNNING";
    log.info("agent started", { version: STEWARD_VERSION, controllers: cfg.controllerAddresses.join(",") });
    return agent;
  }

  getState(): AgentState {
    return this.state;
  }

  /**
   * Whether the agent works (a pod's liveness probe): running, and no hook or action holding the
   * machine lock for longer than any may run. Never whether the controller can be reached: a
   * workload must not be restarted because its controller is away (juju#21512).
   */
  /** The controller removed this (pod's) machine: the agent idles, and its pod may take another machine's. */
  get machineRemoved(): boolean {
    return this.ended;
  }

  liveness(): ProbeAnswer {
    if (this.ended) return { ok: true, reason: "this machine was removed; the agent idles until its pod is deleted" };
    if (this.state !== "RUNNING") return { ok: false, reason: `the agent is ${this.state.toLowerCase()}` };
    const held = this.lock.heldForMs();
    if (held > this.settings.wedgedAfterMs)
      return {
        ok: false,
        reason: `one hook or action has held the machine lock for ${Math.round(held / 1000)} s, longer than any may run: the agent is wedged`,
      };
    return { ok: true, reason: "ok" };
  }

  /** Whether this agent's units are ready (a pod's readiness probe; readiness.ts), with why not. */
  readiness(): ProbeAnswer {
    if (this.ended) return { ok: false, reason: "this machine was removed" };
    const units = this.view
      ? [...this.uniters.values()].map((u) => ({ name: u.name, r: u.readiness() }))
      : [...this.remembered].map(([name, st]) => ({ name, r: unitReadiness(name, st, this.bootId) }));
    if (units.length === 0) {
      if (this.starting.size > 0)
        return { ok: false, reason: `${[...this.starting.keys()].sort().join(", ")} starting` };
      return {
        ok: false,
        reason: this.view
          ? "no unit on this machine yet"
          : "no unit on this machine yet (the controller has not been reached)",
      };
    }
    const notReady = units.filter((u) => !u.r.ready).map((u) => u.r.reason);
    return notReady.length > 0
      ? { ok: false, reason: notReady.join("; ") }
      : {
          ok: true,
          reason: `${units
            .map((u) => u.name)
            .sort()
            .join(", ")} ready`,
        };
  }
  get unitNames(): string[] {
    return [...this.uniters.keys()].sort();
  }

  private onConnected(): void {
    void this.reportMachine();
    this.reporter.flush();
    this.forwarder.flush();
  }

  /**
   * The address reported is the one hooks get as STEWARD_UNIT_ADDRESS (where units serve), so
   * status shows where they can be reached; on every connection, as it can change. Reported, it
   * also ends this release's trial (agent-release.ts), if it is on one.
   */
  private async reportMachine(): Promise<void> {
    try {
      const failed = this.settings.pod ? undefined : (await readReleaseState(this.dir)).failed;
      await this.conn.call("machine.info", {
        hostname: hostname(),
        address: unitAddress(this.conn),
        os: `${process.platform} ${release()}`,
        agentVersion: STEWARD_VERSION,
        ...(failed ? { agentUpgradeFailure: failed } : {}),
      });
      if (this.settings.pod) return;
      const trial = await confirmRelease(this.dir, STEWARD_VERSION);
      if (trial) {
        this.log.info("agent release confirmed: it came up and reported", { version: STEWARD_VERSION });
        await pruneReleases(this.dir);
      }
    } catch (err) {
      this.log.warn("could not report machine info", { err });
    }
  }

  /**
   * Moves to the release the controller names for this machine, if it is not this one and has not
   * failed at this attempt: staged first (hooks go on), then chosen while holding the machine lock,
   * so no hook is running when the agent stops to be started on it.
   */
  private async followRelease(target: AgentReleaseTarget | undefined): Promise<void> {
    if (!target || target.version === STEWARD_VERSION || this.settings.pod) return;
    const key = `${target.version}#${target.attempt}`;
    if (this.releasing === key) return;
    this.releasing = key;
    try {
      const failed = (await readReleaseState(this.dir)).failed;
      if (failed?.version === target.version && failed.attempt === target.attempt) return;
      await stageRelease(this.dir, target.version, target.hash, () =>
        getFromController<Bundle>({
          addresses: this.cfg.controllerAddresses,
          caCert: this.cfg.caCert,
          authorization: `${this.cfg.model}/${this.cfg.machine}/${this.cfg.credential}`,
          path: `/v1/agent-releases/${encodeURIComponent(target.version)}`,
          what: `agent release ${target.version}`,
          reason: "agent-release-download-failed",
        }),
      );
      this.log.info("staged agent release; switching once no hook runs", { version: target.version });
      await this.lock.run(async () => {
        if (this.state !== "RUNNING") return;
        await chooseForNextStart(this.dir, {
          version: target.version,
          attempt: target.attempt,
          trialMs: target.trialSeconds * 1000,
        });
        this.log.info("switching to agent release; restarting", { version: target.version, from: STEWARD_VERSION });
        await this.stop();
      });
      this.settings.onReleaseChosen?.();
    } catch (err) {
      this.log.warn("could not move to agent release", { version: target.version, err });
      await recordReleaseFailure(this.dir, {
        version: target.version,
        attempt: target.attempt,
        message: `could not stage it: ${(err as Error).message}`.slice(0, 1024),
      }).catch(() => undefined);
      void this.reportMachine();
    }
  }

  private onView(view: AgentView): void {
    if (this.state !== "RUNNING") return;
    // A view the source sent as this agent left for the target: its addresses must not be adopted again.
    if (view.migration && view.migration.id === this.switchedFor && HANDED_OVER_PHASES.has(view.migration.phase))
      return;
    this.view = view;
    this.minion.onView(view.migration);
    void this.followRelease(view.machine.agentRelease);
    this.storage.update(view.machineStorage);
    const addrs = view.controllerAddresses;
    if (addrs.length > 0 && addrs.join(",") !== this.cfg.controllerAddresses.join(",")) {
      this.cfg = { ...this.cfg, controllerAddresses: addrs };
      // One write at a time, each of the newest list: two in flight could land out of order.
      this.saving = this.saving
        .then(() => saveAgentConfig(this.dir, this.cfg))
        .catch((err: unknown) => this.log.error("could not save controller addresses", { err }));
    }
    const wanted = new Set(view.units.map((u) => u.name));
    for (const u of view.units) {
      const existing = this.uniters.get(u.name);
      if (existing) existing.update(u);
      else if (!this.starting.has(u.name)) this.startUniter(u.name);
    }
    for (const [name, uniter] of this.uniters) {
      if (!wanted.has(name)) {
        this.uniters.delete(name);
        uniter.vanish().catch((err: unknown) => this.log.warn("cleanup of removed unit failed", { unit: name, err }));
      }
    }
    // Storage it must still release (unmount, delete) keeps it until it has.
    if (view.machine.life === "dying" && view.units.length === 0 && this.uniters.size === 0 && !view.machineStorage)
      this.uninstall();
    if (this.firstView) {
      this.firstView = false;
      this.cleanOrphans(wanted).catch((err: unknown) => this.log.warn("orphan cleanup failed", { err }));
    }
  }

  /**
   * Moves to the controller the model migrated to: its addresses and CA are saved first (a restart
   * goes there too), then the connection redials. Units are not restarted: their hook state is
   * theirs, and the target serves the same revisions (state/imported-revisions.ts).
   */
  private async switchController(target: MigrationTarget): Promise<void> {
    if (this.cfg.caCert === target.caCert && this.cfg.controllerAddresses.join(",") === target.addresses.join(",")) {
      this.conn.redial();
      return;
    }
    this.switchedFor = this.view?.migration?.id;
    this.cfg = { ...this.cfg, controllerAddresses: target.addresses, caCert: target.caCert };
    const saved = (this.saving = this.saving.then(() => saveAgentConfig(this.dir, this.cfg)));
    await saved.catch((err: unknown) =>
      this.log.error(
        "could not save the target controller's addresses: a restart would go to the source, which redirects",
        { err },
      ),
    );
    this.log.info("switched to the controller the model migrated to", {
      controller: target.name,
      addresses: target.addresses.join(","),
    });
    this.conn.redial();
  }

  private startUniter(name: string): void {
    const p = (async () => {
      const u = this.view!.units.find((x) => x.name === name);
      if (!u) return;
      const uniter = await Uniter.start(u, {
        agentDir: this.dir,
        bootId: this.bootId,
        model: () => this.view!.model,
        settings: () => this.view!,
        machine: this.cfg.machine,
        conn: this.conn,
        reporter: this.reporter,
        tools: this.tools,
        operators: this.operators,
        lock: this.lock,
        hookProcesses: this.hookProcesses,
        log: this.log,
        controllerAddresses: () => this.cfg.controllerAddresses,
        forwardLog: (record) => this.forwarder.add(record),
        ...(this.workloads ? { workloads: this.workloads } : {}),
        hookStateInController: this.settings.pod,
        paused: () => this.minion.isPaused,
      });
      this.uniters.set(name, uniter);
      void uniter.done.then(() => {
        if (this.uniters.get(name) === uniter) this.uniters.delete(name);
      });
      // The view may have moved on while we were starting.
      const latest = this.view!.units.find((x) => x.name === name);
      if (latest) uniter.update(latest);
    })()
      .catch((err: unknown) => this.log.error("could not start unit", { unit: name, err }))
      .finally(() => this.starting.delete(name));
    this.starting.set(name, p);
  }

  /** Unit directories left from units removed while this agent was down. */
  private async cleanOrphans(wanted: Set<string>): Promise<void> {
    const entries = await readdir(join(this.dir, "units")).catch(() => [] as string[]);
    for (const e of entries) {
      const name = e.replace(/-(\d+)$/, "/$1");
      if (!wanted.has(name)) await rm(unitDirOf(this.dir, name), { recursive: true, force: true });
    }
  }

  private uninstalling = false;
  private bootId?: string;

  /**
   * The machine is being removed and has no units left. An agent that was installed over SSH runs
   * its uninstall script (stops its service, deletes its files) after telling the controller; one
   * started by the local substrate is stopped by it instead.
   */
  private uninstall(): void {
    if (this.uninstalling) return;
    if (this.settings.pod) return this.endInPod();
    const script = join(this.dir, "uninstall");
    if (!existsSync(script)) return;
    this.uninstalling = true;
    this.conn
      .call("machine.dead", {})
      .then(() => this.runUninstall(script))
      .catch((err: unknown) => {
        this.uninstalling = false;
        this.log.warn("could not report the machine gone; will retry", { err });
      });
  }

  /**
   * The machine's record is already gone (removed by force, or its model destroyed) so there is no
   * one to tell: an agent installed over SSH removes itself; any other just stops its units.
   */
  private machineGone(): void {
    if (this.settings.pod) {
      this.idle("this machine's record is gone");
      return;
    }
    if (this.uninstalling) return;
    this.uninstalling = true;
    const script = join(this.dir, "uninstall");
    if (existsSync(script)) this.runUninstall(script);
    else void this.stop();
  }

  /**
   * In a pod there is no uninstall script and nothing to remove: the StatefulSet deletes the pod
   * when it scales down. Tell the controller, then idle (exiting would only have the container
   * restarted, again and again).
   */
  private endInPod(): void {
    this.uninstalling = true;
    this.conn
      .call("machine.dead", {})
      .then(() => this.idle("machine removed"))
      .catch((err: unknown) => {
        this.uninstalling = false;
        this.log.warn("could not report the machine gone; will retry", { err });
      });
  }

  /** The pod's agent has nothing left to do: no units, no connection; it stays up for the probes. */
  private idle(why: string): void {
    if (this.ended) return;
    this.ended = true;
    this.uninstalling = true;
    for (const u of this.uniters.values()) u.close();
    this.conn.close();
    this.log.info(`${why}; the agent idles until its pod is deleted or given the next unit of its number`);
  }

  /** Detached: the script stops this agent's service, and with it this process. */
  private runUninstall(script: string): void {
    this.log.info("machine removed; uninstalling this agent");
    spawn(script, [], { detached: true, stdio: "ignore" }).unref();
  }

  async stop(): Promise<void> {
    if (this.state !== "RUNNING") return;
    this.state = "STOPPING";
    this.workloads?.stop();
    this.storage.close();
    for (const u of this.uniters.values()) u.close();
    this.forwarder.close();
    this.minion.close();
    this.conn.close();
    await this.tools.close();
    this.state = "STOPPED";
    this.log.info("agent stopped");
  }
}

/** The units whose state is in `dir/units/` (directory `db-0` is unit `db/0`). */
async function rememberedUnits(dir: string): Promise<Map<string, UnitLocalState>> {
  const out = new Map<string, UnitLocalState>();
  for (const e of await readdir(join(dir, "units")).catch(() => [] as string[])) {
    const name = e.replace(/-(\d+)$/, "/$1");
    // A state file that cannot be read says nothing about readiness; the view will.
    const st = await loadUnitState(unitDirOf(dir, name)).catch(() => undefined);
    if (st?.installed) out.set(name, st);
  }
  return out;
}
