/**
 * What a controller serves as the SOURCE of a migration:
 *
 * - `POST /v1/models/<model>/migrate` `{target: {name, addresses, caCert, user, password | token}, agentWaitSeconds?}`
 *   (superuser) → prechecks, then the migration starts in QUIESCE (202); the leader's master drives it
 * - `GET  /v1/models/<model>/migration` → where the model's last migration stands (also after it moved)
 * - `POST /v1/models/<model>/migration/abort` → aborts one that has not reached SUCCESS
 *
 * and two guards on every model route: while a migration holds the model its changes are refused
 * (409: the export must hold everything), and once the model has moved its requests are answered
 * with where it went (410, code `moved`), which clients follow. Both answer only authenticated users
 * with access to the model (superusers, or those who had it when it moved): anyone else gets what an
 * unknown model gets, so where a model went, and that it exists, stay with those who may know.
 */
import { randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { z } from "zod";
import type { MigrateRequest, MigrationArrivalInfo, MigrationInfo } from "../../api";
import {
  ControllerClient,
  MUTATING_METHODS,
  STEWARD_VERSION,
  StewardError,
  notFound,
  olderMinor,
  routes,
} from "../../api";
import type { MigrationArrivalDoc, MigrationDoc, ModelDoc, ModelIndex, StateCache } from "../state";
import { agentReports, decode, docs, handedOver, holdsModel, keys, migrationActive, movedError } from "../state";
import type { Sealer } from "../security/sealing";
import { authenticate, requireModelAccess } from "../access/auth";
import { mayFollow, migrationOf } from "../access/moved-models";
import { routeOn } from "../access/route";
import type { Store } from "../store";
import { absent, unchanged } from "../store";
import { describePhase } from "./master";
import type { TargetAuth } from "./target-login";
import { authPurpose } from "./target-login";

/** Juju's migration-agent-wait-time. */
export const DEFAULT_AGENT_WAIT_SECONDS = 15 * 60;

export interface SourceRouteDeps {
  cache: StateCache;
  store: Store;
  sealer: Sealer;
}

/** The model route's `:model`, or undefined for routes without one. */
const modelParam = (req: FastifyRequest): string | undefined => (req.params as { model?: string } | undefined)?.model;

export { migrationOf };

export function installMigrationGuards(app: FastifyInstance, cache: StateCache): void {
  app.addHook("preHandler", async (req) => {
    const model = modelParam(req);
    if (model === undefined || req.url.split("?")[0]!.endsWith("/migration")) return;
    const idx = cache.findModel(model);
    const m = idx ? cache.migrations.get(idx.uuid) : migrationOf(cache, model);
    if (!idx) {
      if (m?.phase !== "DONE") return;
      // Not before authentication: the answer names the target's addresses and CA.
      if (mayFollow(authenticate(cache, req.headers, { method: req.method }), m)) throw movedError(m);
      throw notFound("model", model);
    }
    if (!MUTATING_METHODS.has(req.method) || req.url.split("?")[0]!.endsWith("/migration/abort")) return;
    if (holdsModel(m)) {
      requireModelAccess(authenticate(cache, req.headers, { method: req.method }), idx, "read", model);
      throw new StewardError(
        "conflict",
        `model ${idx.model!.name} is being migrated to ${m!.target.name} (${m!.phase}): it cannot change until that is over (steward show-migration ${idx.model!.name})`,
        { reason: "migrating", details: { reason: "migrating", phase: m!.phase } },
      );
    }
  });
}

export function registerMigrationSourceRoutes(app: FastifyInstance, deps: SourceRouteDeps): void {
  const { cache, store } = deps;
  const route = routeOn(app, cache);

  route(routes.migrate, async ({ model: idx, body, settled }) => {
    const existing = cache.migrations.get(idx.uuid);
    if (migrationActive(existing))
      throw new StewardError(
        "conflict",
        `model ${idx.model!.name} is already migrating (${existing.phase}); see steward show-migration`,
        { reason: "migration-running" },
      );
    precheckModel(idx);
    const target = await checkTarget(body.target, idx, cache);
    const id = randomUUID();
    const now = new Date().toISOString();
    const auth: TargetAuth = {
      user: body.target.user,
      ...(body.target.password ? { password: body.target.password } : {}),
      ...(body.target.token ? { token: body.target.token } : {}),
    };
    const doc: MigrationDoc = {
      id,
      model: idx.uuid,
      modelName: idx.model!.name,
      target: {
        controller: target.controller,
        name: body.target.name,
        addresses: body.target.addresses,
        caCert: body.target.caCert,
      },
      sealedAuth: deps.sealer.sealJson(authPurpose(id), auth),
      phase: "QUIESCE",
      startedAt: now,
      phaseStartedAt: now,
      history: [{ phase: "QUIESCE", at: now }],
      agentWaitSeconds: body.agentWaitSeconds ?? DEFAULT_AGENT_WAIT_SECONDS,
      status: describePhase("QUIESCE"),
    };
    const key = keys.migration(idx.uuid);
    const [prior, modelKv] = await Promise.all([store.get(key), store.get(keys.model(idx.uuid))]);
    if (!modelKv) throw notFound("model", idx.model!.name);
    const res = await store.txn({
      compare: [prior ? unchanged(key, prior.modRevision) : absent(key), unchanged(modelKv.key, modelKv.modRevision)],
      success: [{ type: "put", key, value: JSON.stringify(doc) }],
    });
    if (!res.succeeded)
      throw new StewardError(
        "conflict",
        `model ${idx.model!.name} changed while its migration was being started; try again`,
        { retryable: true },
      );
    await settled(res.revision);
    return info(doc, undefined);
  });

  route(routes.migration, async ({ params: { model: name }, model: idx, migration: m }) => {
    if (!m) {
      // The target's side: the migration that brought the model here, if one did.
      const arrived = idx?.model ? await store.get(keys.migrationArrival(idx.uuid)) : undefined;
      if (arrived && idx?.model) return arrival(decode(docs.migrationArrival, arrived.value), idx.model);
      throw new StewardError("not-found", `model ${name} has never been migrated`);
    }
    const agents = migrationActive(m) && idx ? await agentReports(store, cache, m) : undefined;
    return info(m, agents);
  });

  route(routes.abortMigration, async ({ principal: p, params: { model: name }, model: idx, settled }) => {
    const key = keys.migration(idx.uuid);
    const kv = await store.get(key);
    const m = kv ? decode(docs.migration, kv.value) : undefined;
    if (!kv || !migrationActive(m))
      throw new StewardError("conflict", `model ${name} is not migrating`, { reason: "not-migrating" });
    if (m.phase === "ABORT") return info(m, undefined);
    if (handedOver(m))
      throw new StewardError(
        "conflict",
        `the migration of ${name} is past its point of no return (${m.phase}): the model lives on ${m.target.name} now`,
        { reason: "migration-handed-over" },
      );
    const now = new Date().toISOString();
    const failure = `aborted by ${p.user}`;
    const next: MigrationDoc = {
      ...m,
      phase: "ABORT",
      phaseStartedAt: now,
      status: describePhase("ABORT"),
      failure: m.failure ?? failure,
      history: [...m.history, { phase: "ABORT", at: now, note: failure }],
    };
    const res = await store.txn({
      compare: [unchanged(key, kv.modRevision)],
      success: [{ type: "put", key, value: JSON.stringify(next) }],
    });
    if (!res.succeeded)
      throw new StewardError("conflict", "the migration moved on meanwhile; look again (steward show-migration)", {
        retryable: true,
      });
    await settled(res.revision);
    return info(next, undefined);
  });
}

/** Juju's source prechecks, those that apply here: everything alive, every agent connected, a substrate that can move. */
function precheckModel(idx: ModelIndex): void {
  const name = idx.model!.name;
  const refuse = (why: string): never => {
    throw new StewardError("conflict", `model ${name} cannot be migrated now: ${why}`, { reason: "migration-refused" });
  };
  if (idx.model!.life !== "alive") refuse("it is being destroyed");
  for (const m of idx.machines.values()) {
    if (m.life !== "alive") refuse(`machine ${m.id} is being removed; wait for it to go`);
    if (!m.credentialHash) refuse(`machine ${m.id} has no agent yet; wait until it is provisioned`);
    if (!idx.presence.has(m.id))
      refuse(`machine ${m.id}'s agent is not connected; a migration needs every agent to answer`);
  }
  for (const u of idx.units.values()) if (u.life !== "alive") refuse(`unit ${u.name} is being removed`);
  for (const a of idx.apps.values()) if (a.life !== "alive") refuse(`application ${a.name} is being removed`);
  for (const r of idx.relations.values()) if (r.life !== "alive") refuse(`integration ${r.key} is being removed`);
}

/** The target answers with its CA, takes the login, is not older and has room for the model. */
async function checkTarget(
  t: z.infer<typeof MigrateRequest>["target"],
  idx: ModelIndex,
  cache: StateCache,
): Promise<{ controller: string }> {
  const reach = { addresses: t.addresses, caCert: t.caCert, retryUnavailableMs: 3000, timeoutMs: 15_000 };
  // Who answers first, without credentials: they go only to the controller the CA proves.
  const anonymous = new ControllerClient(reach);
  const client = new ControllerClient({
    ...reach,
    user: t.user,
    ...(t.password ? { password: t.password } : {}),
    ...(t.token ? { token: t.token } : {}),
  });
  const refuse = (why: string): never => {
    throw new StewardError("conflict", `cannot migrate to ${t.name}: ${why}`, { reason: "migration-refused" });
  };
  try {
    const hello = await anonymous
      .hello()
      .catch((err: Error) => refuse(`the target cannot be reached with the CA given (${err.message})`));
    if (hello.controller === cache.controller?.uuid) refuse("the target is this controller");
    if (olderMinor(hello.version, STEWARD_VERSION))
      refuse(`it runs ${hello.version}, older than this controller's ${STEWARD_VERSION}`);
    const models = await client
      .listModels()
      .catch((err: Error) => refuse(`the target refused the login as ${t.user} (${err.message})`));
    const clash = models.find((m) => m.uuid === idx.uuid || m.name === idx.model!.name);
    if (clash)
      refuse(
        `it already has a model ${clash.uuid === idx.uuid ? `with this model's uuid (${clash.name})` : `named ${clash.name}`}`,
      );
    return { controller: hello.controller };
  } finally {
    anonymous.close();
    client.close();
  }
}

function arrival(a: MigrationArrivalDoc, model: ModelDoc): MigrationArrivalInfo {
  return {
    arrival: {
      id: a.id,
      model: { uuid: model.uuid, name: model.name },
      source: { controller: a.source, name: a.sourceName ?? "" },
      ...(a.stagedAt ? { stagedAt: a.stagedAt } : {}),
      arrivedAt: a.at,
    },
  };
}

function info(m: MigrationDoc, agents: MigrationInfo["agents"] | undefined): MigrationInfo {
  return {
    id: m.id,
    model: { uuid: m.model, name: m.modelName },
    target: { controller: m.target.controller, name: m.target.name, addresses: m.target.addresses },
    phase: m.phase,
    startedAt: m.startedAt,
    phaseStartedAt: m.phaseStartedAt,
    ...(m.endedAt ? { endedAt: m.endedAt } : {}),
    history: m.history,
    ...(m.failure ? { failure: m.failure } : {}),
    ...(agents ? { agents } : {}),
    status: m.status,
  };
}
