/**
 * Pointing this host's local agents at a controller that came back on another address (a restore
 * onto a new port): each agent's config gets the new addresses and the agent is stopped, so the
 * controller's local substrate starts it again with them (as it starts any agent it finds dead).
 * A running agent cannot be told: it only listens to the controller it can no longer reach.
 */
import { chown, readdir, readFile, realpath, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { AGENT_CONFIG_FILE, agentConfigText, parseAgentConfig } from "../../api/core";
import { AGENT_PID_FILE } from "./machines";
import { readPidFile, stopProcess } from "./processes";

/** Re-points every agent under `machinesDir` (`<model>/<machine>/`); returns how many it changed. */
export async function repointLocalAgents(machinesDir: string, addresses: string[]): Promise<number> {
  let changed = 0;
  // Agents' command lines name the real path (machines/ is a link where they run as another user).
  machinesDir = await realpath(machinesDir).catch(() => machinesDir);
  for (const model of await readdir(machinesDir).catch(() => [] as string[])) {
    for (const machine of await readdir(join(machinesDir, model)).catch(() => [] as string[])) {
      const dir = join(machinesDir, model, machine);
      const path = join(dir, AGENT_CONFIG_FILE);
      const text = await readFile(path, "utf8").catch(() => undefined);
      if (text === undefined) continue;
      const cfg = parseAgentConfig(text, path);
      if (cfg.controllerAddresses.join(",") === addresses.join(",")) continue;
      // Atomically: an agent reading it half-written would not start.
      await rm(`${path}.tmp`, { force: true });
      await writeFile(`${path}.tmp`, agentConfigText({ ...cfg, controllerAddresses: addresses }), {
        mode: 0o600,
        flag: "wx",
      });
      // Still the agent's own: one running as another user must read it.
      const owner = await stat(dir);
      await chown(`${path}.tmp`, owner.uid, owner.gid);
      await rename(`${path}.tmp`, path);
      const pid = await readPidFile(join(dir, AGENT_PID_FILE));
      if (pid) await stopProcess(pid, dir);
      changed++;
    }
  }
  return changed;
}
