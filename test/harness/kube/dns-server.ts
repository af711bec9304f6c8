/**
 * A small DNS server over UDP (RFC 1035 wire format) answering A questions from a lookup function:
 * the fake kubelet runs one on its node's bridge address and points its pods' resolv.conf at it, as
 * a real node's pods query the cluster DNS (or a node-local DNS cache on the node itself).
 *
 * Answers are authoritative: an existing name gets its A records (for AAAA and other types an empty
 * NOERROR answer, "no data"), a missing one NXDOMAIN with no SOA (resolvers walk their search list
 * on both); any opcode but QUERY gets NOTIMP, a malformed message FORMERR or nothing. An answer that
 * would not fit 512 bytes is cut and flagged TC, and no TCP is served: a headless Service with more
 * than about 25 ready endpoints does not resolve here.
 */
import { createSocket } from "node:dgram";
import type { Socket } from "node:dgram";

const TYPE_A = 1,
  TYPE_ANY = 255,
  CLASS_IN = 1,
  CLASS_ANY = 255;
const RCODE = { noError: 0, formErr: 1, nxDomain: 3, notImp: 4 } as const;
const UDP_LIMIT = 512;

export type DnsLookup = (name: string) => string[] | undefined;

export class DnsServer {
  private constructor(
    private readonly socket: Socket,
    readonly address: string,
    readonly port: number,
  ) {}

  /** Listens on `address:port` (53 needs root). */
  static async listen(address: string, lookup: DnsLookup, o: { port?: number; ttl?: number } = {}): Promise<DnsServer> {
    const socket = createSocket("udp4");
    const ttl = o.ttl ?? 5; // CoreDNS's kubernetes plugin answers with a 5 s TTL
    socket.on("message", (msg, from) => {
      const reply = answer(msg, lookup, ttl);
      if (reply) socket.send(reply, from.port, from.address);
    });
    await new Promise<void>((resolve, reject) => {
      socket.once("error", reject);
      socket.bind(o.port ?? 53, address, () => {
        socket.off("error", reject);
        resolve();
      });
    });
    socket.on("error", () => undefined); // a send to a pod that is gone: nothing to do
    return new DnsServer(socket, address, socket.address().port);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }
}

/** The reply to one query message, or undefined when it is not worth one (too short, or itself a reply). */
export function answer(msg: Buffer, lookup: DnsLookup, ttl: number): Buffer | undefined {
  if (msg.length < 12 || msg[2]! & 0x80) return undefined;
  const id = msg.readUInt16BE(0);
  const opcode = (msg[2]! >> 3) & 0x0f;
  const rd = msg[2]! & 0x01;
  const header = (rcode: number, qd: number, an: number, tc = false): Buffer => {
    const h = Buffer.alloc(12);
    h.writeUInt16BE(id, 0);
    h[2] = 0x80 | (opcode << 3) | 0x04 | (tc ? 0x02 : 0) | rd; // QR, AA
    h[3] = rcode;
    h.writeUInt16BE(qd, 4);
    h.writeUInt16BE(an, 6);
    return h;
  };
  if (opcode !== 0) return header(RCODE.notImp, 0, 0);
  if (msg.readUInt16BE(4) !== 1) return header(RCODE.formErr, 0, 0);
  const q = readQuestion(msg, 12);
  if (!q) return header(RCODE.formErr, 0, 0);
  const question = msg.subarray(12, q.end);
  const ips = q.qclass === CLASS_IN || q.qclass === CLASS_ANY ? lookup(q.name) : undefined;
  if (!ips) return Buffer.concat([header(RCODE.nxDomain, 1, 0), question]);
  const records = q.qtype === TYPE_A || q.qtype === TYPE_ANY ? ips.map((ip) => aRecord(ip, ttl)) : [];
  const room = Math.max(0, Math.floor((UDP_LIMIT - 12 - question.length) / 16));
  const sent = records.slice(0, room);
  return Buffer.concat([header(RCODE.noError, 1, sent.length, sent.length < records.length), question, ...sent]);
}

/** The question at `offset`: its name (uncompressed labels, as queries carry it), type and class. */
function readQuestion(
  msg: Buffer,
  offset: number,
): { name: string; qtype: number; qclass: number; end: number } | undefined {
  const labels: string[] = [];
  let i = offset;
  for (;;) {
    const len = msg[i];
    if (len === undefined || len > 63) return undefined; // out of the message, or a pointer: not in a query
    i++;
    if (len === 0) break;
    if (i + len > msg.length) return undefined;
    labels.push(msg.toString("latin1", i, i + len));
    i += len;
  }
  if (i + 4 > msg.length) return undefined;
  return { name: labels.join("."), qtype: msg.readUInt16BE(i), qclass: msg.readUInt16BE(i + 2), end: i + 4 };
}

/** An A record for the question's name (a pointer to offset 12, where the question's name is). */
function aRecord(ip: string, ttl: number): Buffer {
  const r = Buffer.alloc(16);
  r.writeUInt16BE(0xc00c, 0);
  r.writeUInt16BE(TYPE_A, 2);
  r.writeUInt16BE(CLASS_IN, 4);
  r.writeUInt32BE(ttl, 6);
  r.writeUInt16BE(4, 10);
  ip.split(".").forEach((o, k) => {
    r[12 + k] = Number(o);
  });
  return r;
}
