/**
 * The tools of a running action, as Juju names them: `action-get` reads its parameters,
 * `action-set` records results, `action-fail` marks it failed (it goes on running), `action-log`
 * adds a line to what `steward show-task` shows. Outside an action they refuse.
 */
import type { ActionRun } from "../action-run";
import type { HookContext, ToolResult, ToolSpec } from "./tool-spec";
import { ToolError, json, misuse, ok, refuse } from "./tool-spec";

function runningAction(ctx: HookContext, tool: string): ActionRun {
  if (!ctx.action) throw new ToolError(refuse(tool, `only an action may use it, and ${ctx.hook} is a hook`));
  return ctx.action;
}

/** A parameter by dotted path, or undefined. */
function lookup(params: Record<string, unknown>, path: string): unknown {
  let at: unknown = params;
  for (const part of path.split(".")) {
    if (typeof at !== "object" || at === null || !Object.hasOwn(at, part)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

export const actionTools: Record<string, ToolSpec> = {
  "action-get": {
    usage: "action-get [--format text|json] [<key>]",
    summary: "print the action's parameter <key>, or all of them as JSON (defaults from operator.yaml filled in)",
    flags: { "--format": "value" },
    async run(ctx, f, pos): Promise<ToolResult> {
      const action = runningAction(ctx, "action-get");
      if (pos.length > 1) return misuse("action-get", "give at most one key", this.usage);
      if (pos.length === 0) return ok(json(action.params));
      const value = lookup(action.params, pos[0]!);
      if (value === undefined)
        return refuse(
          "action-get",
          `action ${action.name} has no parameter "${pos[0]}" (it has: ${Object.keys(action.params).join(", ") || "none"})`,
        );
      return ok(f["--format"] === "json" ? json(value) : `${String(value)}\n`);
    },
  },
  "action-set": {
    usage: "action-set <key>=<value> [<key>=<value> …]",
    summary: "record results of the action (shown by steward show-task); dotted keys nest: backup.path=/x",
    flags: {},
    async run(ctx, _f, pos): Promise<ToolResult> {
      const action = runningAction(ctx, "action-set");
      if (pos.length === 0) return misuse("action-set", "give at least one key=value", this.usage);
      const values: Record<string, string> = {};
      for (const w of pos) {
        const eq = w.indexOf("=");
        if (eq <= 0) return misuse("action-set", `"${w}" is not key=value`, this.usage);
        values[w.slice(0, eq)] = w.slice(eq + 1);
      }
      const problem = action.set(values);
      return problem ? refuse("action-set", problem) : ok();
    },
  },
  "action-fail": {
    usage: "action-fail [<message>]",
    summary: "mark the action failed with <message>; it goes on running, and its results are kept",
    flags: {},
    async run(ctx, _f, pos): Promise<ToolResult> {
      runningAction(ctx, "action-fail").fail(pos.join(" "));
      return ok();
    },
  },
  "action-log": {
    usage: "action-log <message>",
    summary: "add a line to the action's log, shown by steward show-task (and steward debug-log)",
    flags: {},
    async run(ctx, _f, pos): Promise<ToolResult> {
      const action = runningAction(ctx, "action-log");
      if (pos.length === 0) return misuse("action-log", "give a message", this.usage);
      const message = pos.join(" ");
      action.log(message);
      ctx.log("INFO", message);
      return ok();
    },
  },
};
