/**
 * Live status for clients (`steward status --watch`, dashboards): a WebSocket on
 * `/v1/models/<model>/watch` receives the full status at once and after each change, at most every
 * {@link MIN_INTERVAL_MS}, so a burst of unit updates costs one status build.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import type WebSocket from "ws";
import { StewardError, notFound } from "../../api";
import type { StateCache } from "../state";
import { renderModelStatus } from "../state";
import { authenticate, requireModelAccess } from "./auth";

const MIN_INTERVAL_MS = 200;

export class StatusWatchHub {
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly watchers = new Map<string, Set<WebSocket>>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly unsubscribe: () => void;

  constructor(private readonly cache: StateCache) {
    this.unsubscribe = cache.subscribe((changed) => { for (const m of changed) if (this.watchers.has(m)) this.schedule(m); });
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, modelName: string): void {
    let uuid: string;
    try {
      const p = authenticate(this.cache, req.headers);
      const idx = this.cache.findModel(modelName);
      if (!idx) throw notFound("model", modelName);
      requireModelAccess(p, idx, "read");
      uuid = idx.uuid;
    } catch (err) {
      const status = StewardError.isInstance(err) ? err.httpStatus : 500;
      socket.end(`HTTP/1.1 ${status} Refused\r\nConnection: close\r\n\r\n`);
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      let set = this.watchers.get(uuid);
      if (!set) this.watchers.set(uuid, (set = new Set()));
      set.add(ws);
      ws.on("close", () => { set.delete(ws); if (set.size === 0) this.watchers.delete(uuid); });
      ws.on("error", () => undefined);
      this.send(uuid, [ws]);
    });
  }

  private schedule(uuid: string): void {
    if (this.timers.has(uuid)) return;
    this.timers.set(uuid, setTimeout(() => { this.timers.delete(uuid); this.send(uuid, [...(this.watchers.get(uuid) ?? [])]); }, MIN_INTERVAL_MS));
  }

  private send(uuid: string, targets: WebSocket[]): void {
    const idx = this.cache.models.get(uuid);
    const msg = idx?.model ? `{"status":${renderModelStatus(this.cache, idx)}}` : JSON.stringify({ error: { code: "not-found", message: "model was destroyed" } });
    for (const ws of targets) {
      ws.send(msg);
      if (!idx?.model) ws.close(1000);
    }
  }

  close(): void {
    this.unsubscribe();
    for (const t of this.timers.values()) clearTimeout(t);
    for (const set of this.watchers.values()) for (const ws of set) ws.close(1001);
    this.wss.close();
  }
}
