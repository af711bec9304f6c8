/**
 * A controller as processes on this host (local bootstrap): its data directory is created by the
 * controller's own `main.js init` (as bootstrap over SSH does on the remote host), and it runs
 * under its supervisor. The CLI and the provider start controllers through this, so they load
 * nothing of the controller itself.
 */
import { spawn } from "node:child_process";
import { open, readdir, readFile, realpath, rm } from "node:fs/promises";
import { join } from "node:path";
import type { ControllerInit, ControllerInitResult } from "../../api/core";
import { ControllerClient, StewardError } from "../../api/core";
import { CONTROLLER_NODE_FLAGS, controllerEntry, dataFiles, supervisorEntry } from "../controller-files";
import { localControllerEntry } from "./controller-release";
import { AGENT_PID_FILE } from "./machines";
import { isProcessOf, readPidFile, stopProcess } from "./processes";

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

/** `main.js init`'s options (one contract with the controller: api/controller-init.ts). */
export type LocalControllerInit = Omit<ControllerInit, "substrate">;
/** What `main.js init` answers: the CA clients pin, and the admin password when it made one. */
export type LocalControllerInitResult = ControllerInitResult;

const INIT_TIMEOUT_MS = 60_000;

/** Creates a controller's data directory (idempotent: an existing one is kept and its CA returned). */
export async function initLocalController(o: LocalControllerInit): Promise<LocalControllerInitResult> {
  // Recorded: a controller bootstrapped here makes local machines (agents on this host) by default.
  const args = [
    "init",
    "--data-dir",
    o.dataDir,
    "--name",
    o.name,
    "--listen",
    `${o.listen.host}:${o.listen.port}`,
    "--substrate",
    "local",
  ];
  if (o.advertise?.length) args.push("--advertise", o.advertise.join(","));
  if (o.uuid !== undefined) args.push("--uuid", o.uuid);
  if (o.instance !== undefined) args.push("--instance", o.instance);
  if (o.adminPassword !== undefined) args.push("--admin-password-stdin");
  return runControllerCommand<LocalControllerInitResult>(
    args,
    o.adminPassword ?? "",
    `creating the controller's data directory ${o.dataDir}`,
  );
}

/** A new CA for a controller whose data directories are made elsewhere (bootstrap on Kubernetes): made by the controller's own code, in a child process. */
export async function createControllerCa(name: string): Promise<{ certPem: string; keyPem: string }> {
  return runControllerCommand<{ certPem: string; keyPem: string }>(
    ["new-ca", "--name", name],
    "",
    "creating the controller's CA",
  );
}

export interface LocalControllerRestore {
  dataDir: string;
  /** The encrypted backup file. */
  backupFile: string;
  /** Sent on the child's stdin, never on its command line. */
  passphrase: string;
  listen: { host: string; port: number };
  advertise?: string[];
  /** Replace a controller in `dataDir` (it must be stopped). */
  force?: boolean;
  /** Only open and check the backup (passphrase, integrity, format): write nothing. */
  checkOnly?: boolean;
}

/** What `main.js restore` answers. */
export interface LocalControllerRestoreResult {
  controller: { uuid: string; name: string };
  backupId: string;
  revision: number;
  keys: number;
  models: string[];
  caCert: string;
  epoch: number;
}

/** Restores a backup into `dataDir` (controller/backup/restore.ts); start it with {@link startLocalController}. With `checkOnly` the answer is not a restore's but only says the backup opens. */
export async function restoreLocalController(o: LocalControllerRestore): Promise<LocalControllerRestoreResult> {
  const args = [
    "restore",
    "--data-dir",
    o.dataDir,
    "--listen",
    `${o.listen.host}:${o.listen.port}`,
    "--backup",
    o.backupFile,
  ];
  if (o.advertise?.length) args.push("--advertise", o.advertise.join(","));
  if (o.force) args.push("--force");
  if (o.checkOnly) args.push("--check-only");
  return runControllerCommand<LocalControllerRestoreResult>(
    args,
    o.passphrase,
    "restoring the backup",
    "invalid-request",
  );
}

/** Runs `main.js <args>` with `stdin`, answering its JSON output; a failure carries its stderr. */
async function runControllerCommand<T>(
  args: string[],
  stdin: string,
  what: string,
  failure: "internal" | "invalid-request" = "internal",
): Promise<T> {
  const child = spawn(process.execPath, [controllerEntry(), ...args], {
    stdio: ["pipe", "pipe", "pipe"],
    env: controllerEnvironment(),
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (c: Buffer) => {
    out += c.toString();
  });
  child.stderr.on("data", (c: Buffer) => {
    err += c.toString();
  });
  child.stdin.end(stdin);
  // Making keys and the store takes a second or two; one that hangs must not hang bootstrap.
  const timer = setTimeout(() => {
    err ||= `it did not finish within ${INIT_TIMEOUT_MS / 1000} s`;
    child.kill("SIGKILL");
  }, INIT_TIMEOUT_MS);
  const code = await new Promise<number>((resolve) => {
    child.once("error", () => resolve(-1));
    child.once("close", (c) => resolve(c ?? 1));
  }).finally(() => clearTimeout(timer));
  if (code !== 0) throw new StewardError(failure, `${what} failed: ${err.trim() || `exit code ${code}`}`);
  try {
    return JSON.parse(out) as T;
  } catch {
    throw new StewardError(
      "internal",
      `the controller's ${args[0]} answered something that is not JSON: ${out.slice(0, 200)}`,
    );
  }
}

/**
 * Starts the controller in `dataDir` under its supervisor (a detached process that restarts it when
 * it dies; see controller/supervisor.ts), with a minimal environment ({@link controllerEnvironment}),
 * and waits until it answers on its API; on failure reports the end of its log. A controller whose
 * supervisor already runs is only waited for.
 */
export async function startLocalController(dataDir: string, caCert: string, timeoutMs = 30_000): Promise<string[]> {
  let exited: number | null = null;
  const running = await readPidFile(join(dataDir, dataFiles.supervisorPid));
  if (!running || !isProcessOf(running, dataDir)) {
    const log = await open(join(dataDir, dataFiles.log), "a", 0o600);
    const controller = [
      process.execPath,
      ...CONTROLLER_NODE_FLAGS,
      localControllerEntry(dataDir),
      "--data-dir",
      dataDir,
    ];
    // The controller writes its pid file once it serves: the supervisor's sign that it came up.
    const args = [
      supervisorEntry(),
      "--pid-file",
      join(dataDir, dataFiles.supervisorPid),
      "--ready-file",
      join(dataDir, dataFiles.pid),
      "--",
      ...controller,
    ];
    const child = spawn(process.execPath, args, {
      detached: true,
      stdio: ["ignore", log.fd, log.fd],
      env: controllerEnvironment(),
    });
    child.unref();
    await log.close();
    child.once("exit", (code) => {
      exited = code ?? 1;
    });
  }
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited !== null) break;
    const text = await readFile(join(dataDir, dataFiles.apiAddress), "utf8").catch(() => "");
    const addresses = text.split("\n").filter(Boolean);
    if (addresses.length > 0) {
      const client = new ControllerClient({ addresses, caCert, timeoutMs: 2000 });
      const up = await client.call("GET", "/v1/health").then(
        () => true,
        () => false,
      );
      client.close();
      if (up) return addresses;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const tail = (await readFile(join(dataDir, dataFiles.log), "utf8").catch(() => ""))
    .trim()
    .split("\n")
    .slice(-5)
    .join("\n  ");
  const logEnd = `the end of ${join(dataDir, dataFiles.log)}:\n  ${tail}`;
  if (exited !== null)
    throw new StewardError("unavailable", `the controller did not start (it exited with code ${exited}); ${logEnd}`, {
      reason: "controller-did-not-start",
    });
  throw new StewardError("deadline-exceeded", `the controller did not start within ${timeoutMs / 1000} s; ${logEnd}`);
}

/** Stops a local controller and its supervisor (its agents go on running). */
export async function stopLocalController(dataDir: string): Promise<void> {
  // The supervisor first, so that it does not start the controller again; it stops the controller.
  const supervisor = await readPidFile(join(dataDir, dataFiles.supervisorPid));
  if (supervisor) await stopProcess(supervisor, dataDir, 15_000);
  const pid = await readPidFile(join(dataDir, dataFiles.pid));
  if (pid) await stopProcess(pid, dataDir);
}

/**
 * Stops the controller and starts it again on its current release (upgrade-controller). Its pid
 * file goes first: it is the supervisor's sign that the controller served, so a release that dies
 * before serving is reported at once instead of restarted.
 */
export async function restartLocalController(dataDir: string, caCert: string, timeoutMs?: number): Promise<string[]> {
  await stopLocalController(dataDir);
  await rm(join(dataDir, dataFiles.pid), { force: true });
  return startLocalController(dataDir, caCert, timeoutMs);
}

/** Stops a local controller and the agents it started, then deletes its data directory. */
export async function removeLocalController(dataDir: string): Promise<void> {
  await stopLocalController(dataDir);
  // Agents of machines whose removal did not finish (forced models), found where the link leads
  // (agents run as another user): their command lines name that path.
  const link = join(dataDir, dataFiles.machines);
  const machinesDir = await realpath(link).catch(() => link);
  for (const model of await readdir(machinesDir).catch(() => [] as string[])) {
    for (const machine of await readdir(join(machinesDir, model)).catch(() => [] as string[])) {
      const agentDir = join(machinesDir, model, machine);
      const agentPid = await readPidFile(join(agentDir, AGENT_PID_FILE));
      if (agentPid) await stopProcess(agentPid, agentDir);
    }
  }
  if (machinesDir !== link) await rm(machinesDir, { recursive: true, force: true });
  await rm(dataDir, { recursive: true, force: true });
}
