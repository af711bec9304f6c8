/**
 * What a hook pays to reach the agent: one `is-leader` call through the tool's program (a process
 * start, as a shell hook or execFileSync pays it) and in-process from Node
 * (`require(STEWARD_TOOLS_MODULE).runTool`, docs/operators.md), against a real HookToolServer on its
 * Unix socket. The context behind it answers is-leader only: the figure is the transport's, not a
 * tool's work. Median and 95th percentile per call over `size` calls each; the in-process first call
 * includes starting its worker thread, once per hook.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HookToolServer } from "../agent";
import type { HookContext } from "../agent";
import type { BenchOptions } from "./util";
import { median, percentile, report } from "./util";

export async function benchHookTools(o: BenchOptions = {}): Promise<void> {
  const calls = o.size ?? 200;
  const dir = await mkdtemp(join(tmpdir(), "steward-bench-tools-"));
  const server = new HookToolServer(dir);
  try {
    await server.start();
    server.register("bench", { isLeader: async () => true } as unknown as HookContext);
    const env = {
      PATH: `${server.toolsDir}:${process.env.PATH}`,
      STEWARD_AGENT_SOCKET: server.socketPath,
      STEWARD_CONTEXT_ID: "bench",
      STEWARD_TOOLS_MODULE: server.clientModule,
    };
    // A child process plays the hook, so the server's event loop here answers both ways alike.
    const hook = `
      const { execFileSync } = require("node:child_process");
      const { runTool } = require(process.env.STEWARD_TOOLS_MODULE);
      const time = (fn) => { const t = process.hrtime.bigint(); fn(); return Number(process.hrtime.bigint() - t) / 1e6; };
      const n = Number(process.argv[1]);
      const check = (out) => { if (out !== "true\\n") throw new Error("is-leader answered " + JSON.stringify(out)); };
      const program = [], inProcess = [];
      for (let i = 0; i < n; i++) program.push(time(() => check(execFileSync("is-leader", [], { encoding: "utf8" }))));
      for (let i = 0; i < n; i++) inProcess.push(time(() => check(runTool("is-leader").stdout)));
      process.stdout.write(JSON.stringify({ program, inProcess }));`;
    const out = await new Promise<string>((resolve, reject) => {
      // Not execFileSync: this process's server must answer while the child waits on it.
      execFile(process.execPath, ["-e", hook, String(calls)], { env, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}: ${stderr}`)) : resolve(stdout),
      );
    });
    const { program, inProcess } = JSON.parse(out) as { program: number[]; inProcess: number[] };
    const steady = inProcess.slice(1);
    report(`hook-tools: ${calls} is-leader calls each way`, {
      "program: per call median (ms)": median(program),
      "program: per call p95 (ms)": percentile(program, 95),
      "in-process: first call, worker start (ms)": inProcess[0]!,
      "in-process: per call median (ms)": median(steady),
      "in-process: per call p95 (ms)": percentile(steady, 95),
      "20 calls (a reconcile): program (ms)": median(program) * 20,
      "20 calls (a reconcile): in-process (ms)": inProcess[0]! + median(steady) * 19,
    });
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}
