/** Starting and stopping a controller process on this host (local bootstrap). */
import { spawn } from "node:child_process";
import { open, readdir, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { ControllerClient, StewardError } from "../api";
import { CONTROLLER_NODE_FLAGS, dataFiles } from "./config";
import { stopProcess } from "./substrates/local";

export const controllerEntry = (): string => join(__dirname, "main.js");

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

/**
 * Starts the controller in `dataDir` as a detached process and waits until it answers on its
 * API; on failure reports the end of its log.
 */
export async function startLocalController(dataDir: string, caCert: string, timeoutMs = 30_000): Promise<string[]> {
  const log = await open(join(dataDir, dataFiles.log), "a", 0o600);
  const child = spawn(process.execPath, [...CONTROLLER_NODE_FLAGS, controllerEntry(), "--data-dir", dataDir], { detached: true, stdio: ["ignore", log.fd, log.fd] });
  child.unref();
  await log.close();
  let exited: number | null = null;
  child.once("exit", (code) => { exited = code ?? 1; });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited !== null) break;
    const text = await readFile(join(dataDir, dataFiles.apiAddress), "utf8").catch(() => "");
    const addresses = text.split("\n").filter(Boolean);
    if (addresses.length > 0) {
      const client = new ControllerClient({ addresses, caCert, timeoutMs: 2000 });
      const up = await client.call("GET", "/v1/health").then(() => true, () => false);
      client.close();
      if (up) return addresses;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const tail = (await readFile(join(dataDir, dataFiles.log), "utf8").catch(() => "")).trim().split("\n").slice(-5).join("\n  ");
  throw new StewardError("unavailable", `the controller did not start${exited !== null ? ` (it exited with code ${exited})` : ` within ${timeoutMs / 1000} s`}; the end of ${join(dataDir, dataFiles.log)}:\n  ${tail}`);
}

export async function readPidFile(path: string): Promise<number | undefined> {
  const pid = Number((await readFile(path, "utf8").catch(() => "")).trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** Stops a local controller and the agents it started, then deletes its data directory. */
export async function removeLocalController(dataDir: string): Promise<void> {
  const pid = await readPidFile(join(dataDir, dataFiles.pid));
  if (pid) await stopProcess(pid);
  // Agents of machines whose removal did not finish (forced models).
  const machinesDir = join(dataDir, dataFiles.machines);
  for (const model of await readdir(machinesDir).catch(() => [] as string[])) {
    for (const machine of await readdir(join(machinesDir, model)).catch(() => [] as string[])) {
      const agentPid = await readPidFile(join(machinesDir, model, machine, "agent.pid"));
      if (agentPid) await stopProcess(agentPid);
    }
  }
  await rm(dataDir, { recursive: true, force: true });
}
