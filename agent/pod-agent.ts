/**
 * The agent as the agent container of a Kubernetes pod (`main.js --pod`): the pod's StatefulSet
 * ordinal picks its configuration from the application's Secret (mounted at `configDir`, one file per
 * ordinal, api/kubernetes-pods.ts), the agent's directory is on the pod's claim (so unit state
 * outlives the pod), the pod's uid is the boot id (a recreated pod runs `start` again, as a rebooted
 * machine does), and the probes are served from the start, before there is a unit.
 */
import { mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { AgentConfig, Logger } from "../api/core";
import {
  AGENT_CONFIG_FILE,
  POD_HEALTH_PORT,
  StewardError,
  agentConfigText,
  ordinalOfPod,
  parseAgentConfig,
  podAgentConfigKey,
} from "../api/core";
import { Agent } from "./agent";
import { writeFileAtomic } from "./files";
import type { HealthChecks } from "./health-server";
import { HealthServer } from "./health-server";

export interface PodIdentity {
  name: string;
  ordinal: number;
  /** The pod's uid: a new one for every pod made, even under the same name. */
  uid: string;
  ip?: string;
}

/** The pod's identity from its downward-API environment (POD_NAME, POD_UID, POD_IP). */
export function podIdentity(env: NodeJS.ProcessEnv): PodIdentity {
  const name = env.POD_NAME;
  if (!name)
    throw new StewardError(
      "invalid-request",
      "POD_NAME is not set: give the agent container the pod's name (env POD_NAME from fieldRef metadata.name)",
    );
  const uid = env.POD_UID;
  if (!uid)
    throw new StewardError(
      "invalid-request",
      "POD_UID is not set: give the agent container the pod's uid (env POD_UID from fieldRef metadata.uid)",
    );
  return { name, ordinal: ordinalOfPod(name), uid, ...(env.POD_IP ? { ip: env.POD_IP } : {}) };
}

/**
 * Puts the mounted configuration in `dir` unless `dir` already holds one for the same machine with
 * the same credential and controller CA: the mounted one is authoritative for who the agent is and
 * which controller it answers to, while the one in `dir` may hold newer addresses of that
 * controller the agent saved there. A mounted one pinning another CA was written by the controller
 * the model migrated to (it rewrites the Secret when it takes the model): an agent that missed the
 * move must not go back to the source, which may be gone.
 */
export async function adoptMountedConfig(dir: string, mounted: AgentConfig): Promise<"created" | "replaced" | "kept"> {
  const path = join(dir, AGENT_CONFIG_FILE);
  const text = await readFile(path, "utf8").catch(() => undefined);
  let current: AgentConfig | undefined;
  try {
    current = text === undefined ? undefined : parseAgentConfig(text, path);
  } catch {
    /* unreadable: replaced below */
  }
  if (
    current &&
    current.model === mounted.model &&
    current.machine === mounted.machine &&
    current.credential === mounted.credential &&
    current.caCert === mounted.caCert
  )
    return "kept";
  // Another machine (a unit number reused by a new unit on a claim that was kept): the hook state
  // of the unit that was here must not pass for the new one's.
  if (current && (current.model !== mounted.model || current.machine !== mounted.machine))
    await rm(join(dir, "units"), { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFileAtomic(path, agentConfigText(mounted));
  return text === undefined ? "created" : "replaced";
}

/** Reads the mounted configuration: undefined while absent; a present but bad one throws, saying which file. */
async function readMounted(path: string): Promise<AgentConfig | undefined> {
  const text = await readFile(path, "utf8").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw err;
  });
  return text === undefined ? undefined : parseAgentConfig(text, path);
}

export interface PodAgentOptions {
  /** The agent's directory (on the pod's claim). */
  dir: string;
  /** The mounted Secret of the application's agent configurations. */
  configDir: string;
  pod: PodIdentity;
  log: Logger;
  /** @default POD_HEALTH_PORT */
  healthPort?: number;
  /** @default "0.0.0.0" */
  healthHost?: string;
  /** How often a missing configuration is looked for again. @default 1000 */
  pollMs?: number;
  /** Where the workload containers' supervisors listen (the pod has workload containers). */
  workloadSockets?: string;
}

/** A running pod agent: its probes from the start, its {@link Agent} once configured. */
export class PodAgent {
  private agent?: Agent;
  private waitingFor = "";
  private stopped = false;
  private wake?: () => void;
  private startup: Promise<void> = Promise.resolve();
  /** Watches for this pod's next machine once its machine is removed (see followRemovals). */
  private following?: Promise<void>;
  private failed = "";
  private readonly health: HealthServer;
  /** The port the probes are served on. */
  port = 0;

  private constructor(private readonly o: PodAgentOptions) {
    this.health = new HealthServer({
      host: o.healthHost ?? "0.0.0.0",
      port: o.healthPort ?? POD_HEALTH_PORT,
      checks: () => this.checks(),
    });
  }

  /** Resolves when the agent has started (or the pod agent was stopped first); rejects if it could not start. */
  get started(): Promise<void> {
    return this.startup;
  }

  /** Serves the probes, then configures and starts the agent in the background (see {@link started}). */
  static async start(o: PodAgentOptions): Promise<PodAgent> {
    const p = new PodAgent(o);
    p.port = await p.health.start();
    o.log.info("pod agent serving probes", {
      pod: o.pod.name,
      ordinal: o.pod.ordinal,
      ip: o.pod.ip ?? "",
      port: p.port,
    });
    p.startup = p.configureAndStart();
    return p;
  }

  private checks(): HealthChecks {
    const failed = this.failed;
    if (failed) return { live: () => ({ ok: false, reason: failed }), ready: () => ({ ok: false, reason: failed }) };
    const agent = this.agent;
    if (agent) return { live: () => agent.liveness(), ready: () => agent.readiness() };
    // Waiting for a configuration is what a pod does before its unit exists: alive, not ready.
    return {
      live: () => ({ ok: true, reason: "waiting for this pod's agent configuration" }),
      ready: () => ({ ok: false, reason: `no unit on this pod yet: ${this.waitingFor || "starting"}` }),
    };
  }

  private async configureAndStart(): Promise<void> {
    const first = await this.startFor(undefined);
    // Not awaited: `started` is the first agent's start. A failure later fails the liveness probe,
    // so the kubelet starts the container again rather than leave the pod idle for good.
    if (first)
      this.following = this.followRemovals(first).catch((err: unknown) => {
        this.failed = `could not start the agent for this pod's next machine: ${(err as Error).message}`;
        this.o.log.error(this.failed);
      });
  }

  /**
   * A pod may outlive its machine: when the unit of its number is removed and a new one added before
   * the StatefulSet deleted the pod (a scale down and up that its controller saw as one, here or on
   * any cluster), the pod stays and the provisioner writes the new machine's configuration to this
   * pod's key. So once this agent's machine is removed, the mounted key is watched, and a
   * configuration for another machine starts that machine's agent here.
   */
  private async followRemovals(first: AgentConfig): Promise<void> {
    let current = first;
    while (!this.stopped) {
      await this.pause();
      if (!this.agent?.machineRemoved) continue;
      const ended = this.agent;
      const next = await this.startFor(current, async () => {
        await ended.stop();
        this.agent = undefined;
      });
      if (!next) return;
      current = next;
    }
  }

  /**
   * Waits for this pod's mounted configuration (one for another machine than `previous`, when
   * given), then runs `before` and starts its agent; the configuration, or undefined once stopped.
   */
  private async startFor(
    previous: AgentConfig | undefined,
    before?: () => Promise<void>,
  ): Promise<AgentConfig | undefined> {
    const path = join(this.o.configDir, podAgentConfigKey(this.o.pod.ordinal));
    this.waitingFor = `reading ${path}`;
    let said = "";
    let mounted: AgentConfig | undefined;
    while (!this.stopped) {
      // Kubernetes updates a mounted Secret in place: the provisioner may add this pod's key later.
      let why: string;
      try {
        mounted = await readMounted(path);
        if (mounted && !(previous && mounted.model === previous.model && mounted.machine === previous.machine)) break;
        why = mounted
          ? `machine ${mounted.machine} was removed: waiting for ${path} to name the next unit's machine`
          : `waiting for ${path} (the provisioner writes it to the application's Secret before it scales up)`;
        mounted = undefined;
      } catch (err) {
        why = `${(err as Error).message}; waiting for a good one`;
      }
      // An idle pod's wait for its next unit is no problem: not logged, and its probes say the machine was removed.
      if (!previous) {
        this.waitingFor = why;
        if (why !== said) this.o.log.warn(why); // once per distinct reason, not every second
        said = why;
      }
      await this.pause();
    }
    if (this.stopped || !mounted) return undefined;
    await before?.();
    this.waitingFor = `starting the agent for machine ${mounted.machine}`;
    const adopted = await adoptMountedConfig(this.o.dir, mounted);
    this.o.log.info(
      adopted === "kept"
        ? "keeping the agent configuration in the agent's directory (same machine, credential and controller as the mounted one)"
        : `agent configuration ${adopted} from ${path}`,
      { model: mounted.model, machine: mounted.machine },
    );
    this.agent = await Agent.start({
      dir: this.o.dir,
      log: this.o.log,
      bootId: this.o.pod.uid,
      pod: true,
      ...(this.o.workloadSockets ? { workloadSockets: this.o.workloadSockets } : {}),
    });
    if (this.stopped) await this.agent.stop();
    return mounted;
  }

  /** A poll interval, cut short by stop(). */
  private pause(): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setTimeout(resolve, this.o.pollMs ?? 1000);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.started.catch(() => undefined);
    await this.following?.catch(() => undefined);
    await this.agent?.stop();
    await this.health.close();
  }
}
