/**
 * Serves a retried mutating request (same `steward-request-id`) with the answer its first try got,
 * so a client that re-sends after a timeout or a 503 never turns its own success into a failure.
 * The records and how domain writes take part are in state/request-records.ts.
 *
 * A recorded answer is given back only to the principal that made the request, for the same method
 * and path; a request id reused for something else is refused.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { MUTATING_METHODS, REPLAYED_HEADER, REQUEST_ID_HEADER, StewardError } from "../../api";
import type { Logger } from "../../api";
import type { ResponseRecordDoc, StateCache } from "../state";
import { RequestScope, currentRequest, decode, docs, outsideRequest, requestKeys, runInRequest } from "../state";
import type { Store } from "../store";
import { authenticate } from "../access/auth";

const REQUEST_ID = /^[A-Za-z0-9-]{8,64}$/;

export function installIdempotency(app: FastifyInstance, deps: { store: Store; cache: StateCache; log: Logger }): void {
  const who = (req: FastifyRequest): string | undefined => {
    try {
      const p = authenticate(deps.cache, req.headers, { method: req.method });
      return p.kind === "user" ? `user:${p.user}` : `agent:${p.model}/${p.machine}`;
    } catch {
      return undefined;
    }
  };
  const pathOf = (url: string): string => url.split("?")[0]!;

  // Callback style on purpose: everything the request does from here on runs in its scope, and a
  // request without an id in none (whatever context the server itself was started in).
  app.addHook("onRequest", (req, reply, done) => {
    const id = req.headers[REQUEST_ID_HEADER];
    if (!MUTATING_METHODS.has(req.method) || id === undefined) return outsideRequest(done);
    if (typeof id !== "string" || !REQUEST_ID.test(id)) {
      const err = new StewardError(
        "invalid-request",
        `header ${REQUEST_ID_HEADER} must be 8 to 64 letters, digits or dashes (a UUID)`,
        { details: { field: REQUEST_ID_HEADER } },
      );
      void reply.code(err.httpStatus).send(err.toWire());
      return;
    }
    runInRequest(new RequestScope(id), done);
  });

  app.addHook("preHandler", async (req, reply) => {
    const scope = currentRequest();
    if (!scope) return;
    const kv = await deps.store.get(requestKeys.response(scope.id));
    if (!kv) return;
    const rec = decode(docs.requestResponse, kv.value);
    if (rec.who !== who(req)) return; // not theirs: served as a new request (and refused by its own checks)
    if (rec.method !== req.method || rec.path !== pathOf(req.url)) {
      throw new StewardError(
        "invalid-request",
        `request id ${scope.id} was already used for ${rec.method} ${rec.path}: send a new id for a new request`,
        { details: { field: REQUEST_ID_HEADER } },
      );
    }
    scope.closed = true;
    reply.code(rec.status).header(REPLAYED_HEADER, "true");
    if (rec.body) reply.type("application/json");
    return reply.send(rec.body || undefined);
  });

  // The answer is recorded before it leaves, so a retry after the client saw it finds it.
  app.addHook("onSend", async (req, reply, payload) => {
    const scope = currentRequest();
    if (!scope || scope.closed) return payload;
    scope.closed = true;
    const caller = who(req);
    // Answers that carry a secret (a login token, new agent credentials) are never stored.
    const secret = (req.routeOptions.config as { secretAnswer?: boolean }).secretAnswer === true;
    if (reply.statusCode >= 400 || !caller || secret || (payload !== undefined && typeof payload !== "string"))
      return payload;
    const rec: ResponseRecordDoc = {
      at: Date.now(),
      who: caller,
      method: req.method,
      path: pathOf(req.url),
      status: reply.statusCode,
      body: payload ?? "",
    };
    await deps.store.put(requestKeys.response(scope.id), JSON.stringify(rec)).catch((err: unknown) => {
      // The change is made and recorded step by step: a retry still rebuilds the same answer.
      deps.log.warn("could not record a request's answer", { id: scope.id, err });
    });
    return payload;
  });
}
