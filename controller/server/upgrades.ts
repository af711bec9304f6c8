/**
 * Routes WebSocket upgrades: `/v1/agent` to the agent hub, `/v1/models/<model>/watch` to the status
 * watch hub, `/v1/live` to the dashboard's live feed, `/v1/console` to the dashboard's console pane.
 * The hubs are handed in by kind (the dashboard's sit above the server and are not imported here).
 * Node hands an upgrade over outside any request handler, so a throw here would end the
 * process: everything, from parsing the path to authenticating, runs inside error handling and
 * every refusal is a proper HTTP answer. An upgrade that the session cookie alone authenticates (a
 * browser's) must come from this controller's own page: its Origin is checked here, for every endpoint.
 */
import type { IncomingMessage, Server } from "node:http";
import type { Server as HttpsServer } from "node:https";
import type { Duplex } from "node:stream";
import type { Logger } from "../../api";
import { StewardError } from "../../api";
import { answerRaw, shown } from "./raw-answer";
import type { OwnOrigins } from "./own-origins";
import { readSessionCookie } from "../access/session-cookie";
import { versionRefusal } from "./version-check";

/** An endpoint family and what its path names (the watched model). */
export type UpgradeTarget =
  { kind: "agents" } | { kind: "live" } | { kind: "consoles" } | { kind: "watches"; model: string };

/** What takes one kind of upgrade over: authenticates it, then upgrades the socket or answers a refusal on it. */
export interface UpgradeHandler<T extends UpgradeTarget = UpgradeTarget> {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, target: T): void;
}

export type UpgradeHandlers = { [K in UpgradeTarget["kind"]]: UpgradeHandler<Extract<UpgradeTarget, { kind: K }>> };

export interface UpgradeRoutes extends UpgradeHandlers {
  /** Where this controller's page is served from. */
  origins: OwnOrigins;
  log: Logger;
}

export function installUpgradeRouting(server: Server | HttpsServer, routes: UpgradeRoutes): void {
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => routeUpgrade(routes, req, socket, head));
}

export function routeUpgrade(routes: UpgradeRoutes, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  // Node takes its own error listener off an upgraded socket: without one, a reset would throw.
  socket.on("error", () => undefined);
  try {
    const target = parseUpgradeTarget(req.url ?? "");
    const refusal = versionRefusal(req.headers, req.url ?? "");
    if (refusal) throw refusal;
    if (!req.headers.authorization && readSessionCookie(req.headers) && !routes.origins.allows(req.headers.origin)) {
      throw new StewardError(
        "forbidden",
        "a WebSocket authenticated by the session cookie must come from this controller's own page: its Origin must be one of the controller's addresses (steward dashboard prints them)",
      );
    }
    (routes[target.kind] as UpgradeHandler).handleUpgrade(req, socket, head, target);
  } catch (err) {
    if (StewardError.isInstance(err)) {
      answerRaw(socket, err.httpStatus, err.toWire());
      return;
    }
    routes.log.error("unexpected error handling a WebSocket upgrade", {
      url: (req.url ?? "").slice(0, 200),
      err: (err as Error).message,
    });
    answerRaw(socket, 500, { code: "internal", message: "internal error; see the controller log" });
  }
}

/** The endpoint an upgrade asks for; throws not-found or invalid-request. */
export function parseUpgradeTarget(url: string): UpgradeTarget {
  const path = url.split("?")[0]!;
  if (path === "/v1/agent") return { kind: "agents" };
  if (path === "/v1/live") return { kind: "live" };
  if (path === "/v1/console") return { kind: "consoles" };
  const watch = /^\/v1\/models\/([^/]+)\/watch$/.exec(path);
  if (!watch)
    throw new StewardError(
      "not-found",
      `no WebSocket endpoint at ${shown(path)}: use /v1/agent, /v1/live, /v1/console or /v1/models/<model>/watch`,
    );
  try {
    return { kind: "watches", model: decodeURIComponent(watch[1]!) };
  } catch {
    throw new StewardError(
      "invalid-request",
      `the model name in ${shown(path)} is not valid percent-encoding (write "%" as %25)`,
      { details: { field: "model" } },
    );
  }
}
