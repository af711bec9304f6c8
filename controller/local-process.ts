/** Starting and stopping a controller process on this host (local bootstrap). */
import { spawn } from "node:child_process";
import { open, readdir, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { ControllerClient, StewardError } from "../api";
import { CONTROLLER_NODE_FLAGS, dataFiles } from "./config";
import { isAlive, stopProcess } from "./substrates/local";

export const controllerEntry = (): string => join(__dirname, "main.js");
const supervisorEntry = (): string => join(__dirname, "supervisor-main.js");

/**
 * The variables a local controller (and so its agents) gets from the shell that bootstrapped it:
 * where programs are (PATH, for etcd and hooks), the user's home, locale, time zone, the temporary
 * directory and Steward's log level. Nothing else: a shell's tokens and passwords must not end up
 * in a long-lived daemon. NODE_OPTIONS is left out too: Steward sets the controller's Node flags
 * itself, and a developer's `--require` or `--inspect` does not belong in it.
 */
export const CONTROLLER_ENV_VARIABLES = ["PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "STEWARD_LOG_LEVEL"];

export function controllerEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const k of CONTROLLER_ENV_VARIABLES) if (env[k] !== undefined) out[k] = env[k];
  return out;
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

/**
 * Starts the controller in `dataDir` under its supervisor (a detached process that restarts it when
 * it dies; see supervisor.ts), with a minimal environment ({@link controllerEnvironment}), and
 * waits until it answers on its API; on failure reports the end of its log. A controller whose
 * supervisor already runs is only waited for.
 */
export async function startLocalController(dataDir: string, caCert: string, timeoutMs = 30_000): Promise<string[]> {
  let exited: number | null = null;
  const running = await readPidFile(join(dataDir, dataFiles.supervisorPid));
  if (!running || !isAlive(running)) {
    const log = await open(join(dataDir, dataFiles.log), "a", 0o600);
    const controller = [process.execPath, ...CONTROLLER_NODE_FLAGS, controllerEntry(), "--data-dir", dataDir];
    // The controller writes its pid file once it serves: the supervisor's sign that it came up.
    const args = [supervisorEntry(), "--pid-file", join(dataDir, dataFiles.supervisorPid), "--ready-file", join(dataDir, dataFiles.pid), "--", ...controller];
    const child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", log.fd, log.fd], env: controllerEnvironment() });
    child.unref();
    await log.close();
    child.once("exit", (code) => { exited = code ?? 1; });
  }
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
  // The supervisor first, so that it does not start the controller again; it stops the controller.
  const supervisor = await readPidFile(join(dataDir, dataFiles.supervisorPid));
  if (supervisor) await stopProcess(supervisor, 15_000);
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
