#!/usr/bin/env node
/**
 * The agent process: `node dist/agent/main.js --dir DIR`, or in a Kubernetes pod
 * `main.js --pod --dir DIR --configs CONFIG_DIR [--health-port N]` (pod-agent.ts), and as the
 * pod's init container `main.js --install-supervisor DIR` (workload/install.ts).
 */
import type { Logger } from "../api/core";
import { createLogger } from "../api/core";
import { POD_HEALTH_PORT, STEWARD_VERSION } from "../api/core";
import { Agent } from "./agent";
import { chooseRelease } from "./agent-release";
import { isReleaseWatchdog, runReleaseWatchdog, startReleaseWatchdog } from "./release-watchdog";
import { PodAgent, podIdentity } from "./pod-agent";
import { installSupervisor } from "./workload/install";

const USAGE =
  "usage: agent/main.js --dir DIR\n       agent/main.js version\n       agent/main.js --pod --dir DIR --configs CONFIG_DIR [--health-port N] [--workload-sockets DIR]\n       agent/main.js --install-supervisor DIR\n";

function option(args: string[], flag: string, env: string): string | undefined {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : process.env[env];
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  // What the controller asks of a release it is given, as of its own bundle (substrates bundleVersion).
  if (args[0] === "version") {
    process.stdout.write(JSON.stringify({ version: STEWARD_VERSION }) + "\n");
    return;
  }
  const into = option(args, "--install-supervisor", "STEWARD_INSTALL_SUPERVISOR");
  if (into) {
    const placed = await installSupervisor(into);
    process.stdout.write(`placed the workload supervisor: ${placed.node} ${placed.script}\n`);
    return;
  }
  const dir = option(args, "--dir", "STEWARD_AGENT_DIR");
  const pod = args.includes("--pod");
  if (!dir) {
    process.stderr.write(USAGE);
    process.exitCode = 1;
    return;
  }
  const log = createLogger({ fields: { component: "agent" } });
  let stop: () => Promise<void>;
  if (pod) {
    const configDir = option(args, "--configs", "STEWARD_AGENT_CONFIGS");
    if (!configDir)
      throw new Error(
        `--pod needs --configs CONFIG_DIR (or STEWARD_AGENT_CONFIGS): the mounted Secret of agent configurations\n${USAGE}`,
      );
    const portText = option(args, "--health-port", "STEWARD_AGENT_HEALTH_PORT") ?? String(POD_HEALTH_PORT);
    const healthPort = Number(portText);
    if (!/^\d+$/.test(portText) || healthPort > 65535)
      throw new Error(`--health-port must be a port number from 0 to 65535 (got "${portText}")`);
    const workloadSockets = option(args, "--workload-sockets", "STEWARD_WORKLOAD_SOCKETS");
    const podAgent = await PodAgent.start({
      dir,
      configDir,
      pod: podIdentity(process.env),
      log,
      healthPort,
      ...(workloadSockets ? { workloadSockets } : {}),
    });
    // An agent that cannot start (its directory not writable, say) is a failed container: say why and exit.
    podAgent.started.catch((err: unknown) => {
      process.stderr.write(`agent failed to start: ${(err as Error).message}\n`);
      process.exit(1);
    });
    stop = () => podAgent.stop();
  } else {
    if (await loadChosenRelease(dir, log)) return;
    // Started again by what keeps it running (systemd, the local provisioner), on the chosen release.
    const agent = await Agent.start({ dir, log, onReleaseChosen: () => process.exit(0) });
    stop = () => agent.stop();
  }
  let stopping = false;
  for (const s of ["SIGINT", "SIGTERM"] as const) {
    process.on(s, () => {
      if (stopping) return;
      stopping = true;
      stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}

/**
 * A machine agent runs the release `steward upgrade-model` chose (agent-release.ts) when it is not
 * this one: loaded into this process, where it decides again and runs itself. While it is on trial
 * this entry's watchdog (a worker thread: release-watchdog.ts) takes it back if it has not reported in
 * time (its own code may be what fails, even by never letting the main thread run again).
 */
async function loadChosenRelease(dir: string, log: Logger): Promise<boolean> {
  const choice = await chooseRelease(dir, STEWARD_VERSION);
  if (choice.rolledBack)
    log.warn("went back to the previous agent release", {
      version: choice.rolledBack.version,
      why: choice.rolledBack.message,
    });
  if (!choice.entry) return false;
  if (choice.trialLeftMs !== undefined)
    startReleaseWatchdog(__filename, { dir, version: choice.version!, ms: choice.trialLeftMs });
  log.info("loading the chosen agent release", {
    entry: choice.entry,
    ...(choice.trialLeftMs !== undefined ? { trialMs: choice.trialLeftMs } : {}),
  });
  require(choice.entry);
  return true;
}

if (isReleaseWatchdog()) void runReleaseWatchdog();
else
  main().catch((err: unknown) => {
    process.stderr.write(`agent failed to start: ${(err as Error).message}\n`);
    process.exitCode = 1;
  });
