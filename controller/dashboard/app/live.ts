/**
 * The page's one WebSocket (`/v1/live`): it follows the topics the current view shows, keeps each
 * model's status current by applying the controller's patches, and reconnects (with a growing
 * pause) when the connection drops, asking again for what it showed.
 */
import type {
  ControllerOverview,
  LiveMessage,
  ModelStatus,
  ModelSummary,
  SecretInfo,
  StorageInfo,
  UnitDetails,
  WireError,
} from "../../../api/browser";
import { WATCH_CLOSE_CODES, applyModelPatch } from "../../../api/browser";

export interface LiveState {
  connected: boolean;
  models?: ModelSummary[];
  /** The whole ControllerInfo for a superuser (see showsCluster). */
  controller?: ControllerOverview;
  status: Map<string, ModelStatus>;
  units: Map<string, UnitDetails>;
  /** Each followed model's storage instances, by model name. */
  storage: Map<string, StorageInfo[]>;
  /** Each followed model's secrets (metadata only), by model name. */
  secrets: Map<string, SecretInfo[]>;
  errors: Map<string, WireError>;
  /** When the last message arrived (performance.now()), for the live indicator and the benchmark. */
  lastMessageAt: number;
}

export class LiveClient {
  readonly state: LiveState = {
    connected: false,
    status: new Map(),
    units: new Map(),
    storage: new Map(),
    secrets: new Map(),
    errors: new Map(),
    lastMessageAt: 0,
  };
  private ws?: WebSocket;
  private topics: string[] = [];
  private retryMs = 500;
  private closed = false;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly onSessionEnded: () => void) {
    this.connect();
  }

  /** Follows exactly these topics (what the view on screen shows). */
  follow(topics: string[]): void {
    const next = [...new Set(topics)].sort();
    if (next.join("\n") === this.topics.join("\n")) return;
    for (const t of this.topics) if (!next.includes(t)) this.forget(t);
    this.topics = next;
    this.sendTopics();
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.closed = true;
    this.ws?.close();
  }

  private connect(): void {
    const ws = (this.ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/live`));
    ws.onopen = () => {
      this.retryMs = 500;
      this.state.connected = true;
      this.sendTopics();
      this.changed();
    };
    ws.onmessage = (e: MessageEvent<string>) => this.receive(JSON.parse(e.data) as LiveMessage);
    ws.onclose = (e: CloseEvent) => {
      this.state.connected = false;
      this.changed();
      if (this.closed) return;
      if (e.code === WATCH_CLOSE_CODES.tokenEnded) {
        this.onSessionEnded();
        return;
      }
      setTimeout(() => this.connect(), this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, 10_000);
    };
  }

  private sendTopics(): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ subscribe: this.topics }));
  }

  private forget(topic: string): void {
    this.state.errors.delete(topic);
    if (topic.startsWith("model:")) this.state.status.delete(topic.slice(6));
    if (topic.startsWith("unit:")) this.state.units.delete(topic.slice(5));
    if (topic.startsWith("storage:")) this.state.storage.delete(topic.slice(8));
    if (topic.startsWith("secrets:")) this.state.secrets.delete(topic.slice(8));
  }

  private receive(msg: LiveMessage): void {
    this.state.lastMessageAt = performance.now();
    if (!("topic" in msg)) {
      console.error("live feed refused:", msg.error.message);
      return;
    }
    const { topic } = msg;
    if (!this.topics.includes(topic)) return; // an answer to what the page no longer shows
    if ("error" in msg) this.state.errors.set(topic, msg.error);
    else if ("models" in msg) this.state.models = msg.models;
    else if ("controller" in msg) this.state.controller = msg.controller;
    else if ("status" in msg) this.state.status.set(topic.slice(6), msg.status);
    else if ("patch" in msg) {
      const name = topic.slice(6);
      const doc = this.state.status.get(name);
      if (doc) this.state.status.set(name, applyModelPatch(doc, msg.patch));
    } else if ("unit" in msg) this.state.units.set(topic.slice(5), msg.unit);
    else if ("storage" in msg) this.state.storage.set(topic.slice(8), msg.storage);
    else if ("secrets" in msg) this.state.secrets.set(topic.slice(8), msg.secrets);
    if (!("error" in msg)) this.state.errors.delete(topic);
    this.changed();
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}
