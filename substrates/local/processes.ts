/** Processes and ports on this host: what the local substrate and local bootstrap are made of. */
import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";

/**
 * Whether `pid` is alive and is the process its pid file meant: one whose command line names
 * `marker` (the directory it runs for) as an argument or the start of one. A pid file outlives its
 * process, and the number may since belong to anything else (pids wrap at 32,768 on many Linux
 * hosts): such a process must be neither mistaken for ours nor signalled. Where there is no /proc,
 * only whether the pid is alive can be known.
 */
export function isProcessOf(pid: number, marker: string): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (!existsSync("/proc/self/cmdline")) return true;
  let cmdline: string;
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return false;
  }
  return cmdline.split("\0").some((arg) => arg === marker || arg.startsWith(`${marker}/`));
}

/** Stops the process `pid` if it is still the one running for `marker` (see {@link isProcessOf}): TERM, then KILL after `graceMs`. */
export async function stopProcess(pid: number, marker: string, graceMs = 5000): Promise<void> {
  if (!isProcessOf(pid, marker)) return;
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isProcessOf(pid, marker)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (isProcessOf(pid, marker)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
}

export async function readPidFile(path: string): Promise<number | undefined> {
  const pid = Number((await readFile(path, "utf8").catch(() => "")).trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** True when `port` on `host` can be bound right now. */
export function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, host, () => s.close(() => resolve(true)));
  });
}

export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, host, () => {
      const a = s.address();
      s.close(() => resolve(typeof a === "object" && a ? a.port : 0));
    });
  });
}
