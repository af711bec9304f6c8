/**
 * Reaping what a test started: every process whose command line or working directory lies under a
 * test's directory (agents, hooks and the workloads they left running).
 */
import { readFile, readdir, readlink, realpath } from "node:fs/promises";
import { join } from "node:path";

export async function processesUnder(dir: string): Promise<number[]> {
  const roots = await agentRoots(dir);
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const cmd = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => "");
    if (roots.some((root) => cmd.includes(root) || cwd.startsWith(root))) pids.push(pid);
  }
  return pids;
}

/**
 * `dir` and where local agents started under it really run: a controller running as root keeps its
 * agents outside its data directory, `machines/` there being a link (followed a few levels down).
 */
async function agentRoots(dir: string): Promise<string[]> {
  const roots = new Set([dir, await realpath(dir).catch(() => dir)]);
  const walk = async (d: string, depth: number): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      if (e.isSymbolicLink() && e.name === "machines")
        roots.add(await realpath(join(d, e.name)).catch(() => join(d, e.name)));
      else if (e.isDirectory() && depth > 0) await walk(join(d, e.name), depth - 1);
    }
  };
  await walk(dir, 4);
  return [...roots];
}

export async function killProcessesUnder(dir: string): Promise<void> {
  for (const pid of await processesUnder(dir)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
}
