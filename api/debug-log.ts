/**
 * `steward debug-log`: the shapes of the model's log records as the controller streams them, their
 * levels, the `--include`/`--exclude` entity syntax and the filter both the CLI (to validate before
 * connecting) and the controller (to select records) apply. Browser-safe and schema-free, so the
 * agent can use it too.
 */
import { StewardError } from "./errors";

export const LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR"] as const;
export type LogRecordLevel = (typeof LOG_LEVELS)[number];

/**
 * Where a record comes from: the agent itself, a line a hook printed, or the hook's `log` tool; or
 * the controller, about the model's machines (a provisioning failure). Agents may send only the first three.
 */
export type LogRecordSource = "agent" | "hook" | "operator" | "controller";

/** One record as an agent sends it (the controller adds the machine, which it knows from the login). */
export interface AgentLogRecord {
  /** ISO 8601 time on the agent's machine. */
  ts: string;
  level: LogRecordLevel;
  source: LogRecordSource;
  unit?: string;
  /** The hook that printed it (hook and operator records). */
  hook?: string;
  message: string;
}

/** One record as `GET /v1/models/<model>/logs` streams it, one JSON object a line. */
export interface DebugLogRecord extends AgentLogRecord {
  /** "" for a controller record about the whole model. */
  machine: string;
}

/** Most characters of one record's message; longer lines are cut (the agent's hooks.log keeps them whole). */
export const LOG_MESSAGE_MAX_CHARS = 2048;
/** Most records an agent sends in one batch. */
export const LOG_BATCH_MAX_RECORDS = 500;

/** A name given to `--include`/`--exclude`: a unit (`web/0`), an application (`web`) or a machine (`machine-0`, or just `0`). */
export type LogEntity =
  { kind: "unit"; name: string } | { kind: "application"; name: string } | { kind: "machine"; id: string };

export interface LogFilter {
  include: LogEntity[];
  exclude: LogEntity[];
  /** The least severe level shown. @default "DEBUG" (everything) */
  level: LogRecordLevel;
}

const APP = "[a-z][a-z0-9-]*";

/** Parses one `--include`/`--exclude` value; throws an invalid-request error naming the accepted forms. */
export function parseLogEntity(text: string): LogEntity {
  if (new RegExp(`^${APP}/\\d+$`).test(text)) return { kind: "unit", name: text };
  const machine = /^(?:machine-)?(\d+)$/.exec(text);
  if (machine) return { kind: "machine", id: machine[1]! };
  if (new RegExp(`^${APP}$`).test(text)) return { kind: "application", name: text };
  throw new StewardError(
    "invalid-request",
    `"${text}" is not a unit (web/0), an application (web) or a machine (machine-0 or 0)`,
    { details: { field: "include/exclude" } },
  );
}

/** Parses a level name in any case (`warn` is taken for WARNING). */
export function parseLogLevel(text: string): LogRecordLevel {
  const up = text.toUpperCase();
  const level = up === "WARN" ? "WARNING" : up;
  if ((LOG_LEVELS as readonly string[]).includes(level)) return level as LogRecordLevel;
  throw new StewardError("invalid-request", `level must be one of ${LOG_LEVELS.join(", ")}, got "${text}"`, {
    details: { field: "level" },
  });
}

function entityMatches(e: LogEntity, r: DebugLogRecord): boolean {
  switch (e.kind) {
    case "unit":
      return r.unit === e.name;
    case "application":
      return r.unit !== undefined && r.unit.slice(0, r.unit.lastIndexOf("/")) === e.name;
    case "machine":
      return r.machine === e.id;
  }
}

/** Whether a record passes the filter: at least the level, any include (if given), no exclude. */
export function logRecordMatches(f: LogFilter, r: DebugLogRecord): boolean {
  if (LOG_LEVELS.indexOf(r.level) < LOG_LEVELS.indexOf(f.level)) return false;
  if (f.include.length > 0 && !f.include.some((e) => entityMatches(e, r))) return false;
  return !f.exclude.some((e) => entityMatches(e, r));
}

/**
 * Text that came from a machine, made safe for a terminal: control characters (escape sequences,
 * carriage returns, bells) are removed; newlines and tabs are kept only when `multiline`.
 */
export function stripControlChars(text: string, multiline = false): string {
  const pattern = multiline ? /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g : /[\x00-\x1f\x7f-\x9f]/g;
  return text.replace(pattern, "");
}
