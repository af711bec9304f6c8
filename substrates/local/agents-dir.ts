/**
 * Where local agents' directories are when they run as another user: outside the controller's data
 * directory (0700: its CA key, store and consoles), which that user must not enter. `machines/` in
 * the data directory becomes a link there, so everything that finds agents under it still does.
 */
import { chmod, cp, lstat, mkdir, readdir, readlink, realpath, rename, rm, rmdir, stat, symlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { dataFiles } from "../controller-files";
import { AGENT_PID_FILE } from "./machines";
import { readPidFile, stopProcess } from "./processes";

/** Where a root controller's agents live unless controller.json says (localMachines.agentsDir). */
export const defaultAgentsDir = (controllerUuid: string): string => join("/var/lib/steward/local-machines", controllerUuid);

/**
 * Makes `agentsDir` (passable by others, listable by none) the home of the data directory's
 * machines. Agents found in a real `machines/` (they ran as root before), or where it linked before
 * `agentsDir` was changed, are stopped and their directories moved: the local substrate starts them
 * again there, as the agents' user.
 */
export async function placeAgentsDir(dataDir: string, agentsDir: string): Promise<void> {
  await chmod(dataDir, 0o700);
  await mkdir(agentsDir, { recursive: true, mode: 0o711 });
  await chmod(agentsDir, 0o711);
  const link = join(dataDir, dataFiles.machines);
  const found = await lstat(link).catch(() => undefined);
  if (found?.isSymbolicLink() && (await readlink(link)) === agentsDir) return;
  // Where the agents are now: their command lines name the real path.
  const from = found?.isSymbolicLink() ? await realpath(link).catch(() => undefined) : found ? link : undefined;
  if (from) {
    for (const model of await readdir(from)) {
      for (const machine of await readdir(join(from, model)).catch(() => [] as string[])) {
        const dir = join(from, model, machine);
        const pid = await readPidFile(join(dir, AGENT_PID_FILE));
        if (pid) await stopProcess(pid, dir);
      }
      await rename(join(from, model), join(agentsDir, model)).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code !== "EXDEV") throw err;
        await cp(join(from, model), join(agentsDir, model), { recursive: true, verbatimSymlinks: true });
        await rm(join(from, model), { recursive: true, force: true });
      });
    }
  }
  if (found?.isDirectory()) await rmdir(link);
  // A new link renamed over the old one (or into the place of the emptied directory).
  const next = `${link}.next`;
  await rm(next, { force: true });
  await symlink(agentsDir, next);
  await rename(next, link);
}

/**
 * The agent's entry script where the agents' user can read it: one in the data directory (an upgraded
 * local controller runs from `releases/<version>/` there) is copied into the agents' directory first,
 * once per release (`.agent-<version>/`, beside the models' directories).
 */
export async function readableAgentEntry(dataDir: string, agentsDir: string, agentEntry: string): Promise<string> {
  const bundle = await realpath(dirname(agentEntry));
  if (!bundle.startsWith(`${await realpath(dataDir)}/`)) return agentEntry;
  const copy = join(agentsDir, `.agent-${basename(dirname(bundle))}`);
  if (!(await stat(copy).then(() => true, () => false))) {
    await rm(`${copy}.staging`, { recursive: true, force: true });
    await cp(bundle, `${copy}.staging`, { recursive: true });
    await rename(`${copy}.staging`, copy);
  }
  return join(copy, basename(agentEntry));
}
