/**
 * `GET /v1/models/<model>/logs`: the model's agent and hook log records (see {@link ModelLogs}) as
 * newline-delimited JSON, for `steward debug-log`. First the newest `lines` matching records (all
 * kept ones with `replay=true`), then, unless `tail=false`, each new one as it arrives until the
 * client goes away. Users with read access to the model only.
 *
 * Query: `include`/`exclude` (repeatable: `web/0`, `web`, `machine-0`), `level` (DEBUG, INFO,
 * WARNING, ERROR), `lines` (default 10), `replay`, `tail` (default true).
 */
import { PassThrough } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { DebugLogRecord, LogEntity, LogFilter } from "../../api";
import { StewardError, parseLogEntity, parseLogLevel, routes } from "../../api";
import type { StateCache } from "../state";
import { authenticate, requireReadKept, requireUser } from "../access/auth";
import type { ModelLogs } from "../state/model-logs";
import { routeOn } from "../access/route";

export interface DebugLogRouteOptions {
  cache: StateCache;
  logs: ModelLogs;
  /**
   * Most streams this replica serves at once; more are refused with 503.
   * @default 200
   */
  maxStreams?: number;
  /**
   * Bytes a stream may have waiting for a slow client; records beyond it are dropped (and counted).
   * @default 1048576 (1 MiB)
   */
  maxBufferedBytes?: number;
  /**
   * How often an idle stream sends an empty line, so that a client (or a proxy) gone away is noticed.
   * @default 25000
   */
  heartbeatMs?: number;
}

/** Most names `include` and `exclude` take together. */
const MAX_ENTITIES = 100;
/** Most records one request may ask for with `lines`. */
const MAX_LINES = 100_000;

export function registerDebugLog(app: FastifyInstance, o: DebugLogRouteOptions): void {
  const route = routeOn(app, o.cache);
  let streams = 0;
  route(routes.debugLog, async ({ req, reply, principal: p, model: idx }) => {
    const q = parseQuery(req.query as Record<string, string | string[] | undefined>);
    if (q.tail && streams >= (o.maxStreams ?? 200)) {
      throw new StewardError(
        "unavailable",
        `this controller already serves ${streams} debug-log streams, its limit; try again later`,
        { reason: "at-capacity" },
      );
    }

    const out = new PassThrough();
    const backlog = o.logs.recent(idx.uuid, q.filter, q.replay ? Number.MAX_SAFE_INTEGER : q.lines);
    for (const r of backlog) out.write(JSON.stringify(r) + "\n");
    reply.type("application/x-ndjson").header("cache-control", "no-store");
    if (!q.tail) {
      out.end();
      return reply.send(out);
    }

    streams++;
    let dropped = 0;
    const send = (r: DebugLogRecord): void => {
      // A client that reads slowly loses records, never the controller its memory.
      if (out.writableLength > (o.maxBufferedBytes ?? 1024 * 1024)) {
        dropped++;
        return;
      }
      if (dropped > 0) {
        out.write(JSON.stringify({ dropped }) + "\n");
        dropped = 0;
      }
      out.write(JSON.stringify(r) + "\n");
    };
    const stop = o.logs.follow(idx.uuid, q.filter, send);
    // A stream lives no longer than the token and the access it was opened with, as watches do.
    const headers = { authorization: req.headers.authorization, cookie: req.headers.cookie };
    const recheck = (): void => {
      try {
        const now = requireUser(authenticate(o.cache, headers));
        const m = o.cache.models.get(idx.uuid);
        if (m?.model) requireReadKept(now, m);
      } catch (err) {
        const e = StewardError.isInstance(err) ? err : new StewardError("unauthorized", "credentials no longer valid");
        out.write(JSON.stringify({ ended: { code: e.code, message: e.message } }) + "\n");
        close();
      }
    };
    const unsubscribe = o.cache.subscribe(recheck);
    const expiry = setTimeout(recheck, Math.max(0, p.token.expiresAt - Date.now()) + 1);
    expiry.unref();
    const heartbeat = setInterval(() => {
      if (out.writableLength === 0) out.write("\n");
    }, o.heartbeatMs ?? 25_000);
    heartbeat.unref();
    let closed = false;
    const close = (): void => {
      if (closed) return;
      closed = true;
      streams--;
      stop();
      unsubscribe();
      clearTimeout(expiry);
      clearInterval(heartbeat);
      out.end();
    };
    reply.raw.once("close", close);
    out.once("close", close);
    return reply.send(out);
  });
}

interface LogQuery {
  filter: LogFilter;
  lines: number;
  replay: boolean;
  tail: boolean;
}

function parseQuery(q: Record<string, string | string[] | undefined>): LogQuery {
  const list = (key: string): string[] => {
    const v = q[key];
    return v === undefined ? [] : Array.isArray(v) ? v : [v];
  };
  const single = (key: string): string | undefined => {
    const v = list(key);
    if (v.length > 1) throw invalid(key, `query "${key}" may be given once`);
    return v[0];
  };
  const bool = (key: string, dflt: boolean): boolean => {
    const v = single(key);
    if (v === undefined) return dflt;
    if (v === "true" || v === "false") return v === "true";
    throw invalid(key, `query "${key}" must be true or false, got "${v}"`);
  };
  const entities = (key: string): LogEntity[] =>
    list(key).map((text) => {
      try {
        return parseLogEntity(text);
      } catch (err) {
        throw invalid(key, `query "${key}": ${(err as Error).message}`);
      }
    });
  const include = entities("include");
  const exclude = entities("exclude");
  if (include.length + exclude.length > MAX_ENTITIES)
    throw invalid("include", `at most ${MAX_ENTITIES} names in include and exclude together`);
  const levelText = single("level");
  let level: LogFilter["level"] = "DEBUG";
  if (levelText !== undefined) {
    try {
      level = parseLogLevel(levelText);
    } catch (err) {
      throw invalid("level", `query "level": ${(err as Error).message}`);
    }
  }
  const linesText = single("lines") ?? "10";
  if (!/^\d{1,6}$/.test(linesText) || Number(linesText) > MAX_LINES)
    throw invalid("lines", `query "lines" must be a whole number from 0 to ${MAX_LINES}, got "${linesText}"`);
  const known = new Set(["include", "exclude", "level", "lines", "replay", "tail"]);
  const unknown = Object.keys(q).filter((k) => !known.has(k));
  if (unknown.length > 0) throw invalid(unknown[0]!, `unknown query "${unknown[0]}" (known: ${[...known].join(", ")})`);
  return {
    filter: { include, exclude, level },
    lines: Number(linesText),
    replay: bool("replay", false),
    tail: bool("tail", true),
  };
}

function invalid(field: string, message: string): StewardError {
  return new StewardError("invalid-request", message, { details: { field } });
}
