/**
 * A workload container's layer: the services its supervisor runs (Pebble's layer, reduced to what
 * operators need). Checked twice: by the hook tool, so an operator's mistake is a clear refusal in
 * its hook, and by the supervisor, which trusts nothing it is sent. Imports nothing: the supervisor
 * bundle that includes it runs in workload images.
 *
 * ```yaml
 * summary: web server
 * services:
 *   web:
 *     command: /usr/bin/python3 -m http.server 8080   # or a list: [python3, -m, http.server]
 *     environment: { LANG: C.UTF-8 }
 *     working-dir: /srv
 *     startup: enabled            # enabled: started by every replan; disabled (default): only by start
 *     on-success: restart         # restart (default) | ignore | shutdown
 *     on-failure: restart         # restart (default) | ignore | shutdown
 *     backoff-delay: 500ms        # first wait before a restart, doubled (backoff-factor) up to backoff-limit
 *     backoff-factor: 2
 *     backoff-limit: 30s
 *     kill-delay: 5s              # SIGTERM, then SIGKILL after this
 * ```
 */

export type ExitAction = "restart" | "ignore" | "shutdown";

export interface ServiceSpec {
  command: string[];
  environment: Record<string, string>;
  workingDir?: string;
  startup: "enabled" | "disabled";
  onSuccess: ExitAction;
  onFailure: ExitAction;
  backoffDelayMs: number;
  backoffFactor: number;
  backoffLimitMs: number;
  killDelayMs: number;
}

export interface Layer {
  summary: string;
  services: Record<string, ServiceSpec>;
}

export const MAX_SERVICES = 32;
const MAX_COMMAND_WORDS = 256;
const MAX_TEXT = 16 * 1024;
const NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ACTIONS: ExitAction[] = ["restart", "ignore", "shutdown"];
const SERVICE_FIELDS = [
  "command",
  "environment",
  "working-dir",
  "startup",
  "on-success",
  "on-failure",
  "backoff-delay",
  "backoff-factor",
  "backoff-limit",
  "kill-delay",
  "summary",
  "description",
];

export class LayerError extends Error {
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field ? `"${field}" ` : ""}${problem}`);
  }
}

const mapping = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A duration: "500ms", "5s", "2m", or a number of seconds. */
export function parseDuration(v: unknown, field: string, max: number): number {
  let ms: number;
  if (typeof v === "number") ms = v * 1000;
  else {
    const m = typeof v === "string" ? /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(v) : null;
    if (!m) throw new LayerError(field, `must be a duration such as 500ms, 5s or 1m (got ${JSON.stringify(v)})`);
    ms = Number(m[1]) * (m[2] === "ms" ? 1 : m[2] === "s" ? 1000 : 60_000);
  }
  if (!Number.isFinite(ms) || ms < 0 || ms > max) throw new LayerError(field, `must be from 0 to ${max / 1000} s`);
  return Math.round(ms);
}

/** Splits a command line as a shell would split words (quotes and backslashes; no expansion). */
export function splitCommand(line: string): string[] {
  const words: string[] = [];
  let word = "",
    inWord = false,
    quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quote) {
      if (ch === quote) quote = undefined;
      else if (ch === "\\" && quote === '"' && i + 1 < line.length && '"\\$`'.includes(line[i + 1]!)) word += line[++i];
      else word += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (ch === "\\" && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (quote) throw new LayerError("command", `has an unclosed ${quote} quote`);
  if (inWord) words.push(word);
  return words;
}

function service(name: string, raw: unknown): ServiceSpec {
  const at = (f: string): string => `services.${name}${f ? `.${f}` : ""}`;
  if (!NAME.test(name) || name.length > 63)
    throw new LayerError(
      at(""),
      "is not a valid service name: lower-case letters, digits and hyphens, starting and ending with a letter or digit",
    );
  if (!mapping(raw)) throw new LayerError(at(""), "must be a mapping with at least a command");
  for (const k of Object.keys(raw))
    if (!SERVICE_FIELDS.includes(k))
      throw new LayerError(at(k), `is not a known service field (known: ${SERVICE_FIELDS.join(", ")})`);
  let command: string[];
  if (typeof raw.command === "string") {
    if (raw.command.length > MAX_TEXT) throw new LayerError(at("command"), `is longer than ${MAX_TEXT} characters`);
    try {
      command = splitCommand(raw.command);
    } catch (err) {
      throw new LayerError(at("command"), (err as Error).message.replace(/^"command" /, ""));
    }
  } else if (Array.isArray(raw.command) && raw.command.every((w) => typeof w === "string"))
    command = raw.command as string[];
  else
    throw new LayerError(
      at("command"),
      'is required: the program and its arguments, as one string or a list, e.g. "python3 -m http.server 8080"',
    );
  if (command.length === 0 || command[0] === "")
    throw new LayerError(at("command"), "is empty: give the program to run");
  if (command.length > MAX_COMMAND_WORDS || command.some((w) => w.length > MAX_TEXT || w.includes("\0")))
    throw new LayerError(
      at("command"),
      `must have at most ${MAX_COMMAND_WORDS} words of at most ${MAX_TEXT} characters, without NUL`,
    );
  const environment: Record<string, string> = {};
  if (raw.environment !== undefined && raw.environment !== null) {
    if (!mapping(raw.environment))
      throw new LayerError(at("environment"), "must be a mapping of variable name to value");
    for (const [k, v] of Object.entries(raw.environment)) {
      if (!ENV_NAME.test(k))
        throw new LayerError(
          at(`environment.${k}`),
          "is not a valid environment variable name (letters, digits, underscores; not starting with a digit)",
        );
      if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean")
        throw new LayerError(at(`environment.${k}`), "must be a string");
      if (String(v).length > MAX_TEXT || String(v).includes("\0"))
        throw new LayerError(at(`environment.${k}`), `must be at most ${MAX_TEXT} characters, without NUL`);
      environment[k] = String(v);
    }
  }
  const wd = raw["working-dir"];
  if (wd !== undefined && (typeof wd !== "string" || !wd.startsWith("/") || wd.includes("\0")))
    throw new LayerError(at("working-dir"), "must be an absolute path");
  const startup = raw.startup ?? "disabled";
  if (startup !== "enabled" && startup !== "disabled")
    throw new LayerError(at("startup"), "must be enabled or disabled");
  const action = (f: string): ExitAction => {
    const v = raw[f] ?? "restart";
    if (!ACTIONS.includes(v as ExitAction)) throw new LayerError(at(f), `must be one of ${ACTIONS.join(", ")}`);
    return v as ExitAction;
  };
  const factor = raw["backoff-factor"] ?? 2;
  if (typeof factor !== "number" || !(factor >= 1 && factor <= 10))
    throw new LayerError(at("backoff-factor"), "must be a number from 1 to 10");
  const backoffDelayMs =
    raw["backoff-delay"] === undefined ? 500 : parseDuration(raw["backoff-delay"], at("backoff-delay"), 300_000);
  const backoffLimitMs =
    raw["backoff-limit"] === undefined ? 30_000 : parseDuration(raw["backoff-limit"], at("backoff-limit"), 3_600_000);
  if (backoffLimitMs < backoffDelayMs)
    throw new LayerError(at("backoff-limit"), "must not be shorter than backoff-delay");
  return {
    command,
    environment,
    ...(wd !== undefined ? { workingDir: wd } : {}),
    startup,
    onSuccess: action("on-success"),
    onFailure: action("on-failure"),
    backoffDelayMs,
    backoffFactor: factor,
    backoffLimitMs,
    killDelayMs: raw["kill-delay"] === undefined ? 5000 : parseDuration(raw["kill-delay"], at("kill-delay"), 300_000),
  };
}

/** Checks a layer as written (YAML or JSON, parsed); throws {@link LayerError} naming the field. */
export function checkLayer(raw: unknown): Layer {
  if (!mapping(raw)) throw new LayerError("", "a layer must be a mapping with services: {name: {command: ...}}");
  for (const k of Object.keys(raw))
    if (!["summary", "description", "services"].includes(k))
      throw new LayerError(k, "is not a known layer field (known: summary, description, services)");
  if (raw.summary !== undefined && typeof raw.summary !== "string") throw new LayerError("summary", "must be a string");
  const services: Record<string, ServiceSpec> = {};
  if (raw.services !== undefined && raw.services !== null) {
    if (!mapping(raw.services)) throw new LayerError("services", "must be a mapping of service name to {command, ...}");
    const names = Object.keys(raw.services);
    if (names.length > MAX_SERVICES)
      throw new LayerError("services", `has ${names.length} services; a layer may have at most ${MAX_SERVICES}`);
    for (const name of names) services[name] = service(name, raw.services[name]);
  }
  return { summary: typeof raw.summary === "string" ? raw.summary.slice(0, 1024) : "", services };
}

/** Whether a running service must be restarted for a new definition to apply. */
export const sameService = (a: ServiceSpec, b: ServiceSpec): boolean => JSON.stringify(a) === JSON.stringify(b);
