/**
 * The agent's hook-tool socket. A hook's tools name their context (the running hook); only contexts
 * registered for the duration of a hook are answered, so a stray process cannot act for a unit.
 *
 * Outside a hook, a process a hook started (a workload's watchdog, a tracer) may still ask what only
 * reads, and stop its own workload's services: the tools in {@link OUTSIDE_HOOK_TOOLS}, through its
 * unit's context (`STEWARD_UNIT_CONTEXT_ID`, given to every hook and living as long as the unit's
 * uniter). A database primary's watchdog asks `is-leader` this way, and stops accepting writes once it
 * answers false while cut off (on a pod, by stopping the server's service in its workload container).
 */
import { createHash } from "node:crypto";
import { chmod, mkdir, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import type { Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HookContext } from "./tools";
import { runTool, tools } from "./tools";

/** What a hook tool may send on its standard input (container-layer-set reads a layer there). */
export const MAX_TOOL_STDIN = 1024 * 1024;
const MAX_TOOL_REQUEST = 2 * MAX_TOOL_STDIN;

/**
 * Tools a unit's processes may run outside a hook: they read (is-leader's claim renews, as inside a
 * hook), or stop the unit's own workload services, which nothing outside a hook could start again.
 */
export const OUTSIDE_HOOK_TOOLS: ReadonlySet<string> = new Set([
  "is-leader",
  "leader-get",
  "config-get",
  "status-get",
  "container-services",
  "container-stop",
]);

export class HookToolServer {
  private readonly contexts = new Map<string, HookContext>();
  /** Each unit's context for tools run outside a hook (OUTSIDE_HOOK_TOOLS only). */
  private readonly unitContexts = new Map<string, HookContext>();
  private server?: Server;
  readonly socketPath: string;
  readonly toolsDir: string;
  /** The client every wrapper runs, which Node operators may also require to call tools in-process. */
  readonly clientModule = join(__dirname, "tool-client.js");

  constructor(agentDir: string) {
    // Unix socket paths are limited to ~107 bytes; deep agent directories fall back to a short path.
    const local = join(agentDir, "agent.sock");
    this.socketPath =
      local.length < 100
        ? local
        : join(tmpdir(), `steward-${createHash("sha256").update(agentDir).digest("hex").slice(0, 12)}.sock`);
    this.toolsDir = join(agentDir, "tools");
  }

  async start(): Promise<void> {
    await rm(this.socketPath, { force: true });
    this.server = createServer((sock) => {
      let buf = "";
      let answered = false;
      sock.on("data", (d: Buffer) => {
        if (answered) return;
        buf += d.toString("utf8");
        // A tool call is its arguments and at most MAX_TOOL_STDIN of input: more is not one.
        if (buf.length > MAX_TOOL_REQUEST) {
          answered = true;
          sock.end(JSON.stringify({ code: 2, stderr: `the tool call is larger than ${MAX_TOOL_REQUEST} bytes\n` }));
          return;
        }
        const nl = buf.indexOf("\n");
        if (nl < 0) return;
        answered = true;
        this.answer(buf.slice(0, nl))
          .then((res) => sock.end(JSON.stringify(res)))
          .catch((err: unknown) => sock.end(JSON.stringify({ code: 1, stderr: `${(err as Error).message}\n` })));
      });
      sock.on("error", () => undefined);
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once("error", reject);
      this.server!.listen(this.socketPath, () => resolve());
    });
    await chmod(this.socketPath, 0o600);
    await this.writeToolWrappers();
  }

  /** One small shell wrapper per tool, so hooks find them on PATH in any language. */
  private async writeToolWrappers(): Promise<void> {
    await mkdir(this.toolsDir, { recursive: true });
    for (const name of Object.keys(tools)) {
      await writeFile(
        join(this.toolsDir, name),
        `#!/bin/sh\nexec '${process.execPath}' '${this.clientModule}' ${name} "$@"\n`,
        {
          mode: 0o755,
        },
      );
    }
  }

  private async answer(line: string): Promise<{ code: number; stdout?: string; stderr?: string }> {
    const req = JSON.parse(line) as {
      context?: string;
      unitContext?: string;
      tool?: string;
      args?: unknown;
      cwd?: unknown;
      stdin?: unknown;
    };
    let ctx = req.context ? this.contexts.get(req.context) : undefined;
    if (!ctx && typeof req.unitContext === "string" && OUTSIDE_HOOK_TOOLS.has(String(req.tool)))
      ctx = this.unitContexts.get(req.unitContext);
    if (!ctx)
      return {
        code: 2,
        stderr: `${req.tool}: no hook is running with this context (tools work only inside a running hook, but for ${[...OUTSIDE_HOOK_TOOLS].join(", ")})\n`,
      };
    const args = Array.isArray(req.args) ? req.args.map(String) : [];
    return runTool(ctx, String(req.tool), args, {
      ...(typeof req.cwd === "string" ? { cwd: req.cwd } : {}),
      ...(typeof req.stdin === "string" ? { stdin: req.stdin } : {}),
    });
  }

  register(id: string, ctx: HookContext): () => void {
    this.contexts.set(id, ctx);
    return () => this.contexts.delete(id);
  }

  /** A unit's context for the read-only tools its processes run outside hooks (see the header). */
  registerUnit(id: string, ctx: HookContext): () => void {
    this.unitContexts.set(id, ctx);
    return () => this.unitContexts.delete(id);
  }

  async close(): Promise<void> {
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    await rm(this.socketPath, { force: true });
  }
}
