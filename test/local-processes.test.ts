/**
 * Pid files of the local substrate (controller, supervisor, agents) outlive their processes, and
 * pids are reused (they wrap at 32,768 here): a stale pid file must never make Steward signal, or
 * take for its own, a process that merely has that number now. A full test run once lost its own
 * `npm test` to a destroyed controller's stale agent pid.
 */
import test from "ava";
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalMachines, isProcessOf, removeLocalController, stopProcess } from "../substrates";
import { eventually } from "./harness/eventually";

/** A process whose arguments are `args` (as an agent's name its directory). */
const sleeper = (...args: string[]): ChildProcess => spawn("sh", ["-c", "sleep 60", ...args], { stdio: "ignore" });
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test("a pid that now belongs to another process is neither taken for ours nor stopped", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-pids-"));
  const stranger = sleeper("unrelated");
  const ours = sleeper("--dir", join(dir, "m", "1"));
  const neighbour = sleeper("--dir", join(dir, "m", "10"));
  t.teardown(async () => {
    for (const c of [stranger, ours, neighbour]) c.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
  });
  t.false(isProcessOf(stranger.pid!, join(dir, "m", "1")));
  t.true(isProcessOf(ours.pid!, join(dir, "m", "1")));
  t.false(isProcessOf(neighbour.pid!, join(dir, "m", "1")), "machine 1's marker does not match machine 10's process");
  t.true(isProcessOf(ours.pid!, join(dir, "m")), "a directory matches the processes of what lies under it");

  await stopProcess(stranger.pid!, join(dir, "m", "1"), 200);
  t.true(alive(stranger.pid!), "a stranger with a recorded pid lives on");
  await stopProcess(ours.pid!, join(dir, "m", "1"), 200);
  await eventually("our process stopped", () => ours.exitCode !== null || ours.signalCode !== null);
});

test("removing a local controller whose pid files are all stale leaves other processes alone", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "steward-stale-"));
  const stranger = sleeper("unrelated");
  t.teardown(() => {
    stranger.kill("SIGKILL");
  });
  const pid = String(stranger.pid);
  await writeFile(join(dataDir, "supervisor.pid"), pid);
  await writeFile(join(dataDir, "controller.pid"), pid);
  await mkdir(join(dataDir, "machines", "model-uuid", "0"), { recursive: true });
  await writeFile(join(dataDir, "machines", "model-uuid", "0", "agent.pid"), pid);
  await removeLocalController(dataDir);
  t.true(alive(stranger.pid!), "the process that inherited the recorded pids still runs");

  const machinesDir = await mkdtemp(join(tmpdir(), "steward-stale-m-"));
  t.teardown(() => rm(machinesDir, { recursive: true, force: true }));
  const machines = new LocalMachines({ machinesDir, agentEntry: "/nonexistent/agent.js" });
  await mkdir(join(machinesDir, "model-uuid", "3"), { recursive: true });
  await writeFile(join(machinesDir, "model-uuid", "3", "agent.pid"), pid);
  await machines.stopMachine({ model: "model-uuid", machine: "3" } as Parameters<LocalMachines["stopMachine"]>[0]);
  t.true(alive(stranger.pid!), "removing a machine does not stop a stranger either");
});
