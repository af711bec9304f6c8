/**
 * The storage tools (issue 32), as Juju names them: `storage-list` names the instances attached to
 * the unit, `storage-get` tells one's location, kind, size and pool (by default the instance of the
 * storage hook that runs), `storage-add name=count` asks for more instances, made when the hook
 * succeeds (the controller checks the operator's count range then; a refusal fails the hook).
 */
import type { UnitStorageView } from "../../api/core";
import { MAX_STORAGE_COUNT } from "../../api/core";
import type { ToolResult, ToolSpec } from "./tool-spec";
import { json, misuse, ok, refuse } from "./tool-spec";

/** What storage-get tells of an instance: its location once attached, and the rest always. */
function fieldsOf(s: UnitStorageView): Record<string, string | number> {
  return { location: s.location ?? "", kind: s.kind, size: s.size, pool: s.pool };
}

export const storageTools: Record<string, ToolSpec> = {
  "storage-add": {
    usage: "storage-add <name>[=<count>]…",
    summary:
      "add instances of the unit's declared store <name> (1 unless =<count>); each gets its <name>-storage-attached hook once attached",
    flags: {},
    async run(ctx, _f, pos): Promise<ToolResult> {
      if (pos.length === 0) return misuse("storage-add", "name at least one store", this.usage);
      if (!ctx.storageAdd) return refuse("storage-add", "storage can be added only from a hook or an action");
      const adds: [string, number][] = [];
      for (const arg of pos) {
        const m = /^([a-z][a-z0-9-]{0,62})(?:=([0-9]{1,3}))?$/.exec(arg);
        const count = m?.[2] !== undefined ? Number(m[2]) : 1;
        if (!m || count < 1 || count > MAX_STORAGE_COUNT)
          return misuse(
            "storage-add",
            `"${arg}" is not name or name=count (count 1 to ${MAX_STORAGE_COUNT})`,
            this.usage,
          );
        adds.push([m[1]!, count]);
      }
      for (const [name, count] of adds) ctx.storageAdd(name, count);
      return ok();
    },
  },
  "storage-list": {
    usage: "storage-list [--format text|json] [<name>]",
    summary: "print the ids of the storage instances attached to the unit (of store <name> only, when given)",
    flags: { "--format": "value" },
    async run(ctx, f, pos): Promise<ToolResult> {
      if (pos.length > 1) return misuse("storage-list", "give at most one storage name", this.usage);
      const ids = (ctx.view().storage ?? [])
        .map((s) => s.id)
        .filter((id) => pos[0] === undefined || id.slice(0, id.indexOf("/")) === pos[0]);
      return ok(f["--format"] === "json" ? json(ids) : ids.map((id) => `${id}\n`).join(""));
    },
  },
  "storage-get": {
    usage: "storage-get [-s <id>] [--format text|json] [location|kind|size|pool]",
    summary:
      "print a storage instance's location, kind, size (MiB) or pool, or all of them as JSON; the instance is -s <id> or the storage hook's own",
    flags: { "-s": "value", "--format": "value" },
    async run(ctx, f, pos): Promise<ToolResult> {
      const id = typeof f["-s"] === "string" ? f["-s"] : ctx.storageId;
      if (id === undefined)
        return misuse("storage-get", `${ctx.hook} is not a storage hook: name the instance with -s <id>`, this.usage);
      const attached = ctx.view().storage ?? [];
      const s = attached.find((x) => x.id === id);
      if (!s)
        return refuse(
          "storage-get",
          `storage ${id} is not attached to ${ctx.unit} (attached: ${attached.map((x) => x.id).join(", ") || "none"})`,
        );
      const fields = fieldsOf(s);
      if (pos.length > 1) return misuse("storage-get", "give at most one key", this.usage);
      if (pos.length === 0) return ok(json(fields));
      const key = pos[0]!;
      if (!(key in fields))
        return refuse("storage-get", `"${key}" is not a storage field (known: ${Object.keys(fields).join(", ")})`);
      return ok(f["--format"] === "json" ? json(fields[key]) : `${String(fields[key])}\n`);
    },
  },
};
