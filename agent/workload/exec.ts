/**
 * `exec` in a workload container: a command run by its supervisor (no shell), in a process group
 * of its own that is killed whole when it outlives its timeout, with its output kept up to a bound.
 */
import { spawn } from "node:child_process";
import type { ExecResult } from "./protocol";
import { MAX_EXEC_OUTPUT } from "./protocol";

export interface ExecRequest {
  command: string[];
  environment?: Record<string, string>;
  workingDir?: string;
  timeoutMs: number;
  stdin?: string;
}

export function execCommand(r: ExecRequest): Promise<ExecResult> {
  return new Promise((resolve) => {
    const proc = spawn(r.command[0]!, r.command.slice(1), {
      env: { ...process.env, ...(r.environment ?? {}) },
      ...(r.workingDir ? { cwd: r.workingDir } : {}),
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    const out = { stdout: [] as Buffer[], stderr: [] as Buffer[], bytes: { stdout: 0, stderr: 0 } };
    let truncated = false,
      timedOut = false;
    const keep =
      (which: "stdout" | "stderr") =>
      (d: Buffer): void => {
        const room = MAX_EXEC_OUTPUT - out.bytes[which];
        if (room <= 0) {
          truncated = true;
          return;
        }
        if (d.length > room) truncated = true;
        out[which].push(d.subarray(0, room));
        out.bytes[which] += Math.min(d.length, room);
      };
    proc.stdout.on("data", keep("stdout"));
    proc.stderr.on("data", keep("stderr"));
    proc.stdin.on("error", () => undefined); // a command that does not read its input
    proc.stdin.end(r.stdin ?? "");
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-proc.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
    }, r.timeoutMs);
    const text = (which: "stdout" | "stderr"): string => Buffer.concat(out[which]).toString("utf8");
    proc.once("error", (err) => {
      clearTimeout(timer);
      resolve({
        exitCode: 127,
        stdout: "",
        stderr: `cannot run ${r.command[0]}: ${err.message}\n`,
        timedOut: false,
        truncated: false,
      });
    });
    proc.once("close", (code, signal) => {
      clearTimeout(timer);
      if (proc.pid === undefined) return; // never started: answered by "error"
      resolve({
        exitCode: code ?? 128 + (signal === "SIGKILL" ? 9 : 15),
        stdout: text("stdout"),
        stderr: text("stderr"),
        timedOut,
        truncated,
      });
    });
  });
}
