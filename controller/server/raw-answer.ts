/**
 * An HTTP answer written straight to a socket, for what never reaches Fastify's reply: refused
 * WebSocket upgrades, malformed WebSocket handshakes and requests Node's parser gave up on. Same
 * `{code, message, details}` body as every other error.
 */
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { WebSocketServer } from "ws";
import type { WireError } from "../../api";

/** How long a peer that never reads its answer may keep the socket afterwards. */
const LINGER_MS = 5_000;

export function answerRaw(socket: Duplex, status: number, body: WireError, headers: Record<string, string> = {}): void {
  if (socket.destroyed) return;
  const json = JSON.stringify(body);
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}`,
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(json)}`,
    "Connection: close",
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(`${lines.join("\r\n")}\r\n\r\n${json}`);
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}

/** A client-supplied string shortened for an error message (a path may be kilobytes long). */
export function shown(text: string, max = 120): string {
  return JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);
}

/**
 * Has `wss` answer a malformed handshake (bad key, version, method, extensions) in our error shape
 * rather than ws's own text.
 */
export function answerHandshakeErrors(wss: WebSocketServer): void {
  wss.on("wsClientError", (err: Error, socket: Duplex) => {
    const status = err.message === "Invalid HTTP method" ? 405 : 400;
    answerRaw(
      socket,
      status,
      { code: "invalid-request", message: `WebSocket handshake refused: ${err.message}` },
      status === 400 ? { "Sec-WebSocket-Version": "13, 8" } : { Allow: "GET" },
    );
  });
}
