/**
 * What a controller serves as the TARGET of a migration. The source's master calls these as a
 * superuser of this controller; the model's agents call `hello` and `validate` themselves.
 *
 * - `GET  /v1/migrations/hello` → who this controller is (agents check it at QUIESCE, TLS-pinned to its CA)
 * - `POST /v1/migrations/<id>/stage?source=<uuid>` with the export as body → staged, nothing live
 * - `GET  /v1/migrations/<id>?model=<uuid>` → `{state: staged | active | unknown}`
 * - `POST /v1/migrations/<id>/validate` (`Authorization: Agent …`, `{units}`) → the agent's machine as staged matches
 *   (bad credentials never spend the agents' budget; a source that keeps sending them gets 429)
 * - `POST /v1/migrations/<id>/activate` `{model}` → live, in one transaction
 * - `POST /v1/migrations/<id>/heartbeat` → the staging is still wanted
 * - `POST /v1/migrations/<id>/logs` `{model, records}` → the model's recent logs (LOGTRANSFER)
 * - `DELETE /v1/migrations/<id>?model=<uuid>` → the staging goes; refused once live
 */
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { ControllerHello, DebugLogRecord } from "../../api";
import { STEWARD_VERSION, StewardError, TRANSPORT_LIMITS, parseRequest } from "../../api";
import type { StateCache } from "../state";
import { MAX_MODEL_EXPORT_BYTES } from "../state";
import { credentialMatches } from "../security/credentials";
import { authenticate, requireSuperuser } from "../access/auth";
import type { LoginLimiterOptions } from "../access/login-limiter";
import { LoginLimiter, SourceLimiter } from "../access/login-limiter";
import type { ModelLogs } from "../state/model-logs";
import type { MigrationStaging } from "./staging";

const Id = z.string().regex(/^[0-9a-f-]{36}$/, "a migration id (a uuid)");
const ModelUuid = z.string().regex(/^[0-9a-f-]{36}$/, "a model uuid");
const Validate = z.strictObject({ units: z.array(z.string().max(256)).max(10_000) });
const Logs = z.strictObject({ model: ModelUuid, records: z.array(z.record(z.string(), z.unknown())).max(10_000) });

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
  const failedValidations = new SourceLimiter({ perSecond: TRANSPORT_LIMITS.failedAgentLoginsPerSecond, burst: TRANSPORT_LIMITS.failedAgentLoginsBurst });
  const superuser = (req: { headers: Record<string, unknown>; method: string }): void => requireSuperuser(authenticate(cache, req.headers as never, { method: req.method }));
  const idOf = (params: unknown): string => parseRequest(Id, (params as { id: string }).id, "migration id");
  const modelOf = (v: unknown): string => parseRequest(ModelUuid, v, "model");

  app.get("/v1/migrations/hello", async (): Promise<ControllerHello> => ({ controller: cache.controller?.uuid ?? "", name: cache.controller?.name ?? "", version: STEWARD_VERSION }));

  app.post("/v1/migrations/:id/stage", { bodyLimit: MAX_MODEL_EXPORT_BYTES }, async (req, reply) => {
    superuser(req);
    const id = idOf(req.params);
    const source = String((req.query as { source?: string }).source ?? "");
    if (req.body === undefined || req.body === null) throw new StewardError("invalid-request", "migration: the request has no body; send the model's export");
    const meta = await staging.stage(id, source, JSON.stringify(req.body));
    reply.code(201);
    return { id, model: meta.model, bytes: meta.bytes };
  });

  app.get("/v1/migrations/:id", async (req) => {
    superuser(req);
    const q = req.query as { model?: string };
    return { state: await staging.state(idOf(req.params), q.model === undefined ? undefined : modelOf(q.model)) };
  });

  app.post("/v1/migrations/:id/activate", async (req) => {
    superuser(req);
    const id = idOf(req.params);
    const model = modelOf((req.body as { model?: unknown } | undefined)?.model);
    const res = await staging.activate(id, model);
    if (res.result) await cache.waitForRevision(res.result.revision);
    return { model, activated: res.activated, ...(res.result ? { name: res.result.name, missingUsers: res.result.missingUsers } : {}) };
  });

  app.post("/v1/migrations/:id/heartbeat", async (req) => {
    superuser(req);
    await staging.heartbeat(idOf(req.params));
    return {};
  });

  app.delete("/v1/migrations/:id", async (req) => {
    superuser(req);
    await staging.abort(idOf(req.params), modelOf((req.query as { model?: string }).model));
    return {};
  });

  app.post("/v1/migrations/:id/logs", { bodyLimit: 16 * 1024 * 1024 }, async (req) => {
    superuser(req);
    const body = parseRequest(Logs, req.body, "log transfer");
    if (!cache.models.get(body.model)?.model) throw new StewardError("not-found", `model ${body.model} is not live on this controller`);
    deps.logs.append(body.model, body.records as unknown as DebugLogRecord[]);
    return { accepted: body.records.length };
  });

  /** The staged machine whose credential the request carries, or an unauthorized error. */
  const stagedMachineOf = async (id: string, authorization: string | undefined): Promise<{ machine: string; units: string[] }> => {
    const [model, machine, secret] = authorization?.startsWith("Agent ") ? authorization.slice(6).split("/") : [];
    if (!model || !machine || !secret) throw new StewardError("unauthorized", "send the agent's own credential: Authorization: Agent <model>/<machine>/<credential>");
    const staged = await staging.stagedMachine(id, model, machine);
    if (!staged?.credentialHash || !credentialMatches(secret, staged.credentialHash)) {
      throw new StewardError("unauthorized", `the staged model does not accept machine ${machine}'s credential`);
    }
    return { machine, units: staged.units };
  };

  // The credential is checked first, so bad ones never spend the budget that spreads out real
  // agents (as for agent logins); a source that keeps sending them is answered 429.
  app.post("/v1/migrations/:id/validate", async (req) => {
    const id = idOf(req.params);
    let staged: { machine: string; units: string[] };
    try {
      staged = await stagedMachineOf(id, req.headers.authorization);
    } catch (err) {
      if (StewardError.isInstance(err) && !failedValidations.take(req.ip)) {
        const wait = failedValidations.retryAfterSeconds(req.ip);
        throw new StewardError("rate-limited", `too many refused validations from ${req.ip}; retry in ${wait} s (${err.message})`, { details: { retryAfterSeconds: wait, limit: "failedAgentLoginsPerSecond" } });
      }
      throw err;
    }
    if (!limiter.take()) {
      const wait = limiter.retryAfterSeconds();
      throw new StewardError("rate-limited", `many agents are validating at once; retry in ${wait} s`, { details: { retryAfterSeconds: wait } });
    }
    const body = parseRequest(Validate, req.body, "validation");
    const mine = [...body.units].sort();
    if (mine.join(",") !== staged.units.join(",")) {
      throw new StewardError("conflict", `machine ${staged.machine} runs ${mine.join(", ") || "no unit"} but the staged model places ${staged.units.join(", ") || "no unit"} on it`, { reason: "staged-machine-mismatch" });
    }
    return { ok: true };
  });
}
