/**
 * A model as a document (state/model-format.ts):
 *
 * - `GET /v1/models/<model>/export` (admin on the model) → the export, read at one store revision;
 *   refused for a model that holds secrets, whose values leave only sealed to a passphrase:
 * - `POST /v1/models/<model>/export` `{passphrase}` → the export, its secret values sealed to it
 *   (state/secret-transfer.ts)
 * - `POST /v1/models/import[?name=NEW]` (superuser) with an export as the body, or `{passphrase, export}`
 *   → `{name, uuid, ...}`; the model is written in one transaction, refused (400/409) whole when
 *   anything is wrong (a wrong passphrase too).
 *
 * An export is JSON; clients gzip it for files (Content-Encoding is not taken on the way in, so a
 * body's size limit is the size the controller parses).
 */
import type { FastifyInstance } from "fastify";
import { Name, StewardError, parseRequest, routes } from "../../api";
import type { Bundle } from "../../api";
import type { ImportDeps, ModelExport, SecretDestination, StateCache, StateOps, ValueCipher } from "../state";
import {
  MAX_MODEL_EXPORT_BYTES,
  MODEL_EXPORT_VERSION,
  exportForReader,
  exportModel,
  exportVersionFor,
  importModel,
  sealExportSecrets,
} from "../state";
import { sealerFromPassphrase } from "../security/transfer-sealing";
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
  /** This controller's sealer (security/sealing.ts): secret values are opened and sealed with it. */
  sealer: ValueCipher;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

export function registerModelTransferRoutes(app: FastifyInstance, deps: ModelTransferDeps): void {
  const route = routeOn(app, deps.cache);
  /** The export for a reader of format `reads` (undefined: this one's), its secret values sealed to `to`. */
  const exportFor = async (uuid: string, reads: number | undefined, to: SecretDestination | undefined) => {
    // For a file an older controller imports: the newest format it reads (refused if none this one writes).
    const version = reads === undefined ? MODEL_EXPORT_VERSION : exportVersionFor(reads);
    const doc: ModelExport = await sealExportSecrets(await exportModel(deps.store, uuid), deps.sealer, to);
    return JSON.stringify(exportForReader(doc, version));
  };
  route(routes.exportModel, async ({ reply, query, model: idx }) => {
    const reads = query.version === undefined ? undefined : Number(query.version);
    const text = await exportFor(idx.uuid, reads, undefined);
    return reply.type("application/json; charset=utf-8").send(text);
  });
  route(routes.exportModelSealed, async ({ reply, body, model: idx }) => {
    const text = await exportFor(idx.uuid, body.version, { kind: "passphrase", passphrase: body.passphrase });
    return reply.type("application/json; charset=utf-8").send(text);
  });

  route(
    routes.importModel,
    async ({ req, query, settled }) => {
      const name = query.name === undefined ? undefined : parseRequest(Name, query.name, "model name");
      if (req.body === undefined || req.body === null)
        throw new StewardError("invalid-request", "model export: the request has no body; send the export's JSON");
      // `{passphrase, export}`: an export whose secret values are sealed to a passphrase.
      const envelope = isObject(req.body) && !("format" in req.body) && "export" in req.body ? req.body : undefined;
      const passphrase = envelope?.passphrase;
      if (envelope && (typeof passphrase !== "string" || passphrase.length > 1024))
        throw new StewardError(
          "invalid-request",
          "model import: `passphrase` must be a string of at most 1024 characters",
        );
      const res = await importModel(
        {
          store: deps.store,
          leaseSeconds: deps.leadershipLeaseSeconds,
          putOperator: (b: Bundle) => deps.ops.operators.upload(b, { quotaBytes: deps.operatorQuotaBytes }),
          checkLocalDir: deps.checkLocalDir,
          sealer: deps.sealer,
        },
        envelope ? envelope.export : req.body,
        {
          ...(name === undefined ? {} : { name }),
          ...(typeof passphrase === "string"
            ? { openSecrets: (sealing) => sealerFromPassphrase(passphrase, sealing) }
            : {}),
        },
      );
      await settled(res.revision);
      return res;
    },
    { bodyLimit: MAX_MODEL_EXPORT_BYTES },
  );
}
