/**
 * The dashboard's live feed (`/v1/live`, see api/dashboard.ts): one WebSocket per browser, on which
 * the page names the topics it shows and the controller pushes their changes. A model's changes
 * are computed once per change round for every page that follows the model, by comparing the
 * renderer's unit and machine views by identity (they are the same objects while unchanged), and
 * sent as patches. A feed lasts only as long as its session: it is closed when the token expires
 * or is revoked, and a topic ends when the user's access to its model does.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import type WebSocket from "ws";
import type { ApplicationStatusView, ControllerInfo, LiveTopic, Logger, ModelPatch, UnitDetails } from "../../api";
import { MAX_LIVE_TOPICS, StewardError, WATCH_CLOSE_CODES, notFound, parseLiveTopic } from "../../api";
import type { ModelIndex, StateCache, StatusParts } from "../state";
import {
  CLUSTER_CHANGED,
  buildUnitDetails,
  modelStatusParts,
  renderModelStatus,
  secretInfoOf,
  storageInfoOf,
} from "../state";
import type { Principal } from "../access/auth";
import { atTokenExpiry, authenticate, requireModelAccess, requireReadKept, requireUser } from "../access/auth";
import { acceptAuthenticatedSocket } from "../server/accept-socket";
import { answerHandshakeErrors } from "../server/raw-answer";
import { modelSummaries, overviewOf } from "../server/summaries";

type User = Extract<Principal, { kind: "user" }>;

export interface LiveFeedOptions {
  cache: StateCache;
  controllerInfo: () => Promise<ControllerInfo>;
  /** The hook that failed and its output, for a unit in error (kept in the store, not the cache). */
  unitFailure: (model: string, unit: string) => Promise<UnitDetails["failure"]>;
  log: Logger;
  /**
   * Changes to a topic are sent at most this often (a burst of unit updates costs one round).
   * @default 150
   */
  intervalMs?: number;
  /**
   * How often a followed controller topic re-reads the cluster (etcd's own view changes without a store write).
   * @default 5000
   */
  controllerRefreshMs?: number;
  /**
   * Feeds this replica serves at once; more are refused with 503.
   * @default 1000
   */
  maxFeeds?: number;
  /**
   * Bytes a feed may have waiting for a slow browser; beyond it the feed is closed (the page reconnects and starts afresh).
   * @default 8 MiB
   */
  maxBufferedBytes?: number;
}

/** Requests from a page are small: a list of at most eight topics. */
const MAX_REQUEST_BYTES = 4096;
/** Closed because the browser did not keep up; the page reconnects. */
const TOO_SLOW = 4408;

/** A model followed by one or more feeds, and what they were last sent. */
interface ModelGroup {
  feeds: Set<Feed>;
  parts: StatusParts;
  appJson: Map<string, string>;
  integrationsJson: string;
}

interface TopicEntry {
  kind: string;
  uuid?: string;
  unit?: string;
  last?: string;
  reads?: number;
}

class Feed {
  readonly topics = new Map<LiveTopic, TopicEntry>();
  lastModels?: string;
  stopExpiry?: () => void;

  constructor(
    readonly ws: WebSocket,
    public principal: User,
    readonly headers: IncomingMessage["headers"],
  ) {}

  send(text: string): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(text);
  }
}

export class LiveFeedHub {
  private readonly wss: WebSocketServer;
  private readonly feeds = new Set<Feed>();
  private readonly groups = new Map<string, ModelGroup>();
  private readonly pending = new Set<string>();
  private roundTimer?: NodeJS.Timeout;
  private controllerTimer?: NodeJS.Timeout;
  /** The last controller answer as sent: whole to superusers, its overview to everyone else. */
  private lastController?: { whole: string; overview: string };
  private refreshing = false;
  private authVersion: number;
  private readonly unsubscribe: () => void;

  constructor(private readonly o: LiveFeedOptions) {
    this.wss = new WebSocketServer({ noServer: true, maxPayload: MAX_REQUEST_BYTES });
    answerHandshakeErrors(this.wss);
    this.authVersion = o.cache.authVersion;
    this.unsubscribe = o.cache.subscribe((changed) => {
      const authChanged = o.cache.authVersion !== this.authVersion;
      this.authVersion = o.cache.authVersion;
      for (const uuid of changed) this.pending.add(uuid);
      if (authChanged) this.pending.add(CLUSTER_CHANGED);
      this.schedule();
    });
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    acceptAuthenticatedSocket(
      this.wss,
      this.o.cache,
      { req, socket, head },
      (authenticated) => {
        const principal = requireUser(authenticated);
        if (this.feeds.size >= (this.o.maxFeeds ?? 1000))
          throw new StewardError(
            "unavailable",
            `this controller already serves ${this.feeds.size} live feeds, its limit; try again later`,
            { reason: "at-capacity" },
          );
        return principal;
      },
      (ws, principal) => {
        const feed = new Feed(ws, principal, { authorization: req.headers.authorization, cookie: req.headers.cookie });
        this.feeds.add(feed);
        feed.stopExpiry = atTokenExpiry(
          principal.token.expiresAt,
          () => this.recheck(feed),
          () => this.feeds.has(feed),
        );
        ws.on("close", () => this.drop(feed));
        ws.on("message", (data, isBinary) => {
          try {
            this.request(feed, isBinary ? undefined : data.toString());
          } catch (err) {
            this.o.log.error("unexpected error serving a live feed request", { err: (err as Error).message });
            ws.close(1011, "internal error; see the controller log");
          }
        });
      },
    );
  }

  /** Replaces the feed's topics with those asked for; new ones get their state at once. */
  private request(feed: Feed, text: string | undefined): void {
    let asked: unknown;
    try {
      asked = text === undefined ? undefined : (JSON.parse(text) as { subscribe?: unknown }).subscribe;
    } catch {
      asked = undefined;
    }
    if (!Array.isArray(asked) || asked.length > MAX_LIVE_TOPICS || !asked.every((t) => parseLiveTopic(t))) {
      feed.send(
        JSON.stringify({
          error: {
            code: "invalid-request",
            message: `send {"subscribe": [topics]}: at most ${MAX_LIVE_TOPICS} of "models", "controller", "model:<name>", "storage:<model>", "secrets:<model>", "unit:<model>/<app>/<n>"`,
            details: {},
          },
        }),
      );
      feed.ws.close(1008, "malformed request");
      return;
    }
    const wanted = new Set(asked as string[]);
    for (const topic of [...feed.topics.keys()]) if (!wanted.has(topic)) this.leave(feed, topic);
    for (const topic of wanted) if (!feed.topics.has(topic)) this.join(feed, topic);
    this.followController();
  }

  private join(feed: Feed, topic: LiveTopic): void {
    const t = parseLiveTopic(topic)!;
    try {
      if (t.kind === "models") {
        feed.topics.set(topic, { kind: "models" });
        this.sendModels(feed);
      } else if (t.kind === "controller") {
        feed.topics.set(topic, { kind: "controller" });
        if (this.lastController) this.sendController(feed, this.lastController);
        else this.refreshController();
      } else {
        const idx = this.o.cache.findModel(t.model);
        if (!idx?.model) throw notFound("model", t.model);
        requireModelAccess(feed.principal, idx, "read", t.model);
        if (t.kind === "model") {
          feed.topics.set(topic, { kind: "model", uuid: idx.uuid });
          this.groupOf(idx).feeds.add(feed);
          feed.send(`{"topic":${JSON.stringify(topic)},"status":${renderModelStatus(this.o.cache, idx)}}`);
        } else if (t.kind === "storage" || t.kind === "secrets") {
          const entry: TopicEntry = { kind: t.kind, uuid: idx.uuid };
          feed.topics.set(topic, entry);
          if (t.kind === "storage") this.sendStorage(feed, topic, entry, idx);
          else this.sendSecrets(feed, topic, entry, idx);
        } else {
          const entry: TopicEntry = { kind: "unit", uuid: idx.uuid, unit: t.unit };
          feed.topics.set(topic, entry);
          this.sendUnit(feed, topic, entry, idx);
        }
      }
    } catch (err) {
      if (!StewardError.isInstance(err)) throw err;
      feed.topics.delete(topic);
      feed.send(JSON.stringify({ topic, error: err.toWire() }));
    }
  }

  private leave(feed: Feed, topic: LiveTopic): void {
    const entry = feed.topics.get(topic);
    feed.topics.delete(topic);
    if (entry?.kind === "model" && entry.uuid) {
      const g = this.groups.get(entry.uuid);
      g?.feeds.delete(feed);
      if (g && g.feeds.size === 0) this.groups.delete(entry.uuid);
    }
  }

  private drop(feed: Feed): void {
    feed.stopExpiry?.();
    for (const topic of [...feed.topics.keys()]) this.leave(feed, topic);
    this.feeds.delete(feed);
    this.followController();
  }

  private groupOf(idx: ModelIndex): ModelGroup {
    let g = this.groups.get(idx.uuid);
    if (!g) {
      const parts = modelStatusParts(this.o.cache, idx);
      g = {
        feeds: new Set(),
        parts,
        appJson: new Map([...parts.applications].map(([n, a]) => [n, JSON.stringify(a)])),
        integrationsJson: JSON.stringify(parts.integrations),
      };
      this.groups.set(idx.uuid, g);
    }
    return g;
  }

  private schedule(): void {
    if (this.roundTimer) return;
    this.roundTimer = setTimeout(() => {
      this.roundTimer = undefined;
      try {
        this.round();
      } catch (err) {
        this.o.log.error("live feed round failed", { err: (err as Error).message });
      }
    }, this.o.intervalMs ?? 150);
  }

  /** One round: re-check who may see what, then send every changed topic. */
  private round(): void {
    const changed = new Set(this.pending);
    this.pending.clear();
    if (changed.has(CLUSTER_CHANGED)) for (const feed of [...this.feeds]) this.recheck(feed);
    for (const uuid of changed) {
      if (uuid === CLUSTER_CHANGED) continue;
      for (const feed of [...this.feeds]) this.recheckModel(feed, uuid);
      const g = this.groups.get(uuid);
      if (g) this.sendPatch(uuid, g);
    }
    for (const feed of this.feeds) {
      if (feed.ws.bufferedAmount > (this.o.maxBufferedBytes ?? 8 * 1024 * 1024)) {
        feed.ws.close(TOO_SLOW, "the browser did not keep up; reconnect");
        continue;
      }
      // Any change may move a model's counts or access: the list goes again if its text changed.
      if (feed.topics.has("models")) this.sendModels(feed);
      for (const [topic, entry] of feed.topics) {
        if (!["unit", "storage", "secrets"].includes(entry.kind) || !changed.has(entry.uuid!)) continue;
        const idx = this.o.cache.models.get(entry.uuid!);
        if (!idx?.model) continue;
        if (entry.kind === "unit") this.sendUnit(feed, topic, entry, idx);
        else if (entry.kind === "storage") this.sendStorage(feed, topic, entry, idx);
        else this.sendSecrets(feed, topic, entry, idx);
      }
    }
    if (changed.has(CLUSTER_CHANGED)) this.refreshController();
  }

  private sendPatch(uuid: string, g: ModelGroup): void {
    const idx = this.o.cache.models.get(uuid);
    if (!idx?.model) {
      const gone = JSON.stringify({ code: "not-found", message: "the model was destroyed", details: {} });
      for (const feed of g.feeds) {
        for (const [topic, entry] of feed.topics)
          if (entry.uuid === uuid) {
            feed.topics.delete(topic);
            feed.send(`{"topic":${JSON.stringify(topic)},"error":${gone}}`);
          }
      }
      this.groups.delete(uuid);
      return;
    }
    const next = modelStatusParts(this.o.cache, idx);
    const patch: Omit<ModelPatch, "timestamp"> = { model: next.model };
    let any = false;
    const apps: Record<string, Omit<ApplicationStatusView, "units"> | null> = {};
    const appJson = new Map<string, string>();
    for (const [name, a] of next.applications) {
      const json = JSON.stringify(a);
      appJson.set(name, json);
      if (g.appJson.get(name) !== json) {
        const { units: _, ...head } = a;
        apps[name] = head;
        any = true;
      }
    }
    for (const name of g.appJson.keys())
      if (!appJson.has(name)) {
        apps[name] = null;
        any = true;
      }
    if (Object.keys(apps).length) patch.applications = apps;
    const units = diffByIdentity(g.parts.units, next.units);
    if (units) {
      patch.units = units;
      any = true;
    }
    const machines = diffByIdentity(g.parts.machines, next.machines);
    if (machines) {
      patch.machines = machines;
      any = true;
    }
    const integrationsJson = JSON.stringify(next.integrations);
    if (integrationsJson !== g.integrationsJson) {
      patch.integrations = next.integrations;
      any = true;
    }
    const headerChanged = JSON.stringify(next.model) !== JSON.stringify(g.parts.model);
    g.parts = next;
    g.appJson = appJson;
    g.integrationsJson = integrationsJson;
    if (!any && !headerChanged) return;
    const text = JSON.stringify({ ...patch, timestamp: new Date().toISOString() });
    const topic = `model:${idx.model.name}`;
    for (const feed of g.feeds) feed.send(`{"topic":${JSON.stringify(topic)},"patch":${text}}`);
  }

  private sendModels(feed: Feed): void {
    const text = JSON.stringify(modelSummaries(this.o.cache, feed.principal));
    if (text === feed.lastModels) return;
    feed.lastModels = text;
    feed.send(`{"topic":"models","models":${text}}`);
  }

  /** The model's storage instances, sent when the list (or any instance's unit, status or location) changed. */
  private sendStorage(feed: Feed, topic: LiveTopic, entry: TopicEntry, idx: ModelIndex): void {
    const list = [...idx.storage.values()]
      .map(storageInfoOf)
      .sort((a, b) => a.name.localeCompare(b.name) || storageNo(a.id) - storageNo(b.id));
    const text = JSON.stringify(list);
    if (text === entry.last) return;
    entry.last = text;
    feed.send(`{"topic":${JSON.stringify(topic)},"storage":${text}}`);
  }

  /** The model's secrets' metadata (never a value: the cache holds none), sent when the list changed. */
  private sendSecrets(feed: Feed, topic: LiveTopic, entry: TopicEntry, idx: ModelIndex): void {
    const list = [...idx.secrets.values()].map(secretInfoOf).sort((a, b) => a.uri.localeCompare(b.uri));
    const text = JSON.stringify(list);
    if (text === entry.last) return;
    entry.last = text;
    feed.send(`{"topic":${JSON.stringify(topic)},"secrets":${text}}`);
  }

  private sendUnit(feed: Feed, topic: LiveTopic, entry: TopicEntry, idx: ModelIndex): void {
    let details: UnitDetails;
    try {
      details = buildUnitDetails(idx, entry.unit!);
    } catch (err) {
      if (!StewardError.isInstance(err)) throw err;
      feed.topics.delete(topic);
      feed.send(JSON.stringify({ topic, error: err.toWire() }));
      return;
    }
    const send = (d: UnitDetails): void => {
      if (feed.topics.get(topic) !== entry) return; // left meanwhile
      const text = JSON.stringify(d);
      if (text === entry.last) return;
      entry.last = text;
      feed.send(`{"topic":${JSON.stringify(topic)},"unit":${text}}`);
    };
    if (details.agent.current !== "error") {
      send(details);
      return;
    }
    // A failure is read from the store; only the newest read may answer (an older one could land later).
    const read = (entry.reads = (entry.reads ?? 0) + 1);
    this.o.unitFailure(idx.uuid, details.name).then(
      (failure) => {
        if (read === entry.reads) send(failure ? { ...details, failure } : details);
      },
      (err: unknown) => this.o.log.warn("live feed could not read a unit's failure", { err: (err as Error).message }),
    );
  }

  /** Keeps a timer re-reading the cluster while any feed shows the controller. */
  private followController(): void {
    const wanted = [...this.feeds].some((f) => f.topics.has("controller"));
    if (wanted && !this.controllerTimer) {
      this.controllerTimer = setInterval(() => this.refreshController(), this.o.controllerRefreshMs ?? 5000);
      this.controllerTimer.unref();
    } else if (!wanted && this.controllerTimer) {
      clearInterval(this.controllerTimer);
      this.controllerTimer = undefined;
      this.lastController = undefined;
    }
  }

  private refreshController(): void {
    if (this.refreshing || ![...this.feeds].some((f) => f.topics.has("controller"))) return;
    this.refreshing = true;
    this.o
      .controllerInfo()
      .then(
        (info) => {
          const now = { whole: JSON.stringify(info), overview: JSON.stringify(overviewOf(info)) };
          const before = this.lastController;
          if (now.whole === before?.whole) return;
          this.lastController = now;
          for (const feed of this.feeds) {
            if (feed.topics.has("controller") && (feed.principal.superuser || now.overview !== before?.overview))
              this.sendController(feed, now);
          }
        },
        (err: unknown) => this.o.log.warn("live feed could not read the cluster", { err: (err as Error).message }),
      )
      .finally(() => {
        this.refreshing = false;
      });
  }

  private sendController(feed: Feed, texts: { whole: string; overview: string }): void {
    feed.send(`{"topic":"controller","controller":${feed.principal.superuser ? texts.whole : texts.overview}}`);
  }

  /** Closes the feed if its session no longer holds; ends topics whose access was taken away. */
  private recheck(feed: Feed): void {
    try {
      feed.principal = requireUser(authenticate(this.o.cache, feed.headers));
    } catch (err) {
      this.drop(feed);
      feed.ws.close(
        WATCH_CLOSE_CODES.tokenEnded,
        Buffer.from(StewardError.isInstance(err) ? err.message : "session ended")
          .subarray(0, 123)
          .toString(),
      );
      return;
    }
    for (const entry of feed.topics.values()) if (entry.uuid) this.recheckModel(feed, entry.uuid);
  }

  private recheckModel(feed: Feed, uuid: string): void {
    const idx = this.o.cache.models.get(uuid);
    if (!idx?.model) return; // a destroyed model is reported with its patch
    for (const [topic, entry] of [...feed.topics]) {
      if (entry.uuid !== uuid) continue;
      try {
        requireReadKept(feed.principal, idx);
      } catch (err) {
        this.leave(feed, topic);
        feed.send(
          JSON.stringify({
            topic,
            error: StewardError.isInstance(err)
              ? err.toWire()
              : { code: "forbidden", message: "access ended", details: {} },
          }),
        );
      }
    }
  }

  close(): void {
    this.unsubscribe();
    clearTimeout(this.roundTimer);
    clearInterval(this.controllerTimer);
    for (const feed of this.feeds) {
      feed.stopExpiry?.();
      feed.ws.close(1001);
    }
    this.wss.close();
  }
}

/** The entries of `next` that are not the same objects as in `prev`, and `null` for those gone. */
function diffByIdentity<V>(prev: Map<string, V>, next: Map<string, V>): Record<string, V | null> | undefined {
  let out: Record<string, V | null> | undefined;
  for (const [k, v] of next) if (prev.get(k) !== v) (out ??= {})[k] = v;
  for (const k of prev.keys()) if (!next.has(k)) (out ??= {})[k] = null;
  return out;
}

const storageNo = (id: string): number => Number(id.slice(id.indexOf("/") + 1));
