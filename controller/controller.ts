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
import { X509Certificate, randomUUID } from "node:crypto";
import { readFile, stat, writeFile } from "node:fs/promises";
import { networkInterfaces } from "node:os";
import { dirname, join } from "node:path";
import Fastify from "fastify";
import type { Logger, TransportLimits } from "../api";
import {
  DEFAULT_LOCAL_MACHINES_PER_HOST,
  DEFAULT_OPERATOR_MODEL_QUOTA_BYTES,
  DEFAULT_OPERATOR_QUOTA_BYTES,
  DEFAULT_OPERATOR_RESERVED_FRACTION,
  DEFAULT_OPERATOR_USER_QUOTA_BYTES,
  DEFAULT_UNUSED_OPERATOR_GRACE_SECONDS,
  STEWARD_VERSION,
  STORE_FORMAT,
  StewardError,
  createLogger,
  storeFormatProblem,
} from "../api";
import {
  ClusterControl,
  EtcdMember,
  HA_LEADER_LEASE_SECONDS,
  LeaderElection,
  SINGLE_REPLICA_LEADER_LEASE_SECONDS,
  QuorumMonitor,
  REMOVED_REASON,
  REPLICAS_PREFIX,
  clusterAddresses,
  currentAddress,
  moveToAddress,
  moveToEtcd,
  publishPeerAddress,
} from "./cluster";
import type { HaPending, ReplicaDoc } from "./cluster";
import type { ControllerConfig, LocalMachinesConfig, OperatorStorageConfig } from "./config";
import {
  AGENT_BUNDLE,
  CLI_BUNDLE,
  cliEntry,
  dataFiles,
  isLocalController,
  readControllerConfig,
  releaseSourceOf,
} from "./config";
import type { MachineHost } from "../substrates";
import { DEFAULT_AGENT_USER, defaultAgentsDir, localDirRule } from "../substrates";
import { AgentHub } from "./server/agent-hub";
import type { FailedLoginLimiterOptions } from "./server/failed-login-limiter";
import type { LoginLimiterOptions } from "./access/login-limiter";
import { LoginLimiter } from "./access/login-limiter";
import { installErrorHandling, installWriteGuard, registerHttpApi } from "./server/http-api";
import { installVersionCheck } from "./server/version-check";
import { installIdempotency } from "./server/idempotency";
import { registerDebugLog } from "./server/debug-log-route";
import { registerActionRoutes } from "./server/action-routes";
import { registerModelTransferRoutes } from "./server/model-transfer-routes";
import { registerBackupRoutes } from "./server/backup-routes";
import { DEFAULT_BACKUP_QUOTA, KeptBackups } from "./backup";
import { ModelLogs } from "./state/model-logs";
import { StatusWatchHub } from "./server/status-watch";
import { applyServerLimits, serverOptions } from "./server/transport";
import { installUpgradeRouting } from "./server/upgrades";
import { OwnOrigins } from "./server/own-origins";
import { describeController } from "./server/summaries";
import { LiveFeedHub } from "./dashboard/live-feed";
import { ConsoleSessionHub, findCli } from "./dashboard/console-sessions";
import type { ConsoleSessionOptions } from "./dashboard/console-sessions";
import { registerDashboard } from "./dashboard/static-routes";
import { Sealer } from "./security/sealing";
import { migrationKeysForDataDir } from "./security/transfer-sealing";
import {
  ActionOps,
  CLUSTER_CHANGED,
  CredentialOps,
  DEFAULT_LEADERSHIP_LEASE_SECONDS,
  EnrolmentOps,
  LeadershipOps,
  RelationOps,
  ReleaseOps,
  SecretOps,
  StateCache,
  StateOps,
  UserOps,
  outsideRequest,
} from "./state";
import type { Store } from "./store";
import { LeaseNotFoundError, openStore } from "./store";
import type { EtcdStore } from "./store/etcd";
import type { KubernetesProvisionerOptions } from "./provisioner/kubernetes-units";
import { registerEnrolRoutes } from "./server/enrol-routes";
import { SshProvisioner } from "./provisioner/ssh-machines";
import {
  MigrationLogSender,
  MigrationStaging,
  installMigrationGuards,
  registerMigrationSourceRoutes,
  registerMigrationTargetRoutes,
} from "./migration";
import { WorkerGroup, leaderScoped, periodic, service } from "./workers";
import { leaderWork } from "./leader-work";
import { AgentReleases } from "./server/agent-releases";
import { ReleaseSource } from "./releases/release-source";

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
  /**
   * How often the leader lists cloud instances to record their state, in ms.
   * @default 10000
   */
  cloudPollIntervalMs?: number;
  /**
   * Seconds every secret rotate policy stands for, and the retry of a rotation its hook did not
   * make (tests: rotation within seconds). @default each policy's own interval (hourly: 3600 s …), retry 300 s
   */
  secretRotateSeconds?: number;
  /** Overrides the configured listen port (0: any free port). */
  port?: number;
  /**
   * Seconds a unit leadership claim lasts; agents renew at half of it.
   * @default 60 (Juju's: 30 s of guaranteed leadership)
   */
  leadershipLeaseSeconds?: number;
  /**
   * Seconds a user token issued at login lives (at most 24 hours; tests use short ones).
   * @default 86400
   */
  tokenLifetimeSeconds?: number;
  /** Failed user logins allowed per user and per source address (see FailedLoginLimiter). */
  failedLogins?: FailedLoginLimiterOptions;
  /** Agent logins per second and burst (reconnect storms are spread out). @default 200 and 200 */
  agentLogins?: LoginLimiterOptions;
  /** Migration validations (agents at this controller as a target) per second and burst. @default 500 and 500 */
  migrationValidations?: LoginLimiterOptions;
  /** Overrides some of the request transport's bounds. @default TRANSPORT_LIMITS (api/limits.ts) */
  transport?: Partial<TransportLimits>;
  /**
   * Stops this controller and starts it again from its data directory (main.js does); needed to
   * move from the embedded store into etcd. Absent: enable-ha on the embedded store is refused.
   */
  requestRestart?: () => void;
  /** Called when this replica finds it was replaced while away and stands down for good. */
  onStoodDown?: (why: string) => void;
  /** Overrides the configured operator storage (quota, grace before unused ones are deleted). */
  operators?: OperatorStorageConfig;
  /**
   * The CLI the dashboard's console pane runs.
   * @default the build's dist/cli/main.js, else the bundle shipped beside the controller's (cli-bundle/main.js)
   */
  cliMain?: string;
  /** Overrides the console pane's limits (consoles per user and per replica, idle time, output buffered). */
  consoles?: Pick<ConsoleSessionOptions, "maxPerUser" | "maxSessions" | "idleMs" | "maxBufferedBytes">;
  /** Overrides the configured local machines' settings (tests keep agents' directories in their own). */
  localMachines?: LocalMachinesConfig;
  /**
   * Starts local agents as this process's user even when that is root. Only for a program embedding
   * the controller whose agent entry is a launcher that needs root itself (a test starting agents in
   * container images with buildah); controller.json cannot set it.
   */
  localAgentsAsRoot?: boolean;
  /** Kubernetes models: how often pods are listed (ms) and the agent container's probes (tests shorten both). */
  kubernetes?: Pick<KubernetesProvisionerOptions, "pollIntervalMs" | "probes">;
}

/** This replica was removed from the cluster (replaced while it was away): it must not serve. */
export class StoodDownError extends StewardError {
  constructor(why: string) {
    super(
      "conflict",
      `this controller replica stands down: ${why}. To reuse the host, remove its data directory and add it as a spare`,
    );
  }
}

/** TTL of this replica's presence lease; its agents show as lost this long after it dies. */
const REPLICA_LEASE_TTL_S = 10;

export class Controller {
  private state: ControllerState = "INITIALIZED";
  /** An HA replica's id is its etcd member name (stable across restarts); otherwise one per process. */
  private readonly replicaId: string;
  private leaseId = "";
  private hub?: AgentHub;
  private cache?: StateCache;
  private ownAddresses: string[] = [];
  private election?: LeaderElection;
  private lastStoreContact = Date.now();
  private readonly routes: { method: string; url: string }[] = [];
  /**
   * Everything this replica runs, in layers stopped newest first (see run()): the presence keep-alive,
   * the HTTP server, the quorum monitor, the socket hubs, the log sender, and the leader-scoped group
   * (the election and the leader's workers). The store, cache and etcd member are not workers: they
   * close after it.
   */
  private readonly workers: WorkerGroup;
  private shuttingDown?: Promise<void>;
  private settle!: { resolve: () => void; reject: (err: unknown) => void };
  /**
   * Settles when this replica stops: resolves after stop(), rejects (after the replica has shut down)
   * when it failed: a worker threw. main.ts then exits non-zero, so its service manager starts it again.
   */
  readonly done: Promise<void>;

  /** Every replica's API addresses, this one's first (what agents and clients are given). */
  private get addresses(): string[] {
    return this.cache ? clusterAddresses(this.cache, this.ownAddresses) : this.ownAddresses;
  }

  protected constructor(
    private readonly opts: ControllerOptions,
    private readonly config: ControllerConfig,
    private readonly store: Store,
    private readonly log: Logger,
    private readonly tls: { caCert: string; cert: string; key: string },
    private readonly etcd?: EtcdMember,
  ) {
    this.replicaId = config.member?.name ?? randomUUID();
    this.workers = new WorkerGroup({ name: "controller", log });
    this.done = new Promise<void>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    this.done.catch(() => undefined); // an embedding program may not listen
  }

  static async start(opts: ControllerOptions): Promise<Controller> {
    const log = opts.log ?? createLogger();
    const { dataDir } = opts;
    const file = (f: string): string => join(dataDir, f);
    if (await exists(file(dataFiles.stoodDown)))
      throw new StoodDownError(await readFile(file(dataFiles.stoodDown), "utf8"));
    let config = await readControllerConfig(dataDir);
    // A replica whose host came back with another address moves to it first (certificate included).
    const moved = await currentAddress(config);
    if (moved) config = await moveToAddress(dataDir, config, moved, log);
    const [caCert, cert, key] = await Promise.all(
      [dataFiles.caCert, dataFiles.serverCert, dataFiles.serverKey].map((f) => readFile(file(f), "utf8")),
    );
    const tls = { caCert: caCert!, cert: cert!, key: key! };
    if (config.store.backend === "embedded" && (await exists(file(dataFiles.haPending)))) {
      config = await moveToEtcd(
        dataDir,
        config,
        JSON.parse(await readFile(file(dataFiles.haPending), "utf8")) as HaPending,
        tls,
        log,
      );
    }
    let etcd: EtcdMember | undefined;
    let store: Store;
    let c: Controller | undefined;
    if (config.member) {
      etcd = new EtcdMember({
        member: config.member,
        dataDir,
        log,
        tls: {
          caFile: file(dataFiles.caCert),
          certFile: file(dataFiles.serverCert),
          keyFile: file(dataFiles.serverKey),
        },
        onRemoved: () => {
          void c?.standDown(REMOVED_REASON);
        },
      });
      await etcd.start();
      try {
        store = await openManagedStore(config, tls, etcd, log);
      } catch (err) {
        await etcd.stop();
        if (etcd.wasRemoved) await markStoodDown(dataDir, REMOVED_REASON);
        throw err;
      }
    } else {
      store = await openStore(config.store, file(dataFiles.store), tls);
    }
    c = new Controller(opts, config, store, log, tls, etcd);
    try {
      await c.run();
    } catch (err) {
      c.setState("FAILED");
      await c.shutdown().catch(() => undefined);
      throw err;
    }
    c.workers.failed.catch((err: unknown) => c.fail(err));
    return c;
  }

  /** Operator storage settings: options over controller.json over the defaults in api/limits.ts. */
  private get operatorStorage(): Required<OperatorStorageConfig> {
    const set = { ...this.config.operators, ...this.opts.operators };
    const quotaBytes = set.quotaBytes ?? DEFAULT_OPERATOR_QUOTA_BYTES;
    return {
      quotaBytes,
      reservedBytes: set.reservedBytes ?? Math.floor(quotaBytes * DEFAULT_OPERATOR_RESERVED_FRACTION),
      modelQuotaBytes: set.modelQuotaBytes ?? DEFAULT_OPERATOR_MODEL_QUOTA_BYTES,
      userQuotaBytes: set.userQuotaBytes ?? DEFAULT_OPERATOR_USER_QUOTA_BYTES,
      unusedGraceSeconds: set.unusedGraceSeconds ?? DEFAULT_UNUSED_OPERATOR_GRACE_SECONDS,
    };
  }

  /** Local machines' settings: options over controller.json over the defaults. */
  private get localMachines(): LocalMachinesConfig {
    return { ...this.config.localMachines, ...this.opts.localMachines };
  }

  /** Where the agents this controller starts on its own host go, and as whom they run (each kind's machine broker is given it). */
  private machineHost(controllerUuid: string): MachineHost {
    const { dataDir } = this.opts;
    return {
      machinesDir: join(dataDir, dataFiles.machines),
      agentEntry: this.opts.agentEntry ?? AGENT_BUNDLE.main,
      agents: {
        user: this.localMachines.agentUser ?? DEFAULT_AGENT_USER,
        dir: this.localMachines.agentsDir ?? defaultAgentsDir(controllerUuid),
        dataDir,
        asController: this.opts.localAgentsAsRoot ?? false,
      },
    };
  }

  getState(): ControllerState {
    return this.state;
  }
  get apiAddresses(): string[] {
    return [...this.ownAddresses];
  }
  get isLeader(): boolean {
    return this.election?.isLeader ?? false;
  }
  get id(): string {
    return this.replicaId;
  }
  get name(): string {
    return this.config.name;
  }
  get agentConnections(): number {
    return this.hub?.connectionCount ?? 0;
  }
  /** Every REST route this replica serves (what a hostile-input test must cover). */
  get httpRoutes(): { method: string; url: string }[] {
    return [...this.routes];
  }

  private setState(s: ControllerState): void {
    this.log.info("controller state changed", { from: this.state, to: s });
    this.state = s;
  }

  private async run(): Promise<void> {
    const { dataDir } = this.opts;
    const cache = (this.cache = await StateCache.start(this.store, (err) =>
      this.log.error("state cache error", { err }),
    ));
    if (!cache.controller)
      throw new StewardError(
        "invalid-request",
        `the store in ${dataDir} holds no controller: it was not initialised (steward bootstrap)`,
      );
    // A store this build cannot read is refused before anything reads it, rather than misread.
    const unreadable = unreadableStore(cache.controller.schemaVersion);
    if (unreadable) throw unreadable;
    const own = cache.clusterMembers.get(this.replicaId);
    if (own?.state === "removed") {
      await markStoodDown(
        dataDir,
        `it was removed from the cluster at ${own.removedAt ?? "?"} (${own.reason ?? "replaced"})`,
      );
      throw new StoodDownError(`it was removed from the cluster (${own.reason ?? "replaced"})`);
    }
    const membership = this.membership();
    // Only a replica that runs its own etcd member can have moved (an external etcd has none).
    if (membership && this.config.member) await publishPeerAddress(this.store, membership, this.config, this.log);
    cache.subscribe((changed) => {
      if (!changed.has(CLUSTER_CHANGED)) return;
      if (cache.clusterMembers.get(this.replicaId)?.state === "removed")
        void this.standDown("the cluster removed it (replaced while away)");
      const unreadable = cache.controller && unreadableStore(cache.controller.schemaVersion);
      if (unreadable) this.fail(unreadable);
    });
    const ops = new StateOps(this.store);
    const sealer = await Sealer.forDataDir(dataDir);
    const secretRotateSeconds = this.opts.secretRotateSeconds;
    const secrets = new SecretOps(
      this.store,
      sealer,
      secretRotateSeconds ? { rotateSeconds: secretRotateSeconds } : {},
    );
    const relations = new RelationOps(this.store, undefined, secrets);
    const leadership = new LeadershipOps(this.store);
    const credentials = new CredentialOps(this.store, sealer);
    const leadershipLeaseSeconds =
      this.opts.leadershipLeaseSeconds ?? this.config.leadershipLeaseSeconds ?? DEFAULT_LEADERSHIP_LEASE_SECONDS;
    await this.renewLease();
    // Started now: what is added from here on is stopped by shutdown() even if this run fails midway.
    this.workers.start();
    // The first layer, so the last to stop: presence holds until shutdown() revokes the lease.
    // One keep-alive at a time (a periodic worker's passes never overlap): two in flight when a lapsed
    // lease is noticed would both renew it, and their presence writes could land in either order,
    // leaving the key on the lease that is not kept alive (it then vanished 10 s later, and the
    // replica never showed as up again).
    this.workers.add(
      periodic("presence-keep-alive", (REPLICA_LEASE_TTL_S * 1000) / 4, () => this.keepLeaseAlive(), {
        log: this.log,
        failure: "replica lease keep-alive failed",
        failureLevel: "warn",
      }),
    );

    const { key, cert, caCert } = this.tls;
    const transport = this.opts.transport ?? {};
    const http = Fastify(serverOptions({ key, cert }, transport));
    // Stopped after everything added later: requests in flight may use any of it.
    this.workers.add(service("http-server", () => http.close()));
    applyServerLimits(http, transport);
    installErrorHandling(http, this.log);
    installVersionCheck(http);
    http.addHook("onRoute", (r) => {
      for (const method of [r.method].flat()) this.routes.push({ method, url: r.url });
    });
    const machineHost = this.machineHost(cache.controller.uuid);
    const ssh = new SshProvisioner({
      cache,
      ops,
      host: machineHost,
      log: this.log,
      caCert,
      controllerAddresses: () => this.addresses,
    });
    // Stopped before the server: its installs end (told as interrupted) while requests still get answers.
    this.workers.add(ssh);
    // The restarted controller must not run inside the enable-ha request that asked for it.
    const requestRestart = this.opts.requestRestart;
    const cluster = new ClusterControl({
      dataDir,
      config: this.config,
      store: this.store,
      cache,
      tls: this.tls,
      sealer,
      ...(membership ? { membership } : {}),
      ...(requestRestart ? { requestRestart: () => outsideRequest(requestRestart) } : {}),
    });
    const quorumMonitor = membership ? new QuorumMonitor({ membership }) : undefined;
    if (quorumMonitor) {
      quorumMonitor.start();
      this.workers.add(service("quorum-monitor", () => quorumMonitor.stop()));
    }
    installWriteGuard(http, () => !(quorumMonitor?.cutOff ?? false));
    installMigrationGuards(http, cache);
    installIdempotency(http, { store: this.store, cache, log: this.log });
    const caFingerprint = new X509Certificate(caCert).fingerprint256;
    const localPolicy = {
      enabled: isLocalController(this.config) || this.localMachines.enabled === true,
      maxPerHost: this.localMachines.maxPerHost ?? DEFAULT_LOCAL_MACHINES_PER_HOST,
    };
    const releaseSource = releaseSourceOf(this.config, dataDir);
    registerHttpApi(http, {
      cache,
      ops,
      relations,
      credentials,
      secrets,
      ssh,
      cluster,
      log: this.log,
      controllerAddresses: () => this.addresses,
      caFingerprint,
      caCert,
      users: new UserOps(this.store),
      operatorQuotas: this.operatorStorage,
      ...(this.opts.tokenLifetimeSeconds ? { tokenLifetimeMs: this.opts.tokenLifetimeSeconds * 1000 } : {}),
      ...(this.opts.failedLogins ? { failedLogins: this.opts.failedLogins } : {}),
      localMachines: localPolicy,
      agentReleases: new AgentReleases({
        own: dirname(AGENT_BUNDLE.main),
        ops: new ReleaseOps(this.store),
        cache,
        bootstrapKeys: this.config.releases?.keys ?? [],
        ...(releaseSource
          ? {
              source: new ReleaseSource(
                releaseSource,
                new ReleaseOps(this.store),
                () => cache.releaseKeys?.keys ?? releaseSource.keys,
              ),
            }
          : {}),
      }),
    });
    const logs = new ModelLogs();
    // A destroyed model's records go with it.
    cache.subscribe((changed) => {
      for (const m of changed) if (m !== CLUSTER_CHANGED && !cache.models.get(m)?.model) logs.forget(m);
    });
    registerDebugLog(http, { cache, logs });
    const actions = new ActionOps(this.store);
    registerActionRoutes(http, { cache, actions });
    const checkLocalDir = localDirRule(join(dataDir, dataFiles.machines));
    registerModelTransferRoutes(http, {
      cache,
      ops,
      store: this.store,
      leadershipLeaseSeconds,
      operatorQuotaBytes: this.operatorStorage.quotaBytes,
      checkLocalDir,
      sealer,
    });
    registerMigrationSourceRoutes(http, { cache, store: this.store, sealer });
    const staging = new MigrationStaging({
      store: this.store,
      importDeps: {
        store: this.store,
        leaseSeconds: leadershipLeaseSeconds,
        putOperator: (b) => ops.operators.upload(b, { quotaBytes: this.operatorStorage.quotaBytes }),
        checkLocalDir,
        sealer,
      },
      migrationKeys: await migrationKeysForDataDir(dataDir),
    });
    registerMigrationTargetRoutes(http, {
      cache,
      staging,
      logs,
      ...(this.opts.migrationValidations ? { validations: this.opts.migrationValidations } : {}),
    });
    const logSender = new MigrationLogSender({
      cache,
      store: this.store,
      sealer,
      logs,
      replicaId: this.replicaId,
      log: this.log,
    });
    registerBackupRoutes(http, {
      cache,
      store: this.store,
      dataDir,
      kept: new KeptBackups(this.store, { ...DEFAULT_BACKUP_QUOTA, ...this.config.backups }),
    });
    registerEnrolRoutes(http, {
      cache,
      enrolments: new EnrolmentOps(this.store),
      sealer,
      caCert,
      controllerAddresses: () => this.addresses,
    });
    const hub = (this.hub = new AgentHub({
      cache,
      ops,
      relations,
      leadership,
      actions,
      leadershipLeaseSeconds,
      limiter: new LoginLimiter(this.opts.agentLogins),
      store: this.store,
      log: this.log,
      leaseId: () => this.leaseId,
      replicaId: this.replicaId,
      controllerAddresses: () => this.addresses,
      transport,
      logs,
      secrets,
    }));
    const watchHub = new StatusWatchHub(cache, transport);
    const liveFeeds = new LiveFeedHub({
      cache,
      log: this.log,
      controllerInfo: () => describeController(cache, cluster, this.addresses, caFingerprint),
      unitFailure: (model, unit) => ops.reports.unitFailure(model, unit),
    });
    const cliMain = this.opts.cliMain ?? findCli([cliEntry(), CLI_BUNDLE]);
    const consoles = new ConsoleSessionHub({
      cache,
      log: this.log,
      controllerName: this.config.name,
      caCert,
      controllerAddresses: () => this.addresses,
      homesDir: join(dataDir, dataFiles.consoles),
      ...(cliMain ? { cliMain } : {}),
      ...this.opts.consoles,
    });
    // Before the server: their sockets end first, or its close would wait for them.
    this.workers.add(
      service("agent-hub", () => hub.close()),
      service("status-watch", () => watchHub.close()),
      service("live-feed", () => liveFeeds.close()),
      service("consoles", () => consoles.close()),
    );
    registerDashboard(http, { cache, log: this.log });
    installUpgradeRouting(http.server, {
      agents: hub,
      watches: watchHub,
      live: liveFeeds,
      consoles,
      origins: new OwnOrigins(() => this.addresses, cert),
      log: this.log,
    });
    const port = this.opts.port ?? this.config.listen.port;
    await http.listen({ host: this.config.listen.host, port }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "EADDRINUSE")
        throw new StewardError(
          "unavailable",
          `port ${port} on ${this.config.listen.host} is in use: stop what uses it or bootstrap with --port`,
          { reason: "port-in-use" },
        );
      throw err;
    });
    const bound = http.server.address();
    const boundPort = typeof bound === "object" && bound ? bound.port : port;
    this.ownAddresses = this.config.advertise ?? advertised(this.config.listen.host, boundPort);
    await writeFile(join(dataDir, dataFiles.apiAddress), this.ownAddresses.join("\n") + "\n");

    await this.publishReplica();
    this.workers.add(logSender);
    // Singleton work (cleanup, machines, migrations, quorum) runs on the elected leader only, with
    // fenced writes; the last layer, so the first to stop: the campaign ends and the term's passes
    // drain (10 s at most each layer: a local pass in flight would start agents after the shutdown's
    // callers reaped them, but one stuck on a store without quorum must not hold the shutdown).
    const election = (this.election = new LeaderElection({
      store: this.store,
      replicaId: this.replicaId,
      addresses: () => this.ownAddresses,
      log: this.log,
      ttlSeconds: this.store.backend === "etcd" ? HA_LEADER_LEASE_SECONDS : SINGLE_REPLICA_LEADER_LEASE_SECONDS,
    }));
    this.workers.add(
      leaderScoped(
        election,
        leaderWork({
          replica: this.replicaId,
          dataDir,
          config: this.config,
          cache,
          sealer,
          caCert,
          controllerAddresses: () => this.addresses,
          log: this.log,
          logs,
          staging,
          membership,
          local: { host: machineHost, enabled: localPolicy.enabled },
          ...(this.opts.cloudPollIntervalMs ? { cloudPollIntervalMs: this.opts.cloudPollIntervalMs } : {}),
          ...(secretRotateSeconds ? { secretRotateSeconds } : {}),
          ...(this.opts.kubernetes ? { kubernetes: this.opts.kubernetes } : {}),
          unusedOperatorGraceSeconds: this.operatorStorage.unusedGraceSeconds,
        }),
        { log: this.log },
      ),
    );
    this.setState("RUNNING");
    this.log.info("controller listening", {
      name: this.config.name,
      addresses: this.addresses.join(","),
      store: this.store.backend,
    });
  }

  private async renewLease(): Promise<void> {
    this.leaseId = (await this.store.grantLease(REPLICA_LEASE_TTL_S)).id;
  }

  /** This replica and its addresses, under its presence lease (gone within the TTL if it dies). */
  private async publishReplica(): Promise<void> {
    await this.store.put(
      `${REPLICAS_PREFIX}${this.replicaId}`,
      JSON.stringify({
        id: this.replicaId,
        addresses: this.ownAddresses,
        since: new Date().toISOString(),
        version: STEWARD_VERSION,
        storeFormat: STORE_FORMAT,
      } satisfies ReplicaDoc),
      { lease: this.leaseId },
    );
  }

  /** A new presence lease, with this replica and its agents marked present under it. */
  private async republishPresence(): Promise<void> {
    await this.renewLease();
    await this.publishReplica();
    await this.hub?.refreshPresence();
  }

  /**
   * Checks, with a read the etcd leader answers, that our presence still stands under our lease.
   * etcd 3.4 can get this wrong after a partition (etcd-io/etcd#15247): a member that led before it
   * was cut off may go on answering keep-alives from a lessor it no longer leads, so the real leader
   * lets the lease lapse while we are told it lives. Then we take a new lease, and restart our own
   * member so that it stops answering for a leadership it lost.
   */
  private async checkPresence(): Promise<void> {
    const own = await this.store.get(`${REPLICAS_PREFIX}${this.replicaId}`);
    if (own?.lease === this.leaseId) return;
    this.log.warn("this replica's presence lapsed although its lease was renewed; taking a new lease", {
      lease: this.leaseId,
    });
    await this.republishPresence();
    this.etcd?.restart("it renewed a lease that its cluster let lapse (etcd-io/etcd#15247)");
  }

  private membership(): ReturnType<EtcdStore["membership"]> | undefined {
    return this.store.backend === "etcd" ? (this.store as EtcdStore).membership() : undefined;
  }

  private async keepLeaseAlive(): Promise<void> {
    try {
      await this.store.keepAlive(this.leaseId);
      this.lastStoreContact = Date.now();
      this.hub?.setStoreReachable(true);
      await this.checkPresence();
    } catch (err) {
      // Cut off from a store majority for most of a lease: let agents move to a replica that is not.
      if (Date.now() - this.lastStoreContact > (REPLICA_LEASE_TTL_S * 1000) / 2) this.hub?.setStoreReachable(false);
      if (!(err instanceof LeaseNotFoundError)) throw err;
      // The lease lapsed (a long stall or a partition): take a new one and re-mark our agents present.
      this.log.info("the replica's presence lease lapsed; taking a new one", { lease: this.leaseId });
      await this.republishPresence();
    }
  }

  /**
   * A planned stop of the member that leads etcd hands raft leadership to a voter that stays, so
   * the cluster does not sit out an election timeout with no leader (best effort, bounded).
   */
  private async handOffEtcdLeadership(): Promise<void> {
    const membership = this.membership();
    const own = this.config.member?.name;
    if (!membership || !own) return;
    try {
      const [{ leaderId }, members] = await Promise.all([membership.status(), membership.list()]);
      const me = members.find((m) => m.name === own);
      const heir = members.find((m) => m.name !== own && !m.learner && m.name);
      if (!me || me.id !== leaderId || !heir) return;
      await membership.moveLeader(heir.id, { timeoutMs: 2000 });
      this.log.info("handed etcd leadership on before stopping", { to: heir.name });
    } catch (err) {
      this.log.warn("could not hand etcd leadership on before stopping; the others will elect a leader", { err });
    }
  }

  /** Stops for good: this replica was replaced while away. Nothing in the cluster is touched. */
  private async standDown(why: string): Promise<void> {
    if (this.state === "STOPPING" || this.state === "STOPPED") return;
    this.log.error("standing down", { why, replica: this.replicaId });
    await markStoodDown(this.opts.dataDir, why);
    await this.stop();
    this.opts.onStoodDown?.(why);
  }

  /** Stops serving and closes the store. Agents stay running; they reconnect when a controller is back. */
  async stop(): Promise<void> {
    if (this.state === "STOPPED" || this.state === "STOPPING") return;
    this.setState("STOPPING");
    await this.shutdown();
    this.setState("STOPPED");
    this.settle.resolve();
  }

  /** Once, however often asked (a failure and a stop may both ask). */
  private shutdown(): Promise<void> {
    return (this.shuttingDown ??= this.closeAll());
  }

  private async closeAll(): Promise<void> {
    // Every worker and service, newest layer first (see run()): the leader's work, the log sender,
    // the hubs, the HTTP server, the keep-alive. They all use the store, which closes after them.
    await this.workers.stop();
    if (this.leaseId) await this.store.revokeLease(this.leaseId).catch(() => undefined);
    this.cache?.stop();
    await this.handOffEtcdLeadership();
    await this.store.close();
    await this.etcd?.stop();
  }

  /** A worker threw: stop serving, then say so through {@link Controller.done}. */
  private fail(err: unknown): void {
    if (this.state !== "RUNNING") return;
    this.log.error("a controller worker failed; the controller stops", { err });
    this.setState("FAILED");
    void this.shutdown()
      .catch(() => undefined)
      .finally(() => this.settle.reject(err));
  }
}

/** The error a replica stops with on a store format its release does not read, or undefined. */
function unreadableStore(format: number): StewardError | undefined {
  const problem = storeFormatProblem(format);
  return problem ? new StewardError("unavailable", problem, { reason: "store-format-unreadable" }) : undefined;
}

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );
const markStoodDown = (dataDir: string, why: string): Promise<void> =>
  writeFile(join(dataDir, dataFiles.stoodDown), `${why}\n`);

/**
 * Opens the store through this replica's own etcd member, waiting as long as it takes: a replica
 * that starts while the cluster has no majority, or as a learner not yet promoted, waits rather than
 * failing (its service manager would only start it again).
 */
async function openManagedStore(
  config: ControllerConfig,
  tls: { caCert: string; cert: string; key: string },
  etcd: EtcdMember,
  log: Logger,
): Promise<Store> {
  let lastLog = 0;
  for (;;) {
    if (etcd.wasRemoved) throw new StoodDownError(REMOVED_REASON);
    try {
      return await openStore(config.store, "", tls);
    } catch (err) {
      if (Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        log.warn("waiting for the store: this replica's etcd member has no quorum yet or is still a learner", {
          err: (err as Error).message,
        });
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

function advertised(host: string, port: number): string[] {
  if (host !== "0.0.0.0" && host !== "::") return [`${host.includes(":") ? `[${host}]` : host}:${port}`];
  const ips: string[] = [];
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) ips.push(`${a.address}:${port}`);
  return [...ips, `127.0.0.1:${port}`];
}
