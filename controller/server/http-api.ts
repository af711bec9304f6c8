/**
 * The REST API (`/v1/...`). Every body is parsed by a strict schema from api/; every error leaves as
 * `{code, message, details}` with the status its code implies; writes return only once the state
 * cache has seen them, so a read right after a write sees it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "../../api";
import {
  ADDRESSES_HEADER, AddMachineRequest, AddUnitsRequest, CreateModelRequest, CreateUserRequest, DeployRequest, EnableHaRequest, GrantRequest, IntegrateRequest, LoginRequest,
  MachineId, Name, OperatorBundle, ResolveRequest, STEWARD_VERSION, SpareHostsRequest, StewardError, UpdateApplicationRequest, UpdateModelRequest, UserName, notFound, parseRequest,
} from "../../api";
import { signToken, verifyPassword } from "../security/credentials";
import type { ModelIndex, RelationOps, StateCache, StateOps } from "../state";
import { buildModelStatus, buildUnitDetails, effectiveConfig, modelSettings, renderModelStatus } from "../state";
import { statusFilter } from "./status-filter";
import type { SshSubstrate } from "../substrates/ssh";
import type { ClusterControl } from "../cluster";
import type { Access, Principal } from "./auth";
import { authenticate, modelAccess, requireModelAccess, requireSuperuser, requireUser } from "./auth";

const TOKEN_TTL_MS = 24 * 3600 * 1000;

export interface HttpApiDeps {
  cache: StateCache;
  ops: StateOps;
  relations: RelationOps;
  ssh: SshSubstrate;
  cluster: ClusterControl;
  log: Logger;
  controllerAddresses: () => string[];
}

export function registerHttpApi(app: FastifyInstance, deps: HttpApiDeps): void {
  const { cache, ops } = deps;
  const principalOf = (req: FastifyRequest): Principal => authenticate(cache, req.headers);
  const model = (req: FastifyRequest, p: Principal, needed: Access): ModelIndex => {
    const name = (req.params as { model: string }).model;
    const idx = cache.findModel(name);
    if (!idx) throw notFound("model", name);
    requireModelAccess(p, idx, needed);
    return idx;
  };
  const force = (req: FastifyRequest): boolean => {
    const v = (req.query as { force?: string }).force;
    if (v === undefined || v === "false") return false;
    if (v === "true") return true;
    throw new StewardError("invalid-request", `query "force" must be true or false, got "${v}"`, { details: { field: "force" } });
  };
  const param = <T>(schema: { safeParse(v: unknown): { success: boolean } }, req: FastifyRequest, name: string, what: string): T => {
    const v = (req.params as Record<string, string>)[name];
    if (!schema.safeParse(v).success) throw notFound(what, String(v));
    return v as T;
  };
  const settled = async (revision: number): Promise<void> => cache.waitForRevision(revision);

  // Clients follow replicas that move or are replaced by the addresses named on every answer.
  app.addHook("onSend", async (_req, reply) => { reply.header(ADDRESSES_HEADER, deps.controllerAddresses().join(",")); });

  // Reads answer from the cache, after it has caught up with the store: a client that wrote through
  // one replica and reads through another still sees its write.
  app.addHook("preHandler", async (req) => {
    if (req.method === "GET" && req.url.startsWith("/v1/models")) await cache.catchUp();
  });

  app.get("/v1/health", async () => ({ ok: true, version: STEWARD_VERSION, revision: cache.revision }));

  app.post("/v1/login", async (req) => {
    const body = parseRequest(LoginRequest, req.body, "login");
    const user = cache.users.get(body.user);
    // Same answer for an unknown user and a wrong password: do not reveal which users exist.
    if (!user || !(await verifyPassword(body.password, user.passwordHash))) throw new StewardError("unauthorized", "wrong user name or password");
    const expiresAt = Date.now() + TOKEN_TTL_MS;
    return { token: signToken({ user: user.name, expiresAt }, cache.tokenKey!), expiresAt: new Date(expiresAt).toISOString(), user: user.name };
  });

  app.get("/v1/controller", async (req) => {
    requireUser(principalOf(req));
    return {
      name: cache.controller?.name, uuid: cache.controller?.uuid, version: STEWARD_VERSION, addresses: deps.controllerAddresses(),
      replicas: [...cache.replicas.values()].map((r) => ({ ...r, leader: cache.leader?.replica === r.id })).sort((a, b) => a.since.localeCompare(b.since)),
      cluster: await deps.cluster.info(),
    };
  });

  app.post("/v1/controller/enable-ha", async (req, reply) => {
    requireSuperuser(principalOf(req));
    const body = parseRequest(EnableHaRequest, req.body, "enable-ha request");
    reply.code(202);
    return deps.cluster.enableHa(body);
  });

  app.post("/v1/controller/spares", async (req, reply) => {
    requireSuperuser(principalOf(req));
    const body = parseRequest(SpareHostsRequest, req.body, "spare hosts");
    const spares = await deps.cluster.addSpares(body.hosts);
    reply.code(201);
    return { spares: spares.map((s) => ({ host: s.host, hostKey: s.hostKey })) };
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
    await settled(await ops.grant(idx.uuid, user, body.access));
    reply.code(204);
  });

  app.get("/v1/models", async (req) => {
    const p = requireUser(principalOf(req));
    const out = [];
    for (const idx of cache.models.values()) {
      if (!idx.model) continue;
      const access = modelAccess(p, idx);
      if (!access) continue;
      out.push({ name: idx.model.name, uuid: idx.uuid, life: idx.model.life, owner: idx.model.owner, applications: idx.apps.size, machines: idx.machines.size, units: idx.units.size, access, config: modelSettings(idx.model.config) });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  });

  app.post("/v1/models", async (req, reply) => {
    const p = principalOf(req);
    requireSuperuser(p);
    const body = parseRequest(CreateModelRequest, req.body, "model");
    const doc = await ops.createModel(requireUser(p).user, body.name, body.config ?? {});
    await settled(doc.revision);
    reply.code(201);
    return { name: doc.name, uuid: doc.uuid };
  });

  app.delete("/v1/models/:model", async (req, reply) => {
    const idx = model(req, principalOf(req), "admin");
    await settled((await ops.destroyModel(idx.uuid, force(req))).revision);
    reply.code(202);
  });

  app.patch("/v1/models/:model", async (req) => {
    const idx = model(req, principalOf(req), "admin");
    const body = parseRequest(UpdateModelRequest, req.body, "model update");
    await settled((await ops.updateModelConfig(idx.uuid, body.config)).revision);
    return { name: idx.model?.name, config: cache.models.get(idx.uuid)?.model?.config };
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
    return buildUnitDetails(idx, `${appName}/${n}`);
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
    return reply.type("application/json; charset=utf-8").send(renderModelStatus(cache, idx, statusFilter(req.query)));
  });

  app.post("/v1/operators", { bodyLimit: 32 * 1024 * 1024 }, async (req, reply) => {
    requireUser(principalOf(req));
    const bundle = parseRequest(OperatorBundle, req.body, "operator bundle");
    const { doc, created } = await ops.putOperator(bundle);
    reply.code(created ? 201 : 200);
    return { hash: doc.hash, name: doc.name, version: doc.version, created };
  });

  app.route({
    method: ["GET", "HEAD"],
    url: "/v1/operators/:hash",
    handler: async (req, reply: FastifyReply) => {
      principalOf(req); // users and agents alike
      const hash = (req.params as { hash: string }).hash;
      if (!/^[0-9a-f]{64}$/.test(hash) || !cache.operators.has(hash)) throw notFound("operator", hash);
      if (req.method === "HEAD") return reply.code(200).send();
      return ops.getOperatorBundle(hash);
    },
  });

  const appInfo = (idx: ModelIndex, name: string): unknown => {
    const a = idx.apps.get(name);
    if (!a) throw notFound("application", name);
    const meta = cache.operators.get(a.operator.hash)?.meta;
    return {
      name: a.name, operator: a.operator, life: a.life,
      config: effectiveConfig(meta, a.config),
      configSchema: meta?.config ?? {},
      units: [...idx.units.values()].filter((u) => u.app === name).map((u) => u.name).sort(),
    };
  };

  app.post("/v1/models/:model/applications", async (req, reply) => {
    const idx = model(req, principalOf(req), "write");
    const body = parseRequest(DeployRequest, req.body, "deploy");
    if (idx.apps.has(body.name)) throw new StewardError("already-exists", `application "${body.name}" already exists in model ${idx.model?.name}: use add-unit or config to change it, or pick another name`, { details: { kind: "application", name: body.name } });
    const res = await ops.deploy(idx.uuid, body);
    await settled(res.revision);
    reply.code(201);
    return appInfo(idx, body.name);
  });

  app.get("/v1/models/:model/applications/:app", async (req) => {
    const idx = model(req, principalOf(req), "read");
    return appInfo(idx, param<string>(Name, req, "app", "application"));
  });

  app.patch("/v1/models/:model/applications/:app", async (req) => {
    const idx = model(req, principalOf(req), "write");
    const name = param<string>(Name, req, "app", "application");
    const body = parseRequest(UpdateApplicationRequest, req.body, "application update");
    await settled((await ops.updateApplication(idx.uuid, name, body)).revision);
    return appInfo(idx, name);
  });

  app.delete("/v1/models/:model/applications/:app", async (req, reply) => {
    const idx = model(req, principalOf(req), "write");
    const name = param<string>(Name, req, "app", "application");
    await settled((await ops.removeApplication(idx.uuid, name, force(req))).revision);
    reply.code(202);
  });

  app.post("/v1/models/:model/applications/:app/units", async (req, reply) => {
    const idx = model(req, principalOf(req), "write");
    const name = param<string>(Name, req, "app", "application");
    const body = parseRequest(AddUnitsRequest, req.body, "add units");
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

  app.post("/v1/models/:model/machines", async (req, reply) => {
    const idx = model(req, principalOf(req), "write");
    const body = parseRequest(AddMachineRequest, req.body, "add machine");
    if (body.substrate === "ssh") {
      if (!body.ssh) throw new StewardError("invalid-request", `substrate "ssh" needs "ssh": {host, user, privateKey, hostKey or trustOnFirstUse}`, { details: { field: "ssh" } });
      const m = await deps.ssh.add(idx.uuid, body.ssh);
      reply.code(m.created ? 201 : 200);
      return { machines: [{ id: m.id, hostKey: m.hostKey }] };
    }
    if (body.ssh) throw new StewardError("invalid-request", `"ssh" is only for substrate "ssh"`, { details: { field: "ssh" } });
    const res = await ops.addMachines(idx.uuid, body.substrate, body.count);
    await settled(res.revision);
    reply.code(201);
    return { machines: res.machines };
  });

  app.get("/v1/models/:model/machines", async (req) => {
    const idx = model(req, principalOf(req), "read");
    const status = buildModelStatus(cache, idx);
    return Object.values(status.machines).map((m) => {
      const install = idx.machineInstall.get(m.id);
      return { id: m.id, substrate: m.substrate, life: m.life, address: m.address, hostname: m.hostname, status: m.status.current, message: m.status.message, units: m.units, ...(install ? { install } : {}) };
    });
  });

  app.delete("/v1/models/:model/machines/:id", async (req, reply) => {
    const idx = model(req, principalOf(req), "write");
    const id = param<string>(MachineId, req, "id", "machine");
    await settled((await ops.removeMachine(idx.uuid, id, force(req))).revision);
    reply.code(202);
  });
}

/** Turns any thrown error into the wire shape; unexpected ones are logged and reported as internal. */
export function installErrorHandling(app: FastifyInstance, log: Logger): void {
  app.setErrorHandler((err: unknown, req, reply) => {
    if (StewardError.isInstance(err)) return reply.code(err.httpStatus).send(err.toWire());
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
