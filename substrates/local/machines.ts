/**
 * The local substrate's machines: an agent process on this host with its own directory
 * (`<machinesDir>/<model-uuid>/<machine-id>/`), so a laptop runs a controller plus N machines
 * without root or SSH. Agents run detached: they outlive a controller restart, as real machines would.
 * Given a user to run as (a controller running as root), each agent runs as that user and owns its
 * directory; the files the controller writes there are opened so that a link the agent left in
 * their place cannot make root write elsewhere.
 */
import { spawn } from "node:child_process";
import { constants } from "node:fs";
import {
  chmod,
  chown,
  lchown,
  mkdir,
  open,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  stat,
  writeFile,
} from "node:fs/promises";
import { dirname, join } from "node:path";
import { AGENT_CONFIG_FILE, agentConfigText } from "../../api/core";
import type { MachineBroker, MachineRef, MachineSpec, MachineTarget, StartedMachine } from "../brokers";
import { agentConfigOf } from "../brokers";
import { AGENT_NODE_FLAGS } from "../controller-files";
import type { AgentIdentity } from "./agent-user";
import { isProcessOf, readPidFile, stopProcess } from "./processes";

export const AGENT_PID_FILE = "agent.pid";

export interface LocalMachinesOptions {
  /** Root of the machines' directories (a link to it is followed: agents are given the real path). */
  machinesDir: string;
  agentEntry: string;
  /** Run agents as this user, each owning its directory. @default the controller's own user */
  runAs?: AgentIdentity;
}

export class LocalMachines implements MachineBroker {
  constructor(private readonly o: LocalMachinesOptions) {}

  dirOf(ref: MachineRef): string {
    return join(this.o.machinesDir, ref.model, ref.machine);
  }

  /** The directory by its real path: what the agent's command line names, and what another user can reach. */
  private async realDirOf(ref: MachineRef): Promise<string> {
    return join(await realpath(this.o.machinesDir).catch(() => this.o.machinesDir), ref.model, ref.machine);
  }

  async startMachine(spec: MachineSpec): Promise<StartedMachine> {
    const dir = await this.realDirOf(spec);
    const pid = await readPidFile(join(dir, AGENT_PID_FILE));
    if (pid && isProcessOf(pid, dir)) return { instanceId: `pid:${pid}`, changed: false };
    const runAs = this.o.runAs;
    // Another user must pass through the model's directory to its own, and see nothing else there.
    if (runAs) await mkdir(dirname(dir), { recursive: true, mode: 0o711 }).then(() => chmod(dirname(dir), 0o711));
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const configPath = join(dir, AGENT_CONFIG_FILE);
    // A restarted agent keeps its config (and credential); only a new machine gets one.
    if (!(await readFile(configPath, "utf8").catch(() => undefined))) {
      await writeOwnFile(configPath, agentConfigText(agentConfigOf(spec, await spec.issueCredential())), runAs);
    }
    // A directory made by root (new, or one the agent ran in as root before) becomes the agent's.
    if (runAs && (await stat(dir)).uid !== runAs.uid) await chownTree(dir, runAs);
    const log = await open(
      join(dir, "agent.log"),
      constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      const env = {
        ...process.env,
        STEWARD_AGENT_DIR: dir,
        ...(runAs ? { HOME: dir, USER: runAs.user, LOGNAME: runAs.user } : {}),
      };
      const child = spawn(process.execPath, [...AGENT_NODE_FLAGS, this.o.agentEntry, "--dir", dir], {
        detached: true,
        stdio: ["ignore", log.fd, log.fd],
        cwd: dir,
        env,
        ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
      });
      child.unref();
      await writeOwnFile(join(dir, AGENT_PID_FILE), String(child.pid), undefined);
      return { instanceId: `pid:${child.pid}`, changed: true };
    } finally {
      await log.close();
    }
  }

  /** Stops the agent (TERM, then KILL after 5 s) and removes its directory. */
  async stopMachine(ref: MachineTarget): Promise<void> {
    const dir = await this.realDirOf(ref);
    const pid = await readPidFile(join(dir, AGENT_PID_FILE));
    if (pid) await stopProcess(pid, dir);
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Writes a file in an agent's directory as a new file renamed into place: whatever the agent left
 * under that name (a link to a file of root's) is replaced, never written through. Given to `owner`.
 */
async function writeOwnFile(path: string, data: string, owner: AgentIdentity | undefined): Promise<void> {
  const tmp = `${path}.new`;
  await rm(tmp, { force: true });
  await writeFile(tmp, data, { mode: 0o600, flag: "wx" });
  if (owner) await chown(tmp, owner.uid, owner.gid);
  await rename(tmp, path);
}

/** Gives a directory root made, and everything in it, to `owner` (links themselves, never what they point to). */
async function chownTree(dir: string, owner: AgentIdentity): Promise<void> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory()) await chownTree(join(dir, e.name), owner);
    else await lchown(join(dir, e.name), owner.uid, owner.gid);
  }
  await lchown(dir, owner.uid, owner.gid);
}
