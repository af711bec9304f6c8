/**
 * {@link StateCache} follows the store (one consistent read, then watches) and keeps every document
 * parsed and indexed in memory, so status and agent views never touch the store. Each replica runs
 * its own; listeners hear which models changed. A watch that falls behind compaction triggers a
 * fresh read, so the cache never silently misses a change.
 */
import type {
  ControllerLeaderDoc,
  HaConfig,
  KeeperDoc,
  MemberDoc,
  ReplicaCloudDoc,
  ReplicaDoc,
  SpareDoc,
} from "./cluster-docs";
import type { KeyValue, Store, WatchEvent, Watcher } from "../store";
import type { ControllerUpgrade, StatusInfo, WorkloadStatus } from "../../api";
import { StewardError } from "../../api";
import type {
  AccessDoc,
  ApplicationDoc,
  ControllerDoc,
  RestoreEpochDoc,
  DataBag,
  LeaderDoc,
  MachineDoc,
  MachineInfoDoc,
  MachineInstallDoc,
  MigrationDoc,
  ModelDoc,
  OperatorDoc,
  PresenceDoc,
  QueuedTaskDoc,
  RelationDoc,
  ReleaseDoc,
  ReleaseKeysDoc,
  ReleaseSourceDoc,
  StoreMigrationDoc,
  UnitDoc,
  UnitStatusDoc,
  UserDoc,
} from "./documents";
import type { ImportOrigin } from "./imported-revisions";
import { servedVersion } from "./imported-revisions";
import type { StorageDoc, StoragePoolDoc } from "./storage-docs";
import type { SecretDoc } from "./secret-docs";
import { CACHED_PREFIXES } from "./keys";
import { KIND, keyOf } from "./registry";
import { classifyKey, queueId, scopeId } from "./registry";
import type { BoundKindName, DocOfKind } from "./doc-kinds";
import { decode, decodeKind, docs } from "./doc-kinds";
import { useStoreFormat } from "./store-format-in-use";

/** A databag as kept: `rev` is the version served to agents, `modRevision` the store's. */
export interface VersionedBag {
  data: DataBag;
  rev: number;
  modRevision: number;
}

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
  /**
   * Databags by `<relation-id>/unit/<unit>` or `<relation-id>/app/<app>`, with their version (what
   * agents compare: the store revision, or the source's for an imported model; imported-revisions.ts).
   */
  relationData: Map<string, VersionedBag>;
  leaders: Map<string, LeaderDoc>;
  leaderData: Map<string, VersionedBag>;
  /** Set when the model was imported: how its databags' versions map from the source's. */
  importOrigin?: ImportOrigin;
  ports: Map<string, string[]>;
  /** Storage instances by id (`data/0`). */
  storage: Map<string, StorageDoc>;
  /** Storage pools users made, by name (the substrate's built-in ones are its contract's). */
  storagePools: Map<string, StoragePoolDoc>;
  /** Secrets' metadata by id (their content is never cached). */
  secrets: Map<string, SecretDoc>;
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

export type CacheListener = (changedModels: ReadonlySet<string>, revision: number) => void;

const RESTORE_KEY = keyOf(KIND["restore-epoch"], "");

/** Pause before reading the store again after a failed resync. */
const RESYNC_RETRY_MS = 500;

/** In a listener's changed set: the controller cluster (replicas, leader) changed. */
export const CLUSTER_CHANGED = "";

export class StateCache {
  controller?: ControllerDoc;
  /** Set once the store was restored from a backup (documents.ts). */
  restore?: RestoreEpochDoc;
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
  readonly replicas = new Map<string, ReplicaDoc>();
  leader?: ControllerLeaderDoc;
  /** The cluster's documents (state/cluster-docs.ts), for status and the quorum keeper. */
  readonly clusterMembers = new Map<string, MemberDoc>();
  readonly spares = new Map<string, SpareDoc>();
  haConfig?: HaConfig;
  keeper?: KeeperDoc;
  /** The last in-place upgrade's progress (steward upgrade-controller). */
  upgrade?: ControllerUpgrade;
  /** The leader's migration of the store to this build's format, when one ran. */
  storeMigration?: StoreMigrationDoc;
  replicaCloud?: ReplicaCloudDoc;
  /** Signed releases held for every replica, by version, and what the release source's last look refused. */
  readonly releases = new Map<string, ReleaseDoc>();
  releaseSource?: ReleaseSourceDoc;
  /** The keys trusted to sign releases, once a superuser changed them. */
  releaseKeys?: ReleaseKeysDoc;
  /** Each model's last migration, by model uuid (kept after the model moved: redirects read it). */
  readonly migrations = new Map<string, MigrationDoc>();
  revision = 0;
  private watchers: Watcher[] = [];
  private readonly listeners = new Set<CacheListener>();
  private readonly presenceListeners = new Set<(model: string, machine: string) => void>();
  private readonly waiters: { rev: number; resolve: () => void }[] = [];
  private stopped = false;

  protected constructor(
    private readonly store: Store,
    private readonly onError: (err: Error) => void,
  ) {}

  static async start(store: Store, onError: (err: Error) => void): Promise<StateCache> {
    const c = new StateCache(store, onError);
    await c.load();
    return c;
  }

  private async load(): Promise<void> {
    for (const w of this.watchers) w.close();
    this.watchers = [];
    const res = await this.store.txn({
      success: CACHED_PREFIXES.map((prefix) => ({ type: "range" as const, prefix })),
    });
    // A re-read may change anything, the cluster included (replicas that moved while the watch was
    // down): listeners hear of every model, the ones now gone too, and of the cluster.
    const changed = new Set([CLUSTER_CHANGED, ...this.models.keys()]);
    this.clear();
    for (const kvs of res.responses) for (const kv of kvs) this.apply("put", kv);
    this.revision = res.revision;
    for (const uuid of this.models.keys()) changed.add(uuid);
    // One watch over the whole keyspace, not one per prefix: etcd orders events within a watch
    // only, and `revision` must never run ahead of a change not yet applied.
    this.watchers.push(
      this.store.watch("/", (events, rev) => this.onEvents(events, rev), {
        fromRevision: res.revision + 1,
        onError: (err) => this.resync(err),
      }),
    );
    this.notify(changed);
  }

  private resync(err: Error): void {
    if (this.stopped) return;
    this.load().catch((e: unknown) => {
      this.onError(
        new Error(`state cache could not resync after "${err.message}": ${(e as Error).message}; trying again`),
      );
      // Its watch is closed: without another read the cache would follow nothing for good (a read
      // is refused, for instance, while the store has no leader).
      setTimeout(() => this.resync(err), RESYNC_RETRY_MS).unref();
    });
  }

  private clear(): void {
    this.controller = undefined;
    this.restore = undefined;
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
    this.upgrade = undefined;
    this.storeMigration = undefined;
    this.replicaCloud = undefined;
    this.releases.clear();
    this.releaseSource = undefined;
    this.releaseKeys = undefined;
    this.migrations.clear();
  }

  private onEvents(events: WatchEvent[], revision: number): void {
    // The store was restored under us (its revisions may repeat ones we saw): read it all again.
    const restored = events.find(
      (e) =>
        e.kv.key === RESTORE_KEY &&
        (e.type === "delete" || decode(docs.restoreEpoch, e.kv.value).clusterId !== this.restore?.clusterId),
    );
    if (restored || revision <= this.revision) {
      this.resync(
        new Error(
          restored
            ? "the store was restored from a backup"
            : `the store's revision went back (${revision} after ${this.revision})`,
        ),
      );
      return;
    }
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
      try {
        l(changed, this.revision);
      } catch (err) {
        this.onError(err as Error);
      }
    }
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (this.waiters[i]!.rev <= this.revision) {
        this.waiters[i]!.resolve();
        this.waiters.splice(i, 1);
      }
    }
  }

  /** Applies one event; returns the uuid of the model it touched, if any. The registry says what the key is. */
  private apply(type: "put" | "delete", kv: KeyValue): string | undefined {
    const c = classifyKey(kv.key);
    if (!c) return undefined;
    const id = c.id;
    // The document as its kind's bound type (doc-kinds.ts), in its current shape; undefined when deleted.
    const docOf = <N extends BoundKindName>(name: N): DocOfKind[N] | undefined =>
      type === "put" ? decodeKind(name, kv.value) : undefined;
    const set = <T>(map: Map<string, T>, key: string, doc: T | undefined): void => {
      if (doc === undefined) map.delete(key);
      else map.set(key, doc);
    };
    const name = c.kind.name;
    switch (name) {
      // Its format decides which shapes this replica writes (store-format-in-use.ts).
      case "controller-info":
        this.controller = docOf(name);
        if (this.controller) useStoreFormat(this.controller.schemaVersion);
        return CLUSTER_CHANGED;
      case "store-migration":
        this.storeMigration = docOf(name);
        return CLUSTER_CHANGED;
      case "restore-epoch":
        this.restore = docOf(name);
        return CLUSTER_CHANGED;
      case "token-key":
        this.tokenKey = docOf(name);
        return undefined;
      case "user":
        set(this.users, id, docOf(name));
        this.authVersion++;
        return undefined;
      case "revoked-token": {
        const doc = docOf(name);
        if (doc === undefined) this.revokedTokens.delete(id);
        else this.revokedTokens.set(id, doc.expiresAt);
        this.authVersion++;
        return undefined;
      }
      case "model-name":
        set(this.modelNames, id, docOf(name));
        return undefined;
      case "operator":
        set(this.operators, id, docOf(name));
        return undefined;
      case "cluster-leader":
        this.leader = docOf(name);
        return CLUSTER_CHANGED;
      case "cluster-replica":
        set(this.replicas, id, docOf(name));
        return CLUSTER_CHANGED;
      case "cluster-member":
        set(this.clusterMembers, id, docOf(name));
        return CLUSTER_CHANGED;
      case "cluster-spare":
        set(this.spares, id, docOf(name));
        return CLUSTER_CHANGED;
      case "cluster-config":
        this.haConfig = docOf(name);
        return CLUSTER_CHANGED;
      case "cluster-keeper":
        this.keeper = docOf(name);
        return CLUSTER_CHANGED;
      case "cluster-upgrade":
        this.upgrade = docOf(name);
        return CLUSTER_CHANGED;
      case "cluster-replica-cloud":
        this.replicaCloud = docOf(name);
        return CLUSTER_CHANGED;
      // The controller's view shows the releases available.
      case "release":
        set(this.releases, id, docOf(name));
        return CLUSTER_CHANGED;
      case "release-source":
        this.releaseSource = docOf(name);
        return CLUSTER_CHANGED;
      case "release-keys":
        this.releaseKeys = docOf(name);
        return CLUSTER_CHANGED;
      // A migration changes what the model's agents are told (pause, report, switch).
      case "migration":
        set(this.migrations, id, docOf(name));
        return this.models.has(id) ? id : undefined;
      case "presence": {
        const idx = this.index(c.model!);
        set(idx.presence, id, docOf(name));
        for (const l of this.presenceListeners) l(idx.uuid, id);
        return idx.uuid;
      }
      default:
        break;
    }
    // Every key under a model's own prefix touches the model, kept here or not (sequences, failures).
    if (c.kind.path[0] !== "models") return undefined;
    const uuid = c.model!;
    const idx = this.index(uuid);
    switch (name) {
      case "model":
        idx.model = docOf(name);
        if (!idx.model && idx.apps.size === 0 && idx.machines.size === 0) this.models.delete(uuid);
        break;
      case "app":
        set(idx.apps, id, docOf(name));
        break;
      case "unit": {
        const old = idx.units.get(id);
        if (old) idx.unitsByMachine.get(old.machine)?.delete(id);
        const u = docOf(name);
        set(idx.units, id, u);
        if (u) {
          let s = idx.unitsByMachine.get(u.machine);
          if (!s) idx.unitsByMachine.set(u.machine, (s = new Set()));
          s.add(id);
        }
        break;
      }
      case "unit-status":
        set(idx.unitStatus, id, docOf(name));
        break;
      case "machine": {
        const m = docOf(name);
        set(idx.machines, id, m);
        if (!m) idx.unitsByMachine.delete(id);
        break;
      }
      case "machine-info":
        set(idx.machineInfo, id, docOf(name));
        break;
      case "machine-install":
        set(idx.machineInstall, id, docOf(name));
        break;
      case "access":
        set(idx.access, id, docOf(name));
        break;
      case "relation": {
        const doc = docOf(name);
        if (doc === undefined) idx.relations.delete(Number(id));
        else idx.relations.set(Number(id), doc);
        break;
      }
      case "scope": {
        const { relation: rel, unit } = scopeId(id);
        let s = idx.scope.get(rel);
        if (!s) idx.scope.set(rel, (s = new Set()));
        if (type === "delete") {
          s.delete(unit);
          if (s.size === 0) idx.scope.delete(rel);
        } else s.add(unit);
        break;
      }
      case "relation-data": {
        const data = docOf(name);
        if (data === undefined) idx.relationData.delete(id);
        else
          idx.relationData.set(id, {
            data,
            rev: servedVersion(idx.importOrigin, id, kv.modRevision),
            modRevision: kv.modRevision,
          });
        break;
      }
      case "leader":
        set(idx.leaders, id, docOf(name));
        break;
      case "leader-data": {
        const data = docOf(name);
        if (data === undefined) idx.leaderData.delete(id);
        else
          idx.leaderData.set(id, {
            data,
            rev: servedVersion(idx.importOrigin, `leader/${id}`, kv.modRevision),
            modRevision: kv.modRevision,
          });
        break;
      }
      case "ports":
        set(idx.ports, id, docOf(name));
        break;
      case "storage":
        set(idx.storage, id, docOf(name));
        break;
      case "storage-pool":
        set(idx.storagePools, id, docOf(name));
        break;
      case "secret":
        set(idx.secrets, id, docOf(name));
        break;
      case "app-status":
        set(idx.appStatus, id, docOf(name));
        break;
      case "task-queue": {
        const { unit, task } = queueId(id);
        const doc = docOf(name);
        let q = idx.taskQueue.get(unit);
        if (doc !== undefined) {
          if (!q) idx.taskQueue.set(unit, (q = new Map()));
          q.set(task, doc);
        } else if (q) {
          q.delete(task);
          if (q.size === 0) idx.taskQueue.delete(unit);
        }
        break;
      }
      case "imported-revisions": {
        const doc = docOf(name);
        idx.importOrigin = doc === undefined ? undefined : { ...doc, importRevision: kv.modRevision };
        // Bags read before this document in the same load are served again at their source versions.
        for (const [bag, e] of idx.relationData) e.rev = servedVersion(idx.importOrigin, bag, e.modRevision);
        for (const [app, e] of idx.leaderData) e.rev = servedVersion(idx.importOrigin, `leader/${app}`, e.modRevision);
        break;
      }
      default:
        break;
    }
    return uuid;
  }

  private index(uuid: string): ModelIndex {
    let idx = this.models.get(uuid);
    if (!idx) {
      idx = {
        uuid,
        apps: new Map(),
        units: new Map(),
        unitStatus: new Map(),
        machines: new Map(),
        machineInfo: new Map(),
        machineInstall: new Map(),
        access: new Map(),
        presence: new Map(),
        unitsByMachine: new Map(),
        relations: new Map(),
        scope: new Map(),
        relationData: new Map(),
        leaders: new Map(),
        leaderData: new Map(),
        ports: new Map(),
        storage: new Map(),
        storagePools: new Map(),
        secrets: new Map(),
        appStatus: new Map(),
        taskQueue: new Map(),
        revision: this.revision,
        viewRevision: this.revision,
      };
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

  /** Called, as the change is applied, with each agent presence key written or deleted (the listener must only schedule work). */
  onPresenceChange(listener: (model: string, machine: string) => void): () => void {
    this.presenceListeners.add(listener);
    return () => this.presenceListeners.delete(listener);
  }

  /**
   * Resolves once the cache has seen everything the store had when this was called: a read after
   * it sees every write acknowledged before, whichever replica took the write.
   */
  async catchUp(timeoutMs = 5000): Promise<void> {
    const target = await this.store.currentRevision();
    if (target <= this.revision) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new StewardError(
              "deadline-exceeded",
              `this replica's view of the store is behind (at ${this.revision}, store at ${target}); try again or another replica`,
            ),
          ),
        timeoutMs,
      );
    });
    try {
      await Promise.race([this.waitForRevision(target), late]);
    } finally {
      clearTimeout(timer);
    }
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

/** Whether a changed key may change some agent's view: presence and status-like model documents do not (the registry marks them). */
function affectsAgentViews(key: string): boolean {
  return classifyKey(key)?.kind.notInAgentViews !== true;
}
