/**
 * The secret tools (issue 33), as Juju 3 names them: `secret-add` and `secret-set` make a secret and
 * its revisions, `secret-get` reads one (as its owner, or as a consumer tracking a revision),
 * `secret-info-get` and `secret-ids` tell an owner what it has, `secret-grant`/`-revoke` give and
 * take back read access over a relation, `secret-remove` drops a secret or one revision. Changes go
 * with the hook's commit. Values come from argv, `key#file=PATH` or `--file F`; they are checked
 * (api/secrets.ts secretContentProblem) before anything is sent, and no message here repeats one.
 */
import { randomBytes } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import type * as Yaml from "yaml";
import type { SecretChange, UnitSecretView } from "../../api/core";
import {
  ROTATE_POLICIES,
  SECRET_LIMITS,
  SECRET_URI_PREFIX,
  expiryOf,
  newSecretId,
  secretContentProblem,
  secretIdOf,
  secretUri,
} from "../../api/core";
import type { Flags, HookContext, SecretAccess, ToolIO, ToolResult, ToolSpec } from "./tool-spec";
import { ToolError, json, misuse, ok, refuse } from "./tool-spec";

/** The hook's secrets, or a refusal when the tool runs where nothing is committed. */
function secretsOf(ctx: HookContext, tool: string): SecretAccess {
  if (!ctx.secrets) throw new ToolError(refuse(tool, "secrets can be used only from a hook or an action"));
  return ctx.secrets;
}

/** The secret a tool names: `secret:<id>` as its first argument, or `--label L` (the label the unit knows it by). */
function targetOf(
  ctx: HookContext,
  tool: string,
  flags: Flags,
  pos: string[],
  usage: string,
): { uri: string; known?: UnitSecretView; rest: string[] } {
  const secrets = secretsOf(ctx, tool);
  const label = typeof flags["--label"] === "string" ? flags["--label"] : undefined;
  if (pos[0]?.startsWith(SECRET_URI_PREFIX)) {
    const id = secretIdOf(pos[0]);
    if (id === undefined)
      throw new ToolError(misuse(tool, `${pos[0].slice(0, 80)} is not a secret uri (secret:<20 characters>)`, usage));
    const uri = secretUri(id);
    const known = secrets.list().find((s) => s.uri === uri);
    return { uri, ...(known ? { known } : {}), rest: pos.slice(1) };
  }
  if (label === undefined) throw new ToolError(misuse(tool, "name the secret: secret:<id> or --label <label>", usage));
  const known = secrets.list().find((s) => s.label === label);
  if (!known) throw new ToolError(refuse(tool, `${ctx.unit} knows no secret labelled "${label.slice(0, 80)}"`));
  return { uri: known.uri, known, rest: pos };
}

/** The secret, which this unit must manage (it owns it, or its application does and it leads). */
function owned(ctx: HookContext, tool: string, flags: Flags, pos: string[], usage: string) {
  const t = targetOf(ctx, tool, flags, pos, usage);
  if (!t.known?.owner)
    throw new ToolError(
      refuse(
        tool,
        t.known
          ? `${ctx.unit} does not manage ${t.uri}: only its owner does (the leader, for an application's secret)`
          : `${ctx.unit} knows no secret ${t.uri}`,
      ),
    );
  return t;
}

/** `--label`, `--description`, `--expire`, `--rotate`, checked. */
function metadataOf(
  tool: string,
  flags: Flags,
  usage: string,
): Omit<Extract<SecretChange, { op: "set" }>, "op" | "uri"> {
  const out: Omit<Extract<SecretChange, { op: "set" }>, "op" | "uri"> = {};
  const label = flags["--label"];
  if (typeof label === "string") {
    if (label.length === 0 || label.length > SECRET_LIMITS.labelChars)
      throw new ToolError(refuse(tool, `a label is 1 to ${SECRET_LIMITS.labelChars} characters`));
    out.label = label;
  }
  const description = flags["--description"];
  if (typeof description === "string") {
    if (description.length > SECRET_LIMITS.descriptionChars)
      throw new ToolError(refuse(tool, `a description is at most ${SECRET_LIMITS.descriptionChars} characters`));
    out.description = description;
  }
  const expire = flags["--expire"];
  if (typeof expire === "string") {
    const at = expiryOf(expire, Date.now());
    if (at === undefined)
      throw new ToolError(
        misuse(tool, "--expire takes a future RFC 3339 time or a duration such as 90s, 30m, 12h or 7d", usage),
      );
    out.expireAt = at;
  }
  const rotate = flags["--rotate"];
  if (typeof rotate === "string") {
    if (!(ROTATE_POLICIES as readonly string[]).includes(rotate))
      throw new ToolError(misuse(tool, `--rotate takes one of ${ROTATE_POLICIES.join(", ")}`, usage));
    out.rotate = rotate as (typeof ROTATE_POLICIES)[number];
  }
  return out;
}

/** A file a value comes from, relative to the hook's working directory, refused when larger than a secret may be. */
async function fileText(tool: string, path: string, io: ToolIO, what: string): Promise<string> {
  const full = resolve(io.cwd ?? "/", path);
  const size = await stat(full).then(
    (s) => s.size,
    (err: NodeJS.ErrnoException) => {
      throw new ToolError(refuse(tool, `cannot read ${path.slice(0, 200)} (${what}): ${err.code ?? err.message}`));
    },
  );
  if (size > SECRET_LIMITS.contentBytes)
    throw new ToolError(
      refuse(
        tool,
        `${path.slice(0, 200)} (${what}) is ${size} bytes: a secret's content may be at most ${SECRET_LIMITS.contentBytes} bytes (64 KiB)`,
      ),
    );
  return readFile(full, "utf8");
}

/** `--file -`: the map on the hook's standard input (kept out of argv, which other users' `ps` shows). */
function stdinText(tool: string, io: ToolIO): string {
  const text = io.stdin ?? "";
  const size = Buffer.byteLength(text);
  if (size > 2 * SECRET_LIMITS.contentBytes)
    throw new ToolError(
      refuse(
        tool,
        `the standard input is ${size} bytes: a secret's content may be at most ${SECRET_LIMITS.contentBytes} bytes (64 KiB)`,
      ),
    );
  return text;
}

/**
 * The content a tool is given: `--file F` (a YAML or JSON map of keys to strings), then each
 * `key=value` or `key#file=PATH` (a later key wins). Misuse messages name the argument's position,
 * never its text.
 */
async function contentOf(tool: string, flags: Flags, words: string[], io: ToolIO, usage: string) {
  const values: Record<string, string> = {};
  const file = flags["--file"];
  if (typeof file === "string") {
    const source = file === "-" ? "the standard input" : file.slice(0, 200);
    const text = file === "-" ? stdinText(tool, io) : await fileText(tool, file, io, "--file");
    const doc = parsedMap(tool, source, text);
    if (doc === null || typeof doc !== "object" || Array.isArray(doc))
      throw new ToolError(refuse(tool, `${source} must hold a map of keys to values`));
    for (const [k, v] of Object.entries(doc as Record<string, unknown>)) {
      if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean")
        throw new ToolError(refuse(tool, `the value of ${k.slice(0, 80)} in ${source} must be a string`));
      values[k] = String(v);
    }
  }
  for (const [i, w] of words.entries()) {
    const fromFile = /^([^=#]+)#file=(.+)$/s.exec(w);
    if (fromFile) {
      values[fromFile[1]!] = await fileText(tool, fromFile[2]!, io, `the value of ${fromFile[1]!.slice(0, 80)}`);
      continue;
    }
    const eq = w.indexOf("=");
    if (eq <= 0) throw new ToolError(misuse(tool, `value argument ${i + 1} is not key=value or key#file=PATH`, usage));
    values[w.slice(0, eq)] = w.slice(eq + 1);
  }
  return values;
}

/**
 * `--file`'s map: JSON, which every agent reads, else YAML where the agent carries the yaml package
 * (the agent bundle leaves it out to stay small: a machine agent installed over SSH or cloud-init
 * has only JSON). Never the parser's message: it quotes the text, which may be values.
 */
function parsedMap(tool: string, source: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // not JSON: YAML, if this agent can read it
  }
  let yaml: typeof Yaml;
  try {
    yaml = require("yaml") as typeof Yaml;
  } catch {
    throw new ToolError(
      refuse(tool, `${source} is not JSON (this agent reads YAML only where the yaml package is installed)`),
    );
  }
  try {
    return yaml.parse(text) as unknown;
  } catch {
    throw new ToolError(refuse(tool, `${source} is not YAML or JSON`));
  }
}

/** Content checked against the limits, or a refusal naming the one it breaks. */
function checked(tool: string, values: Record<string, string>): Record<string, string> {
  const problem = secretContentProblem(values);
  if (problem) throw new ToolError(refuse(tool, problem));
  return values;
}

/** `-r`/`--relation ID|endpoint:ID`, which must be one of the unit's relations, and `--unit U` on its other side. */
function grantTarget(ctx: HookContext, tool: string, flags: Flags, usage: string) {
  const r = flags["--relation"] ?? flags["-r"];
  if (typeof r !== "string") throw new ToolError(misuse(tool, "name the relation with --relation <id>", usage));
  const m = /^(?:([a-z][a-z0-9-]*):)?(\d+)$/.exec(r);
  const rel = m
    ? ctx.view().relations.find((x) => x.id === Number(m[2]) && (m[1] === undefined || x.endpoint === m[1]))
    : undefined;
  if (!rel)
    throw new ToolError(
      refuse(
        tool,
        `relation ${r.slice(0, 80)} does not exist for ${ctx.unit} (known: ${
          ctx
            .view()
            .relations.map((x) => `${x.endpoint}:${x.id}`)
            .join(", ") || "none"
        })`,
      ),
    );
  const unit = flags["--unit"];
  if (typeof unit === "string" && !unit.startsWith(`${rel.remoteApp}/`))
    throw new ToolError(
      refuse(tool, `${unit.slice(0, 80)} is not a unit of ${rel.remoteApp}, the other side of relation ${rel.id}`),
    );
  return { relationId: rel.id, ...(typeof unit === "string" ? { unit } : {}) };
}

/** `key: value` lines (values quoted as JSON when they would not read back plainly). */
function textOf(values: Record<string, string>): string {
  return Object.entries(values)
    .map(([k, v]) => `${k}: ${/^[\w./+=@-]*$/.test(v) && v !== "" ? v : JSON.stringify(v)}\n`)
    .join("");
}

function formatOf(tool: string, flags: Flags, usage: string): "text" | "json" {
  const f = flags["--format"] ?? "text";
  if (f !== "text" && f !== "json") throw new ToolError(misuse(tool, "--format must be text or json", usage));
  return f;
}

const META_FLAGS = {
  "--label": "value",
  "--description": "value",
  "--expire": "value",
  "--rotate": "value",
  "--file": "value",
} as const;

export const secretTools: Record<string, ToolSpec> = {
  "secret-add": {
    usage:
      "secret-add [--owner application|unit] [--label L] [--description D] [--expire TIME|DURATION] [--rotate POLICY] [--file F] key=value… | key#file=PATH…",
    summary:
      "add a secret owned by the application (the leader only) or this unit, and print its uri; values from key=value, key#file=PATH (relative to the hook's directory) or --file F (a JSON map, or YAML where the agent has the yaml package; --file - reads it from standard input, which keeps values out of the process list); the secret is made with the hook's commit",
    flags: { "--owner": "value", ...META_FLAGS },
    sensitive: true,
    async run(ctx, f, pos, io): Promise<ToolResult> {
      const secrets = secretsOf(ctx, "secret-add");
      const owner = f["--owner"] ?? "application";
      if (owner !== "application" && owner !== "unit")
        return misuse("secret-add", "--owner must be application or unit", this.usage);
      const meta = metadataOf("secret-add", f, this.usage);
      if (pos.length === 0 && f["--file"] === undefined)
        return misuse("secret-add", "give the content: key=value…, key#file=PATH… or --file F", this.usage);
      const content = checked("secret-add", await contentOf("secret-add", f, pos, io, this.usage));
      if (meta.label !== undefined && secrets.list().some((s) => s.owner && s.label === meta.label))
        return refuse("secret-add", `${ctx.unit} already has a secret labelled "${meta.label}"`);
      if (owner === "application" && !(await ctx.isLeader()))
        return refuse(
          "secret-add",
          `only the leader of ${ctx.view().app} may add an application's secret (use --owner unit for this unit's own)`,
        );
      const uri = secretUri(newSecretId((n) => randomBytes(n)));
      secrets.change({ op: "add", uri, owner, content, ...meta });
      return ok(`${uri}\n`);
    },
  },
  "secret-set": {
    usage:
      "secret-set secret:<id>|--label L [--description D] [--expire TIME|DURATION] [--rotate POLICY] [--file F] [key=value… | key#file=PATH…]",
    summary:
      "publish a new revision of a secret this unit manages (with content), or change its label, description, expiry or rotation; made with the hook's commit. With --label and no uri, the label names the secret",
    flags: META_FLAGS,
    sensitive: true,
    async run(ctx, f, pos, io): Promise<ToolResult> {
      const byUri = pos[0]?.startsWith(SECRET_URI_PREFIX) ?? false;
      const t = owned(ctx, "secret-set", f, pos, this.usage);
      const meta = metadataOf("secret-set", f, this.usage);
      if (!byUri) delete meta.label; // it named the secret
      const hasContent = t.rest.length > 0 || f["--file"] !== undefined;
      if (!hasContent && Object.keys(meta).length === 0)
        return misuse("secret-set", "give new content or metadata to set", this.usage);
      const content = hasContent
        ? checked("secret-set", await contentOf("secret-set", f, t.rest, io, this.usage))
        : undefined;
      if (
        meta.label !== undefined &&
        secretsOf(ctx, "secret-set")
          .list()
          .some((s) => s.owner && s.label === meta.label && s.uri !== t.uri)
      )
        return refuse("secret-set", `${ctx.unit} already has a secret labelled "${meta.label}"`);
      secretsOf(ctx, "secret-set").change({ op: "set", uri: t.uri, ...(content ? { content } : {}), ...meta });
      return ok();
    },
  },
  "secret-get": {
    usage: "secret-get secret:<id>|--label L [--peek|--refresh] [--format text|json] [key]",
    summary:
      "print a secret's values (or one key's): its owner reads the latest revision; a consumer the revision it tracks (the latest on its first read), --peek the latest without moving to it, --refresh the latest and tracks it from now on. A consumer giving both a uri and --label names the secret with that label",
    flags: { "--label": "value", "--peek": "bool", "--refresh": "bool", "--format": "value" },
    async run(ctx, f, pos): Promise<ToolResult> {
      if (f["--peek"] && f["--refresh"])
        return misuse("secret-get", "--peek and --refresh do not go together", this.usage);
      const format = formatOf("secret-get", f, this.usage);
      const byUri = pos[0]?.startsWith(SECRET_URI_PREFIX) ?? false;
      const t = targetOf(ctx, "secret-get", f, pos, this.usage);
      if (t.rest.length > 1) return misuse("secret-get", "give at most one key", this.usage);
      const label = byUri && typeof f["--label"] === "string" && !t.known?.owner ? f["--label"] : undefined;
      if (label !== undefined && label.length > SECRET_LIMITS.labelChars)
        return refuse("secret-get", `a label is 1 to ${SECRET_LIMITS.labelChars} characters`);
      const got = await secretsOf(ctx, "secret-get").get(t.uri, {
        ...(f["--peek"] ? { peek: true } : {}),
        ...(f["--refresh"] ? { refresh: true } : {}),
        ...(label !== undefined ? { label } : {}),
      });
      const key = t.rest[0];
      if (key === undefined) return ok(format === "json" ? json(got.values) : textOf(got.values));
      if (!(key in got.values))
        return refuse(
          "secret-get",
          `revision ${got.revision} of ${t.uri} has no key "${key.slice(0, 80)}" (keys: ${Object.keys(got.values).join(", ")})`,
        );
      return ok(format === "json" ? json(got.values[key]) : `${got.values[key]}\n`);
    },
  },
  "secret-info-get": {
    usage: "secret-info-get secret:<id>|--label L",
    summary:
      "print, as JSON, what this unit's owner knows of a secret it manages: label, description, owner, revisions (and who tracks each), rotation, expiry and grants; never its values",
    flags: { "--label": "value", "--format": "value" },
    async run(ctx, f, pos): Promise<ToolResult> {
      formatOf("secret-info-get", f, this.usage);
      const t = owned(ctx, "secret-info-get", f, pos, this.usage);
      if (t.rest.length > 0) return misuse("secret-info-get", "takes one secret", this.usage);
      return ok(json(await secretsOf(ctx, "secret-info-get").info(t.uri)));
    },
  },
  "secret-ids": {
    usage: "secret-ids [--format text|json]",
    summary: "print the uris of the secrets this unit manages (its own, and its application's when it is the leader)",
    flags: { "--format": "value" },
    async run(ctx, f, pos): Promise<ToolResult> {
      if (pos.length > 0) return misuse("secret-ids", "takes no arguments", this.usage);
      const format = formatOf("secret-ids", f, this.usage);
      const uris = secretsOf(ctx, "secret-ids")
        .list()
        .filter((s) => s.owner)
        .map((s) => s.uri);
      return ok(format === "json" ? json(uris) : uris.map((u) => `${u}\n`).join(""));
    },
  },
  "secret-grant": grantTool(
    "grant",
    "let the other side of relation ID (its application, or only unit U of it) read a secret this unit manages; the grant ends with the relation. Made with the hook's commit",
  ),
  "secret-revoke": grantTool(
    "revoke",
    "take back what secret-grant gave over relation ID (to its application, or to unit U); made with the hook's commit",
  ),
  "secret-remove": {
    usage: "secret-remove secret:<id>|--label L [--revision N]",
    summary:
      "remove a secret this unit manages, or only its revision N (as a secret-remove hook does for a revision no consumer tracks); made with the hook's commit",
    flags: { "--label": "value", "--revision": "value" },
    async run(ctx, f, pos): Promise<ToolResult> {
      const t = owned(ctx, "secret-remove", f, pos, this.usage);
      if (t.rest.length > 0) return misuse("secret-remove", "takes one secret", this.usage);
      const r = f["--revision"];
      if (r !== undefined && (typeof r !== "string" || !/^[1-9][0-9]{0,8}$/.test(r)))
        return misuse("secret-remove", "--revision takes a revision number (1 or more)", this.usage);
      secretsOf(ctx, "secret-remove").change({
        op: "remove",
        uri: t.uri,
        ...(r !== undefined ? { revision: Number(r) } : {}),
      });
      return ok();
    },
  },
};

/** secret-grant and secret-revoke: one secret this unit manages, a relation and maybe one unit on its other side. */
function grantTool(op: "grant" | "revoke", summary: string): ToolSpec {
  const tool = `secret-${op}`;
  return {
    usage: `${tool} secret:<id>|--label L --relation ID [--unit U]`,
    summary,
    flags: { "--label": "value", "--relation": "value", "-r": "value", "--unit": "value" },
    async run(ctx, f, pos): Promise<ToolResult> {
      const t = owned(ctx, tool, f, pos, this.usage);
      if (t.rest.length > 0) return misuse(tool, "takes one secret", this.usage);
      secretsOf(ctx, tool).change({ op, uri: t.uri, ...grantTarget(ctx, tool, f, this.usage) });
      return ok();
    },
  };
}
