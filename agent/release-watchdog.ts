/**
 * The trial watchdog of a chosen agent release (agent-release.ts), in a worker thread: its timer
 * runs on the worker's own event loop, so a new release that blocks the main thread (a busy loop, a
 * synchronous wait that never ends) is still taken back at its deadline, which a timer on the main
 * thread would never see. Taking it back kills the whole process (a worker's process.exit ends the
 * worker only); what keeps the agent running starts it again, on the release before.
 */
import { writeSync } from "node:fs";
import { Worker, isMainThread, workerData } from "node:worker_threads";
import { rollBackIfOnTrial } from "./agent-release";

interface WatchdogData {
  kind: "release-watchdog";
  dir: string;
  version: string;
  ms: number;
}

/** Starts the watchdog beside this process's main thread; `entry` is the script that holds this module (the bundle). */
export function startReleaseWatchdog(entry: string, o: Omit<WatchdogData, "kind">): void {
  const data: WatchdogData = { kind: "release-watchdog", ...o };
  // Nothing waits for it: it must not keep a process that is ending alive.
  new Worker(entry, { workerData: data, stdout: false, stderr: false }).unref();
}

/** Whether this thread is a watchdog (the entry then runs {@link runReleaseWatchdog} and nothing else). */
export function isReleaseWatchdog(): boolean {
  return !isMainThread && (workerData as Partial<WatchdogData> | undefined)?.kind === "release-watchdog";
}

export async function runReleaseWatchdog(): Promise<void> {
  const { dir, version, ms } = workerData as WatchdogData;
  await new Promise((r) => setTimeout(r, ms));
  if (!(await rollBackIfOnTrial(dir, version))) return;
  // Written straight to the descriptor: a worker's process.stderr goes through the main thread, which may be stuck.
  writeSync(
    2,
    `${new Date().toISOString()} WARN  the new agent release did not report in time; going back to the previous one component=agent version=${version}\n`,
  );
  process.kill(process.pid, "SIGKILL");
}
