/**
 * A small structured logger shared by the controller and agents: one line per event,
 * `time level message key=value…`. Callers pass fields, never secrets (credentials, passwords and
 * tokens have no place in a log line; nothing here tries to scrub them after the fact).
 */
export type LogLevel = "debug" | "info" | "warn" | "error";
const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export function createLogger(
  opts: { level?: LogLevel; write?: (line: string) => void; fields?: Record<string, unknown> } = {},
): Logger {
  const min = order[opts.level ?? (process.env.STEWARD_LOG_LEVEL as LogLevel | undefined) ?? "info"] ?? 20;
  const write = opts.write ?? ((line: string) => process.stderr.write(line + "\n"));
  const base = opts.fields ?? {};
  const emit = (level: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    if (order[level] < min) return;
    const all = { ...base, ...fields };
    const kv = formatFields(all);
    write(`${new Date().toISOString()} ${level.toUpperCase().padEnd(5)} ${msg}${kv ? " " + kv : ""}`);
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (fields) => createLogger({ ...opts, fields: { ...base, ...fields } }),
  };
}

/** Fields as the log line shows them: `key=value …`, values quoted when they need it. */
export function formatFields(fields: Record<string, unknown>): string {
  return Object.entries(fields)
    .map(([k, v]) => `${k}=${formatValue(v)}`)
    .join(" ");
}

function formatValue(v: unknown): string {
  if (v instanceof Error) return JSON.stringify(v.message);
  if (typeof v === "string") return /^[\w./:@-]*$/.test(v) && v !== "" ? v : JSON.stringify(v);
  return JSON.stringify(v);
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = createLogger({ write: () => undefined, level: "error" });
