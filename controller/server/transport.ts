/**
 * How bytes become requests: the HTTPS server's timeouts and size bounds (TRANSPORT_LIMITS in
 * api/limits.ts), our `{code, message, details}` answer for requests that never reach a route (a
 * malformed request line, a bad percent-encoding, headers too large or too slow), and the JSON body
 * parser.
 */
import type { Server } from "node:https";
import type { Duplex } from "node:stream";
import type { FastifyError, FastifyHttpsOptions, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { TransportLimits } from "../../api";
import { StewardError, TRANSPORT_LIMITS } from "../../api";
import { answerRaw, shown } from "./raw-answer";

/** The bytes a request body may have unless a route allows more (operator uploads do). */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/** Fastify's options for the controller's HTTPS server, with every transport limit applied. */
export function serverOptions(
  tls: { key: string; cert: string },
  overrides: Partial<TransportLimits> = {},
): FastifyHttpsOptions<Server> {
  const limits: TransportLimits = { ...TRANSPORT_LIMITS, ...overrides };
  return {
    https: {
      ...tls,
      headersTimeout: limits.headersTimeoutMs,
      maxHeaderSize: limits.maxHeaderBytes,
      // Node looks for timed-out requests this often (30 s by default): a tenth of the shortest limit.
      connectionsCheckingInterval: Math.max(10, Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 10),
    },
    requestTimeout: limits.requestTimeoutMs,
    connectionTimeout: limits.idleTimeoutMs,
    bodyLimit: DEFAULT_BODY_LIMIT_BYTES,
    logger: false,
    forceCloseConnections: true,
    clientErrorHandler: (err, socket) => answerClientError(limits, err as NodeJS.ErrnoException, socket),
    frameworkErrors: answerFrameworkError,
  };
}

/** Applies what Fastify has no option for; call once the server exists, before listening. */
export function applyServerLimits(app: FastifyInstance, overrides: Partial<TransportLimits> = {}): void {
  app.server.maxConnections = overrides.maxConnections ?? TRANSPORT_LIMITS.maxConnections;
  installJsonBodyParser(app);
}

/** Requests Node's HTTP parser refused or that took too long: answered, then the socket closes. */
function answerClientError(limits: TransportLimits, err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") {
    answerRaw(socket, 408, {
      code: "invalid-request",
      message: `the request did not arrive in time: headers must arrive within ${limits.headersTimeoutMs} ms and the whole request within ${limits.requestTimeoutMs} ms`,
      details: { headersTimeoutMs: limits.headersTimeoutMs, requestTimeoutMs: limits.requestTimeoutMs },
    });
    return;
  }
  if (err.code === "HPE_HEADER_OVERFLOW") {
    answerRaw(socket, 431, {
      code: "invalid-request",
      message: `the request line and headers exceed ${limits.maxHeaderBytes} bytes`,
      details: { maxHeaderBytes: limits.maxHeaderBytes },
    });
    return;
  }
  answerRaw(socket, 400, { code: "invalid-request", message: `malformed HTTP request (${err.code ?? "parse error"})` });
}

/** What Fastify refuses before routing (a bad percent-encoding, a too long path parameter). */
function answerFrameworkError(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const path = req.raw.url?.split("?")[0] ?? "";
  if (err.code === "FST_ERR_BAD_URL") {
    void reply.code(400).send({
      code: "invalid-request",
      message: `the URL path ${shown(path)} is not valid percent-encoding (write "%" as %25)`,
    });
    return;
  }
  const status = err.statusCode && err.statusCode < 500 ? err.statusCode : 400;
  void reply
    .code(status)
    .send({ code: "invalid-request", message: `the request for ${shown(path)} was refused: ${err.message}` });
}

/**
 * JSON bodies, parsed by JSON.parse with keys that could change object prototypes refused by name
 * (Fastify's own parser refuses them too, but calls the body "not valid JSON").
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}

export function parseJsonBody(text: string): unknown {
  if (text.length === 0) throw new StewardError("invalid-request", "request body is empty; send a JSON object");
  // Only a body that could hold such a key (perhaps \u-escaped) pays for the reviver's walk.
  const mayHoldPrototypeKey = /__proto__|constructor|\\u/.test(text);
  try {
    return mayHoldPrototypeKey ? JSON.parse(text, refusePrototypeKeys) : JSON.parse(text);
  } catch (err) {
    if (StewardError.isInstance(err)) throw err;
    if (err instanceof RangeError) throw new StewardError("invalid-request", "request body is nested too deeply");
    throw new StewardError("invalid-request", `request body is not valid JSON: ${(err as Error).message}`);
  }
}

function refusePrototypeKeys(key: string, value: unknown): unknown {
  const prototypeKey =
    key === "__proto__" ||
    (key === "constructor" && typeof value === "object" && value !== null && Object.hasOwn(value, "prototype"));
  if (prototypeKey) {
    throw new StewardError(
      "invalid-request",
      `the key "${key}" is not allowed in a request body (it could change object prototypes): rename or remove it`,
      { details: { key } },
    );
  }
  return value;
}
