/**
 * The hook tools: what each does with its arguments inside a hook's context. Each answers `--help`,
 * refuses unknown flags with a usage line, and exits 0 on success, 1 on a refusal and 2 on misuse.
 * Relation data, ports and application data written here are buffered and committed when the hook
 * ends (nothing if it fails); status-set and leader-set act at once.
 */
import { DATABAG_LIMIT_BYTES, parsePort } from "../../api/core";
import type { Flags, HookContext, ToolIO, ToolResult, ToolSpec } from "./tool-spec";
import { ToolError, json, misuse, ok, refuse } from "./tool-spec";
import { actionTools } from "./action-tools";
import { containerTools } from "./container-tools";
import { secretTools } from "./secret-tools";
import { storageTools } from "./storage-tools";

export type { HookContext, SecretAccess, SecretRead, ToolIO, ToolResult, WorkloadAccess } from "./tool-spec";

const WORKLOAD = ["active", "blocked", "maintenance", "waiting"];
const LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR"];
const READINESS = ["ready", "not-ready"];

/** The relation a tool acts on: `-r endpoint:id` (or just the id), else the hook's own relation. */
function relationOf(
  ctx: HookContext,
  tool: string,
  flags: Flags,
  usage: string,
): { id: number; endpoint: string; remoteApp: string } {
  const r = flags["-r"] ?? flags["--relation"];
  if (r === undefined) {
    if (!ctx.relation)
      throw new ToolError(
        misuse(tool, "this is not a relation hook: name the relation with -r <endpoint:id> (see relation-ids)", usage),
      );
    const vr = ctx.view().relations.find((x) => x.id === ctx.relation!.id);
    return {
      id: ctx.relation.id,
      endpoint: ctx.relation.endpoint,
      remoteApp: vr?.remoteApp ?? ctx.relation.remoteApp ?? "",
    };
  }
  const m = /^(?:([a-z][a-z0-9-]*):)?(\d+)$/.exec(String(r));
  const vr = m
    ? ctx.view().relations.find((x) => x.id === Number(m[2]) && (m[1] === undefined || x.endpoint === m[1]))
    : undefined;
  if (!vr)
    throw new ToolError(
      refuse(
        tool,
        `relation ${String(r)} does not exist for ${ctx.unit} (known: ${
          ctx
            .view()
            .relations.map((x) => `${x.endpoint}:${x.id}`)
            .join(", ") || "none"
        })`,
      ),
    );
  return { id: vr.id, endpoint: vr.endpoint, remoteApp: vr.remoteApp };
}

/** `key=value` words; an empty value deletes the key (as in Juju). */
function assignments(tool: string, words: string[], usage: string): Record<string, string | null> {
  if (words.length === 0) throw new ToolError(misuse(tool, "give at least one key=value", usage));
  const out: Record<string, string | null> = {};
  for (const w of words) {
    const eq = w.indexOf("=");
    if (eq <= 0) throw new ToolError(misuse(tool, `"${w}" is not key=value`, usage));
    const v = w.slice(eq + 1);
    out[w.slice(0, eq)] = v === "" ? null : v;
  }
  return out;
}

/** One value (text or JSON), or with no key the whole map as JSON; `onMissing` answers for an absent key. */
function oneOrAll(
  tool: string,
  usage: string,
  data: Record<string, unknown>,
  pos: string[],
  format: string | true | undefined,
  onMissing: (key: string) => ToolResult,
): ToolResult {
  if (pos.length > 1) return misuse(tool, "give at most one key", usage);
  if (pos.length === 0) return ok(json(data));
  const key = pos[0]!;
  if (!(key in data)) return onMissing(key);
  return ok(format === "json" ? json(data[key]) : `${String(data[key])}\n`);
}

function portSpec(tool: string, text: string | undefined, usage: string): string {
  const parsed = parsePort(text ?? "");
  if (parsed.ok) return parsed.port;
  throw new ToolError(parsed.reason === "form" ? misuse(tool, parsed.message, usage) : refuse(tool, parsed.message));
}

function portTool(name: string, summary: string, apply: (ctx: HookContext, port: string) => void): ToolSpec {
  return {
    usage: `${name} <port>[/tcp|/udp] | <from>-<to>/<protocol> | icmp`,
    summary,
    flags: {},
    async run(ctx, _f, pos) {
      if (pos.length !== 1) return misuse(name, "give exactly one port", this.usage);
      apply(ctx, portSpec(name, pos[0], this.usage));
      return ok();
    },
  };
}

export const tools: Record<string, ToolSpec> = {
  "status-set": {
    usage: "status-set [--application] <active|blocked|maintenance|waiting> [message...]",
    summary:
      "set the unit's workload status (or, for the leader with --application, the application's); shown at once in `steward status`",
    flags: { "--application": "bool" },
    async run(ctx, f, pos) {
      const [status, ...words] = pos;
      if (!status || !WORKLOAD.includes(status))
        return misuse(
          "status-set",
          `first argument must be one of ${WORKLOAD.join(", ")} (got ${status ? `"${status}"` : "nothing"})`,
          this.usage,
        );
      const message = words.join(" ");
      if (message.length > 1024) return refuse("status-set", "message is longer than 1024 characters");
      if (f["--application"]) await ctx.setAppStatus(status, message);
      else await ctx.setWorkloadStatus(status, message);
      return ok();
    },
  },
  "status-get": {
    usage: "status-get [--format text|json]",
    summary: "print the unit's workload status (text: the status; json: {status, message})",
    flags: { "--format": "value" },
    async run(ctx, f) {
      const s = ctx.workloadStatus();
      if (f["--format"] === "json") return ok(json(s));
      if (f["--format"] !== undefined && f["--format"] !== "text")
        return misuse("status-get", "--format must be text or json", this.usage);
      return ok(`${s.status}\n`);
    },
  },
  "config-get": {
    usage: "config-get [--format text|json] [key]",
    summary: "print the application's config: one value, or all of it as JSON",
    flags: { "--format": "value" },
    async run(ctx, f, pos) {
      const config = ctx.view().config;
      return oneOrAll("config-get", this.usage, config, pos, f["--format"], (key) =>
        refuse(
          "config-get",
          `"${key}" is not set and has no default (options with values: ${Object.keys(config).join(", ") || "none"})`,
        ),
      );
    },
  },
  "application-version-set": {
    usage: "application-version-set <version>",
    summary: "set the workload version shown for the application in `steward status`",
    flags: {},
    async run(ctx, _f, pos) {
      if (pos.length !== 1 || pos[0]!.length > 256)
        return misuse(
          "application-version-set",
          "give exactly one version string (at most 256 characters)",
          this.usage,
        );
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
      if (!LEVELS.includes(level)) return misuse("log", `--level must be one of ${LEVELS.join(", ")}`, this.usage);
      if (pos.length === 0) return misuse("log", "nothing to log", this.usage);
      ctx.log(level, pos.join(" "));
      return ok();
    },
  },
  "is-leader": {
    usage: "is-leader [--format text|json]",
    summary:
      "print true if this unit leads its application and keeps leadership for at least half its leadership lease more (30 s with the default 60 s lease), else false; when the controller cannot be reached, true only while the unit's last renewal still guarantees that",
    flags: { "--format": "value" },
    async run(ctx, f) {
      const leader = await ctx.isLeader();
      return ok(f["--format"] === "json" ? json(leader) : `${leader}\n`);
    },
  },
  "leader-resign": {
    usage: "leader-resign [--to UNIT]",
    summary:
      "give up leadership now (leader only), for a planned switchover that does not wait for the lease to run out: is-leader answers false from now on; for the next lease period only UNIT (a live unit of this application) may take leadership, or without --to any unit but this one",
    flags: { "--to": "value" },
    async run(ctx, f, pos) {
      if (pos.length > 0) return misuse("leader-resign", "takes no arguments but --to UNIT", this.usage);
      const to = f["--to"] === undefined ? undefined : String(f["--to"]);
      if (to !== undefined && !/^[a-z][a-z0-9-]*\/\d+$/.test(to))
        return misuse("leader-resign", `"${to}" is not a unit name such as ${ctx.view().app}/1`, this.usage);
      if (!ctx.resignLeadership) return refuse("leader-resign", "this agent cannot resign leadership here");
      await ctx.resignLeadership(to);
      return ok();
    },
  },
  "leader-get": {
    usage: "leader-get [--format text|json] [key]",
    summary: "print the application's leader data: one value, or all of it as JSON",
    flags: { "--format": "value" },
    async run(ctx, f, pos) {
      if (pos.length > 1) return misuse("leader-get", "give at most one key", this.usage);
      return oneOrAll("leader-get", this.usage, await ctx.leaderGet(), pos, f["--format"], () => ok(""));
    },
  },
  "leader-set": {
    usage: "leader-set key=value [key=value...]",
    summary: "change the application's leader data at once (leader only); an empty value deletes the key",
    flags: {},
    async run(ctx, _f, pos) {
      const patch = assignments("leader-set", pos, this.usage);
      if (!(await ctx.isLeader()))
        return refuse(
          "leader-set",
          `${ctx.unit} is not the leader of ${ctx.view().app}; only the leader may leader-set (check with is-leader)`,
        );
      await ctx.leaderSet(patch);
      return ok();
    },
  },
  "relation-ids": {
    usage: "relation-ids [--format text|json] [endpoint]",
    summary:
      "print the ids (endpoint:id) of the unit's integrations on an endpoint (default: this hook's endpoint, else all)",
    flags: { "--format": "value" },
    async run(ctx, f, pos) {
      const endpoint = pos[0] ?? ctx.relation?.endpoint;
      const ids = ctx
        .view()
        .relations.filter((r) => r.life === "alive" && (endpoint === undefined || r.endpoint === endpoint))
        .map((r) => `${r.endpoint}:${r.id}`);
      return ok(f["--format"] === "json" ? json(ids) : ids.map((i) => i + "\n").join(""));
    },
  },
  "relation-list": {
    usage: "relation-list [-r endpoint:id] [--app] [--format text|json]",
    summary: "print the remote units in an integration (with --app: the remote application)",
    flags: { "-r": "value", "--relation": "value", "--app": "bool", "--format": "value" },
    async run(ctx, f) {
      const rel = relationOf(ctx, "relation-list", f, this.usage);
      if (f["--app"]) return ok(f["--format"] === "json" ? json(rel.remoteApp) : `${rel.remoteApp}\n`);
      const units = Object.keys(ctx.view().relations.find((r) => r.id === rel.id)?.remoteUnits ?? {}).sort();
      return ok(f["--format"] === "json" ? json(units) : units.map((u) => u + "\n").join(""));
    },
  },
  "relation-get": {
    usage: "relation-get [-r endpoint:id] [--app] [--format text|json] [key|-] [unit|app]",
    summary:
      "print a databag of an integration: a remote unit's (default: the hook's remote unit), this unit's, or with --app an application's",
    flags: { "-r": "value", "--relation": "value", "--app": "bool", "--format": "value" },
    async run(ctx, f, pos) {
      const rel = relationOf(ctx, "relation-get", f, this.usage);
      if (pos.length > 2) return misuse("relation-get", "give at most a key and a unit (or application)", this.usage);
      const key = pos[0] === undefined || pos[0] === "-" ? undefined : pos[0];
      let target: { unit?: string; app?: string };
      if (f["--app"])
        target = { app: pos[1] ?? (ctx.relation?.id === rel.id ? ctx.relation.remoteApp : undefined) ?? rel.remoteApp };
      else {
        const unit = pos[1] ?? (ctx.relation?.id === rel.id ? ctx.relation.remoteUnit : undefined);
        if (!unit)
          return misuse(
            "relation-get",
            "no remote unit in this hook: name one (see relation-list), or use --app",
            this.usage,
          );
        target = { unit };
      }
      const data = await ctx.relationGet(rel.id, target);
      if (key === undefined) return ok(json(data));
      const v = data[key];
      return ok(v === undefined ? "" : f["--format"] === "json" ? json(v) : `${v}\n`);
    },
  },
  "relation-set": {
    usage: "relation-set [-r endpoint:id] [--app] key=value [key=value...]",
    summary: `set values in this unit's databag (with --app, the application's; leader only), committed when the hook succeeds; an empty value deletes; at most ${DATABAG_LIMIT_BYTES} bytes per databag`,
    flags: { "-r": "value", "--relation": "value", "--app": "bool" },
    async run(ctx, f, pos) {
      const rel = relationOf(ctx, "relation-set", f, this.usage);
      const patch = assignments("relation-set", pos, this.usage);
      const app = f["--app"] === true;
      if (app && !(await ctx.isLeader()))
        return refuse(
          "relation-set",
          `${ctx.unit} is not the leader of ${ctx.view().app}; only the leader may write the application databag`,
        );
      const merged = { ...(await ctx.relationGet(rel.id, app ? { app: ctx.view().app } : { unit: ctx.unit })) };
      for (const [k, v] of Object.entries(patch)) {
        if (v === null) delete merged[k];
        else merged[k] = v;
      }
      const size = Buffer.byteLength(JSON.stringify(merged));
      if (size > DATABAG_LIMIT_BYTES)
        return refuse(
          "relation-set",
          `the databag would hold ${size} bytes; the limit is ${DATABAG_LIMIT_BYTES} bytes`,
        );
      ctx.relationSet(rel.id, app, patch);
      return ok();
    },
  },
  "open-port": portTool(
    "open-port",
    "record a port as open for this unit (shown in status), committed when the hook succeeds",
    (ctx, p) => ctx.openPort(p),
  ),
  "close-port": portTool(
    "close-port",
    "record a port as closed for this unit, committed when the hook succeeds",
    (ctx, p) => ctx.closePort(p),
  ),
  "opened-ports": {
    usage: "opened-ports [--format text|json]",
    summary: "print the ports this unit has open (including changes made earlier in this hook)",
    flags: { "--format": "value" },
    async run(ctx, f) {
      const ports = ctx.openedPorts();
      return ok(f["--format"] === "json" ? json(ports) : ports.map((p) => p + "\n").join(""));
    },
  },
  "readiness-set": {
    usage: "readiness-set ready|not-ready [--message TEXT]",
    summary:
      "say whether this unit is ready to be served (on Kubernetes, its pod's readiness probe: Services list only ready units); acts at once and is kept until said again or the pod is recreated. Never said: ready once the workload status is active",
    flags: { "--message": "value", "-m": "value" },
    async run(ctx, f, pos) {
      if (pos.length !== 1 || !READINESS.includes(pos[0]!))
        return misuse(
          "readiness-set",
          `give exactly one of ${READINESS.join(", ")} (got ${pos.length === 0 ? "nothing" : pos.map((p) => `"${p}"`).join(" ")})`,
          this.usage,
        );
      const message = String(f["--message"] ?? f["-m"] ?? "");
      if (message.length > 1024) return refuse("readiness-set", "message is longer than 1024 characters");
      await ctx.setReadiness(pos[0] === "ready", message);
      return ok();
    },
  },
  "readiness-get": {
    usage: "readiness-get [--format text|json]",
    summary:
      "print whether this unit is ready (text: ready or not-ready; json: {ready, reason, source}, source being operator when readiness-set decided it, else workload)",
    flags: { "--format": "value" },
    async run(ctx, f, pos) {
      if (pos.length > 0) return misuse("readiness-get", "takes no arguments", this.usage);
      const r = ctx.readiness();
      if (f["--format"] === "json") return ok(json(r));
      if (f["--format"] !== undefined && f["--format"] !== "text")
        return misuse("readiness-get", "--format must be text or json", this.usage);
      return ok(`${r.ready ? "ready" : "not-ready"}\n`);
    },
  },
  ...actionTools,
  ...containerTools,
  ...storageTools,
  ...secretTools,
};

/** Parses a tool's arguments against its flags and runs it. */
export async function runTool(ctx: HookContext, name: string, args: string[], io: ToolIO = {}): Promise<ToolResult> {
  const spec = tools[name];
  if (!spec)
    return {
      code: 2,
      stderr: `${name}: not a hook tool this agent provides (available: ${Object.keys(tools).join(", ")})\n`,
    };
  // What follows `--` is a command's (container-exec … -- psql -h HOST), not a plea for help.
  const own = args.includes("--") ? args.slice(0, args.indexOf("--")) : args;
  if (own.includes("--help") || own.includes("-h")) return ok(`usage: ${spec.usage}\n\n${spec.summary}\n`);
  const flags: Flags = {};
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") {
      positional.push(...args.slice(i + 1));
      break;
    }
    if (a.startsWith("-") && a.length > 1 && !/^-\d/.test(a)) {
      const [flag, inline] = a.includes("=")
        ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)]
        : [a, undefined];
      const kind = spec.flags[flag];
      if (!kind)
        return misuse(
          name,
          // A secret tool's argument may be a value: say where it is and what is known, never what it says.
          spec.sensitive
            ? `argument ${i + 1} is not a flag it takes (${Object.keys(spec.flags).join(", ")})`
            : `unknown flag ${flag}`,
          spec.usage,
        );
      if (kind === "bool") flags[flag] = true;
      else {
        const v = inline ?? args[++i];
        if (v === undefined) return misuse(name, `${flag} needs a value`, spec.usage);
        flags[flag] = v;
      }
    } else positional.push(a);
  }
  try {
    return await spec.run(ctx, flags, positional, io);
  } catch (err) {
    if (err instanceof ToolError) return err.result;
    const e = err as { code?: string; message?: string };
    return { code: 1, stderr: `${name}: ${e.message ?? String(err)}\n` };
  }
}
