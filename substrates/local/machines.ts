/**
 * The local substrate's machines: an agent process on this host with its own directory
 * (`<machinesDir>/<model-uuid>/<machine-id>/`), so a laptop runs a controller plus N machines
 * without root or SSH. Agents run detached: they outlive a controller restart, as real machines would.
 */
import { spawn } from "node:child_process";
import { mkdir, open, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { AGENT_CONFIG_FILE, agentConfigText } from "../../api/core";
import type { MachineBroker, MachineRef, MachineSpec, MachineTarget, StartedMachine } from "../brokers";
import { agentConfigOf } from "../brokers";
import { AGENT_NODE_FLAGS } from "../controller-files";
import { isProcessOf, readPidFile, stopProcess } from "./processes";

export const AGENT_PID_FILE = "agent.pid";

export class LocalMachines implements MachineBroker {
  constructor(private readonly o: { machinesDir: string; agentEntry: string }) {}

  dirOf(ref: MachineRef): string {
    return join(this.o.machinesDir, ref.model, ref.machine);
  }

  async startMachine(spec: MachineSpec): Promise<StartedMachine> {
    const dir = this.dirOf(spec);
    const pid = await readPidFile(join(dir, AGENT_PID_FILE));
    if (pid && isProcessOf(pid, dir)) return { instanceId: `pid:${pid}`, changed: false };
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const configPath = join(dir, AGENT_CONFIG_FILE);
    // A restarted agent keeps its config (and credential); only a new machine gets one.
    if (!(await readFile(configPath, "utf8").catch(() => undefined))) {
      await writeFile(configPath, agentConfigText(agentConfigOf(spec, await spec.issueCredential())), { mode: 0o600 });
    }
    const log = await open(join(dir, "agent.log"), "a", 0o600);
    try {
      const child = spawn(process.execPath, [...AGENT_NODE_FLAGS, this.o.agentEntry, "--dir", dir], { detached: true, stdio: ["ignore", log.fd, log.fd], cwd: dir, env: { ...process.env, STEWARD_AGENT_DIR: dir } });
      child.unref();
      await writeFile(join(dir, AGENT_PID_FILE), String(child.pid));
      return { instanceId: `pid:${child.pid}`, changed: true };
    } finally {
      await log.close();
    }
  }

  /** Stops the agent (TERM, then KILL after 5 s) and removes its directory. */
  async stopMachine(ref: MachineTarget): Promise<void> {
    const dir = this.dirOf(ref);
    const pid = await readPidFile(join(dir, AGENT_PID_FILE));
    if (pid) await stopProcess(pid, dir);
    await rm(dir, { recursive: true, force: true });
  }
}
