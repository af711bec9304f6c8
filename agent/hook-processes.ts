/**
 * {@link HookProcessRecord} remembers, in the agent's directory, the process group of the hook that
 * is running, so that hooks on one machine never overlap across agent deaths. A hook runs in its own
 * process group (so a timeout kills what it started too); an agent killed with SIGKILL cannot take
 * it along, and its successor would re-run the same hook beside it. So the successor kills the
 * recorded group before it runs anything, once it is sure the recorded process is the same one
 * (same start time in /proc: a pid may have been reused by then).
 *
 * ```ts
 * const hooks = new HookProcessRecord(agentDir, log);
 * await hooks.killLeftover(); // on start, before any hook
 * hooks.started(child.pid);   // right after spawning a hook
 * hooks.finished();           // once it has exited
 * ```
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../api/core";

interface RecordedHook {
  /** The hook's pid, which is also its process group id (it is spawned detached). */
  pid: number;
  /** Field 22 of /proc/<pid>/stat: clock ticks since boot when the process started. */
  startTime: string;
}

/** How long to wait for a killed group's processes to be gone. */
const GONE_WAIT_MS = 5000;

export class HookProcessRecord {
  private readonly path: string;

  constructor(
    agentDir: string,
    private readonly log: Logger,
  ) {
    this.path = join(agentDir, "running-hook.json");
  }

  /**
   * Records a hook just spawned. Synchronous on purpose: the record must be on disk before the
   * agent does anything else (a kill at any later point leaves a group its successor can find).
   */
  started(pid: number | undefined): void {
    const startTime = pid === undefined ? undefined : processStartTime(pid);
    if (pid === undefined || startTime === undefined) return;
    try {
      writeFileSync(this.path, JSON.stringify({ pid, startTime } satisfies RecordedHook), { mode: 0o600 });
    } catch (err) {
      this.log.warn("could not record the running hook's process", { pid, err });
    }
  }

  /** The recorded hook has exited: nothing is left to kill. */
  finished(): void {
    rmSync(this.path, { force: true });
  }

  /**
   * Kills the process group of a hook a previous incarnation of the agent left running, and waits
   * for it to be gone. Does nothing when there is no record, or the recorded process has exited
   * (or its pid now belongs to another process).
   */
  async killLeftover(): Promise<void> {
    const recorded = this.read();
    if (!recorded) return;
    if (processStartTime(recorded.pid) === recorded.startTime) {
      this.log.warn("a hook from before this agent started is still running: killing its process group", {
        pid: recorded.pid,
      });
      signalGroup(recorded.pid, "SIGKILL");
      const deadline = Date.now() + GONE_WAIT_MS;
      while (signalGroup(recorded.pid, 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    }
    this.finished();
  }

  private read(): RecordedHook | undefined {
    try {
      const r = JSON.parse(readFileSync(this.path, "utf8")) as Partial<RecordedHook>;
      return typeof r.pid === "number" && r.pid > 1 && typeof r.startTime === "string"
        ? { pid: r.pid, startTime: r.startTime }
        : undefined;
    } catch {
      return undefined;
    }
  }
}

/** Sends `signal` to the process group `pgid`; false when no process is left in it. */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** A process's start time from /proc, or undefined when it is gone (or there is no /proc). */
function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[19];
  } catch {
    return undefined;
  }
}
