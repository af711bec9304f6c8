/**
 * Routes WebSocket upgrades: `/v1/agent` to the agent hub, `/v1/models/<model>/watch` to the status
 * watch hub, `/v1/live` to the dashboard's live feed, `/v1/console` to the dashboard's console pane. Node hands an upgrade over outside any request handler, so a throw here would end the
 * process: everything, from parsing the path to authenticating, runs inside error handling and
 * every refusal is a proper HTTP answer. An upgrade that the session cookie alone authenticates (a
 * browser's) must come from this controller's own page: its Origin is checked here, for every endpoint.
 */
import type { IncomingMessage, Server } from "node:http";
import type { Server as HttpsServer } from "node:https";
import type { Duplex } from "node:stream";
import type { WebSocketServer } from "ws";
import type { Logger } from "../../api";
import { StewardError } from "../../api";
import type { AgentHub } from "./agent-hub";
import { answerRaw, shown } from "./raw-answer";
import type { StatusWatchHub } from "./status-watch";
import type { LiveFeedHub } from "../dashboard/live-feed";
import type { ConsoleSessionHub } from "../dashboard/console-sessions";
import type { OwnOrigins } from "./own-origins";
import { readSessionCookie } from "./session-cookie";

export interface UpgradeRoutes {
  agents: AgentHub;
  watches: StatusWatchHub;
  live: LiveFeedHub;
  consoles: ConsoleSessionHub;
  /** Where this controller's page is served from. */
  origins: OwnOrigins;
  log: Logger;
}

export type UpgradeTarget = { kind: "agent" } | { kind: "live" } | { kind: "console" } | { kind: "watch"; model: string };

export function installUpgradeRouting(server: Server | HttpsServer, routes: UpgradeRoutes): void {
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => routeUpgrade(routes, req, socket, head));
}

export function routeUpgrade(routes: UpgradeRoutes, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  // Node takes its own error listener off an upgraded socket: without one, a reset would throw.
  socket.on("error", () => undefined);
  try {
    const target = parseUpgradeTarget(req.url ?? "");
    if (!req.headers.authorization && readSessionCookie(req.headers) && !routes.origins.allows(req.headers.origin)) {
      throw new StewardError("forbidden", "a WebSocket authenticated by the session cookie must come from this controller's own page: its Origin must be one of the controller's addresses (steward dashboard prints them)");
    }
    if (target.kind === "agent") routes.agents.handleUpgrade(req, socket, head);
    else if (target.kind === "live") routes.live.handleUpgrade(req, socket, head);
    else if (target.kind === "console") routes.consoles.handleUpgrade(req, socket, head);
    else routes.watches.handleUpgrade(req, socket, head, target.model);
  } catch (err) {
    if (StewardError.isInstance(err)) {
      answerRaw(socket, err.httpStatus, err.toWire());
      return;
    }
    routes.log.error("unexpected error handling a WebSocket upgrade", { url: (req.url ?? "").slice(0, 200), err: (err as Error).message });
    answerRaw(socket, 500, { code: "internal", message: "internal error; see the controller log" });
  }
}

/** The endpoint an upgrade asks for; throws not-found or invalid-request. */
export function parseUpgradeTarget(url: string): UpgradeTarget {
  const path = url.split("?")[0]!;
  if (path === "/v1/agent") return { kind: "agent" };
  if (path === "/v1/live") return { kind: "live" };
  if (path === "/v1/console") return { kind: "console" };
  const watch = /^\/v1\/models\/([^/]+)\/watch$/.exec(path);
  if (!watch) throw new StewardError("not-found", `no WebSocket endpoint at ${shown(path)}: use /v1/agent, /v1/live, /v1/console or /v1/models/<model>/watch`);
  try {
    return { kind: "watch", model: decodeURIComponent(watch[1]!) };
  } catch {
    throw new StewardError("invalid-request", `the model name in ${shown(path)} is not valid percent-encoding (write "%" as %25)`, { details: { field: "model" } });
  }
}

/**
 * Has `wss` answer a malformed handshake (bad key, version, method, extensions) in our error shape
 * rather than ws's own text.
 */
export function answerHandshakeErrors(wss: WebSocketServer): void {
  wss.on("wsClientError", (err: Error, socket: Duplex) => {
    const status = err.message === "Invalid HTTP method" ? 405 : 400;
    answerRaw(socket, status, { code: "invalid-request", message: `WebSocket handshake refused: ${err.message}` }, status === 400 ? { "Sec-WebSocket-Version": "13, 8" } : { Allow: "GET" });
  });
}
