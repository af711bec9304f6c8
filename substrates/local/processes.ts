/** Processes and ports on this host: what the local substrate and local bootstrap are made of. */
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";

export function isAlive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

/** Stops a process: TERM, then KILL after `graceMs`. */
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
    s.listen(0, host, () => { const a = s.address(); s.close(() => resolve(typeof a === "object" && a ? a.port : 0)); });
  });
}
