/**
 * Where local agents' directories are when they run as another user: outside the controller's data
 * directory (0700: its CA key, store and consoles), which that user must not enter. `machines/` in
 * the data directory becomes a link there, so everything that finds agents under it still does.
 */
import { createHash } from "node:crypto";
import {
  chmod,
  cp,
  lstat,
  mkdir,
  readFile,
  readdir,
  readlink,
  realpath,
  rename,
  rm,
  rmdir,
  stat,
  symlink,
} from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { dataFiles } from "../controller-files";
import { AGENT_PID_FILE } from "./machines";
import { readPidFile, stopProcess } from "./processes";

/** Where a root controller's agents live unless controller.json says (localMachines.agentsDir). */
export const defaultAgentsDir = (controllerUuid: string): string =>
  join("/var/lib/steward/local-machines", controllerUuid);

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
 * The agent's entry script where the agents' user can read it. The bundle is used where it is when
 * that user can reach it; otherwise (a data directory's `releases/<version>/`, a package installed
 * under `/root` or another 0700 directory) it is copied into the agents' directory once per content
 * (`.agent-<hash>/`, beside the models' directories), with the `yaml` module it loads at run time.
 */
export async function readableAgentEntry(
  dataDir: string,
  agentsDir: string,
  agentEntry: string,
  agent: { uid: number; gid: number },
): Promise<string> {
  const bundle = await realpath(dirname(agentEntry));
  const inDataDir = bundle.startsWith(`${await realpath(dataDir)}/`);
  if (!inDataDir && (await reachableBy(join(bundle, basename(agentEntry)), agent))) return agentEntry;
  const hash = createHash("sha256")
    .update(await readFile(join(bundle, basename(agentEntry))))
    .digest("hex")
    .slice(0, 16);
  const copy = join(agentsDir, `.agent-${hash}`);
  if (
    !(await stat(copy).then(
      () => true,
      () => false,
    ))
  ) {
    const staging = `${copy}.staging`;
    await rm(staging, { recursive: true, force: true });
    await cp(bundle, staging, { recursive: true });
    const yaml = yamlPackageDir(bundle);
    if (yaml) await cp(yaml, join(staging, "node_modules", "yaml"), { recursive: true });
    await chmod(staging, 0o755);
    await rename(staging, copy);
  }
  return join(copy, basename(agentEntry));
}

/** Whether `uid`/`gid` may read `file` and pass through every directory above it (mode bits; ACLs aside). */
async function reachableBy(file: string, who: { uid: number; gid: number }): Promise<boolean> {
  const allows = (st: { uid: number; gid: number; mode: number }, bit: number): boolean =>
    (st.uid === who.uid ? (st.mode >> 6) & bit : st.gid === who.gid ? (st.mode >> 3) & bit : st.mode & bit) !== 0;
  try {
    if (!allows(await stat(file), 4)) return false;
    for (let dir = dirname(file); ; dir = dirname(dir)) {
      if (!allows(await stat(dir), 1)) return false;
      if (dir === dirname(dir)) return true;
    }
  } catch {
    return false;
  }
}

/** The `yaml` package as the bundle finds it (it is left out of the bundle), if it does. */
function yamlPackageDir(bundle: string): string | undefined {
  try {
    return dirname(require.resolve("yaml/package.json", { paths: [bundle] }));
  } catch {
    return undefined;
  }
}
