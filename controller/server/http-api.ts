/**
 * The REST API (`/v1/...`). Every body is parsed by a strict schema from api/; every error leaves as
 * `{code, message, details}` with the status its code implies; writes return only once the state
 * cache has seen them, so a read right after a write sees it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "../../api";
import {
  ADDRESSES_HEADER, AddMachineRequest, AddUnitsRequest, ChangePasswordRequest, CreateModelRequest, CredentialRequest, ReplicaCloudRequest, CreateUserRequest, DeployRequest, EnableHaRequest, GrantRequest, IntegrateRequest, LoginRequest,
  ControllerUpgradeRecord, MachineId, Name, OperatorBundle, ResolveRequest, STEWARD_VERSION, SpareHostsRequest, StewardError, UpdateApplicationRequest, UpdateModelRequest, UserName, notFound, parseRequest,
  LEGACY_HASH_MESSAGE, operatorHashProblem, formatConstraints, hasConstraints, contractOf, settingsWithDefaults,
} from "../../api";
import type { CredentialSubstrate, SessionInfo } from "../../api";
import { MAX_TOKEN_LIFETIME_MS, newTokenId, signToken } from "../security/credentials";
import { PasswordWork } from "../security/password-work";
import type { CredentialOps, ModelIndex, OperatorCharge, OperatorQuotas, RelationOps, StateCache, StateOps } from "../state";
import { buildModelStatus, buildUnitDetails, effectiveConfig, renderModelStatusBytes } from "../state";
import { ValueTooLargeError } from "../store";
import { substrateKind } from "../../substrates";
import { statusFilter, statusForm } from "./status-filter";
import type { SshProvisioner } from "../provisioner/ssh-machines";
import type { ClusterControl } from "../cluster";
import type { Access, Principal } from "../access/auth";
import { authenticate, requireModelAccess, requireSuperuser, requireUser, requireWriteOnSomeModel } from "../access/auth";
import type { FailedLoginLimiterOptions, LoginRefusal } from "./failed-login-limiter";
import { FailedLoginLimiter } from "./failed-login-limiter";
import { FamiliarSources } from "./familiar-sources";
import type { LocalMachinePolicy } from "../access/controller-host";
import { LOCAL_WRITE_RULE, checkMachinesPerRequest, checkNewLocalMachines, runsOnControllerHost } from "../access/controller-host";
import { clearedSessionCookie, csrfTokenFor, sessionCookie } from "../access/session-cookie";
import { controllerOverview, describeController, modelSummaries } from "./summaries";

export interface HttpApiDeps {
  cache: StateCache;
  ops: StateOps;
  relations: RelationOps;
  credentials: CredentialOps;
  ssh: SshProvisioner;
  cluster: ClusterControl;
  log: Logger;
  controllerAddresses: () => string[];
  /** The SHA-256 fingerprint of the controller's CA (what every user is shown of its TLS). */
  caFingerprint: string;
  /** Operator quotas: the controller's, its superusers' reserve, per model and per user (see operator-quotas.ts). */
  operatorQuotas: OperatorQuotas;
  /**
   * How long the tokens issued at login live, in ms (at most MAX_TOKEN_LIFETIME_MS).
   * @default 24 hours
   */
  tokenLifetimeMs?: number;
  /** Limits on failed logins per user and per source network (see FailedLoginLimiter for defaults). */
  failedLogins?: FailedLoginLimiterOptions;
  /** Whether this controller makes local machines, and how many its host takes. */
  localMachines: LocalMachinePolicy;
}

export function registerHttpApi(app: FastifyInstance, deps: HttpApiDeps): void {
  const { cache, ops } = deps;
  const principalOf = (req: FastifyRequest): Principal => authenticate(cache, req.headers, { method: req.method });
  const model = (req: FastifyRequest, p: Principal, needed: Access): ModelIndex => {
    const name = (req.params as { model: string }).model;
    const idx = cache.findModel(name);
    if (!idx) throw notFound("model", name);
    requireModelAccess(p, idx, needed, name);
    return idx;
  };
  const force = (req: FastifyRequest): boolean => {
    const v = (req.query as { force?: string }).force;
    if (v === undefined || v === "false") return false;
    if (v === "true") return true;
    throw new StewardError("invalid-request", `query "force" must be true or false, got "${v}"`, { details: { field: "force" } });
  };
  /** `skipCheck=true`: store a kubernetes credential, or make a model on it, without asking the cluster first (the kind's checkCredential and checkPlacement: substrates/kubernetes/cluster-checks.ts). */
  const skipCheck = (req: FastifyRequest): boolean => {
    const v = (req.query as { skipCheck?: string }).skipCheck;
    if (v === undefined || v === "false") return false;
    if (v === "true") return true;
    throw new StewardError("invalid-request", `query "skipCheck" must be true or false, got "${v}"`, { details: { field: "skipCheck" } });
  };
  const param = <T>(schema: { safeParse(v: unknown): { success: boolean } }, req: FastifyRequest, name: string, what: string): T => {
    const v = (req.params as Record<string, string>)[name];
    if (!schema.safeParse(v).success) throw notFound(what, String(v));
    return v as T;
  };
  const settled = async (revision: number): Promise<void> => cache.waitForRevision(revision);
  /** The user an upload, deploy or refresh counts against, with the operator quotas that bind them. */
  const chargeOf = (p: Principal): OperatorCharge => {
    const u = requireUser(p);
    return { by: { user: u.user, superuser: u.superuser }, quotas: deps.operatorQuotas };
  };
  /** Checks the machines a deploy or add-unit would make for `units` units placed on `to`. */
  const checkMachinesForUnits = (p: Principal, idx: ModelIndex, units: number, to: string[] | undefined, field: string): void => {
    const substrate = idx.model?.placement.substrate ?? "local";
    const made = contractOf(substrate).provisions === "pods" ? 0 : Math.max(0, units - (to?.length ?? 0));
    checkMachinesPerRequest(substrate, made, field);
    if (contractOf(substrate).onControllerHost) checkNewLocalMachines({ superuser: requireUser(p).superuser, cache, policy: deps.localMachines, count: made });
  };

  // Clients follow replicas that move or are replaced by the addresses named on every answer.
  app.addHook("onSend", async (_req, reply) => { reply.header(ADDRESSES_HEADER, deps.controllerAddresses().join(",")); });

  // Reads answer from the cache, after it has caught up with the store: a client that wrote through
  // one replica and reads through another still sees its write.
  app.addHook("preHandler", async (req) => {
    if (req.method === "GET" && req.url.startsWith("/v1/models")) await cache.catchUp();
  });

  app.get("/v1/health", async () => ({ ok: true, version: STEWARD_VERSION, revision: cache.revision }));

  const tokenLifetimeMs = Math.min(deps.tokenLifetimeMs ?? MAX_TOKEN_LIFETIME_MS, MAX_TOKEN_LIFETIME_MS);
  const failedLogins = new FailedLoginLimiter(deps.failedLogins);
  const familiar = new FamiliarSources();
  const passwords = new PasswordWork();
  const tooManyFailures = (r: LoginRefusal): StewardError =>
    new StewardError("rate-limited", r.limit === "source"
      ? `too many failed logins from this address's network: try again in ${r.waitSeconds} s`
      : `too many failed logins for this user from addresses it has not logged in from: log in from an address you used before, or try again in ${r.waitSeconds} s`,
    { details: { retryAfterSeconds: r.waitSeconds, limit: r.limit } });
  /**
   * Checks a password under the failed-login limits; an attempt refused only for load does not count
   * as failed. A user checked from where they logged in before, or holding a valid token, goes first;
   * only the former eases the limits (a stolen token must not buy more guesses at the password).
   */
  const checkPassword = async (user: string, source: string, password: string, holdsToken: boolean): Promise<boolean> => {
    const storedHash = cache.users.get(user)?.passwordHash;
    const attempt = { user, source, familiar: familiar.has(user, source), exists: storedHash !== undefined };
    const refusal = failedLogins.begin(attempt);
    if (refusal) throw tooManyFailures(refusal);
    let ok: boolean;
    try {
      ok = await passwords.verify(password, storedHash, attempt.familiar || holdsToken ? "familiar" : "other");
    } catch (err) {
      failedLogins.succeeded(attempt);
      throw err;
    }
    if (ok) {
      failedLogins.succeeded(attempt);
      familiar.loggedIn(user, source);
    }
    return ok;
  };
  /** Whether the request carries a valid token (or dashboard session) of `user`: a login to renew it. */
  const holdsTokenOf = (req: FastifyRequest, user: string): boolean => {
    try {
      const p = authenticate(cache, req.headers);
      return p.kind === "user" && p.user === user;
    } catch {
      return false;
    }
  };

  /** Checks a login request's password and issues a token. */
  const logIn = async (req: FastifyRequest): Promise<{ token: string; id: string; expiresAt: number; user: string; superuser: boolean }> => {
    const body = parseRequest(LoginRequest, req.body, "login");
    // Same work and answer for an unknown user and a wrong password: do not reveal which users exist.
    const ok = await checkPassword(body.user, req.ip, body.password, holdsTokenOf(req, body.user));
    const user = cache.users.get(body.user);
    if (!ok || !user) throw new StewardError("unauthorized", "wrong user name or password");
    const issuedAt = Date.now();
    const expiresAt = issuedAt + tokenLifetimeMs;
    const id = newTokenId();
    return { token: signToken({ user: user.name, id, issuedAt, expiresAt }, cache.tokenKey!), id, expiresAt, user: user.name, superuser: user.superuser };
  };

  app.post("/v1/login", { config: { secretAnswer: true } }, async (req) => {
    const t = await logIn(req);
    return { token: t.token, expiresAt: new Date(t.expiresAt).toISOString(), user: t.user };
  });

  // The dashboard's session: the token goes into an HttpOnly cookie, the page gets only its CSRF token.
  const sessionInfo = (p: { user: string; superuser: boolean; token: { id: string; expiresAt: number } }): SessionInfo => ({
    user: p.user, superuser: p.superuser, expiresAt: new Date(p.token.expiresAt).toISOString(), csrf: csrfTokenFor(p.token.id, cache.tokenKey!),
    controller: cache.controller?.name ?? "",
  });
  app.post("/v1/session", { config: { secretAnswer: true } }, async (req, reply) => {
    const t = await logIn(req);
    reply.header("set-cookie", sessionCookie(t.token, t.expiresAt)).header("cache-control", "no-store");
    return sessionInfo({ user: t.user, superuser: t.superuser, token: { id: t.id, expiresAt: t.expiresAt } });
  });
  app.get("/v1/session", async (req, reply) => {
    reply.header("cache-control", "no-store");
    return sessionInfo(requireUser(principalOf(req)));
  });
  app.delete("/v1/session", async (req, reply) => {
    reply.header("set-cookie", clearedSessionCookie());
    const p = requireUser(principalOf(req));
    await settled(await ops.revokeToken(p.token.id, p.user, p.token.expiresAt));
    reply.code(204);
  });

  app.post("/v1/logout", async (req, reply) => {
    const p = requireUser(principalOf(req));
    await settled(await ops.revokeToken(p.token.id, p.user, p.token.expiresAt));
    reply.code(204);
  });

  app.put("/v1/users/:user/password", async (req, reply) => {
    const p = requireUser(principalOf(req));
    const name = param<string>(UserName, req, "user", "user");
    const body = parseRequest(ChangePasswordRequest, req.body, "password change");
    if (name !== p.user) requireSuperuser(p);
    else {
      // The user's own password: a stolen token alone must not be enough to take the account.
      if (!body.currentPassword) throw new StewardError("invalid-request", `"currentPassword" is required to change your own password`, { details: { field: "currentPassword" } });
      const ok = await checkPassword(name, req.ip, body.currentPassword, true);
      if (!ok) throw new StewardError("forbidden", "the current password is wrong", { details: { field: "currentPassword" } });
    }
    if (!cache.users.has(name)) throw notFound("user", name);
    await settled(await ops.changePassword(name, await passwords.hash(body.password)));
    reply.code(204);
  });

  app.get("/v1/controller", async (req) => {
    // The cluster's layout (hosts, spares, the replica cloud) is a superuser's business.
    if (!requireUser(principalOf(req)).superuser) return controllerOverview(cache, deps.controllerAddresses(), deps.caFingerprint);
    return describeController(cache, deps.cluster, deps.controllerAddresses(), deps.caFingerprint);
  });

  app.post("/v1/controller/enable-ha", async (req, reply) => {
    requireSuperuser(principalOf(req));
    const body = parseRequest(EnableHaRequest, req.body, "enable-ha request");
    reply.code(202);
    return deps.cluster.enableHa(body);
  });

  app.put("/v1/controller/upgrade", async (req) => {
    requireSuperuser(principalOf(req));
    const body = parseRequest(ControllerUpgradeRecord, req.body, "upgrade record");
    await deps.cluster.recordUpgrade(body);
    return body;
  });

  app.post("/v1/controller/spares", async (req, reply) => {
    requireSuperuser(principalOf(req));
    const body = parseRequest(SpareHostsRequest, req.body, "spare hosts");
    const spares = await deps.cluster.addSpares(body.hosts);
    reply.code(201);
    return { spares: spares.map((s) => ({ host: s.host, hostKey: s.hostKey })) };
  });

  // Credentials: only superusers see that they exist; no answer ever holds a secret attribute.
  app.get("/v1/credentials", async (req) => {
    requireSuperuser(principalOf(req));
    return { credentials: await deps.credentials.list() };
  });

  app.put("/v1/credentials/:name", async (req, reply) => {
    const p = principalOf(req);
    requireSuperuser(p);
    const name = param<string>(Name, req, "name", "credential");
    const body = parseRequest(CredentialRequest, req.body, "credential");
    const replace = (req.query as { replace?: string }).replace === "true";
    if (!skipCheck(req)) await substrateKind(body.substrate).checkCredential?.(name, body.attributes);
    const res = await deps.credentials.put(requireUser(p).user, name, body, replace);
    reply.code(res.created ? 201 : 200);
    return { name, substrate: body.substrate, created: res.created, changed: res.changed };
  });

  app.delete("/v1/credentials/:name", async (req, reply) => {
    requireSuperuser(principalOf(req));
    await deps.credentials.remove(param<string>(Name, req, "name", "credential"));
    reply.code(204);
  });

  app.put("/v1/controller/replica-cloud", async (req) => {
    requireSuperuser(principalOf(req));
    const body = parseRequest(ReplicaCloudRequest, req.body, "replica cloud");
    // Refuses a missing credential, or one for another cloud, now rather than when a replica is lost.
    if ("credential" in body) await deps.credentials.open(body.credential, body.substrate);
    await deps.cluster.setReplicaCloud(body);
    return body;
  });

  app.delete("/v1/controller/replica-cloud", async (req, reply) => {
    requireSuperuser(principalOf(req));
    await deps.cluster.setReplicaCloud(undefined);
    reply.code(204);
  });

  app.post("/v1/users", async (req, reply) => {
    requireSuperuser(principalOf(req));
    const body = parseRequest(CreateUserRequest, req.body, "user");
    await ops.createUser(body.name, body.password, body.superuser ?? false);
    reply.code(201);
    return { name: body.name };
  });

  app.put("/v1/models/:model/access/:user", async (req, reply) => {
    const idx = model(req, principalOf(req), "admin");
    const user = param<string>(UserName, req, "user", "user");
    const body = parseRequest(GrantRequest, req.body, "grant");
    const grantee = cache.users.get(user);
    if (body.access !== "read" && grantee && !grantee.superuser && runsOnControllerHost(idx)) {
      throw new StewardError("forbidden", `${LOCAL_WRITE_RULE}; ${user} is not a superuser: grant read, or use a model on another substrate`, { reason: "local-model-write-needs-superuser", details: { rule: "local-model-write-needs-superuser", field: "access" } });
    }
    await settled(await ops.grant(idx.uuid, user, body.access));
    reply.code(204);
  });

  app.delete("/v1/models/:model/access/:user", async (req, reply) => {
    const idx = model(req, principalOf(req), "admin");
    const user = param<string>(UserName, req, "user", "user");
    await settled(await ops.revokeAccess(idx.uuid, user));
    reply.code(204);
  });

  app.get("/v1/models", async (req) => modelSummaries(cache, requireUser(principalOf(req))));

  app.post("/v1/models", async (req, reply) => {
    const p = principalOf(req);
    requireSuperuser(p);
    const body = parseRequest(CreateModelRequest, req.body, "model");
    const check = substrateKind(body.substrate).checkPlacement;
    if (check && body.credential && !skipCheck(req)) {
      await check(body.credential, await deps.credentials.open(body.credential, body.substrate as CredentialSubstrate), settingsWithDefaults(body.substrate, body, body.settings));
    }
    const { substrate, credential, settings } = body;
    const doc = await ops.createModel(requireUser(p).user, body.name, body.config ?? {}, { substrate, credential, settings }, body.constraints);
    await settled(doc.revision);
    reply.code(201);
    const placed = doc.placement;
    return { name: doc.name, uuid: doc.uuid, substrate: placed.substrate, ...(placed.credential ? { credential: placed.credential } : {}), ...(hasConstraints(doc.constraints) ? { constraints: formatConstraints(doc.constraints) } : {}) };
  });

  app.delete("/v1/models/:model", async (req, reply) => {
    const idx = model(req, principalOf(req), "admin");
    await settled((await ops.destroyModel(idx.uuid, force(req))).revision);
    reply.code(202);
  });

  app.patch("/v1/models/:model", async (req) => {
    const idx = model(req, principalOf(req), "admin");
    const body = parseRequest(UpdateModelRequest, req.body, "model update");
    await settled((await ops.updateModelConfig(idx.uuid, body.config, body.constraints)).revision);
    const now = cache.models.get(idx.uuid)?.model;
    return { name: idx.model?.name, config: now?.config, ...(hasConstraints(now?.constraints) ? { constraints: formatConstraints(now.constraints) } : {}) };
  });

  app.post("/v1/models/:model/integrations", async (req, reply) => {
    const idx = model(req, principalOf(req), "write");
    const body = parseRequest(IntegrateRequest, req.body, "integration");
    const res = await deps.relations.integrate(idx.uuid, body.endpoints[0], body.endpoints[1]);
    await settled(res.revision);
    reply.code(201);
    return { id: res.id, key: res.key };
  });

  app.delete("/v1/models/:model/integrations", async (req, reply) => {
    const idx = model(req, principalOf(req), "write");
    const body = parseRequest(IntegrateRequest, req.body, "integration");
    await settled((await deps.relations.removeIntegration(idx.uuid, body.endpoints[0], body.endpoints[1])).revision);
    reply.code(202);
  });

  app.get("/v1/models/:model/units/:app/:n", async (req) => {
    const idx = model(req, principalOf(req), "read");
    const { app: appName, n } = req.params as { app: string; n: string };
    const details = buildUnitDetails(idx, `${appName}/${n}`);
    // A failure recorded before a later success says nothing about the unit now.
    const failure = details.agent.current === "error" ? await ops.unitFailure(idx.uuid, details.name) : undefined;
    return { ...details, ...(failure ? { failure } : {}) };
  });

  app.get("/v1/models/:model/units/:app/:n/status-log", async (req) => {
    const idx = model(req, principalOf(req), "read");
    const { app: appName, n } = req.params as { app: string; n: string };
    const unit = `${appName}/${n}`;
    if (!idx.units.has(unit)) throw notFound("unit", unit);
    return { entries: await ops.statusHistory(idx.uuid, unit) };
  });

  app.post("/v1/models/:model/units/:app/:n/resolve", async (req) => {
    const idx = model(req, principalOf(req), "write");
    const { app: appName, n } = req.params as { app: string; n: string };
    const body = parseRequest(ResolveRequest, req.body, "resolve");
    await settled((await ops.resolve(idx.uuid, `${appName}/${n}`, body.retry ? "retry" : "no-retry")).revision);
    return {};
  });

  app.get("/v1/models/:model/status", async (req, reply) => {
    const idx = model(req, principalOf(req), "read");
    // Sent as the renderer's text: a 10,000-unit model is megabytes, mostly unchanged since the last read.
    return reply.type("application/json; charset=utf-8").send(renderModelStatusBytes(cache, idx, statusFilter(req.query), new Date(), statusForm(req.query)));
  });

  let uploads: Promise<unknown> = Promise.resolve();
  app.post("/v1/operators", { bodyLimit: 32 * 1024 * 1024 }, async (req, reply) => {
    const p = principalOf(req);
    requireWriteOnSomeModel(p, cache);
    const bundle = parseRequest(OperatorBundle, req.body, "operator bundle");
    // One upload at a time per replica, so two cannot both pass the quota check.
    const stored = uploads.catch(() => undefined).then(() => ops.putOperator(bundle, deps.operatorQuotas, chargeOf(p).by));
    uploads = stored;
    const { doc, created } = await stored;
    reply.code(created ? 201 : 200);
    return { hash: doc.hash, name: doc.name, version: doc.version, created };
  });

  app.route({
    method: ["GET", "HEAD"],
    url: "/v1/operators/:hash",
    handler: async (req, reply: FastifyReply) => {
      const p = principalOf(req); // users and agents alike
      const hash = (req.params as { hash: string }).hash;
      const problem = operatorHashProblem(hash);
      if (problem === LEGACY_HASH_MESSAGE) throw new StewardError("invalid-request", problem, { details: { field: "hash" } });
      // An agent gets only what its own model runs, answered as unknown otherwise.
      if (problem || !cache.operators.has(hash) || (p.kind === "agent" && !modelRuns(p.model, hash))) throw notFound("operator", hash);
      if (req.method === "HEAD") return reply.code(200).send();
      return ops.getOperatorBundle(hash);
    },
  });

  /** Whether some application of model `uuid` runs operator `hash`. */
  function modelRuns(uuid: string, hash: string): boolean {
    for (const a of cache.models.get(uuid)?.apps.values() ?? []) if (a.operator.hash === hash) return true;
    return false;
  }

  const appInfo = (idx: ModelIndex, name: string): unknown => {
    const a = idx.apps.get(name);
    if (!a) throw notFound("application", name);
    const meta = cache.operators.get(a.operator.hash)?.meta;
    return {
      name: a.name, operator: a.operator, life: a.life,
      config: effectiveConfig(meta, a.config),
      configSchema: meta?.config ?? {},
      actions: meta?.actions ?? {},
      units: [...idx.units.values()].filter((u) => u.app === name).map((u) => u.name).sort(),
      ...(hasConstraints(a.constraints) ? { constraints: formatConstraints(a.constraints) } : {}),
    };
  };

  app.post("/v1/models/:model/applications", async (req, reply) => {
    const p = principalOf(req);
    const idx = model(req, p, "write");
    const body = parseRequest(DeployRequest, req.body, "deploy");
    checkMachinesForUnits(p, idx, body.units, body.to, "units");
    // ops.deploy refuses an existing name itself: here it would also refuse the retry of a deploy that worked.
    const res = await ops.deploy(idx.uuid, body, chargeOf(p));
    await settled(res.revision);
    reply.code(201);
    return appInfo(idx, body.name);
  });

  app.get("/v1/models/:model/applications/:app", async (req) => {
    const idx = model(req, principalOf(req), "read");
    return appInfo(idx, param<string>(Name, req, "app", "application"));
  });

  app.patch("/v1/models/:model/applications/:app", async (req) => {
    const p = principalOf(req);
    const idx = model(req, p, "write");
    const name = param<string>(Name, req, "app", "application");
    const body = parseRequest(UpdateApplicationRequest, req.body, "application update");
    await settled((await ops.updateApplication(idx.uuid, name, body, chargeOf(p))).revision);
    return appInfo(idx, name);
  });

  app.delete("/v1/models/:model/applications/:app", async (req, reply) => {
    const idx = model(req, principalOf(req), "write");
    const name = param<string>(Name, req, "app", "application");
    await settled((await ops.removeApplication(idx.uuid, name, force(req))).revision);
    reply.code(202);
  });

  app.post("/v1/models/:model/applications/:app/units", async (req, reply) => {
    const p = principalOf(req);
    const idx = model(req, p, "write");
    const name = param<string>(Name, req, "app", "application");
    const body = parseRequest(AddUnitsRequest, req.body, "add units");
    checkMachinesForUnits(p, idx, body.count, body.to, "count");
    const res = await ops.addUnits(idx.uuid, name, body.count, body.to);
    await settled(res.revision);
    reply.code(201);
    return { units: res.units };
  });

  app.delete("/v1/models/:model/units/:app/:n", async (req, reply) => {
    const idx = model(req, principalOf(req), "write");
    const { app: appName, n } = req.params as { app: string; n: string };
    if (!Name.safeParse(appName).success || !/^\d+$/.test(n)) throw notFound("unit", `${appName}/${n}`);
    await settled((await ops.removeUnit(idx.uuid, `${appName}/${n}`, force(req))).revision);
    reply.code(202);
  });

  app.post("/v1/models/:model/machines", { config: { secretAnswer: true } }, async (req, reply) => {
    const p = principalOf(req);
    const idx = model(req, p, "write");
    const body = parseRequest(AddMachineRequest, req.body, "add machine");
    checkMachinesPerRequest(body.substrate, body.count, "count");
    if (contractOf(body.substrate).onControllerHost) checkNewLocalMachines({ superuser: requireUser(p).superuser, cache, policy: deps.localMachines, count: body.count });
    // eslint-disable-next-line no-restricted-syntax -- narrows the request to its ssh branch (the host to install on)
    if (body.substrate === "ssh") {
      if (!body.ssh) throw new StewardError("invalid-request", `substrate "ssh" needs "ssh": {host, user, privateKey, hostKey or trustOnFirstUse}`, { details: { field: "ssh" } });
      const m = await deps.ssh.add(idx.uuid, body.ssh);
      reply.code(m.created ? 201 : 200);
      return { machines: [{ id: m.id, hostKey: m.hostKey }] };
    }
    if (body.ssh) throw new StewardError("invalid-request", `"ssh" is only for substrate "ssh"`, { details: { field: "ssh" } });
    const res = await ops.addMachines(idx.uuid, body.substrate, body.count, body.constraints);
    await settled(res.revision);
    reply.code(201);
    return { machines: res.machines };
  });

  app.get("/v1/models/:model/machines", async (req) => {
    const idx = model(req, principalOf(req), "read");
    const status = buildModelStatus(cache, idx);
    return Object.values(status.machines).map((m) => {
      // The hardware is shown once, in constraint syntax (below), not again as the record holds it.
      const { hardware: _, ...install } = idx.machineInstall.get(m.id) ?? { hardware: undefined };
      return { id: m.id, substrate: m.substrate, life: m.life, address: m.address, hostname: m.hostname, status: m.status.current, message: m.status.message, units: m.units, ...(m.instance ? { instance: m.instance } : {}), ...(m.constraints ? { constraints: m.constraints } : {}), ...(m.hardware ? { hardware: m.hardware } : {}), ...("state" in install ? { install } : {}) };
    });
  });

  app.delete("/v1/models/:model/machines/:id", async (req, reply) => {
    const idx = model(req, principalOf(req), "write");
    const id = param<string>(MachineId, req, "id", "machine");
    await settled((await ops.removeMachine(idx.uuid, id, force(req))).revision);
    reply.code(202);
  });
}

/**
 * A replica cut off from the majority says so at once (503) to every write, instead of letting it
 * wait out the store's deadline; the client then tries another replica. Install before anything
 * that reads the store on a write's way in.
 */
export function installWriteGuard(app: FastifyInstance, writable: () => boolean): void {
  app.addHook("preHandler", async (req) => {
    if (req.method === "GET" || req.method === "HEAD" || req.url === "/v1/login" || (req.url === "/v1/session" && req.method === "POST") || writable()) return;
    throw new StewardError("unavailable", "this controller replica is cut off from the majority of replicas and cannot change anything now: retry through another replica", { reason: "cut-off-from-majority" });
  });
}

/** Turns any thrown error into the wire shape; unexpected ones are logged and reported as internal. */
export function installErrorHandling(app: FastifyInstance, log: Logger): void {
  app.setErrorHandler((err: unknown, req, reply) => {
    // A size error not translated to the user's field where it arose: never pass the store key on.
    if (err instanceof ValueTooLargeError) {
      log.warn("a request's data was too large to store", { method: req.method, url: req.url.split("?")[0], bytes: err.bytes });
      return reply.code(400).send({ code: "invalid-request", message: `the data sent is too large to store (${err.bytes} bytes once stored, at most ${err.limit}); send less`, details: { bytes: err.bytes, limit: err.limit } });
    }
    if (StewardError.isInstance(err)) {
      const wait = err.details.retryAfterSeconds;
      if (typeof wait === "number") reply.header("retry-after", String(wait));
      return reply.code(err.httpStatus).send(err.toWire());
    }
    const e = err as { statusCode?: number; code?: string; message?: string };
    if (e.statusCode && e.statusCode < 500) {
      const message =
        e.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE" ? "request body must be JSON (Content-Type: application/json)" :
        e.code === "FST_ERR_CTP_BODY_TOO_LARGE" ? "request body is too large" :
        e.code === "FST_ERR_CTP_EMPTY_JSON_BODY" ? "request body is empty; send a JSON object" :
        `request body is not valid JSON: ${e.message ?? ""}`;
      return reply.code(400).send({ code: "invalid-request", message });
    }
    log.error("unexpected error serving request", { method: req.method, url: req.url.split("?")[0], err: e.message });
    return reply.code(500).send({ code: "internal", message: "internal error; see the controller log" });
  });
  app.setNotFoundHandler((req, reply) => reply.code(404).send({ code: "not-found", message: `no such endpoint: ${req.method} ${req.url.split("?")[0]}` }));
}
