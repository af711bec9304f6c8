/**
 * Keeping a local controller running, as the local substrate keeps agents running: the supervisor
 * starts the controller as its child and starts it again when it dies, waiting longer after each
 * crash that follows a start closely, and giving up (with one clear log line) when it keeps dying
 * at once (a broken data directory or a port taken: restarting cannot help). SIGTERM stops the
 * controller and then the supervisor. It imports nothing of ours, so it stays a small process.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync, rmSync } from "node:fs";

export interface SupervisorOptions {
  /** The program and its arguments (the controller). */
  command: string[];
  /** Environment of the child. @default the supervisor's own */
  env?: NodeJS.ProcessEnv;
  /** Writes one log line (the supervisor's own; the child writes to the inherited stdout and stderr). */
  log: (level: "info" | "error", line: string) => void;
  /** A run shorter than this counts as an immediate crash, in milliseconds. @default 10000 */
  immediateCrashMs?: number;
  /** Immediate crashes in a row before giving up. @default 5 */
  maxImmediateCrashes?: number;
  /** Wait before the first restart, doubled after each immediate crash, in milliseconds. @default 1000 */
  initialBackoffMs?: number;
  /** Longest wait between restarts, in milliseconds. @default 30000 */
  maxBackoffMs?: number;
  /**
   * A file the child writes once it serves (removed before each start). When the first run dies
   * before writing it, the supervisor does not restart it and ends at once: it never worked (a
   * port taken, a broken data directory), and whoever started it reports that.
   */
  readyFile?: string;
  /** Time the child gets to stop on SIGTERM before SIGKILL, in milliseconds. @default 10000 */
  stopGraceMs?: number;
}

export class Supervisor {
  private child?: ChildProcess;
  private stopping = false;
  private immediateCrashes = 0;
  private runs = 0;
  private restartTimer?: NodeJS.Timeout;
  private resolveDone?: (code: number) => void;

  constructor(private readonly o: SupervisorOptions) {}

  /** Runs until stopped (resolves 0) or until it gives up (resolves 1). */
  run(): Promise<number> {
    return new Promise((resolve) => {
      this.resolveDone = resolve;
      this.start();
    });
  }

  private start(): void {
    const [program, ...args] = this.o.command;
    const startedAt = Date.now();
    if (this.o.readyFile) rmSync(this.o.readyFile, { force: true });
    this.runs++;
    const child = spawn(program!, args, { stdio: ["ignore", "inherit", "inherit"], env: this.o.env ?? process.env });
    this.child = child;
    // A child that cannot be spawned at all emits "error" and maybe no "exit": count it once.
    let ended = false;
    const end = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (ended) return;
      ended = true;
      this.exited(Date.now() - startedAt, code, signal);
    };
    child.once("error", (err) => {
      this.o.log("error", `supervisor: cannot start the controller: ${err.message}`);
      end(127, null);
    });
    child.once("exit", end);
  }

  private exited(ranMs: number, code: number | null, signal: NodeJS.Signals | null): void {
    this.child = undefined;
    if (this.stopping) return this.resolveDone?.(0);
    const how = signal ? `killed by ${signal}` : `exited with code ${code}`;
    if (this.runs === 1 && this.o.readyFile && !existsSync(this.o.readyFile)) {
      this.o.log("error", `supervisor: the controller ${how} before it served; not restarting it`);
      return this.resolveDone?.(1);
    }
    const immediate = ranMs < (this.o.immediateCrashMs ?? 10_000);
    this.immediateCrashes = immediate ? this.immediateCrashes + 1 : 0;
    const max = this.o.maxImmediateCrashes ?? 5;
    if (this.immediateCrashes >= max) {
      this.o.log(
        "error",
        `supervisor: the controller ${how}; it died within ${Math.round((this.o.immediateCrashMs ?? 10_000) / 1000)} s of starting ${max} times in a row, so it is not restarted again: see the lines above, fix the cause, then start it again (${this.o.command.join(" ")})`,
      );
      return this.resolveDone?.(1);
    }
    const base = this.o.initialBackoffMs ?? 1000;
    const delay = Math.min(this.o.maxBackoffMs ?? 30_000, base * 2 ** Math.max(0, this.immediateCrashes - 1));
    this.o.log(
      "info",
      `supervisor: the controller ${how} after ${Math.round(ranMs / 1000)} s; restarting it in ${delay / 1000} s`,
    );
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.start();
    }, delay);
  }

  /** Stops the controller (SIGTERM, then SIGKILL after the grace time) and ends {@link run}. */
  stop(): void {
    if (this.stopping) return;
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child) return this.resolveDone?.(0);
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), this.o.stopGraceMs ?? 10_000).unref();
  }
}
