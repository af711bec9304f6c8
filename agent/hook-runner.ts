/**
 * Runs one hook: `hooks/<name>` if the operator has it, else its `dispatch` executable with
 * STEWARD_DISPATCH_PATH naming the hook, else nothing (a missing hook succeeds, as in Juju). Actions
 * run the same way from `actions/<name>`.
 * Output goes to the unit's log; a hook that outlives its timeout is killed and counts as failed.
 */
import { spawn } from "node:child_process";
import { access, constants, open } from "node:fs/promises";
import { join } from "node:path";
import { LineSplitter } from "./hook-output";

export interface HookRun {
  operatorDir: string;
  /** The executable's name in `folder`. */
  hook: string;
  /** Where the executable lives: `hooks` or, for an action, `actions`. @default "hooks" */
  folder?: "hooks" | "actions";
  env: Record<string, string>;
  logPath: string;
  /** @default 600000 (10 minutes) */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Called right after the hook's process is spawned, with its pid (also its process group id). */
  onSpawn?: (pid: number | undefined) => void;
  /** Each line the hook prints (cut and cleaned by {@link LineSplitter}), for `steward debug-log`. */
  onLine?: (line: string, stream: "stdout" | "stderr") => void;
}

export interface HookResult {
  /** False when the operator has no such hook and no dispatch. */
  ran: boolean;
  exitCode: number;
  /** Last lines of output, for the error message when the hook fails. */
  tail: string;
}

const executable = (p: string): Promise<boolean> =>
  access(p, constants.X_OK).then(
    () => true,
    () => false,
  );

export async function runHook(r: HookRun): Promise<HookResult> {
  const folder = r.folder ?? "hooks";
  const hookPath = join(r.operatorDir, folder, r.hook);
  const dispatch = join(r.operatorDir, "dispatch");
  let command: string;
  if (await executable(hookPath)) command = hookPath;
  else if (await executable(dispatch)) command = dispatch;
  else return { ran: false, exitCode: 0, tail: "" };

  const log = await open(r.logPath, "a", 0o600);
  try {
    const startedAt = Date.now();
    await log.write(`--- ${new Date(startedAt).toISOString()} running ${r.hook}\n`);
    const child = spawn(command, [], {
      cwd: r.operatorDir,
      env: { ...r.env, STEWARD_DISPATCH_PATH: `${folder}/${r.hook}` },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true, // its own process group, so a timeout kills what it started too
    });
    r.onSpawn?.(child.pid);
    let tail = "";
    const onData = (d: Buffer): void => {
      log.write(d).catch(() => undefined);
      tail = (tail + d.toString("utf8")).slice(-4096);
    };
    const lines = {
      stdout: new LineSplitter((l) => r.onLine?.(l, "stdout")),
      stderr: new LineSplitter((l) => r.onLine?.(l, "stderr")),
    };
    child.stdout.on("data", (d: Buffer) => {
      onData(d);
      lines.stdout.push(d);
    });
    child.stderr.on("data", (d: Buffer) => {
      onData(d);
      lines.stderr.push(d);
    });
    const killGroup = (): void => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
    };
    const timer = setTimeout(() => {
      tail += `\n(killed after ${r.timeoutMs ?? 600_000} ms)`;
      killGroup();
    }, r.timeoutMs ?? 600_000);
    r.signal?.addEventListener("abort", killGroup, { once: true });
    const exitCode = await new Promise<number>((resolve) => {
      child.on("error", (err) => {
        tail += `\n${err.message}`;
        resolve(127);
      });
      child.on("close", (code, sig) => resolve(code ?? (sig ? 128 : 1)));
    });
    clearTimeout(timer);
    lines.stdout.end();
    lines.stderr.end();
    r.signal?.removeEventListener("abort", killGroup);
    // When and how long: a slow hook delays every event queued behind it on the unit.
    await log.write(
      `--- ${new Date().toISOString()} ${r.hook} exited ${exitCode} after ${Date.now() - startedAt} ms\n`,
    );
    return { ran: true, exitCode, tail: tail.trim() };
  } finally {
    await log.close();
  }
}
