/**
 * Actions over REST (`steward run`, `show-task`, `operations`): queueing needs write access to the
 * model, reading tasks read access. What a task does is reported by its unit's agent (agent-hub.ts).
 *
 * - `POST /v1/models/<model>/actions` `{targets, action, params}` → `{operation, tasks}`
 * - `GET /v1/models/<model>/tasks/<id>` → the task, results and log included
 * - `GET /v1/models/<model>/operations?limit=N` → the newest operations (default 20, at most 1000)
 */
import type { FastifyInstance } from "fastify";
import { StewardError, routes } from "../../api";
import type { ActionOps, ModelIndex, StateCache } from "../state";
import { routeOn } from "../access/route";

export interface ActionRoutesDeps {
  cache: StateCache;
  actions: ActionOps;
}

export function registerActionRoutes(app: FastifyInstance, { cache, actions }: ActionRoutesDeps): void {
  const route = routeOn(app, cache);
  const unitExists =
    (idx: ModelIndex) =>
    (unit: string): boolean =>
      idx.units.has(unit);

  route(routes.runAction, async ({ model: idx, principal, body, settled }) => {
    const { revision, ...result } = await actions.run(
      idx.uuid,
      principal.user,
      body,
      (unit) => idx.taskQueue.get(unit)?.size ?? 0,
    );
    await settled(revision);
    return result;
  });

  route(routes.task, async ({ model: idx, params: { id } }) => actions.task(idx.uuid, Number(id), unitExists(idx)));

  route(routes.operations, async ({ model: idx, query }) => {
    const text = query.limit;
    const limit = text === undefined ? 20 : Number(text);
    if (typeof text !== "undefined" && (typeof text !== "string" || !/^\d+$/.test(text) || limit < 1 || limit > 1000)) {
      throw new StewardError(
        "invalid-request",
        `query "limit" must be a whole number from 1 to 1000, got ${JSON.stringify(text)}`,
        { details: { field: "limit" } },
      );
    }
    return { operations: await actions.operations(idx.uuid, limit, unitExists(idx)) };
  });
}
