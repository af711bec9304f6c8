/**
 * The operator format (DESIGN.md §5): `operator.yaml` plus `hooks/<hook-name>` executables or one
 * `dispatch` executable. Validated identically by the CLI (before upload) and the controller (on
 * upload); every problem names the file, the field and, in YAML, the line.
 */
import { createHash } from "node:crypto";
import type * as Yaml from "yaml";
import { StewardError } from "./errors";
import { MAX_OPERATOR_YAML_ALIASES, MAX_OPERATOR_YAML_BYTES, MAX_OPERATOR_YAML_DEPTH } from "./limits";
import { NAME_PATTERN } from "./names";
import type { ActionSpec } from "./actions";
import { parseActionsSection } from "./actions";
import type { WorkloadContainer } from "./workload-containers";
import { parseContainersSection, workloadReadyHook } from "./workload-containers";
import type { StorageSpec } from "./storage";
import { parseStorageSection, storageHooks } from "./storage";

import type { ConfigOption, ConfigOptionType } from "./config-values";
import { CONFIG_OPTION_TYPES, checkConfigValue } from "./config-values";
export { checkConfigValue, coerceConfigText } from "./config-values";
export type { ConfigOption, ConfigOptionType } from "./config-values";
export interface Endpoint {
  interface: string;
  /** Most integrations this endpoint accepts; absent means unlimited. */
  limit?: number;
}
export interface OperatorMeta {
  name: string;
  version: string;
  summary: string;
  description: string;
  provides: Record<string, Endpoint>;
  requires: Record<string, Endpoint>;
  peers: Record<string, Endpoint>;
  config: Record<string, ConfigOption>;
  /** Day-2 operations (`steward run`); absent in metadata stored before actions existed. */
  actions?: Record<string, ActionSpec>;
  /** Workload containers beside the agent (Kubernetes; workload-containers.ts); absent when none are declared. */
  containers?: Record<string, WorkloadContainer>;
  /** Storage each unit gets (storage.ts); absent when none is declared. */
  storage?: Record<string, StorageSpec>;
}

export const UNIT_HOOKS = [
  "install",
  "start",
  "config-changed",
  "upgrade",
  "stop",
  "remove",
  "update-status",
  "leader-elected",
  "leader-settings-changed",
] as const;
/** The secret hooks (api/secrets.ts): any operator may receive them, as `hooks/<name>` or through dispatch. */
export const SECRET_HOOKS = ["secret-changed", "secret-rotate", "secret-expired", "secret-remove"] as const;
export const RELATION_HOOK_SUFFIXES = [
  "relation-created",
  "relation-joined",
  "relation-changed",
  "relation-departed",
  "relation-broken",
] as const;

export interface BundleFileEntry {
  path: string;
  mode: number;
  content: string;
}
export interface Bundle {
  files: BundleFileEntry[];
}

/** Upper bound of an operator bundle, so one upload cannot fill the store. */
export const MAX_BUNDLE_BYTES = 16 * 1024 * 1024;

export class OperatorInvalidError extends StewardError {
  constructor(file: string, problem: string, opts: { field?: string; line?: number } = {}) {
    const where = `${file}${opts.line !== undefined ? `:${opts.line}` : ""}`;
    super("operator-invalid", `${where}: ${opts.field ? `"${opts.field}" ` : ""}${problem}`, {
      details: {
        file,
        ...(opts.field ? { field: opts.field } : {}),
        ...(opts.line !== undefined ? { line: opts.line } : {}),
      },
    });
  }
}

/** Parses and checks `operator.yaml`. Throws {@link OperatorInvalidError} naming the field and line. */
export function parseOperatorYaml(text: string, file = "operator.yaml"): OperatorMeta {
  // Loaded on first use: agents hash bundles but never parse YAML, and must stay small.
  const yaml = require("yaml") as typeof Yaml;
  checkYamlBounds(yaml, text, file);
  const lc = new yaml.LineCounter();
  const doc = yaml.parseDocument(text, { lineCounter: lc, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    throw new OperatorInvalidError(file, `is not valid YAML: ${e.message.split("\n")[0]}`, {
      line: lc.linePos(e.pos[0]).line,
    });
  }
  const lineOf = (path: (string | number)[]): number | undefined => {
    const node = doc.getIn(path, true) as { range?: [number, number, number] } | undefined;
    const parentPair =
      path.length > 0
        ? (doc.getIn(path.slice(0, -1), true) as
            { items?: { key: { value: unknown; range?: [number, number, number] } }[] } | undefined)
        : undefined;
    const keyNode = parentPair?.items?.find((p) => p.key?.value === path[path.length - 1])?.key;
    const range = keyNode?.range ?? node?.range;
    return range ? lc.linePos(range[0]).line : undefined;
  };
  const fail = (path: (string | number)[], problem: string): never => {
    throw new OperatorInvalidError(file, problem, { field: path.join("."), line: lineOf(path) });
  };

  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: MAX_OPERATOR_YAML_ALIASES });
  } catch (err) {
    // The yaml package's guard against an alias bomb ("billion laughs").
    if (err instanceof ReferenceError) throw aliasLimitError(file);
    throw err;
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new OperatorInvalidError(file, 'must be a mapping with at least "name" and "version"');
  const o = raw as Record<string, unknown>;
  const known = [
    "name",
    "version",
    "summary",
    "description",
    "provides",
    "requires",
    "peers",
    "config",
    "actions",
    "containers",
    "storage",
  ];
  for (const key of Object.keys(o))
    if (!known.includes(key)) fail([key], `is not a known field (known: ${known.join(", ")})`);

  if (typeof o.name !== "string" || !NAME_PATTERN.test(o.name))
    fail(["name"], "must be a name of lower-case letters, digits and hyphens, e.g. hello-http");
  if (o.version === undefined) fail(["version"], 'is required (e.g. version: "1.0.0")');
  if (typeof o.version !== "string" && typeof o.version !== "number")
    fail(["version"], 'must be a string such as "1.0.0"');
  for (const f of ["summary", "description"])
    if (o[f] !== undefined && typeof o[f] !== "string") fail([f], "must be a string");

  const endpoints = (section: "provides" | "requires" | "peers"): Record<string, Endpoint> => {
    const v = o[section];
    if (v === undefined || v === null) return {};
    if (typeof v !== "object" || Array.isArray(v))
      return fail([section], "must be a mapping of endpoint name to {interface: ...}");
    const out: Record<string, Endpoint> = {};
    for (const [ep, def] of Object.entries(v as Record<string, unknown>)) {
      if (!NAME_PATTERN.test(ep))
        fail([section, ep], "is not a valid endpoint name (lower-case letters, digits, hyphens)");
      if (typeof def !== "object" || def === null) fail([section, ep], 'must be a mapping with an "interface"');
      const d = def as Record<string, unknown>;
      for (const k of Object.keys(d))
        if (!["interface", "limit"].includes(k))
          fail([section, ep, k], "is not a known endpoint field (known: interface, limit)");
      if (typeof d.interface !== "string" || !NAME_PATTERN.test(d.interface))
        fail([section, ep, "interface"], "is required and must be a name such as http or pgsql");
      if (d.limit !== undefined && (!Number.isInteger(d.limit) || (d.limit as number) < 1))
        fail([section, ep, "limit"], "must be a whole number of at least 1");
      out[ep] = { interface: d.interface as string, ...(d.limit !== undefined ? { limit: d.limit as number } : {}) };
    }
    return out;
  };
  const provides = endpoints("provides");
  const requires = endpoints("requires");
  const peers = endpoints("peers");
  const seen = new Set<string>();
  for (const [section, eps] of [
    ["provides", provides],
    ["requires", requires],
    ["peers", peers],
  ] as const) {
    for (const ep of Object.keys(eps)) {
      if (seen.has(ep))
        fail([section, ep], "is declared twice; endpoint names must be unique across provides, requires and peers");
      seen.add(ep);
    }
  }

  const config: Record<string, ConfigOption> = {};
  if (o.config !== undefined && o.config !== null) {
    if (typeof o.config !== "object" || Array.isArray(o.config))
      fail(["config"], "must be a mapping of option name to {type, default, description}");
    for (const [key, def] of Object.entries(o.config as Record<string, unknown>)) {
      if (!/^[a-z][a-z0-9-]*$/.test(key))
        fail(["config", key], "is not a valid option name (lower-case letters, digits, hyphens)");
      if (typeof def !== "object" || def === null)
        fail(["config", key], "must be a mapping with type, default and description");
      const d = def as Record<string, unknown>;
      for (const k of Object.keys(d))
        if (!["type", "default", "description"].includes(k))
          fail(["config", key, k], "is not a known option field (known: type, default, description)");
      if (!CONFIG_OPTION_TYPES.includes(d.type as ConfigOptionType))
        fail(["config", key, "type"], `must be one of ${CONFIG_OPTION_TYPES.join(", ")}`);
      const opt: ConfigOption = {
        type: d.type as ConfigOptionType,
        description: typeof d.description === "string" ? d.description : "",
      };
      if (d.default !== undefined && d.default !== null) {
        if (opt.type === "secret")
          fail(["config", key, "default"], "a secret option has no default: users set it to their secret's uri");
        const problem = checkConfigValue(opt.type, d.default);
        if (problem) fail(["config", key, "default"], problem);
        opt.default = d.default as string | number | boolean;
      }
      config[key] = opt;
    }
  }
  return {
    name: o.name as string,
    version: String(o.version),
    summary: (o.summary as string | undefined) ?? "",
    description: (o.description as string | undefined) ?? "",
    provides,
    requires,
    peers,
    config,
    ...actionsOf(parseActionsSection(o.actions, fail)),
    ...containersOf(parseContainersSection(o.containers, fail)),
    ...storageOf(parseStorageSection(o.storage, fail)),
  };
}

/** Only operators that declare actions carry the field, so metadata without them reads as before. */
const actionsOf = (actions: Record<string, ActionSpec>): { actions?: Record<string, ActionSpec> } =>
  Object.keys(actions).length > 0 ? { actions } : {};

/** Likewise containers: metadata of operators without them keeps its JSON form. */
const containersOf = (
  containers: Record<string, WorkloadContainer>,
): { containers?: Record<string, WorkloadContainer> } => (Object.keys(containers).length > 0 ? { containers } : {});

/** Likewise storage. */
const storageOf = (storage: Record<string, StorageSpec>): { storage?: Record<string, StorageSpec> } =>
  Object.keys(storage).length > 0 ? { storage } : {};

/**
 * Refuses, before the parser builds anything, a document too large, nested too deep or using too
 * many aliases: parsing a million-deep document held the event loop for seconds. The lexer is
 * linear and lazy, so the scan stops as soon as a bound is crossed. The depth it counts is an
 * upper bound of the real one (indentation levels, inline `-`/`?`/`:` indicators and open
 * brackets), which is all a bound needs.
 */
function checkYamlBounds(yaml: typeof Yaml, text: string, file: string): void {
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_OPERATOR_YAML_BYTES) {
    throw new OperatorInvalidError(
      file,
      `is ${bytes} bytes; it may be at most ${MAX_OPERATOR_YAML_BYTES} bytes (the operator.yaml size limit)`,
    );
  }
  const indents: number[] = [];
  let flow = 0,
    inline = 0,
    lineIndent = 0,
    aliases = 0;
  let atLineStart = true,
    scalarSource = false,
    blockScalar = false;
  for (const token of new yaml.Lexer().lex(text)) {
    const type: string | null = scalarSource ? "scalar-source" : yaml.CST.tokenType(token);
    scalarSource = type === "scalar";
    if (type === "block-scalar-header") blockScalar = true;
    // A block scalar's text (`|`, `>`) is one token spanning its lines: not structure.
    if (type === "scalar-source" && blockScalar) {
      blockScalar = false;
      atLineStart = true;
      lineIndent = 0;
      inline = 0;
      continue;
    }
    if (type === "newline") {
      atLineStart = true;
      lineIndent = 0;
      inline = 0;
      continue;
    }
    if (type === "space" && atLineStart) {
      lineIndent = token.length;
      continue;
    }
    if (type === "comment" || type === "space" || type === "scalar") continue;
    if (atLineStart && flow === 0) {
      // A line's first content opens a block level when it is indented deeper than the last.
      while (indents.length > 0 && indents[indents.length - 1]! >= lineIndent) indents.pop();
      indents.push(lineIndent);
    }
    atLineStart = false;
    if (type === "flow-seq-start" || type === "flow-map-start") flow++;
    else if (type === "flow-seq-end" || type === "flow-map-end") flow = Math.max(0, flow - 1);
    else if (type === "seq-item-ind" || type === "explicit-key-ind" || type === "map-value-ind") inline++;
    else if (type === "alias" && ++aliases > MAX_OPERATOR_YAML_ALIASES) throw aliasLimitError(file);
    if (indents.length + inline + flow > MAX_OPERATOR_YAML_DEPTH) {
      throw new OperatorInvalidError(
        file,
        `nests deeper than ${MAX_OPERATOR_YAML_DEPTH} levels (the operator.yaml nesting limit)`,
      );
    }
  }
}

function aliasLimitError(file: string): OperatorInvalidError {
  return new OperatorInvalidError(
    file,
    `uses aliases (*name) too much: at most ${MAX_OPERATOR_YAML_ALIASES} alias uses, and none may expand the document many times over (the operator.yaml alias limit)`,
  );
}

/** Every hook name this operator may carry. */
export function knownHookNames(meta: OperatorMeta): Set<string> {
  const names = new Set<string>([...UNIT_HOOKS, ...SECRET_HOOKS]);
  for (const ep of [...Object.keys(meta.provides), ...Object.keys(meta.requires), ...Object.keys(meta.peers)]) {
    for (const suffix of RELATION_HOOK_SUFFIXES) names.add(`${ep}-${suffix}`);
  }
  for (const c of Object.keys(meta.containers ?? {})) names.add(workloadReadyHook(c));
  for (const s of Object.keys(meta.storage ?? {})) for (const h of storageHooks(s)) names.add(h);
  return names;
}

/**
 * Checks a whole bundle: `operator.yaml` present and valid, every hook a known name and executable,
 * no path escaping the operator directory, within the size bound. Returns the parsed metadata.
 */
export function validateBundle(bundle: Bundle): OperatorMeta {
  let total = 0;
  const byPath = new Map<string, BundleFileEntry>();
  for (const f of bundle.files) {
    const problem = bundlePathProblem(f.path);
    if (problem) throw new OperatorInvalidError(printablePath(f.path), problem);
    if (byPath.has(f.path)) throw new OperatorInvalidError(f.path, "appears twice in the bundle");
    byPath.set(f.path, f);
    total += Buffer.byteLength(f.content, "base64");
  }
  const clash = fileDirectoryClash(bundle.files.map((f) => f.path));
  if (clash)
    throw new OperatorInvalidError(clash.file, `is a file, but ${clash.inside} needs a directory of that name`);
  if (total > MAX_BUNDLE_BYTES) {
    throw new OperatorInvalidError(
      "(bundle)",
      `is ${total} bytes; operators may be at most ${MAX_BUNDLE_BYTES} bytes (keep large payloads out of the operator directory)`,
    );
  }
  const yamlFile = byPath.get("operator.yaml");
  if (!yamlFile)
    throw new OperatorInvalidError(
      "operator.yaml",
      "is missing: every operator directory needs an operator.yaml with at least name and version",
    );
  const meta = parseOperatorYaml(Buffer.from(yamlFile.content, "base64").toString("utf8"));
  const hooks = [...byPath.values()].filter((f) => f.path.startsWith("hooks/"));
  const dispatch = byPath.get("dispatch");
  if (hooks.length === 0 && !dispatch)
    throw new OperatorInvalidError(
      "hooks/",
      "has no hooks and there is no dispatch executable: the operator would never do anything",
    );
  if (dispatch && (dispatch.mode & 0o111) === 0)
    throw new OperatorInvalidError("dispatch", "is not executable (chmod +x dispatch)");
  const allowed = knownHookNames(meta);
  for (const h of hooks) {
    const name = h.path.slice("hooks/".length);
    if (name.includes("/"))
      throw new OperatorInvalidError(
        h.path,
        "hooks/ must hold only hook executables, not folders (put helpers elsewhere in the operator)",
      );
    if (!allowed.has(name))
      throw new OperatorInvalidError(
        h.path,
        `is not a hook this operator can receive (known: ${[...allowed].sort().join(", ")})`,
      );
    if ((h.mode & 0o111) === 0) throw new OperatorInvalidError(h.path, `is not executable (chmod +x ${h.path})`);
  }
  checkActionFiles(meta, byPath, dispatch);
  return meta;
}

/** `actions/` holds one executable per declared action (or `dispatch` runs them), nothing else. */
function checkActionFiles(
  meta: OperatorMeta,
  byPath: Map<string, BundleFileEntry>,
  dispatch: BundleFileEntry | undefined,
): void {
  const declared = Object.keys(meta.actions ?? {});
  for (const f of byPath.values()) {
    if (!f.path.startsWith("actions/")) continue;
    const name = f.path.slice("actions/".length);
    if (name.includes("/"))
      throw new OperatorInvalidError(
        f.path,
        "actions/ must hold only action executables, not folders (put helpers elsewhere in the operator)",
      );
    if (!declared.includes(name))
      throw new OperatorInvalidError(
        f.path,
        `is not an action declared in operator.yaml (declared: ${declared.join(", ") || "none"}); declare it under actions:`,
      );
    if ((f.mode & 0o111) === 0) throw new OperatorInvalidError(f.path, `is not executable (chmod +x ${f.path})`);
  }
  if (dispatch) return;
  for (const name of declared) {
    if (!byPath.has(`actions/${name}`))
      throw new OperatorInvalidError(
        `actions/${name}`,
        `is missing: action "${name}" is declared in operator.yaml, so the operator needs an executable actions/${name} (or a dispatch executable)`,
      );
  }
}

/**
 * The longest name of one file or directory an agent can write: Linux file systems (ext4, xfs,
 * tmpfs, overlayfs) hold at most 255 bytes per name; a longer one fails on every machine.
 */
export const MAX_PATH_PART_BYTES = 255;

/**
 * Why `path` cannot be a file of an operator, or undefined when it is a plain relative path that
 * stays inside the operator directory and that every agent can write. Agents run the same check
 * before writing anything, and the controller at upload, so nothing is stored that no agent unpacks.
 */
export function bundlePathProblem(path: string): string | undefined {
  // Control characters: NUL cuts the path short in the kernel; the rest only confuse humans.
  if (/[\u0000-\u001f\u007f]/.test(path)) return "contains a control character (such as NUL); rename the file";
  if (path.includes("\\")) return "contains a backslash; use / between directories";
  if (path.startsWith("/")) return "is an absolute path; give paths relative to the operator directory";
  if (path.split("/").some((p) => p === ".." || p === "" || p === ".")) {
    return "is not a plain relative path inside the operator directory (no '..', '.' or empty parts)";
  }
  const long = path.split("/").find((p) => Buffer.byteLength(p) > MAX_PATH_PART_BYTES);
  if (long !== undefined)
    return `has a part of ${Buffer.byteLength(long)} bytes; agents' file systems hold names of at most ${MAX_PATH_PART_BYTES} bytes: shorten it`;
  return undefined;
}

/** A path that is both a file and, for another file, a directory (`a` and `a/b`), if any. */
export function fileDirectoryClash(paths: string[]): { file: string; inside: string } | undefined {
  const files = new Set(paths);
  for (const p of paths) {
    for (let i = p.indexOf("/"); i !== -1; i = p.indexOf("/", i + 1)) {
      if (files.has(p.slice(0, i))) return { file: p.slice(0, i), inside: p };
    }
  }
  return undefined;
}

/** A path as it can be shown in a message: control characters escaped. */
function printablePath(path: string): string {
  return JSON.stringify(path).slice(1, -1);
}

/** Marks the hash encoding below; a hash of another format is refused (see {@link operatorHashProblem}). */
export const OPERATOR_HASH_PREFIX = "v2-";

/** The first 8 hex digits of an operator hash, as people are shown it. */
export const shortHash = (hash: string): string => hash.replace(OPERATOR_HASH_PREFIX, "").slice(0, 8);
export const OPERATOR_HASH_PATTERN = /^v2-[0-9a-f]{64}$/;
/** The first format: sha256 over `path\0mode\0content\0`, ambiguous because fields had no lengths. */
const LEGACY_HASH_PATTERN = /^[0-9a-f]{64}$/;
export const LEGACY_HASH_MESSAGE = "operator hash format v1 is no longer accepted: re-upload from the directory";

/** Why `hash` cannot name an operator, or undefined when it has the current format. */
export function operatorHashProblem(hash: string): string | undefined {
  if (OPERATOR_HASH_PATTERN.test(hash)) return undefined;
  if (LEGACY_HASH_PATTERN.test(hash)) return LEGACY_HASH_MESSAGE;
  return `must be the content hash returned by the operator upload (${OPERATOR_HASH_PREFIX} and 64 hex digits)`;
}

/**
 * The content hash that names an operator: sha256 over an unambiguous encoding, the file count
 * then, in path order, each file's path, mode and content, every variable-length field preceded
 * by its byte length, so no two different bundles encode to the same bytes.
 */
/**
 * The hash of an effective config, key order aside: the agent runs config-changed when it changes,
 * and reports it as the config it applied; the controller shows the one an application wants.
 */
export function configHash(config: Record<string, string | number | boolean>): string {
  const sorted = Object.fromEntries(Object.entries(config).sort(([a], [b]) => a.localeCompare(b)));
  return createHash("sha256").update(JSON.stringify(sorted)).digest("hex").slice(0, 16);
}

export function bundleHash(bundle: Bundle): string {
  const h = createHash("sha256");
  h.update("steward-operator-v2\0");
  h.update(uint64(bundle.files.length));
  for (const f of [...bundle.files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    const path = Buffer.from(f.path, "utf8");
    const content = Buffer.from(f.content, "base64");
    h.update(uint64(path.length));
    h.update(path);
    h.update(uint64(f.mode & 0o777));
    h.update(uint64(content.length));
    h.update(content);
  }
  return OPERATOR_HASH_PREFIX + h.digest("hex");
}

function uint64(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}
