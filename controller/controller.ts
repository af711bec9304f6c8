/**
 * {@link Controller} is one controller replica: store, state cache, HTTPS/WebSocket API, agent hub,
 * substrates and the cleaner, with an explicit lifecycle.
 *
 * ```ts
 * const c = await Controller.start({ dataDir });
 * // … serve …
 * await c.stop();
 * ```
 */
import { randomUUID } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import Fastify from "fastify";
import type { FastifyInstance } from "fastify";
import type { Logger } from "../api";
import { StewardError, createLogger } from "../api";
import { Cleaner } from "./cleaner";
import { LeaderElection, REPLICAS_PREFIX, clusterAddresses, fencedStore } from "./cluster";
import type { ControllerConfig } from "./config";
import { AGENT_BUNDLE, dataFiles, readControllerConfig } from "./config";
import { AgentHub } from "./server/agent-hub";
import type { LoginLimiterOptions } from "./server/login-limiter";
import { LoginLimiter } from "./server/login-limiter";
import { installErrorHandling, registerHttpApi } from "./server/http-api";
import { StatusWatchHub } from "./server/status-watch";
import { DEFAULT_LEADERSHIP_LEASE_SECONDS, LeadershipOps, RelationOps, StateCache, StateOps } from "./state";
import type { Store } from "./store";
import { LeaseNotFoundError, openStore } from "./store";
import { LocalSubstrate } from "./substrates/local";
import { SshSubstrate } from "./substrates/ssh";

export type ControllerState = "INITIALIZED" | "RUNNING" | "STOPPING" | "STOPPED" | "FAILED";

export interface ControllerOptions {
  /** The controller's data directory (see config.ts for its layout). */
  dataDir: string;
  /** @default a logger writing to stderr */
  log?: Logger;
  /**
   * The agent entry script the local substrate starts.
   * @default the agent bundle (dist/agent-bundle/main.js), the same file SSH installs ship
   */
  agentEntry?: string;
  /** Overrides the configured listen port (0: any free port). */
  port?: number;
  /**
   * Seconds a unit leadership claim lasts; agents renew at half of it.
   * @default 60 (Juju's: 30 s of guaranteed leadership)
   */
  leadershipLeaseSeconds?: number;
  /** Agent logins per second and burst (reconnect storms are spread out). @default 200 and 200 */
  agentLogins?: LoginLimiterOptions;
}

/** TTL of this replica's presence lease; its agents show as lost this long after it dies. */
const REPLICA_LEASE_TTL_S = 10;

export class Controller {
  private state: ControllerState = "INITIALIZED";
  private readonly replicaId = randomUUID();
  private leaseId = "";
  private keepAliveTimer?: NodeJS.Timeout;
  private http?: FastifyInstance;
  private hub?: AgentHub;
  private watchHub?: StatusWatchHub;
  private local?: LocalSubstrate;
  private cleaner?: Cleaner;
  private cache?: StateCache;
  private ownAddresses: string[] = [];
  private election?: LeaderElection;

  /** Every replica's API addresses, this one's first (what agents and clients are given). */
  private get addresses(): string[] { return this.cache ? clusterAddresses(this.cache, this.ownAddresses) : this.ownAddresses; }

  protected constructor(
    private readonly opts: ControllerOptions,
    private readonly config: ControllerConfig,
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  static async start(opts: ControllerOptions): Promise<Controller> {
    const log = opts.log ?? createLogger();
    const config = await readControllerConfig(opts.dataDir);
    const store = await openStore(config.store, join(opts.dataDir, dataFiles.store));
    const c = new Controller(opts, config, store, log);
    try {
      await c.run();
    } catch (err) {
      c.setState("FAILED");
      await c.shutdown().catch(() => undefined);
      throw err;
    }
    return c;
  }

  getState(): ControllerState { return this.state; }
  get apiAddresses(): string[] { return [...this.ownAddresses]; }
  get isLeader(): boolean { return this.election?.isLeader ?? false; }
  get id(): string { return this.replicaId; }
  get name(): string { return this.config.name; }
  get agentConnections(): number { return this.hub?.connectionCount ?? 0; }

  private setState(s: ControllerState): void {
    this.log.info("controller state changed", { from: this.state, to: s });
    this.state = s;
  }

  private async run(): Promise<void> {
    const { dataDir } = this.opts;
    const cache = (this.cache = await StateCache.start(this.store, (err) => this.log.error("state cache error", { err })));
    if (!cache.controller) throw new StewardError("invalid-request", `the store in ${dataDir} holds no controller: it was not initialised (steward bootstrap)`);
    const ops = new StateOps(this.store);
    const relations = new RelationOps(this.store);
    const leadership = new LeadershipOps(this.store);
    const leadershipLeaseSeconds = this.opts.leadershipLeaseSeconds ?? this.config.leadershipLeaseSeconds ?? DEFAULT_LEADERSHIP_LEASE_SECONDS;
    await this.renewLease();
    this.keepAliveTimer = setInterval(() => { this.keepLeaseAlive().catch((err: unknown) => this.log.warn("replica lease keep-alive failed", { err })); }, (REPLICA_LEASE_TTL_S * 1000) / 4);
    this.keepAliveTimer.unref();

    const [key, cert, caCert] = await Promise.all([dataFiles.serverKey, dataFiles.serverCert, dataFiles.caCert].map((f) => readFile(join(dataDir, f), "utf8")));
    const http = (this.http = Fastify({ https: { key: key!, cert: cert! }, bodyLimit: 1024 * 1024, logger: false, forceCloseConnections: true }));
    installErrorHandling(http, this.log);
    const ssh = new SshSubstrate({ cache, ops, log: this.log, caCert: caCert!, controllerAddresses: () => this.addresses });
    registerHttpApi(http, { cache, ops, relations, ssh, log: this.log, controllerAddresses: () => this.addresses });
    this.hub = new AgentHub({ cache, ops, relations, leadership, leadershipLeaseSeconds, limiter: new LoginLimiter(this.opts.agentLogins), store: this.store, log: this.log, leaseId: () => this.leaseId, replicaId: this.replicaId, controllerAddresses: () => this.addresses });
    this.watchHub = new StatusWatchHub(cache);
    http.server.on("upgrade", (req, socket, head: Buffer) => {
      const path = (req.url ?? "").split("?")[0]!;
      const watch = /^\/v1\/models\/([^/]+)\/watch$/.exec(path);
      if (path === "/v1/agent") this.hub!.handleUpgrade(req, socket, head);
      else if (watch) this.watchHub!.handleUpgrade(req, socket, head, decodeURIComponent(watch[1]!));
      else socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
    });
    const port = this.opts.port ?? this.config.listen.port;
    await http.listen({ host: this.config.listen.host, port }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "EADDRINUSE") throw new StewardError("unavailable", `port ${port} on ${this.config.listen.host} is in use: stop what uses it or bootstrap with --port`);
      throw err;
    });
    const bound = http.server.address();
    const boundPort = typeof bound === "object" && bound ? bound.port : port;
    this.ownAddresses = this.config.advertise ?? advertised(this.config.listen.host, boundPort);
    await writeFile(join(dataDir, dataFiles.apiAddress), this.ownAddresses.join("\n") + "\n");

    await this.publishReplica();
    // Singleton work (cleanup, local machines) runs on the elected leader only, with fenced writes.
    const election = (this.election = new LeaderElection({
      store: this.store, replicaId: this.replicaId, addresses: () => this.ownAddresses, log: this.log,
      onElected: () => {
        const fenced = fencedStore(this.store, () => election.fence());
        const leaderOps = new StateOps(fenced);
        this.local = new LocalSubstrate({
          machinesDir: join(dataDir, dataFiles.machines),
          agentEntry: this.opts.agentEntry ?? AGENT_BUNDLE.main,
          caCert: caCert!, controllerAddresses: () => this.addresses, cache, ops: leaderOps, log: this.log,
        });
        this.cleaner = new Cleaner(cache, leaderOps, new RelationOps(fenced), this.log);
      },
      onDeposed: () => { this.local?.close(); this.cleaner?.close(); this.local = undefined; this.cleaner = undefined; },
    }));
    election.start();
    this.setState("RUNNING");
    this.log.info("controller listening", { name: this.config.name, addresses: this.addresses.join(","), store: this.store.backend });
  }

  private async renewLease(): Promise<void> {
    this.leaseId = (await this.store.grantLease(REPLICA_LEASE_TTL_S)).id;
  }

  /** This replica and its addresses, under its presence lease (gone within the TTL if it dies). */
  private async publishReplica(): Promise<void> {
    await this.store.put(`${REPLICAS_PREFIX}${this.replicaId}`, JSON.stringify({ id: this.replicaId, addresses: this.ownAddresses, since: new Date().toISOString() }), { lease: this.leaseId });
  }

  private async keepLeaseAlive(): Promise<void> {
    try {
      await this.store.keepAlive(this.leaseId);
    } catch (err) {
      if (!(err instanceof LeaseNotFoundError)) throw err;
      // The lease lapsed (a long stall): take a new one and re-mark our agents present.
      await this.renewLease();
      await this.publishReplica();
      await this.hub?.refreshPresence();
    }
  }

  /** Stops serving and closes the store. Agents stay running; they reconnect when a controller is back. */
  async stop(): Promise<void> {
    if (this.state === "STOPPED" || this.state === "STOPPING") return;
    this.setState("STOPPING");
    await this.shutdown();
    this.setState("STOPPED");
  }

  private async shutdown(): Promise<void> {
    clearInterval(this.keepAliveTimer);
    await this.election?.stop();
    this.local?.close();
    this.cleaner?.close();
    this.hub?.close();
    this.watchHub?.close();
    await this.http?.close();
    if (this.leaseId) await this.store.revokeLease(this.leaseId).catch(() => undefined);
    this.cache?.stop();
    await this.store.close();
  }
}

function advertised(host: string, port: number): string[] {
  if (host !== "0.0.0.0" && host !== "::") return [`${host.includes(":") ? `[${host}]` : host}:${port}`];
  const ips: string[] = [];
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) ips.push(`${a.address}:${port}`);
  return [...ips, `127.0.0.1:${port}`];
}
