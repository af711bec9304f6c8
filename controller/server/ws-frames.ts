/**
 * One text message to a WebSocket peer as a single socket write. `ws.send` corks the socket and
 * writes the frame header and the payload apart (a writev, and a copy in TLS): pushing a config
 * change to 10,000 agents took ~80 ms longer at p99 that way. The frame is the plain RFC 6455 one
 * a server sends (FIN, text opcode, unmasked, 7/16/64-bit length). It reaches into the `ws`
 * library's socket, so it writes itself only while the library's sender is idle with nothing
 * queued (it never is with compression off, as our servers have it); otherwise, or if `ws`
 * changes its internals, `ws.send` does it.
 */
import type { Socket } from "node:net";
import type WebSocket from "ws";

/** ws 8's sender: `_state` 0 is idle (not compressing or reading a Blob), `_queue` what waits behind it. */
interface WsInternals {
  _socket?: Socket;
  _sender?: { _queue?: unknown[]; _state?: number; _firstFragment?: boolean };
}

export function sendText(ws: WebSocket, text: string): void {
  if (ws.readyState !== ws.OPEN) return;
  const { _socket: socket, _sender: sender } = ws as unknown as WsInternals;
  if (
    !socket ||
    socket.destroyed ||
    !sender ||
    sender._state !== 0 ||
    sender._firstFragment !== true ||
    !Array.isArray(sender._queue) ||
    sender._queue.length > 0
  ) {
    ws.send(text);
    return;
  }
  const length = Buffer.byteLength(text);
  const head = length < 126 ? 2 : length < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(head + length);
  frame[0] = 0x81; // FIN + text
  if (head === 2) frame[1] = length;
  else if (head === 4) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(length), 2);
  }
  frame.write(text, head, "utf8");
  socket.write(frame);
}
