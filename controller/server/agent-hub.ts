/**
 * {@link AgentHub} holds the WebSocket of every connected agent. It marks the machine present (a key
 * bound to this replica's lease, so a dead replica's agents show as lost within the TTL), pushes
 * each agent its view whenever that view changes, and answers the agent's reports.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { randomUUID } from "node:crypto";
import { WebSocketServer } from "ws";
import type WebSocket from "ws";
import type {
  AgentFrame,
  DebugLogRecord,
  LogBatch,
  Logger,
  MigrationReport,
  SecretGet,
  SecretInfo,
  StorageOnMachineReport,
  TaskFinish,
  TransportLimits,
} from "../../api";
import { StewardError, TRANSPORT_LIMITS, agentMethods, describeIssues, notFound, secretIdOf } from "../../api";
import type { Store } from "../store";
import { unchanged } from "../store";
import type { ActionOps, LeadershipOps, ModelIndex, RelationOps, SecretOps, StateCache, StateOps } from "../state";
import {
  AgentViewRound,
  CLUSTER_CHANGED,
  docs,
  keys,
  manages,
  mayRead,
  movedError,
  ownerSide,
  readDoc,
  recordReport,
  secretInfoOf,
  secretRefusal,
} from "../state";
import type { PresenceDoc } from "../state";
import { credentialMatchesKept } from "../security/credentials";
import { authenticate } from "../access/auth";
import type { LoginLimiter } from "../access/login-limiter";
import { SourceLimiter } from "../access/login-limiter";
import { answerHandshakeErrors, answerRaw } from "./raw-answer";
import { sendText } from "./ws-frames";
import type { ModelLogs } from "../state/model-logs";

export interface AgentHubDeps {
  cache: StateCache;
  ops: StateOps;
  relations: RelationOps;
  leadership: LeadershipOps;
  actions: ActionOps;
  /** Seconds a leadership claim lasts. */
  leadershipLeaseSeconds: number;
  store: Store;
  log: Logger;
  /** Lease of this replica's presence keys. */
  leaseId: () => string;
  limiter: LoginLimiter;
  replicaId: string;
  controllerAddresses: () => string[];
  /** Frame size and failed-login bounds. @default TRANSPORT_LIMITS (api/limits.ts) */
  transport?: Partial<TransportLimits>;
  /** Where agents' log records go, for `steward debug-log`. */
  logs?: ModelLogs;
  /** Opens secrets' values for `secret.get` (absent: refused). */
  secrets?: SecretOps;
}

interface AgentConnection {
  id: string;
  ws: WebSocket;
  model: string;
  machine: string;
  lastView?: string;
  /** Something (a frame, a ping, a pong) came from the agent since the last liveness look. */
  heard: boolean;
  /** Pinged at the last look, having been silent since the one before. */
  pinged: boolean;
  since: string;
  /** When this replica last wrote the connection's presence key again (see reassertPresence). */
  reassertedAt?: number;
  reassertTimer?: NodeJS.Timeout;
}

/** A connection's presence key is written again at most this often (two live connections of one machine would otherwise trade it without pause). */
const PRESENCE_REASSERT_MS = 2000;

/** A push round at least this long is logged (at 10,000 agents a config change takes ~300 ms). */
const SLOW_PUSH_ROUND_MS = 100;
/** Each agent's liveness is looked at once per agentLivenessMs, in this many slices spread over that time. */
const LIVENESS_SLICES = 15;

export class AgentHub {
  private readonly wss: WebSocketServer;
  /** Bad credentials, per source address: answered 429 once a source keeps sending them. */
  private readonly failedLogins: SourceLimiter;
  private readonly byMachine = new Map<string, AgentConnection>();
  private readonly dirtyModels = new Set<string>();
  /** The controller's address list changed: every agent's view did. */
  private addressesChanged = false;
  /** Each model's viewRevision as of its agents' last push: a change past it may change their views. */
  private readonly pushedViewRevision = new WeakMap<ModelIndex, number>();
  private pushScheduled = false;
  /** False while this replica cannot reach a store majority (see setStoreReachable). */
  private storeReachable = true;
  private readonly livenessTimer: NodeJS.Timeout;
  /** What the current liveness round has still to visit. */
  private livenessRound: AgentConnection[] = [];
  private livenessBatch = 0;
  /** Which slice of the round the next tick is: a round starts every LIVENESS_SLICES ticks, however few agents. */
  private livenessSlice = 0;
  private readonly unsubscribe: () => void;
  private readonly unwatchPresence: () => void;

  constructor(private readonly deps: AgentHubDeps) {
    const limits = { ...TRANSPORT_LIMITS, ...deps.transport };
    this.wss = new WebSocketServer({ noServer: true, maxPayload: limits.agentFrameBytes });
    answerHandshakeErrors(this.wss);
    this.failedLogins = new SourceLimiter({
      perSecond: limits.failedAgentLoginsPerSecond,
      burst: limits.failedAgentLoginsBurst,
    });
    this.unsubscribe = deps.cache.subscribe((changed) => {
      // A replica came or went: every agent gets the new address list.
      if (changed.has(CLUSTER_CHANGED)) this.addressesChanged = true;
      for (const m of changed) if (m !== CLUSTER_CHANGED) this.dirtyModels.add(m);
      this.schedulePush();
    });
    this.livenessTimer = setInterval(() => this.checkLiveness(), limits.agentLivenessMs / LIVENESS_SLICES);
    this.livenessTimer.unref();
    this.unwatchPresence = deps.cache.onPresenceChange((model, machine) => {
      const conn = this.byMachine.get(`${model}/${machine}`);
      if (conn && !this.holdsPresence(conn)) this.reassertPresence(conn);
    });
  }

  get connectionCount(): number {
    return this.byMachine.size;
  }

  /**
   * While this replica cannot reach a store majority it sends its agents away (they reconnect to
   * another replica) and turns new ones away with 503.
   */
  setStoreReachable(reachable: boolean): void {
    if (reachable === this.storeReachable) return;
    this.storeReachable = reachable;
    if (reachable) return;
    this.deps.log.warn("the store is unreachable from this replica: sending its agents to other replicas", {
      agents: this.byMachine.size,
    });
    for (const conn of this.byMachine.values())
      conn.ws.close(1013, "this controller replica has lost its store; try another");
  }

  /**
   * Authenticates an upgrade request to `/v1/agent` and takes the socket over. The credential is
   * checked first (a SHA-256 compare, microseconds), so bad credentials never spend the login budget
   * that spreads out real agents' reconnect storms; they are limited per source address instead.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // An agent of a model that moved away is told where it went (its config was not switched: it was down, or the switch failed, Juju #18618).
    const moved = this.movedModelOf(req);
    if (moved) {
      answerRaw(socket, moved.httpStatus, moved.toWire());
      return;
    }
    let principal;
    try {
      principal = authenticate(this.deps.cache, req.headers);
      if (principal.kind !== "agent")
        throw new StewardError(
          "forbidden",
          "only agents may connect to /v1/agent; users watch a model's status at /v1/models/<model>/watch",
        );
    } catch (err) {
      if (!StewardError.isInstance(err)) throw err;
      this.refuseLogin(req, socket, err);
      return;
    }
    if (!this.storeReachable) {
      answerRaw(
        socket,
        503,
        {
          code: "unavailable",
          reason: "store-unreachable",
          retryable: true,
          message: "this controller replica has lost its store; try another",
        },
        { "Retry-After": "2" },
      );
      return;
    }
    if (!this.deps.limiter.take()) {
      const retry = this.deps.limiter.retryAfterSeconds();
      answerRaw(
        socket,
        503,
        {
          code: "unavailable",
          reason: "at-capacity",
          retryable: true,
          message: `too many agents are logging in at once; retry in ${retry} s`,
        },
        { "Retry-After": String(retry) },
      );
      return;
    }
    const { model, machine } = principal;
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      this.accept(ws, model, machine).catch((err: unknown) =>
        this.deps.log.error("agent connection failed", { model, machine, err }),
      );
    });
  }

  /** Where the model of the agent presenting these credentials went, if it moved; only its own agents are told. */
  private movedModelOf(req: IncomingMessage): StewardError | undefined {
    const header = req.headers.authorization;
    if (!header?.startsWith("Agent ")) return undefined;
    const [model = "", machine = "", secret = ""] = header.slice(6).split("/");
    if (this.deps.cache.models.get(model)?.model) return undefined;
    const m = this.deps.cache.migrations.get(model);
    if (m?.phase !== "DONE") return undefined;
    // A record written before credentials were kept answers by the model's uuid alone, as it did.
    if (
      m.agentCredentials &&
      !(Object.hasOwn(m.agentCredentials, machine) && credentialMatchesKept(secret, m.agentCredentials[machine]!))
    )
      return undefined;
    return movedError(m);
  }

  private refuseLogin(req: IncomingMessage, socket: Duplex, err: StewardError): void {
    const source = req.socket.remoteAddress ?? "unknown";
    if (this.failedLogins.take(source)) {
      answerRaw(socket, err.httpStatus, err.toWire());
      return;
    }
    const retry = this.failedLogins.retryAfterSeconds(source);
    answerRaw(
      socket,
      429,
      {
        code: "unavailable",
        message: `too many refused agent logins from ${source}; retry in ${retry} s (${err.message})`,
        details: { limit: "failedAgentLoginsPerSecond" },
      },
      { "Retry-After": String(retry) },
    );
  }

  private async accept(ws: WebSocket, model: string, machine: string): Promise<void> {
    const key = `${model}/${machine}`;
    const conn: AgentConnection = {
      id: randomUUID(),
      ws,
      model,
      machine,
      heard: true,
      pinged: false,
      since: new Date().toISOString(),
    };
    const previous = this.byMachine.get(key);
    this.byMachine.set(key, conn);
    // A newer connection from the same machine wins; the old one is most likely half-dead.
    previous?.ws.close(4000, "replaced by a newer connection from the same machine");
    const heard = (): void => {
      conn.heard = true;
    };
    ws.on("pong", heard);
    ws.on("ping", heard);
    ws.on("message", (data: Buffer) => {
      heard();
      this.onFrame(conn, data).catch((err: unknown) => this.deps.log.warn("agent frame failed", { key, err }));
    });
    ws.on("close", () => {
      this.onClose(conn).catch((err: unknown) => this.deps.log.warn("agent close cleanup failed", { key, err }));
    });
    ws.on("error", () => undefined);
    try {
      await this.putPresence(conn);
    } catch (err) {
      // Without its presence recorded the agent would look down while connected: let it retry
      // (here or elsewhere) once the store answers again, e.g. after an etcd leader election.
      ws.close(1013, "the controller could not record the connection; try again");
      throw err;
    }
    this.deps.log.info("agent connected", { model, machine });
    this.pushView(conn);
  }

  private putPresence(conn: AgentConnection): Promise<unknown> {
    const presence: PresenceDoc = { replica: this.deps.replicaId, since: conn.since, conn: conn.id };
    return this.deps.store.put(keys.presence(conn.model, conn.machine), JSON.stringify(presence), {
      lease: this.deps.leaseId(),
    });
  }

  private holdsPresence(conn: AgentConnection): boolean {
    return this.deps.cache.models.get(conn.model)?.presence.get(conn.machine)?.conn === conn.id;
  }

  /**
   * An agent's connection here lost its presence key to another replica's. That happens when the
   * agent's parallel connection attempts both got in and the one it dropped was recorded last (and
   * then deleted its record), or while a half-dead older connection is still open elsewhere: the
   * machine would look down while connected. The live connection writes it again.
   */
  private reassertPresence(conn: AgentConnection): void {
    if (conn.reassertTimer) return;
    const wait = Math.max(0, (conn.reassertedAt ?? 0) + PRESENCE_REASSERT_MS - Date.now());
    conn.reassertTimer = setTimeout(() => {
      conn.reassertTimer = undefined;
      if (
        this.byMachine.get(`${conn.model}/${conn.machine}`) !== conn ||
        conn.ws.readyState !== conn.ws.OPEN ||
        this.holdsPresence(conn)
      )
        return;
      conn.reassertedAt = Date.now();
      this.deps.log.info(
        "agent presence recorded again (another replica's connection of the same machine had taken it)",
        { model: conn.model, machine: conn.machine },
      );
      this.putPresence(conn).catch((err: unknown) =>
        this.deps.log.warn("could not record an agent's presence again", {
          model: conn.model,
          machine: conn.machine,
          err,
        }),
      );
    }, wait);
    conn.reassertTimer.unref();
  }

  private async onClose(conn: AgentConnection): Promise<void> {
    clearTimeout(conn.reassertTimer);
    const key = `${conn.model}/${conn.machine}`;
    if (this.byMachine.get(key) === conn) this.byMachine.delete(key);
    else return; // replaced: the newer connection owns the presence key
    const pk = keys.presence(conn.model, conn.machine);
    const presence = await readDoc(this.deps.store, docs.presence, conn.model, conn.machine);
    if (presence?.doc.conn === conn.id) {
      await this.deps.store.txn({
        compare: [{ key: pk, target: "modRevision", value: presence.rev }],
        success: [{ type: "delete", key: pk }],
      });
    }
    this.deps.log.info("agent disconnected", { model: conn.model, machine: conn.machine });
  }

  private async onFrame(conn: AgentConnection, data: Buffer): Promise<void> {
    let frame: AgentFrame;
    try {
      frame = JSON.parse(data.toString("utf8")) as AgentFrame;
    } catch {
      conn.ws.close(4400, "frames must be JSON");
      return;
    }
    if (typeof frame !== "object" || frame === null) {
      conn.ws.close(4400, "frames must be JSON objects");
      return;
    }
    if (frame.t !== "req") return;
    const reply = (body: { result?: unknown; error?: unknown }): void => {
      if (conn.ws.readyState === conn.ws.OPEN) conn.ws.send(JSON.stringify({ t: "res", id: frame.id, ...body }));
    };
    try {
      reply({ result: await this.dispatch(conn, frame.method, frame.params) });
    } catch (err) {
      if (StewardError.isInstance(err)) reply({ error: err.toWire() });
      else {
        this.deps.log.error("agent request failed", { method: frame.method, err });
        reply({ error: { code: "internal", message: "internal error; see the controller log" } });
      }
    }
  }

  private async dispatch(conn: AgentConnection, method: string, params: unknown): Promise<unknown> {
    // Own keys only: "__proto__" or "constructor" must not find Object's.
    const schema = (agentMethods as Record<string, (typeof agentMethods)[keyof typeof agentMethods]>)[method];
    if (!schema || !Object.hasOwn(agentMethods, method))
      throw new StewardError("invalid-request", `unknown agent method "${method}"`);
    const parsed = schema.safeParse(params);
    if (!parsed.success)
      throw new StewardError("invalid-request", `invalid ${method}: ${describeIssues(parsed.error.issues)}`);
    const { ops, cache, relations, leadership } = this.deps;
    const p = parsed.data as Record<string, unknown> & { unit: string };
    const settle = async (rev: number): Promise<Record<string, never>> => {
      await cache.waitForRevision(rev);
      return {};
    };
    switch (method) {
      case "machine.dead": {
        const idx = cache.models.get(conn.model);
        if (idx?.machines.get(conn.machine)?.life !== "dying" || (idx.unitsByMachine.get(conn.machine)?.size ?? 0) > 0)
          throw new StewardError("invalid-request", `machine ${conn.machine} is not being removed, or still has units`);
        if ([...idx.storage.values()].some((s) => s.machine === conn.machine))
          throw new StewardError("invalid-request", `machine ${conn.machine} still holds storage being detached`);
        await ops.machines.finish(conn.model, conn.machine);
        return {};
      }
      case "unit.resolved":
        return settle((await ops.applications.unitResolved(conn.model, conn.machine, p.unit)).revision);
      case "leader.claim": {
        const claimed = await leadership.claim(
          conn.model,
          conn.machine,
          p.unit,
          this.leaseOf(conn, p.unit),
          this.deps.leadershipLeaseSeconds,
        );
        await cache.waitForRevision(await this.deps.store.currentRevision());
        return claimed;
      }
      case "leader.resign":
        return settle(
          await leadership.resign(
            conn.model,
            conn.machine,
            p.unit,
            this.leaseOf(conn, p.unit),
            p.to as string | undefined,
          ),
        );
      case "unit.hook-state.put": {
        this.ownUnit(conn, p.unit);
        // Only while the unit exists: a late copy must not outlive the unit's removal.
        const unit = await this.deps.store.get(keys.unit(conn.model, p.unit));
        if (!unit) throw new StewardError("not-found", `unit ${p.unit} is gone`);
        await this.deps.store.txn({
          compare: [unchanged(keys.unit(conn.model, p.unit), unit.modRevision)],
          success: [{ type: "put", key: keys.unitHookState(conn.model, p.unit), value: p.state as string }],
        });
        return {};
      }
      case "unit.hook-state.get": {
        this.ownUnit(conn, p.unit);
        return { state: (await this.deps.store.get(keys.unitHookState(conn.model, p.unit)))?.value };
      }
      case "leader.get": {
        const u = this.ownUnit(conn, p.unit);
        return { data: cache.models.get(conn.model)?.leaderData.get(u.app)?.data ?? {} };
      }
      case "leader.set":
        return settle(await leadership.set(conn.model, conn.machine, p.unit, p.data as Record<string, string | null>));
      case "app.status":
        return settle(
          await leadership.setAppStatus(conn.model, conn.machine, p.unit, {
            current: p.status as "active",
            message: p.message as string,
            since: new Date().toISOString(),
          }),
        );
      case "hook.commit":
        return settle(await relations.commitHook(conn.model, conn.machine, parsed.data as never));
      case "storage.release":
        return settle(
          (await ops.storageAttachments.release(conn.model, conn.machine, p.unit, p.id as string)).revision,
        );
      case "relation.leave":
        return settle(await relations.leave(conn.model, conn.machine, p.unit, p.relationId as number));
      case "relation.get":
        return {
          data: this.relationData(conn, p.unit, p.relationId as number, p.target as { unit?: string; app?: string }),
        };
      case "unit.status": {
        const { revision } = await ops.reports.setUnitStatus(conn.model, conn.machine, parsed.data as never);
        await cache.waitForRevision(revision);
        return {};
      }
      case "unit.dead": {
        const unit = (parsed.data as { unit: string }).unit;
        const { revision } = await ops.applications.unitDead(conn.model, conn.machine, unit);
        await cache.waitForRevision(revision);
        return {};
      }
      case "log.batch":
        this.acceptLogs(conn, parsed.data as LogBatch);
        return {};
      case "task.start":
        return settle(await this.deps.actions.start(conn.model, conn.machine, p.unit, p.id as number));
      case "task.finish":
        return settle(await this.deps.actions.finish(conn.model, conn.machine, parsed.data as TaskFinish));
      case "machine.info":
        await ops.machines.setInfo(conn.model, conn.machine, parsed.data as never);
        return {};
      case "migration.report":
        await recordReport(this.deps.store, cache, conn.model, conn.machine, parsed.data as MigrationReport);
        return {};
      // Values leave only in the answer: never in a log line or an error (errors name uris and revisions only).
      case "secret.get":
        return this.secretGet(conn, parsed.data as SecretGet);
      case "secret.info":
        return this.secretInfo(conn, p.unit, p.uri as string);
      case "storageOnMachine": {
        const report = parsed.data as StorageOnMachineReport;
        const s = cache.models.get(conn.model)?.storage.get(report.id);
        if (s?.machine !== conn.machine)
          throw new StewardError("forbidden", `storage ${report.id} is not on machine ${conn.machine}`);
        const { revision } =
          report.op === "attached"
            ? await ops.storage.machineAttached(conn.model, conn.machine, report.id, report.location)
            : await ops.storage.machineReleased(conn.model, conn.machine, report.id);
        return settle(revision);
      }
    }
    return {};
  }

  /**
   * Keeps an agent's log records, stamped with its machine. A record naming a unit that is not on
   * this machine is dropped: an agent speaks for its own units only (this also drops the last lines
   * of a unit removed before they arrived).
   */
  private acceptLogs(conn: AgentConnection, batch: LogBatch): void {
    if (!this.deps.logs) return;
    const units = this.deps.cache.models.get(conn.model)?.units;
    const records: DebugLogRecord[] = [];
    if (batch.dropped > 0) {
      records.push({
        ts: new Date().toISOString(),
        level: "WARNING",
        source: "agent",
        machine: conn.machine,
        message: `the agent dropped ${batch.dropped} log records (it logged faster than it could send them)`,
      });
    }
    for (const r of batch.records) {
      if (r.unit !== undefined && units?.get(r.unit)?.machine !== conn.machine) continue;
      records.push({ ...r, machine: conn.machine });
    }
    this.deps.logs.append(conn.model, records);
  }

  /**
   * `secret-get`: one revision's values, for a unit of this machine that may read the secret (it owns
   * it, its application does, or it or its application was granted it over a live relation or by a
   * user); a consumer reads the revision it tracks (the latest before its first), or the latest.
   */
  private async secretGet(
    conn: AgentConnection,
    q: SecretGet,
  ): Promise<{ uri: string; revision: number; values: Record<string, string> }> {
    // Checked against the store as it is now: a revoke another replica just took must already hold.
    await this.deps.cache.catchUp();
    const unit = this.ownUnit(conn, q.unit);
    const idx = this.deps.cache.models.get(conn.model)!;
    const doc = idx.secrets.get(secretIdOf(q.uri) ?? "");
    if (!doc) throw notFound("secret", q.uri);
    const me = { name: q.unit, app: unit.app };
    if (!mayRead(doc, me, (id) => idx.relations.get(id)?.life === "alive"))
      throw secretRefusal.notReadable(q.unit, q.uri);
    const tracked = doc.consumers[q.unit]?.revision;
    let revision = q.which === "latest" ? doc.latest : (tracked ?? doc.latest);
    if (q.revision !== undefined) {
      // A given revision: the owner's side (its secret-remove hook), or a consumer's own tracked one.
      if (!ownerSide(doc, me) && q.revision !== tracked)
        throw secretRefusal.notReadable(q.unit, `${q.uri} revision ${q.revision}`);
      revision = q.revision;
    }
    const secrets = this.deps.secrets;
    if (!secrets) throw new StewardError("unavailable", "this controller replica does not serve secrets");
    return { uri: q.uri, revision, values: await secrets.values(conn.model, doc.id, revision) };
  }

  /** `secret-info-get`: the metadata of a secret the unit manages (it owns it, or leads the owning application). */
  private secretInfo(conn: AgentConnection, unitName: string, uri: string): SecretInfo {
    const unit = this.ownUnit(conn, unitName);
    const idx = this.deps.cache.models.get(conn.model)!;
    const doc = idx.secrets.get(secretIdOf(uri) ?? "");
    if (!doc) throw notFound("secret", uri);
    if (!manages(doc, { name: unitName, app: unit.app }, (app) => idx.leaders.get(app)?.unit))
      throw new StewardError("forbidden", `${unitName} does not own ${uri}: only its owner reads its metadata`);
    return secretInfoOf(doc);
  }

  /** The leadership lease of `unit`'s application (seconds): its own, else the controller's. */
  private leaseOf(conn: AgentConnection, unit: string): number {
    const idx = this.deps.cache.models.get(conn.model);
    const app = idx?.units.get(unit)?.app;
    return (
      (app !== undefined ? idx?.apps.get(app)?.leadershipLeaseSeconds : undefined) ?? this.deps.leadershipLeaseSeconds
    );
  }

  private ownUnit(conn: AgentConnection, unit: string): { app: string } {
    const u = this.deps.cache.models.get(conn.model)?.units.get(unit);
    if (!u || u.machine !== conn.machine)
      throw new StewardError("forbidden", `unit ${unit} is not on machine ${conn.machine}`);
    return u;
  }

  /** A databag, readable by a unit in the relation: any unit's bag, its own application's, or the remote application's. */
  private relationData(
    conn: AgentConnection,
    unit: string,
    relationId: number,
    target: { unit?: string; app?: string },
  ): Record<string, string> {
    const me = this.ownUnit(conn, unit);
    const idx = this.deps.cache.models.get(conn.model)!;
    const r = idx.relations.get(relationId);
    if (!r || !r.endpoints.some((e) => e.app === me.app))
      throw new StewardError(
        "not-found",
        `integration ${relationId} does not exist or does not involve ${me.app} (see relation-ids)`,
      );
    if (target.app !== undefined) {
      if (!r.endpoints.some((e) => e.app === target.app))
        throw new StewardError("invalid-request", `application ${target.app} is not part of integration ${relationId}`);
      return idx.relationData.get(`${relationId}/app/${target.app}`)?.data ?? {};
    }
    const other = target.unit ?? unit;
    const ou = idx.units.get(other);
    if (other !== unit && (!ou || !r.endpoints.some((e) => e.app === ou.app)))
      throw new StewardError("invalid-request", `unit ${other} is not part of integration ${relationId}`);
    return idx.relationData.get(`${relationId}/unit/${other}`)?.data ?? {};
  }

  private schedulePush(): void {
    if (this.pushScheduled) return;
    this.pushScheduled = true;
    // Coalesce a burst of store events (a deploy writes many keys) into one push per agent.
    setImmediate(() => {
      this.pushScheduled = false;
      const everyone = this.addressesChanged;
      this.addressesChanged = false;
      const stale = new Set<string>();
      for (const uuid of this.dirtyModels) {
        // Status reports (10,000 agents each sending theirs) change no view: building and comparing
        // every agent's view for each of them is what made a large model's logins slow.
        const idx = this.deps.cache.models.get(uuid);
        if (idx && this.pushedViewRevision.get(idx) === idx.viewRevision) continue;
        if (idx) this.pushedViewRevision.set(idx, idx.viewRevision);
        stale.add(uuid);
      }
      this.dirtyModels.clear();
      if (!everyone && stale.size === 0) return;
      // What agents' views share (the address list, each application's config) is made once per round.
      const round = this.viewRound();
      const started = performance.now();
      let agents = 0;
      for (const conn of this.byMachine.values())
        if (everyone || stale.has(conn.model)) {
          this.pushView(conn, round);
          agents++;
        }
      // A round long enough to delay other work is worth a line: how a big model's changes fan out.
      const ms = performance.now() - started;
      if (ms >= SLOW_PUSH_ROUND_MS) this.deps.log.info("pushed agent views", { agents, ms: Math.round(ms) });
    });
  }

  private viewRound(): AgentViewRound {
    return new AgentViewRound(this.deps.cache, this.deps.controllerAddresses(), this.deps.leadershipLeaseSeconds);
  }

  private pushView(conn: AgentConnection, round = this.viewRound()): void {
    const idx = this.deps.cache.models.get(conn.model);
    const machine = idx?.machines.get(conn.machine);
    if (!idx || !machine) {
      conn.ws.close(4404, "machine removed");
      return;
    }
    const view = round.text(idx, conn.machine);
    if (view === conn.lastView) return;
    conn.lastView = view;
    sendText(conn.ws, `{"t":"push","topic":"view","data":${view}}`);
  }

  /**
   * One slice of a liveness round (all agents at once held the event loop ~0.3 s at 10,000, which a
   * config change arriving then waited for). An agent heard from since its last look is fine; a
   * silent one is pinged; one silent since that ping is dropped (its agent reconnects if it lives).
   */
  private checkLiveness(): void {
    if (this.livenessSlice === 0) {
      this.livenessRound = [...this.byMachine.values()];
      this.livenessBatch = Math.ceil(this.livenessRound.length / LIVENESS_SLICES);
    }
    this.livenessSlice = (this.livenessSlice + 1) % LIVENESS_SLICES;
    for (const conn of this.livenessRound.splice(0, this.livenessBatch)) {
      if (this.byMachine.get(`${conn.model}/${conn.machine}`) !== conn) continue; // gone since the round began
      if (!this.holdsPresence(conn)) this.reassertPresence(conn); // a change the presence watch missed (a cache resync)
      if (conn.heard) {
        conn.heard = false;
        conn.pinged = false;
        continue;
      }
      if (conn.pinged) {
        this.deps.log.warn("agent silent: closing its connection", { model: conn.model, machine: conn.machine });
        conn.ws.terminate();
        continue;
      }
      conn.pinged = true;
      conn.ws.ping();
    }
  }

  /** Re-writes presence keys after the replica's lease was replaced (e.g. it expired during a stall). */
  async refreshPresence(): Promise<void> {
    for (const conn of this.byMachine.values()) await this.putPresence(conn);
  }

  close(): void {
    this.unsubscribe();
    this.unwatchPresence();
    clearInterval(this.livenessTimer);
    for (const conn of this.byMachine.values()) conn.ws.close(1001, "controller stopping");
    this.wss.close();
  }
}
