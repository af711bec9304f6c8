/**
 * The local substrate: a machine is an agent process on the controller's own host, with its own
 * directory, so a laptop runs a controller plus N machines without root or SSH. Agents run detached
 * (they outlive a controller restart, as real machines would) and are supervised: one found dead is
 * started again.
 */
import { spawn } from "node:child_process";
import { mkdir, open, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../../api";
import { AGENT_NODE_FLAGS } from "../config";
import { CoalescedRunner } from "../coalesced-runner";
import type { StateCache, StateOps } from "../state";

export interface LocalSubstrateOptions {
  /** Root of the machines' directories: `<root>/<model-uuid>/<machine-id>/`. */
  machinesDir: string;
  /** The agent's entry script. */
  agentEntry: string;
  caCert: string;
  controllerAddresses: () => string[];
  cache: StateCache;
  ops: StateOps;
  log: Logger;
  /**
   * How often agents are checked for liveness, in milliseconds.
   * @default 5000
   */
  superviseIntervalMs?: number;
}

/** The agent's configuration file, written 0600 because it holds the credential. */
export interface AgentConfigFile {
  model: string;
  machine: string;
  credential: string;
  controllerAddresses: string[];
  caCert: string;
}

export class LocalSubstrate {
  private signature = "";
  private readonly runner: CoalescedRunner;
  private readonly timer: NodeJS.Timeout;
  private readonly unsubscribe: () => void;
  private stopped = false;

  constructor(private readonly o: LocalSubstrateOptions) {
    this.runner = new CoalescedRunner(() => this.reconcile(), (err) => o.log.error("local substrate reconcile failed", { err }));
    this.unsubscribe = o.cache.subscribe(() => {
      // Only machine changes matter; status chatter leaves the signature unchanged.
      if (this.machinesSignature() !== this.signature) this.runner.kick();
    });
    this.timer = setInterval(() => this.runner.kick(), o.superviseIntervalMs ?? 5000);
    this.timer.unref();
    this.runner.kick();
  }

  private machinesSignature(): string {
    const parts: string[] = [];
    for (const idx of this.o.cache.models.values()) for (const m of idx.machines.values()) if (m.substrate === "local") parts.push(`${idx.uuid}/${m.id}/${m.life}`);
    return parts.sort().join(",");
  }

  private async reconcile(): Promise<void> {
    this.signature = this.machinesSignature();
    for (const idx of [...this.o.cache.models.values()]) {
      for (const m of [...idx.machines.values()]) {
        if (m.substrate !== "local" || this.stopped) continue;
        if (m.life === "alive") await this.ensureRunning(idx.uuid, m.id);
        else {
          await this.destroy(idx.uuid, m.id);
          await this.o.ops.finishMachine(idx.uuid, m.id);
        }
      }
    }
  }

  dirOf(model: string, machine: string): string {
    return join(this.o.machinesDir, model, machine);
  }

  private async ensureRunning(model: string, machine: string): Promise<void> {
    const dir = this.dirOf(model, machine);
    const pid = await readPid(dir);
    if (pid && isAlive(pid)) return;
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const configPath = join(dir, "agent.json");
    const existing = await readFile(configPath, "utf8").catch(() => undefined);
    if (!existing) {
      const credential = await this.o.ops.issueMachineCredential(model, machine);
      const cfg: AgentConfigFile = { model, machine, credential, controllerAddresses: this.o.controllerAddresses(), caCert: this.o.caCert };
      await writeFile(configPath, JSON.stringify(cfg, null, 2), { mode: 0o600 });
    }
    const log = await open(join(dir, "agent.log"), "a", 0o600);
    try {
      const child = spawn(process.execPath, [...AGENT_NODE_FLAGS, this.o.agentEntry, "--dir", dir], { detached: true, stdio: ["ignore", log.fd, log.fd], cwd: dir, env: { ...process.env, STEWARD_AGENT_DIR: dir } });
      child.unref();
      await writeFile(join(dir, "agent.pid"), String(child.pid));
      this.o.log.info(pid ? "restarted local agent" : "started local agent", { model, machine, pid: child.pid });
    } finally {
      await log.close();
    }
  }

  /** Stops a machine's agent (TERM, then KILL after 5 s) and removes its directory. */
  async destroy(model: string, machine: string): Promise<void> {
    const dir = this.dirOf(model, machine);
    const pid = await readPid(dir);
    if (pid) await stopProcess(pid);
    await rm(dir, { recursive: true, force: true });
    this.o.log.info("removed local machine", { model, machine });
  }

  close(): void {
    this.stopped = true;
    this.runner.stop();
    this.unsubscribe();
    clearInterval(this.timer);
  }
}

async function readPid(dir: string): Promise<number | undefined> {
  const text = await readFile(join(dir, "agent.pid"), "utf8").catch(() => undefined);
  const pid = Number(text);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

export function isAlive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

export async function stopProcess(pid: number, graceMs = 5000): Promise<void> {
  if (!isAlive(pid)) return;
  try { process.kill(pid, "SIGTERM"); } catch { return; }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  try { process.kill(pid, "SIGKILL"); } catch { /* already gone */ }
}
