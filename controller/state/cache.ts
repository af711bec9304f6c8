/**
 * {@link StateCache} follows the store (one consistent read, then watches) and keeps every document
 * parsed and indexed in memory, so status and agent views never touch the store. Each replica runs
 * its own; listeners hear which models changed. A watch that falls behind compaction triggers a
 * fresh read, so the cache never silently misses a change.
 */
import type { HaConfig, KeeperDoc, MemberDoc, ReplicaCloudDoc, SpareDoc } from "../cluster/cluster-docs";
import type { KeyValue, Store, WatchEvent, Watcher } from "../store";
import type { StatusInfo, WorkloadStatus } from "../../api";
import { StewardError } from "../../api";
import type { AccessDoc, ApplicationDoc, ControllerDoc, DataBag, LeaderDoc, MachineDoc, MachineInfoDoc, MachineInstallDoc, ModelDoc, OperatorDoc, PresenceDoc, QueuedTaskDoc, RelationDoc, RevokedTokenDoc, UnitDoc, UnitStatusDoc, UserDoc } from "./documents";
import { CACHED_PREFIXES } from "./keys";

export interface ModelIndex {
  uuid: string;
  model?: ModelDoc;
  apps: Map<string, ApplicationDoc>;
  units: Map<string, UnitDoc>;
  unitStatus: Map<string, UnitStatusDoc>;
  machines: Map<string, MachineDoc>;
  machineInfo: Map<string, MachineInfoDoc>;
  machineInstall: Map<string, MachineInstallDoc>;
  access: Map<string, AccessDoc>;
  presence: Map<string, PresenceDoc>;
  unitsByMachine: Map<string, Set<string>>;
  relations: Map<number, RelationDoc>;
  /** Units that have entered each relation. */
  scope: Map<number, Set<string>>;
  /** Databags by `<relation-id>/unit/<unit>` or `<relation-id>/app/<app>`, with their revision (the version agents compare). */
  relationData: Map<string, { data: DataBag; rev: number }>;
  leaders: Map<string, LeaderDoc>;
  leaderData: Map<string, { data: DataBag; rev: number }>;
  ports: Map<string, string[]>;
  appStatus: Map<string, StatusInfo<WorkloadStatus>>;
  /** Actions queued per unit, by task id. */
  taskQueue: Map<string, Map<number, QueuedTaskDoc>>;
  /** Store revision of the last change to anything in this model. */
  revision: number;
  /**
   * Store revision of the last change an agent's view may depend on: anything but status reports,
   * machine info, presence and access, which 10,000 agents write often and no agent reads.
   */
  viewRevision: number;
}

/** Model documents that no agent view is built from (see {@link ModelIndex.viewRevision}). */
const NOT_IN_AGENT_VIEWS = new Set(["unit-status", "machine-info", "machine-install", "access", "unit-ports", "app-status"]);

export type CacheListener = (changedModels: ReadonlySet<string>, revision: number) => void;

/** Pause before reading the store again after a failed resync. */
const RESYNC_RETRY_MS = 500;

/** In a listener's changed set: the controller cluster (replicas, leader) changed. */
export const CLUSTER_CHANGED = "";

export class StateCache {
  controller?: ControllerDoc;
  tokenKey?: string;
  readonly users = new Map<string, UserDoc>();
  /** Tokens revoked by logout: id → when it expires anyway. */
  readonly revokedTokens = new Map<string, number>();
  /** Bumped on any change to users or revoked tokens, so holders of long-lived sessions re-check them. */
  authVersion = 0;
  readonly modelNames = new Map<string, string>();
  readonly models = new Map<string, ModelIndex>();
  readonly operators = new Map<string, OperatorDoc>();
  /** Controller replicas by id, and the current controller leader. */
  readonly replicas = new Map<string, { id: string; addresses: string[]; since: string }>();
  leader?: { replica: string; addresses: string[]; since: string };
  /** The cluster's documents (controller/cluster/cluster-docs.ts), for status and the quorum keeper. */
  readonly clusterMembers = new Map<string, MemberDoc>();
  readonly spares = new Map<string, SpareDoc>();
  haConfig?: HaConfig;
  keeper?: KeeperDoc;
  replicaCloud?: ReplicaCloudDoc;
  revision = 0;
  private watchers: Watcher[] = [];
  private readonly listeners = new Set<CacheListener>();
  private readonly waiters: { rev: number; resolve: () => void }[] = [];
  private stopped = false;

  protected constructor(private readonly store: Store, private readonly onError: (err: Error) => void) {}

  static async start(store: Store, onError: (err: Error) => void): Promise<StateCache> {
    const c = new StateCache(store, onError);
    await c.load();
    return c;
  }

  private async load(): Promise<void> {
    for (const w of this.watchers) w.close();
    this.watchers = [];
    const res = await this.store.txn({ success: CACHED_PREFIXES.map((prefix) => ({ type: "range" as const, prefix })) });
    // A re-read may change anything, the cluster included (replicas that moved while the watch was
    // down): listeners hear of every model, the ones now gone too, and of the cluster.
    const changed = new Set([CLUSTER_CHANGED, ...this.models.keys()]);
    this.clear();
    for (const kvs of res.responses) for (const kv of kvs) this.apply("put", kv);
    this.revision = res.revision;
    for (const uuid of this.models.keys()) changed.add(uuid);
    // One watch over the whole keyspace, not one per prefix: etcd orders events within a watch
    // only, and `revision` must never run ahead of a change not yet applied.
    this.watchers.push(this.store.watch("/", (events, rev) => this.onEvents(events, rev), {
      fromRevision: res.revision + 1,
      onError: (err) => this.resync(err),
    }));
    this.notify(changed);
  }

  private resync(err: Error): void {
    if (this.stopped) return;
    this.load().catch((e: unknown) => {
      this.onError(new Error(`state cache could not resync after "${err.message}": ${(e as Error).message}; trying again`));
      // Its watch is closed: without another read the cache would follow nothing for good (a read
      // is refused, for instance, while the store has no leader).
      setTimeout(() => this.resync(err), RESYNC_RETRY_MS).unref();
    });
  }

  private clear(): void {
    this.controller = undefined;
    this.tokenKey = undefined;
    this.users.clear();
    this.revokedTokens.clear();
    this.authVersion++;
    this.modelNames.clear();
    this.models.clear();
    this.operators.clear();
    this.replicas.clear();
    this.leader = undefined;
    this.clusterMembers.clear();
    this.spares.clear();
    this.haConfig = undefined;
    this.keeper = undefined;
    this.replicaCloud = undefined;
  }

  private onEvents(events: WatchEvent[], revision: number): void {
    const changed = new Set<string>();
    const viewsChanged = new Set<string>();
    for (const e of events) {
      if (!CACHED_PREFIXES.some((p) => e.kv.key.startsWith(p))) continue;
      const m = this.apply(e.type, e.kv);
      if (m === undefined) continue;
      changed.add(m);
      if (affectsAgentViews(e.kv.key)) viewsChanged.add(m);
    }
    if (revision > this.revision) this.revision = revision;
    for (const uuid of changed) {
      const idx = uuid === CLUSTER_CHANGED ? undefined : this.models.get(uuid);
      if (!idx) continue;
      idx.revision = revision;
      if (viewsChanged.has(uuid)) idx.viewRevision = revision;
    }
    this.notify(changed);
  }

  private notify(changed: Set<string>): void {
    for (const l of this.listeners) {
      try { l(changed, this.revision); } catch (err) { this.onError(err as Error); }
    }
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (this.waiters[i]!.rev <= this.revision) { this.waiters[i]!.resolve(); this.waiters.splice(i, 1); }
    }
  }

  /** Applies one event; returns the uuid of the model it touched, if any. */
  private apply(type: "put" | "delete", kv: KeyValue): string | undefined {
    const parts = kv.key.split("/");
    const doc = type === "put" ? (JSON.parse(kv.value) as unknown) : undefined;
    const set = <T>(map: Map<string, T>, id: string): void => { if (doc === undefined) map.delete(id); else map.set(id, doc as T); };
    switch (parts[1]) {
      case "controller":
        if (parts[2] === "info") this.controller = doc as ControllerDoc | undefined;
        if (parts[2] === "token-key") this.tokenKey = doc as string | undefined;
        return undefined;
      case "users": set(this.users, parts[2]!); this.authVersion++; return undefined;
      case "revoked-tokens":
        if (doc === undefined) this.revokedTokens.delete(parts[2]!); else this.revokedTokens.set(parts[2]!, (doc as RevokedTokenDoc).expiresAt);
        this.authVersion++;
        return undefined;
      case "model-names": if (doc === undefined) this.modelNames.delete(parts[2]!); else this.modelNames.set(parts[2]!, doc as string); return undefined;
      case "operators": set(this.operators, parts[2]!); return undefined;
      case "cluster":
        if (parts[2] === "leader") this.leader = doc as typeof this.leader;
        if (parts[2] === "replicas") set(this.replicas, parts[3]!);
        if (parts[2] === "members") set(this.clusterMembers, parts[3]!);
        if (parts[2] === "spares") set(this.spares, parts[3]!);
        if (parts[2] === "config") this.haConfig = doc as HaConfig | undefined;
        if (parts[2] === "keeper") this.keeper = doc as KeeperDoc | undefined;
        if (parts[2] === "replica-cloud") this.replicaCloud = doc as ReplicaCloudDoc | undefined;
        return CLUSTER_CHANGED;
      case "presence": { const idx = this.index(parts[2]!); set(idx.presence, parts[3]!); return idx.uuid; }
      case "models": {
        const uuid = parts[2]!;
        const idx = this.index(uuid);
        if (parts.length === 3) {
          idx.model = doc as ModelDoc | undefined;
          if (!doc && idx.apps.size === 0 && idx.machines.size === 0) this.models.delete(uuid);
          return uuid;
        }
        const id = parts.slice(4).join("/");
        switch (parts[3]) {
          case "apps": set(idx.apps, id); break;
          case "units": {
            const old = idx.units.get(id);
            if (old) idx.unitsByMachine.get(old.machine)?.delete(id);
            set(idx.units, id);
            const u = doc as UnitDoc | undefined;
            if (u) {
              let s = idx.unitsByMachine.get(u.machine);
              if (!s) idx.unitsByMachine.set(u.machine, (s = new Set()));
              s.add(id);
            }
            break;
          }
          case "unit-status": set(idx.unitStatus, id); break;
          case "machines": set(idx.machines, id); if (!doc) idx.unitsByMachine.delete(id); break;
          case "machine-info": set(idx.machineInfo, id); break;
          case "machine-install": set(idx.machineInstall, id); break;
          case "access": set(idx.access, id); break;
          case "relations": if (doc === undefined) idx.relations.delete(Number(id)); else idx.relations.set(Number(id), doc as RelationDoc); break;
          case "relation-scope": {
            const rel = Number(parts[4]);
            const unit = parts.slice(5).join("/");
            let s = idx.scope.get(rel);
            if (!s) idx.scope.set(rel, (s = new Set()));
            if (doc === undefined) { s.delete(unit); if (s.size === 0) idx.scope.delete(rel); } else s.add(unit);
            break;
          }
          case "relation-data": if (doc === undefined) idx.relationData.delete(id); else idx.relationData.set(id, { data: doc as DataBag, rev: kv.modRevision }); break;
          case "leaders": set(idx.leaders, id); break;
          case "leader-data": if (doc === undefined) idx.leaderData.delete(id); else idx.leaderData.set(id, { data: doc as DataBag, rev: kv.modRevision }); break;
          case "unit-ports": set(idx.ports, id); break;
          case "app-status": set(idx.appStatus, id); break;
          case "task-queue": {
            const unit = `${parts[4]}/${parts[5]}`;
            const task = Number(parts[6]);
            let q = idx.taskQueue.get(unit);
            if (doc !== undefined) { if (!q) idx.taskQueue.set(unit, (q = new Map())); q.set(task, doc as QueuedTaskDoc); }
            else if (q) { q.delete(task); if (q.size === 0) idx.taskQueue.delete(unit); }
            break;
          }
        }
        return uuid;
      }
    }
    return undefined;
  }

  private index(uuid: string): ModelIndex {
    let idx = this.models.get(uuid);
    if (!idx) {
      idx = { uuid, apps: new Map(), units: new Map(), unitStatus: new Map(), machines: new Map(), machineInfo: new Map(), machineInstall: new Map(), access: new Map(), presence: new Map(), unitsByMachine: new Map(),
        relations: new Map(), scope: new Map(), relationData: new Map(), leaders: new Map(), leaderData: new Map(), ports: new Map(), appStatus: new Map(), taskQueue: new Map(),
        revision: this.revision, viewRevision: this.revision };
      this.models.set(uuid, idx);
    }
    return idx;
  }

  /** The model named `nameOrUuid` (alive or dying), if it exists. */
  findModel(nameOrUuid: string): ModelIndex | undefined {
    const uuid = this.modelNames.get(nameOrUuid) ?? nameOrUuid;
    const idx = this.models.get(uuid);
    return idx?.model ? idx : undefined;
  }

  subscribe(listener: CacheListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Resolves once the cache has seen everything the store had when this was called: a read after
   * it sees every write acknowledged before, whichever replica took the write.
   */
  async catchUp(timeoutMs = 5000): Promise<void> {
    const target = await this.store.currentRevision();
    if (target <= this.revision) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new StewardError("unavailable", `this replica's view of the store is behind (at ${this.revision}, store at ${target}); try again or another replica`)), timeoutMs); });
    try { await Promise.race([this.waitForRevision(target), late]); } finally { clearTimeout(timer); }
  }

  /** Resolves once the cache has seen `revision` (e.g. a write's revision), so reads after a write see it. */
  waitForRevision(revision: number): Promise<void> {
    if (revision <= this.revision) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ rev: revision, resolve }));
  }

  stop(): void {
    this.stopped = true;
    for (const w of this.watchers) w.close();
    this.watchers = [];
  }
}

/** Whether a changed key may change some agent's view: a presence key or a status-like model document does not. */
function affectsAgentViews(key: string): boolean {
  const parts = key.split("/");
  if (parts[1] === "presence") return false;
  return !(parts[1] === "models" && NOT_IN_AGENT_VIEWS.has(parts[3] ?? ""));
}
