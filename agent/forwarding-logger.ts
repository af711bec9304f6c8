/**
 * A {@link Logger} that writes as another does and also hands each record of level info and above
 * to a {@link LogForwarder}, for `steward debug-log`. A `unit` field attributes the record to that
 * unit; the other fields follow the message as they do in the local log. Debug lines stay local
 * (they are many and matter to whoever debugs the agent on its machine).
 */
import type { LogLevel, LogRecordLevel, Logger } from "../api/core";
import { formatFields } from "../api/core";
import type { LogForwarder } from "./log-forwarder";

const levels: Record<Exclude<LogLevel, "debug">, LogRecordLevel> = { info: "INFO", warn: "WARNING", error: "ERROR" };

export function forwardingLogger(
  local: Logger,
  forwarder: Pick<LogForwarder, "add">,
  fields: Record<string, unknown> = {},
): Logger {
  const forward = (level: Exclude<LogLevel, "debug">, msg: string, extra?: Record<string, unknown>): void => {
    // The controller knows the machine from the login; unit and hook become the record's own fields.
    const { unit, hook, machine: _machine, ...rest } = { ...fields, ...extra };
    const kv = formatFields(rest);
    forwarder.add({
      ts: new Date().toISOString(),
      level: levels[level],
      source: "agent",
      ...(typeof unit === "string" ? { unit } : {}),
      ...(typeof hook === "string" ? { hook } : {}),
      message: kv ? `${msg} ${kv}` : msg,
    });
  };
  return {
    debug: (m, f) => local.debug(m, f),
    info: (m, f) => {
      local.info(m, f);
      forward("info", m, f);
    },
    warn: (m, f) => {
      local.warn(m, f);
      forward("warn", m, f);
    },
    error: (m, f) => {
      local.error(m, f);
      forward("error", m, f);
    },
    child: (more) => forwardingLogger(local.child(more), forwarder, { ...fields, ...more }),
  };
}
