/**
 * Live status for clients (`steward status --watch`, dashboards): a WebSocket on
 * `/v1/models/<model>/watch` receives the full status at once and after each change, at most every
 * {@link MIN_INTERVAL_MS}, so a burst of unit updates costs one status build. A watch lasts only as
 * long as what let it in: it is closed (code and reason from WATCH_CLOSE_CODES) when its token
 * expires or is revoked, or the user's access to the model is taken away.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import type WebSocket from "ws";
import type { TransportLimits } from "../../api";
import { StewardError, TRANSPORT_LIMITS, WATCH_CLOSE_CODES, notFound } from "../../api";
import type { StateCache } from "../state";
import { renderModelStatus } from "../state";
import type { Principal } from "../access/auth";
import { atTokenExpiry, authenticate, requireModelAccess } from "../access/auth";
import { acceptAuthenticatedSocket } from "./accept-socket";
import { answerHandshakeErrors } from "./raw-answer";

const MIN_INTERVAL_MS = 200;

/** What let a watch in, re-checked whenever users, tokens or the model's access change. */
interface WatchGrant {
  headers: IncomingMessage["headers"];
  uuid: string;
  stopExpiry?: () => void;
}

export class StatusWatchHub {
  private readonly wss: WebSocketServer;
  private readonly watchers = new Map<string, Set<WebSocket>>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly grants = new Map<WebSocket, WatchGrant>();
  private authVersion: number;
  private readonly unsubscribe: () => void;

  /** @param transport frame bounds; @default TRANSPORT_LIMITS (api/limits.ts) */
  constructor(
    private readonly cache: StateCache,
    transport: Partial<TransportLimits> = {},
  ) {
    // Watchers only listen: a small bound keeps a read-only user from making the controller buffer big frames.
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: transport.watchFrameBytes ?? TRANSPORT_LIMITS.watchFrameBytes,
    });
    answerHandshakeErrors(this.wss);
    this.authVersion = cache.authVersion;
    this.unsubscribe = cache.subscribe((changed) => {
      // Users or revoked tokens changed: every watch re-checks its token; otherwise only the changed models' watches their access.
      const authChanged = cache.authVersion !== this.authVersion;
      this.authVersion = cache.authVersion;
      for (const [ws, grant] of this.grants) if (authChanged || changed.has(grant.uuid)) this.recheck(ws, grant);
      for (const m of changed) if (this.watchers.has(m)) this.schedule(m);
    });
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, { model: modelName }: { model: string }): void {
    acceptAuthenticatedSocket(
      this.wss,
      this.cache,
      { req, socket, head },
      (principal) => {
        const idx = this.cache.findModel(modelName);
        if (!idx) throw notFound("model", modelName);
        requireModelAccess(principal, idx, "read", modelName);
        return { principal, uuid: idx.uuid };
      },
      (ws, { principal, uuid }) => {
        let set = this.watchers.get(uuid);
        if (!set) this.watchers.set(uuid, (set = new Set()));
        set.add(ws);
        const grant: WatchGrant = {
          headers: { authorization: req.headers.authorization, cookie: req.headers.cookie },
          uuid,
        };
        this.grants.set(ws, grant);
        if (principal.kind === "user")
          grant.stopExpiry = atTokenExpiry(
            principal.token.expiresAt,
            () => this.recheck(ws, grant),
            () => this.grants.has(ws),
          );
        ws.on("close", () => {
          set.delete(ws);
          if (set.size === 0) this.watchers.delete(uuid);
          grant.stopExpiry?.();
          this.grants.delete(ws);
        });
        try {
          this.send(uuid, [ws]);
        } catch {
          ws.close(1011, "internal error; see the controller log");
        }
      },
    );
  }

  /** Closes the watch if its credentials or its access to the model no longer hold. */
  private recheck(ws: WebSocket, grant: WatchGrant): void {
    let principal: Principal;
    try {
      principal = authenticate(this.cache, grant.headers);
    } catch (err) {
      this.end(
        ws,
        WATCH_CLOSE_CODES.tokenEnded,
        StewardError.isInstance(err) ? err.message : "credentials no longer valid",
      );
      return;
    }
    const idx = this.cache.models.get(grant.uuid);
    if (!idx?.model) return; // a destroyed model is reported by send()
    try {
      requireModelAccess(principal, idx, "read");
    } catch {
      this.end(ws, WATCH_CLOSE_CODES.accessEnded, `access to model ${idx.model.name} was revoked`);
      return;
    }
  }

  private end(ws: WebSocket, code: number, reason: string): void {
    this.grants.get(ws)?.stopExpiry?.();
    this.grants.delete(ws);
    // A close reason is at most 123 bytes.
    ws.close(code, Buffer.from(reason).subarray(0, 123).toString());
  }

  private schedule(uuid: string): void {
    if (this.timers.has(uuid)) return;
    this.timers.set(
      uuid,
      setTimeout(() => {
        this.timers.delete(uuid);
        this.send(uuid, [...(this.watchers.get(uuid) ?? [])]);
      }, MIN_INTERVAL_MS),
    );
  }

  private send(uuid: string, targets: WebSocket[]): void {
    const idx = this.cache.models.get(uuid);
    const msg = idx?.model
      ? `{"status":${renderModelStatus(this.cache, idx)}}`
      : JSON.stringify({ error: { code: "not-found", message: "model was destroyed" } });
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
