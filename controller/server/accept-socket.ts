/**
 * The WebSocket handshake the hubs share (status watches, the dashboard's live feed and console): the
 * request is authenticated and admitted (limits, access) before the socket is upgraded, and a refusal is a
 * proper HTTP answer in our error shape, never a throw (Node hands upgrades over outside any handler).
 * The agent hub keeps its own: it answers refused logins through a per-source limiter and checks its store.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type WebSocket from "ws";
import type { WebSocketServer } from "ws";
import { StewardError } from "../../api";
import type { StateCache } from "../state";
import type { Principal } from "../access/auth";
import { authenticate } from "../access/auth";
import { answerRaw } from "./raw-answer";

export interface SocketUpgrade {
  req: IncomingMessage;
  socket: Duplex;
  head: Buffer;
}

/**
 * Authenticates `upgrade`, has `admit` check the principal (a StewardError refuses the upgrade with its
 * status), then upgrades through `wss` and hands the socket to `accepted` with what `admit` returned. A
 * socket reset later is ignored here (its close event ends what `accepted` set up).
 */
export function acceptAuthenticatedSocket<T>(
  wss: WebSocketServer,
  cache: StateCache,
  { req, socket, head }: SocketUpgrade,
  admit: (principal: Principal) => T,
  accepted: (ws: WebSocket, admitted: T) => void,
): void {
  let admitted: T;
  try {
    admitted = admit(authenticate(cache, req.headers));
  } catch (err) {
    if (!StewardError.isInstance(err)) throw err;
    answerRaw(socket, err.httpStatus, err.toWire());
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => {
    ws.on("error", () => undefined);
    accepted(ws, admitted);
  });
}
