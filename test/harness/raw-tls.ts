/**
 * Raw bytes over TLS to a test controller, for what no well-behaved client sends: malformed request
 * lines and headers, trickled bodies, hand-made WebSocket handshakes and frames.
 */
import { randomBytes } from "node:crypto";
import { connect } from "node:tls";
import type { TLSSocket } from "node:tls";
import { CONTROLLER_TLS_NAME, splitAddress } from "../../api";

export interface RawAnswer {
  /** The status of the first answer, if one came. */
  status?: number;
  /** Everything the controller sent. */
  text: string;
  /** The controller closed the connection (rather than us giving up waiting). */
  closed: boolean;
}

export function rawConnect(address: string, caCert: string): Promise<TLSSocket> {
  const [host, port] = splitAddress(address);
  return new Promise((resolve, reject) => {
    const s = connect({ host, port, ca: caCert, servername: CONTROLLER_TLS_NAME }, () => resolve(s));
    s.once("error", reject);
  });
}

/**
 * Sends `chunks` (waiting `gapMs` between them) and collects the answer until the controller
 * closes or `waitMs` passes after the last chunk.
 */
export async function rawExchange(
  address: string,
  caCert: string,
  chunks: (string | Buffer)[],
  o: { gapMs?: number; waitMs?: number } = {},
): Promise<RawAnswer> {
  const s = await rawConnect(address, caCert);
  const received: Buffer[] = [];
  let closed = false;
  s.on("data", (d: Buffer) => received.push(d));
  s.on("error", () => undefined);
  const done = new Promise<void>((r) =>
    s.once("close", () => {
      closed = true;
      r();
    }),
  );
  for (const c of chunks) {
    if (closed) break;
    s.write(c);
    if (o.gapMs) await Promise.race([done, sleep(o.gapMs)]);
  }
  await Promise.race([done, sleep(o.waitMs ?? 3000)]);
  const wasClosed = closed;
  s.destroy();
  const text = Buffer.concat(received).toString("latin1");
  const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
  return { ...(m ? { status: Number(m[1]) } : {}), text, closed: wasClosed };
}

/** The JSON body of a raw answer (after the blank line), or undefined. */
export function rawJsonBody(
  a: RawAnswer,
): { code?: string; message?: string; details?: Record<string, unknown> } | undefined {
  const headEnd = a.text.indexOf("\r\n\r\n");
  const length = /\r\ncontent-length: *(\d+)/i.exec(a.text.slice(0, headEnd));
  // Only the first answer: a request the parser split in two can be followed by a second one.
  const body = a.text.slice(headEnd + 4, length ? headEnd + 4 + Number(length[1]) : undefined);
  try {
    return JSON.parse(body) as never;
  } catch {
    return undefined;
  }
}

/** A WebSocket handshake request for `path` (valid unless `headers` override its parts). */
export function upgradeRequest(path: string, headers: Record<string, string> = {}, method = "GET"): string {
  const all: Record<string, string> = {
    host: "steward",
    upgrade: "websocket",
    connection: "Upgrade",
    "sec-websocket-key": randomBytes(16).toString("base64"),
    "sec-websocket-version": "13",
    ...headers,
  };
  return `${method} ${path} HTTP/1.1\r\n${Object.entries(all)
    .map(([k, v]) => `${k}: ${v}`)
    .join("\r\n")}\r\n\r\n`;
}

/** One WebSocket frame as a client sends it (masked unless told otherwise). */
export function wsFrame(
  opcode: number,
  payload: Buffer,
  o: { fin?: boolean; mask?: boolean; claimedLength?: bigint; rsv?: number } = {},
): Buffer {
  const fin = o.fin ?? true;
  const mask = o.mask ?? true;
  const length = o.claimedLength ?? BigInt(payload.length);
  const head: number[] = [(fin ? 0x80 : 0) | ((o.rsv ?? 0) << 4) | opcode];
  const maskBit = mask ? 0x80 : 0;
  let ext = Buffer.alloc(0);
  if (length < 126n) head.push(maskBit | Number(length));
  else if (length < 65536n) {
    head.push(maskBit | 126);
    ext = Buffer.alloc(2);
    ext.writeUInt16BE(Number(length));
  } else {
    head.push(maskBit | 127);
    ext = Buffer.alloc(8);
    ext.writeBigUInt64BE(length);
  }
  const key = mask ? randomBytes(4) : Buffer.alloc(0);
  const body = Buffer.from(payload);
  if (mask) for (let i = 0; i < body.length; i++) body[i] = body[i]! ^ key[i % 4]!;
  return Buffer.concat([Buffer.from(head), ext, key, body]);
}

/** The close code in the first close frame the server sent after its handshake answer, if any. */
export function serverCloseCode(text: string): number | undefined {
  let buf = Buffer.from(text.slice(text.indexOf("\r\n\r\n") + 4), "latin1");
  while (buf.length >= 2) {
    const opcode = buf[0]! & 0x0f;
    let len = buf[1]! & 0x7f;
    let off = 2;
    if (len === 126) {
      if (buf.length < 4) return undefined;
      len = buf.readUInt16BE(2);
      off = 4;
    } else if (len === 127) {
      if (buf.length < 10) return undefined;
      len = Number(buf.readBigUInt64BE(2));
      off = 10;
    }
    if (opcode === 8) return len >= 2 && buf.length >= off + 2 ? buf.readUInt16BE(off) : 1005;
    buf = buf.subarray(off + len);
  }
  return undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
