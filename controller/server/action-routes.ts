/**
 * Actions over REST (`steward run`, `show-task`, `operations`): queueing needs write access to the
 * model, reading tasks read access. What a task does is reported by its unit's agent (agent-hub.ts).
 *
 * - `POST /v1/models/<model>/actions` `{targets, action, params}` → `{operation, tasks}`
 * - `GET /v1/models/<model>/tasks/<id>` → the task, results and log included
 * - `GET /v1/models/<model>/operations?limit=N` → the newest operations (default 20, at most 1000)
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { RunActionRequest, StewardError, notFound, parseRequest } from "../../api";
import type { Access } from "../access/auth";
import { authenticate, requireModelAccess, requireUser } from "../access/auth";
import type { ActionOps, ModelIndex, StateCache } from "../state";

export interface ActionRoutesDeps { cache: StateCache; actions: ActionOps }

export function registerActionRoutes(app: FastifyInstance, { cache, actions }: ActionRoutesDeps): void {
  const access = (req: FastifyRequest, needed: Access): { idx: ModelIndex; user: string } => {
    const p = requireUser(authenticate(cache, req.headers, { method: req.method }));
    const name = (req.params as { model: string }).model;
    const idx = cache.findModel(name);
    if (!idx) throw notFound("model", name);
    requireModelAccess(p, idx, needed, name);
    return { idx, user: p.user };
  };
  const unitExists = (idx: ModelIndex) => (unit: string): boolean => idx.units.has(unit);

  app.post("/v1/models/:model/actions", async (req, reply) => {
    const { idx, user } = access(req, "write");
    const body = parseRequest(RunActionRequest, req.body, "action run");
    const { revision, ...result } = await actions.run(idx.uuid, user, body, (unit) => idx.taskQueue.get(unit)?.size ?? 0);
    await cache.waitForRevision(revision);
    return reply.code(201).send(result);
  });

  app.get("/v1/models/:model/tasks/:id", async (req) => {
    const { idx } = access(req, "read");
    const id = (req.params as { id: string }).id;
    if (!/^\d{1,10}$/.test(id)) throw notFound("task", id);
    return actions.task(idx.uuid, Number(id), unitExists(idx));
  });

  app.get("/v1/models/:model/operations", async (req) => {
    const { idx } = access(req, "read");
    const text = (req.query as { limit?: unknown }).limit;
    const limit = text === undefined ? 20 : Number(text);
    if (typeof text !== "undefined" && (typeof text !== "string" || !/^\d+$/.test(text) || limit < 1 || limit > 1000)) {
      throw new StewardError("invalid-request", `query "limit" must be a whole number from 1 to 1000, got ${JSON.stringify(text)}`, { details: { field: "limit" } });
    }
    return { operations: await actions.operations(idx.uuid, limit, unitExists(idx)) };
  });
}
