/**
 * A model as a document (state/model-format.ts):
 *
 * - `GET /v1/models/<model>/export` (admin on the model) → the export, read at one store revision
 * - `POST /v1/models/import[?name=NEW]` (superuser) with an export as the body → `{name, uuid, ...}`;
 *   the model is written in one transaction, refused (400/409) whole when anything is wrong.
 *
 * An export is JSON; clients gzip it for files (Content-Encoding is not taken on the way in, so a
 * body's size limit is the size the controller parses).
 */
import type { FastifyInstance } from "fastify";
import { Name, StewardError, parseRequest, routes } from "../../api";
import type { Bundle } from "../../api";
import type { ImportDeps, StateCache, StateOps } from "../state";
import {
  MAX_MODEL_EXPORT_BYTES,
  MODEL_EXPORT_VERSION,
  exportForReader,
  exportModel,
  exportVersionFor,
  importModel,
} from "../state";
import type { Store } from "../store";
import { routeOn } from "../access/route";

export interface ModelTransferDeps {
  cache: StateCache;
  ops: StateOps;
  store: Store;
  leadershipLeaseSeconds: number;
  operatorQuotaBytes: number;
  /** Where an imported local machine's agent may run (substrates/local/dir-rule.ts). */
  checkLocalDir: ImportDeps["checkLocalDir"];
}

export function registerModelTransferRoutes(app: FastifyInstance, deps: ModelTransferDeps): void {
  const route = routeOn(app, deps.cache);
  route(routes.exportModel, async ({ reply, query, model: idx }) => {
    // For a file an older controller imports: the newest format it reads (refused if none this one writes).
    const reads = query.version === undefined ? undefined : Number(query.version);
    const version = reads === undefined ? MODEL_EXPORT_VERSION : exportVersionFor(reads);
    const doc = exportForReader(await exportModel(deps.store, idx.uuid), version);
    return reply.type("application/json; charset=utf-8").send(JSON.stringify(doc));
  });

  route(
    routes.importModel,
    async ({ req, query, settled }) => {
      const name = query.name === undefined ? undefined : parseRequest(Name, query.name, "model name");
      if (req.body === undefined || req.body === null)
        throw new StewardError("invalid-request", "model export: the request has no body; send the export's JSON");
      const res = await importModel(
        {
          store: deps.store,
          leaseSeconds: deps.leadershipLeaseSeconds,
          putOperator: (b: Bundle) => deps.ops.operators.upload(b, { quotaBytes: deps.operatorQuotaBytes }),
          checkLocalDir: deps.checkLocalDir,
        },
        req.body,
        name === undefined ? {} : { name },
      );
      await settled(res.revision);
      return res;
    },
    { bodyLimit: MAX_MODEL_EXPORT_BYTES },
  );
}
