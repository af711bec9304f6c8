/**
 * What a controller serves as the TARGET of a migration. The source's master calls these as a
 * superuser of this controller; the model's agents call `hello` and `validate` themselves.
 *
 * - `GET  /v1/migrations/hello` → who this controller is (agents check it at QUIESCE, TLS-pinned to its CA) and
 *   the newest model export format it reads (the source writes that one)
 * - `POST /v1/migrations/<id>/stage?source=<uuid>` with the export as body → staged, nothing live
 * - `GET  /v1/migrations/<id>/sealing-key` → the X25519 public key the source seals secret values to (one per migration)
 * - `GET  /v1/migrations/<id>?model=<uuid>` → `{state: staged | active | unknown}`
 * - `POST /v1/migrations/<id>/validate` (`Authorization: Agent …`, `{units}`) → the agent's machine as staged matches
 *   (bad credentials never spend the agents' budget; a source that keeps sending them gets 429)
 * - `POST /v1/migrations/<id>/activate` `{model}` → live, in one transaction
 * - `POST /v1/migrations/<id>/heartbeat` → the staging is still wanted
 * - `POST /v1/migrations/<id>/logs` `{model, records}` → the model's recent logs (LOGTRANSFER)
 * - `DELETE /v1/migrations/<id>?model=<uuid>` → the staging goes; refused once live
 */
import type { FastifyInstance } from "fastify";
import type { DebugLogRecord } from "../../api";
import {
  MigrationValidateRequest,
  ModelUuid,
  STEWARD_VERSION,
  StewardError,
  TRANSPORT_LIMITS,
  parseRequest,
  routes,
} from "../../api";
import type { StateCache } from "../state";
import { MAX_MODEL_EXPORT_BYTES, MODEL_EXPORT_VERSION } from "../state";
import { credentialMatches } from "../security/credentials";
import type { LoginLimiterOptions } from "../access/login-limiter";
import { LoginLimiter, SourceLimiter } from "../access/login-limiter";
import type { ModelLogs } from "../state/model-logs";
import { routeOn } from "../access/route";
import type { MigrationStaging } from "./staging";

export interface TargetRouteDeps {
  cache: StateCache;
  staging: MigrationStaging;
  logs: ModelLogs;
  /**
   * Agents' validations allowed per second and at once: past it they are told when to come back
   * (429, Retry-After), which is not a failure (Juju #12503: a big model's agents all hit the
   * target's login limit at once and failed validation).
   * @default 500 and 500 (as agent logins: a validation costs less than a login's TLS handshake)
   */
  validations?: LoginLimiterOptions;
}

export function registerMigrationTargetRoutes(app: FastifyInstance, deps: TargetRouteDeps): void {
  const { cache, staging } = deps;
  const limiter = new LoginLimiter({ perSecond: 500, burst: 500, ...deps.validations });
  const failedValidations = new SourceLimiter({
    perSecond: TRANSPORT_LIMITS.failedAgentLoginsPerSecond,
    burst: TRANSPORT_LIMITS.failedAgentLoginsBurst,
  });
  const route = routeOn(app, cache);
  const modelOf = (v: unknown): string => parseRequest(ModelUuid, v, "model");

  route(routes.hello, async () => ({
    controller: cache.controller?.uuid ?? "",
    name: cache.controller?.name ?? "",
    version: STEWARD_VERSION,
    modelExport: MODEL_EXPORT_VERSION,
  }));

  route(
    routes.stageMigration,
    async ({ req, params: { id }, query }) => {
      const source = String(query.source ?? "");
      if (req.body === undefined || req.body === null)
        throw new StewardError("invalid-request", "migration: the request has no body; send the model's export");
      const meta = await staging.stage(id, source, JSON.stringify(req.body));
      return { id, model: meta.model, bytes: meta.bytes };
    },
    { bodyLimit: MAX_MODEL_EXPORT_BYTES },
  );

  route(routes.migrationSealingKey, async ({ params: { id } }) => ({
    kind: "x25519" as const,
    publicKey: staging.sealingKey(id),
  }));

  route(routes.migrationState, async ({ params: { id }, query }) => ({
    state: await staging.state(id, query.model === undefined ? undefined : modelOf(query.model)),
  }));

  route(routes.activateMigration, async ({ req, params: { id }, settled }) => {
    const model = modelOf((req.body as { model?: unknown } | undefined)?.model);
    const res = await staging.activate(id, model);
    if (res.result) await settled(res.result.revision);
    return {
      model,
      activated: res.activated,
      ...(res.result ? { name: res.result.name, missingUsers: res.result.missingUsers } : {}),
    };
  });

  route(routes.migrationHeartbeat, async ({ params: { id } }) => {
    await staging.heartbeat(id);
    return {};
  });

  route(routes.dropMigration, async ({ params: { id }, query }) => {
    await staging.abort(id, modelOf(query.model));
    return {};
  });

  route(
    routes.transferLogs,
    async ({ body }) => {
      if (!cache.models.get(body.model)?.model)
        throw new StewardError("not-found", `model ${body.model} is not live on this controller`);
      deps.logs.append(body.model, body.records as unknown as DebugLogRecord[]);
      return { accepted: body.records.length };
    },
    { bodyLimit: 16 * 1024 * 1024 },
  );

  /** The staged machine whose credential the request carries, or an unauthorized error. */
  const stagedMachineOf = async (
    id: string,
    authorization: string | undefined,
  ): Promise<{ machine: string; units: string[] }> => {
    const [model, machine, secret] = authorization?.startsWith("Agent ") ? authorization.slice(6).split("/") : [];
    if (!model || !machine || !secret)
      throw new StewardError(
        "unauthorized",
        "send the agent's own credential: Authorization: Agent <model>/<machine>/<credential>",
      );
    const staged = await staging.stagedMachine(id, model, machine);
    if (!staged?.credentialHash || !credentialMatches(secret, staged.credentialHash)) {
      throw new StewardError("unauthorized", `the staged model does not accept machine ${machine}'s credential`);
    }
    return { machine, units: staged.units };
  };

  // The credential is checked first, so bad ones never spend the budget that spreads out real
  // agents (as for agent logins); a source that keeps sending them is answered 429.
  route(routes.validateMigration, async ({ req, params: { id } }) => {
    let staged: { machine: string; units: string[] };
    try {
      staged = await stagedMachineOf(id, req.headers.authorization);
    } catch (err) {
      if (StewardError.isInstance(err) && !failedValidations.take(req.ip)) {
        const wait = failedValidations.retryAfterSeconds(req.ip);
        throw new StewardError(
          "rate-limited",
          `too many refused validations from ${req.ip}; retry in ${wait} s (${err.message})`,
          { details: { retryAfterSeconds: wait, limit: "failedAgentLoginsPerSecond" } },
        );
      }
      throw err;
    }
    if (!limiter.take()) {
      const wait = limiter.retryAfterSeconds();
      throw new StewardError("rate-limited", `many agents are validating at once; retry in ${wait} s`, {
        details: { retryAfterSeconds: wait },
      });
    }
    const body = parseRequest(MigrationValidateRequest, req.body, "validation");
    const mine = [...body.units].sort();
    if (mine.join(",") !== staged.units.join(",")) {
      throw new StewardError(
        "conflict",
        `machine ${staged.machine} runs ${mine.join(", ") || "no unit"} but the staged model places ${staged.units.join(", ") || "no unit"} on it`,
        { reason: "staged-machine-mismatch" },
      );
    }
    return { ok: true };
  });
}
