/**
 * The hook tools: what each does with its arguments inside a hook's context. Each answers
 * `--help`, refuses unknown flags with a usage line, and exits 0 on success, 1 on a refusal and 2
 * on misuse.
 */
import type { UnitView } from "../../api/core";

export interface ToolResult { code: number; stdout?: string; stderr?: string }

/** What a tool may see and do: the unit whose hook is running. */
export interface HookContext {
  unit: string;
  hook: string;
  view(): UnitView;
  workloadStatus(): { status: string; message: string };
  setWorkloadStatus(status: string, message: string): Promise<void>;
  setVersion(version: string): Promise<void>;
  log(level: string, message: string): void;
}

interface ToolSpec {
  usage: string;
  summary: string;
  flags: Record<string, "bool" | "value">;
  run(ctx: HookContext, flags: Record<string, string | true>, positional: string[]): Promise<ToolResult>;
}

const WORKLOAD = ["active", "blocked", "maintenance", "waiting", "unknown", "terminated"];
const LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR"];
const ok = (stdout = ""): ToolResult => ({ code: 0, stdout });
const refuse = (tool: string, msg: string): ToolResult => ({ code: 1, stderr: `${tool}: ${msg}\n` });

export const tools: Record<string, ToolSpec> = {
  "status-set": {
    usage: "status-set <active|blocked|maintenance|waiting> [message...]",
    summary: "set the unit's workload status, shown at once in `steward status`",
    flags: {},
    async run(ctx, _f, pos) {
      const [status, ...words] = pos;
      if (!status || !WORKLOAD.includes(status) || status === "unknown" || status === "terminated") return { code: 2, stderr: `status-set: first argument must be one of active, blocked, maintenance, waiting (got ${status ? `"${status}"` : "nothing"})\nusage: ${this.usage}\n` };
      const message = words.join(" ");
      if (message.length > 1024) return refuse("status-set", "message is longer than 1024 characters");
      await ctx.setWorkloadStatus(status, message);
      return ok();
    },
  },
  "status-get": {
    usage: "status-get [--format text|json]",
    summary: "print the unit's workload status (text: the status; json: {status, message})",
    flags: { "--format": "value" },
    async run(ctx, f) {
      const s = ctx.workloadStatus();
      if (f["--format"] === "json") return ok(JSON.stringify(s) + "\n");
      if (f["--format"] !== undefined && f["--format"] !== "text") return { code: 2, stderr: "status-get: --format must be text or json\n" };
      return ok(`${s.status}\n`);
    },
  },
  "config-get": {
    usage: "config-get [--format text|json] [key]",
    summary: "print the application's config: one value, or all of it as JSON",
    flags: { "--format": "value", "--all": "bool" },
    async run(ctx, f, pos) {
      const config = ctx.view().config;
      if (pos.length > 1) return { code: 2, stderr: `config-get: give at most one key\nusage: ${this.usage}\n` };
      if (pos.length === 0) return ok(JSON.stringify(config) + "\n");
      const key = pos[0]!;
      if (!(key in config)) {
        const known = Object.keys(config);
        return refuse("config-get", `"${key}" is not set and has no default (options with values: ${known.length > 0 ? known.join(", ") : "none"})`);
      }
      const v = config[key];
      return ok(f["--format"] === "json" ? JSON.stringify(v) + "\n" : `${String(v)}\n`);
    },
  },
  "application-version-set": {
    usage: "application-version-set <version>",
    summary: "set the workload version shown for the application in `steward status`",
    flags: {},
    async run(ctx, _f, pos) {
      if (pos.length !== 1 || pos[0]!.length > 256) return { code: 2, stderr: `application-version-set: give exactly one version string (at most 256 characters)\nusage: ${this.usage}\n` };
      await ctx.setVersion(pos[0]!);
      return ok();
    },
  },
  "log": {
    usage: "log [--level DEBUG|INFO|WARNING|ERROR] <message...>",
    summary: "write a message to the unit's log",
    flags: { "--level": "value", "-l": "value" },
    async run(ctx, f, pos) {
      const level = String(f["--level"] ?? f["-l"] ?? "INFO").toUpperCase();
      if (!LEVELS.includes(level)) return { code: 2, stderr: `log: --level must be one of ${LEVELS.join(", ")}\n` };
      if (pos.length === 0) return { code: 2, stderr: `log: nothing to log\nusage: ${this.usage}\n` };
      ctx.log(level, pos.join(" "));
      return ok();
    },
  },
};

/** Parses a tool's arguments against its flags and runs it. */
export async function runTool(ctx: HookContext, name: string, args: string[]): Promise<ToolResult> {
  const spec = tools[name];
  if (!spec) return { code: 2, stderr: `${name}: not a hook tool this agent provides (available: ${Object.keys(tools).join(", ")})\n` };
  if (args.includes("--help") || args.includes("-h")) return ok(`usage: ${spec.usage}\n\n${spec.summary}\n`);
  const flags: Record<string, string | true> = {};
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") { positional.push(...args.slice(i + 1)); break; }
    if (a.startsWith("-") && a.length > 1 && !/^-\d/.test(a)) {
      const [flag, inline] = a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a, undefined];
      const kind = spec.flags[flag];
      if (!kind) return { code: 2, stderr: `${name}: unknown flag ${flag}\nusage: ${spec.usage}\n` };
      if (kind === "bool") flags[flag] = true;
      else {
        const v = inline ?? args[++i];
        if (v === undefined) return { code: 2, stderr: `${name}: ${flag} needs a value\nusage: ${spec.usage}\n` };
        flags[flag] = v;
      }
    } else positional.push(a);
  }
  return spec.run(ctx, flags, positional);
}
