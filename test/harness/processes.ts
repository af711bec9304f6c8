/**
 * Reaping what a test started: every process whose command line or working directory lies under a
 * test's directory (agents, hooks and the workloads they left running).
 */
import { readFile, readdir, readlink } from "node:fs/promises";

export async function processesUnder(dir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const cmd = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => "");
    if (cmd.includes(dir) || cwd.startsWith(dir)) pids.push(pid);
  }
  return pids;
}

export async function killProcessesUnder(dir: string): Promise<void> {
  for (const pid of await processesUnder(dir)) {
    try { process.kill(pid, "SIGKILL"); } catch { /* already gone */ }
  }
}
