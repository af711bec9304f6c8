/**
 * The REST API (`/v1/...`): the routes of api/routes.ts, served by one resource module each
 * (routes/), plus what every answer shares. Every body is parsed by a strict schema from api/; every
 * error leaves as `{code, reason?, retryable, message, details?}` with the status its code implies
 * (the answers to bodies that are not JSON and to unknown paths too); writes return only
 * once the state cache has seen them, so a read right after a write sees it.
 */
import type { FastifyInstance } from "fastify";
import type { Logger } from "../../api";
import { ADDRESSES_HEADER, StewardError } from "../../api";
import { ValueTooLargeError } from "../store";
import { PasswordChecks } from "./password-checks";
import { routeOn } from "../access/route";
import { registerApplicationRoutes } from "./routes/applications";
import { registerControllerRoutes } from "./routes/controller";
import type { HttpApiDeps } from "./routes/deps";
import { registerMachineRoutes } from "./routes/machines";
import { registerAgentReleaseRoutes } from "./routes/agent-releases";
import { registerModelRoutes } from "./routes/models";
import { registerSessionRoutes } from "./routes/session";
import { registerUnitRoutes } from "./routes/units";
import { registerStorageRoutes } from "./routes/storage";
import { registerSecretRoutes } from "./routes/secrets";
import { registerUserRoutes } from "./routes/users";

export type { HttpApiDeps } from "./routes/deps";

export function registerHttpApi(app: FastifyInstance, deps: HttpApiDeps): void {
  const { cache } = deps;
  // Clients follow replicas that move or are replaced by the addresses named on every answer.
  app.addHook("onSend", async (_req, reply) => {
    reply.header(ADDRESSES_HEADER, deps.controllerAddresses().join(","));
  });

  // Reads answer from the cache, after it has caught up with the store: a client that wrote through
  // one replica and reads through another still sees its write.
  app.addHook("preHandler", async (req) => {
    if (req.method === "GET" && req.url.startsWith("/v1/models")) await cache.catchUp();
  });

  const route = routeOn(app, cache);
  const checks = new PasswordChecks(cache, {
    ...(deps.tokenLifetimeMs ? { tokenLifetimeMs: deps.tokenLifetimeMs } : {}),
    ...(deps.failedLogins ? { failedLogins: deps.failedLogins } : {}),
  });
  registerSessionRoutes(route, { cache, users: deps.users, checks });
  registerUserRoutes(route, {
    cache,
    users: deps.users,
    checks,
    caCert: deps.caCert,
    caFingerprint: deps.caFingerprint,
    controllerAddresses: deps.controllerAddresses,
    ...(deps.failedLogins ? { failedLogins: deps.failedLogins } : {}),
  });
  registerControllerRoutes(route, deps);
  registerModelRoutes(route, deps);
  registerApplicationRoutes(route, deps);
  registerUnitRoutes(route, deps);
  registerStorageRoutes(route, deps);
  registerSecretRoutes(route, deps);
  registerMachineRoutes(route, deps);
  registerAgentReleaseRoutes(route, deps);
}

/**
 * A replica cut off from the majority says so at once (503) to every write, instead of letting it
 * wait out the store's deadline; the client then tries another replica. Install before anything
 * that reads the store on a write's way in.
 */
export function installWriteGuard(app: FastifyInstance, writable: () => boolean): void {
  app.addHook("preHandler", async (req) => {
    if (
      req.method === "GET" ||
      req.method === "HEAD" ||
      req.url === "/v1/login" ||
      (req.url === "/v1/session" && req.method === "POST") ||
      writable()
    )
      return;
    throw new StewardError(
      "unavailable",
      "this controller replica is cut off from the majority of replicas and cannot change anything now: retry through another replica",
      { reason: "cut-off-from-majority" },
    );
  });
}

/** Turns any thrown error into the wire shape; unexpected ones are logged and reported as internal. */
export function installErrorHandling(app: FastifyInstance, log: Logger): void {
  app.setErrorHandler((err: unknown, req, reply) => {
    // A size error not translated to the user's field where it arose: never pass the store key on.
    if (err instanceof ValueTooLargeError) {
      log.warn("a request's data was too large to store", {
        method: req.method,
        url: req.url.split("?")[0],
        bytes: err.bytes,
      });
      return reply
        .code(400)
        .send(
          new StewardError(
            "invalid-request",
            `the data sent is too large to store (${err.bytes} bytes once stored, at most ${err.limit}); send less`,
            { details: { bytes: err.bytes, limit: err.limit } },
          ).toWire(),
        );
    }
    if (StewardError.isInstance(err)) {
      const wait = err.details.retryAfterSeconds;
      if (typeof wait === "number") reply.header("retry-after", String(wait));
      return reply.code(err.httpStatus).send(err.toWire());
    }
    const e = err as { statusCode?: number; code?: string; message?: string };
    if (e.statusCode && e.statusCode < 500) {
      const message =
        e.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE"
          ? "request body must be JSON (Content-Type: application/json)"
          : e.code === "FST_ERR_CTP_BODY_TOO_LARGE"
            ? "request body is too large"
            : e.code === "FST_ERR_CTP_EMPTY_JSON_BODY"
              ? "request body is empty; send a JSON object"
              : `request body is not valid JSON: ${e.message ?? ""}`;
      return reply.code(400).send(new StewardError("invalid-request", message).toWire());
    }
    log.error("unexpected error serving request", { method: req.method, url: req.url.split("?")[0], err: e.message });
    return reply.code(500).send(new StewardError("internal", "internal error; see the controller log").toWire());
  });
  app.setNotFoundHandler((req, reply) =>
    reply
      .code(404)
      .send(new StewardError("not-found", `no such endpoint: ${req.method} ${req.url.split("?")[0]}`).toWire()),
  );
}
