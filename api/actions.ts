/**
 * Actions: day-2 operations an operator offers (`steward run web/0 restart delay=5`), declared under
 * `actions:` in operator.yaml as Juju's actions.yaml declares them, with each action's parameters
 * in a subset of JSON Schema. Parameters are checked against it before anything is queued, so a
 * typo is a 400 naming the parameter, never a failed task on some unit.
 *
 * ```yaml
 * actions:
 *   restart:
 *     description: Restart the server.
 *     params:
 *       delay: { type: integer, minimum: 0, default: 0, description: Seconds to wait first. }
 *     required: [delay]
 * ```
 *
 * Unknown parameters are refused unless the action says `additionalProperties: true` (Juju allows
 * them by default; a misspelt optional parameter silently ignored is the worse surprise).
 */
import { StewardError } from "./errors";
import { DATABAG_LIMIT_BYTES } from "./limits";
import { sectionEntries } from "./operator-sections";

export type ActionParamType = "string" | "integer" | "number" | "boolean";
export type ActionValue = string | number | boolean;

export interface ActionParam {
  type: ActionParamType;
  description: string;
  default?: ActionValue;
  enum?: ActionValue[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
}

export interface ActionSpec {
  description: string;
  params: Record<string, ActionParam>;
  required: string[];
  additionalProperties: boolean;
}

export const ACTION_NAME_PATTERN = /^[a-z][a-z0-9-]*$/;
const PARAM_NAME_PATTERN = /^[a-z][a-z0-9_-]*$/;
const PARAM_TYPES: readonly ActionParamType[] = ["string", "integer", "number", "boolean"];
const PARAM_FIELDS = ["type", "description", "default", "enum", "minimum", "maximum", "minLength", "maxLength"];
const ACTION_FIELDS = ["description", "params", "required", "additionalProperties"];
/** Most bytes of one task's parameters, as JSON (they travel in the unit's agent view). */
export const ACTION_PARAMS_LIMIT_BYTES = DATABAG_LIMIT_BYTES;
/** Most actions one operator may declare. */
export const MAX_ACTIONS = 100;

/**
 * Reads the `actions:` section. `fail(path, problem)` throws the operator format's error, naming
 * the field and its line.
 */
export function parseActionsSection(
  raw: unknown,
  fail: (path: (string | number)[], problem: string) => never,
): Record<string, ActionSpec> {
  const entries = sectionEntries(
    raw,
    "actions",
    { shape: "action name to {description, params, required}", noun: "actions", max: MAX_ACTIONS },
    fail,
  );
  const out: Record<string, ActionSpec> = {};
  for (const [name, def] of entries) {
    const at = ["actions", name];
    if (!ACTION_NAME_PATTERN.test(name))
      fail(at, "is not a valid action name (lower-case letters, digits, hyphens, starting with a letter)");
    if (def !== null && (typeof def !== "object" || Array.isArray(def)))
      fail(at, "must be a mapping with description, params and required");
    const d = (def ?? {}) as Record<string, unknown>;
    for (const k of Object.keys(d))
      if (!ACTION_FIELDS.includes(k))
        fail([...at, k], `is not a known action field (known: ${ACTION_FIELDS.join(", ")})`);
    if (d.description !== undefined && typeof d.description !== "string")
      fail([...at, "description"], "must be a string");
    if (d.additionalProperties !== undefined && typeof d.additionalProperties !== "boolean")
      fail([...at, "additionalProperties"], "must be true or false");
    const params: Record<string, ActionParam> = {};
    if (d.params !== undefined && d.params !== null) {
      if (typeof d.params !== "object" || Array.isArray(d.params))
        fail([...at, "params"], "must be a mapping of parameter name to {type, description, default, …}");
      for (const [p, pdef] of Object.entries(d.params as Record<string, unknown>))
        params[p] = parseParam(pdef, [...at, "params", p], fail);
    }
    const required: string[] = [];
    if (d.required !== undefined && d.required !== null) {
      if (!Array.isArray(d.required) || d.required.some((r) => typeof r !== "string"))
        fail([...at, "required"], "must be a list of parameter names");
      for (const r of d.required as string[]) {
        if (!Object.hasOwn(params, r))
          fail(
            [...at, "required"],
            `names "${r}", which is not one of the action's params (${Object.keys(params).join(", ") || "none"})`,
          );
        required.push(r);
      }
    }
    out[name] = {
      description: (d.description as string | undefined) ?? "",
      params,
      required,
      additionalProperties: d.additionalProperties === true,
    };
  }
  return out;
}

function parseParam(
  def: unknown,
  at: (string | number)[],
  fail: (path: (string | number)[], problem: string) => never,
): ActionParam {
  const name = String(at[at.length - 1]);
  if (!PARAM_NAME_PATTERN.test(name))
    fail(at, "is not a valid parameter name (lower-case letters, digits, '-' and '_', starting with a letter)");
  if (typeof def !== "object" || def === null || Array.isArray(def))
    return fail(at, "must be a mapping with at least a type (string, integer, number or boolean)");
  const d = def as Record<string, unknown>;
  for (const k of Object.keys(d))
    if (!PARAM_FIELDS.includes(k))
      fail([...at, k], `is not a supported parameter field (supported: ${PARAM_FIELDS.join(", ")})`);
  if (!PARAM_TYPES.includes(d.type as ActionParamType))
    fail([...at, "type"], `must be one of ${PARAM_TYPES.join(", ")}`);
  const param: ActionParam = {
    type: d.type as ActionParamType,
    description: typeof d.description === "string" ? d.description : "",
  };
  if (d.description !== undefined && typeof d.description !== "string")
    fail([...at, "description"], "must be a string");
  for (const bound of ["minimum", "maximum"] as const) {
    if (d[bound] === undefined) continue;
    if (param.type !== "integer" && param.type !== "number")
      fail([...at, bound], `applies to integer and number parameters, not ${param.type}`);
    if (typeof d[bound] !== "number" || !Number.isFinite(d[bound])) fail([...at, bound], "must be a number");
    param[bound] = d[bound] as number;
  }
  for (const bound of ["minLength", "maxLength"] as const) {
    if (d[bound] === undefined) continue;
    if (param.type !== "string") fail([...at, bound], `applies to string parameters, not ${param.type}`);
    if (!Number.isInteger(d[bound]) || (d[bound] as number) < 0)
      fail([...at, bound], "must be a whole number of at least 0");
    param[bound] = d[bound] as number;
  }
  if (d.enum !== undefined) {
    if (!Array.isArray(d.enum) || d.enum.length === 0)
      fail([...at, "enum"], "must be a non-empty list of allowed values");
    (d.enum as unknown[]).forEach((v, i) => {
      const problem = typeProblem({ ...param, enum: undefined }, v);
      if (problem) fail([...at, "enum", i], problem);
    });
    param.enum = d.enum as ActionValue[];
  }
  if (d.default !== undefined && d.default !== null) {
    const problem = paramProblem(param, d.default);
    if (problem) fail([...at, "default"], problem);
    param.default = d.default as ActionValue;
  }
  return param;
}

/** Why `value` is not of the parameter's type, or undefined. */
function typeProblem(p: ActionParam, value: unknown): string | undefined {
  switch (p.type) {
    case "string":
      return typeof value === "string" ? undefined : `must be a string, got ${show(value)}`;
    case "integer":
      return typeof value === "number" && Number.isInteger(value)
        ? undefined
        : `must be a whole number, got ${show(value)}`;
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? undefined : `must be a number, got ${show(value)}`;
    case "boolean":
      return typeof value === "boolean" ? undefined : `must be true or false, got ${show(value)}`;
  }
}

/** Why `value` does not fit the parameter, or undefined when it does. */
function paramProblem(p: ActionParam, value: unknown): string | undefined {
  const problem = typeProblem(p, value);
  if (problem) return problem;
  if (p.enum && !p.enum.includes(value as ActionValue))
    return `must be one of ${p.enum.map((v) => JSON.stringify(v)).join(", ")}, got ${show(value)}`;
  if (typeof value === "number") {
    if (p.minimum !== undefined && value < p.minimum) return `must be at least ${p.minimum}, got ${value}`;
    if (p.maximum !== undefined && value > p.maximum) return `must be at most ${p.maximum}, got ${value}`;
  }
  if (typeof value === "string") {
    if (p.minLength !== undefined && value.length < p.minLength)
      return `must be at least ${p.minLength} characters long`;
    if (p.maxLength !== undefined && value.length > p.maxLength)
      return `must be at most ${p.maxLength} characters long`;
  }
  return undefined;
}

function show(v: unknown): string {
  return typeof v === "string" ? `the string ${JSON.stringify(v)}` : `${typeof v} ${JSON.stringify(v)}`;
}

/**
 * Checks a run's parameters against the action and returns them with defaults filled in. A problem
 * is a 400 naming the parameter and what it must be.
 */
export function checkActionParams(
  app: string,
  action: string,
  spec: ActionSpec,
  params: Record<string, unknown>,
): Record<string, ActionValue> {
  const bad = (param: string, problem: string): StewardError =>
    new StewardError("invalid-request", `parameter "${param}" of action ${action} (${app}) ${problem}`, {
      details: { field: `params.${param}`, action },
    });
  const out: Record<string, ActionValue> = {};
  for (const [name, given] of Object.entries(params)) {
    const p = Object.hasOwn(spec.params, name) ? spec.params[name] : undefined;
    // Text from a command line (`delay=5`) is read in the parameter's type.
    const value = typeof given === "string" ? coerceActionParam(spec, name, given) : given;
    if (!p) {
      if (!spec.additionalProperties)
        throw bad(name, `is not a parameter it takes (it takes: ${Object.keys(spec.params).join(", ") || "none"})`);
      if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean")
        throw bad(name, "must be a string, number or boolean");
      out[name] = value;
      continue;
    }
    const problem = paramProblem(p, value);
    if (problem) throw bad(name, problem);
    out[name] = value as ActionValue;
  }
  for (const r of spec.required) if (!(r in out) && spec.params[r]?.default === undefined) throw bad(r, "is required");
  for (const [name, p] of Object.entries(spec.params))
    if (!(name in out) && p.default !== undefined) out[name] = p.default;
  const bytes = new TextEncoder().encode(JSON.stringify(out)).length;
  if (bytes > ACTION_PARAMS_LIMIT_BYTES)
    throw new StewardError(
      "invalid-request",
      `the parameters of action ${action} are ${bytes} bytes as JSON; at most ${ACTION_PARAMS_LIMIT_BYTES} are allowed`,
      { details: { field: "params", limit: ACTION_PARAMS_LIMIT_BYTES } },
    );
  return out;
}

/**
 * `key=value` text from the command line in the parameter's type (`delay=5` becomes 5 for an
 * integer parameter); text that does not convert stays text, for the controller to refuse by name.
 */
export function coerceActionParam(spec: ActionSpec | undefined, name: string, text: string): ActionValue {
  const type = spec && Object.hasOwn(spec.params, name) ? spec.params[name]!.type : undefined;
  if (type === "integer" && /^-?\d+$/.test(text)) return Number(text);
  if (type === "number" && text.trim() !== "" && Number.isFinite(Number(text))) return Number(text);
  if (type === "boolean" && (text === "true" || text === "false")) return text === "true";
  return text;
}

/** pending: queued; running: its agent started it; aborted: its unit went before it finished. */
export type TaskStatus = "pending" | "running" | "completed" | "failed" | "aborted";

/** One action run on one unit (`steward show-task`). */
export interface TaskInfo {
  id: number;
  operation: number;
  unit: string;
  action: string;
  params: Record<string, ActionValue>;
  status: TaskStatus;
  enqueued: string;
  started?: string;
  completed?: string;
  /** Why it failed (action-fail's message, or the exit status), or what aborted it. */
  message: string;
  /** What the action set with action-set (dotted keys become nested maps). */
  results: Record<string, unknown>;
  log: { ts: string; message: string }[];
  /** The end of what the action printed. */
  output: string;
  exitCode?: number;
}

/** One `steward run`: the same action on one or more units (`steward operations`). */
export interface OperationInfo {
  id: number;
  action: string;
  enqueued: string;
  /** Who ran it. */
  by: string;
  /** As given: units, `app/leader` or applications. */
  targets: string[];
  /** The least finished of its tasks' statuses (failed or aborted once all are done and one did). */
  status: TaskStatus;
  tasks: { id: number; unit: string; status: TaskStatus }[];
}

export interface RunActionResult {
  operation: number;
  tasks: { id: number; unit: string }[];
}
