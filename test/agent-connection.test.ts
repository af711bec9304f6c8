/**
 * The agent's connection to the controller, against real TLS WebSocket servers standing in for
 * replicas: when a replica goes silent without closing the socket (its host lost power or its
 * address) the agent must notice and redial, not wait for TCP to give up; when the controller says
 * the machine was removed and then refuses the credential, the agent stops for good.
 */
import type { ExecutionContext } from "ava";
import test from "ava";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocketServer } from "ws";
import type { StewardError } from "../api";
import { TRANSPORT_LIMITS, createLogger } from "../api";
import { ControllerConnection } from "../agent";
import { dataFiles, initControllerDir } from "../controller";
import { eventually } from "./harness/eventually";

/**
 * `answersPings: false` is a replica that went silent; `onLogin` decides each login in turn: accept,
 * accept and close at once with `close` (a code), or refuse with HTTP `status`.
 */
async function replica(
  tls: { cert: string; key: string },
  answersPings: boolean,
  onLogin: (n: number) => { close?: number; status?: number } = () => ({}),
) {
  const server = createServer({ cert: tls.cert, key: tls.key });
  const wss = new WebSocketServer({ noServer: true, autoPong: answersPings });
  const sockets: { closed: boolean }[] = [];
  let logins = 0;
  server.on("upgrade", (req, socket, head) => {
    const answer = onLogin(logins++);
    if (answer.status) {
      socket.end(`HTTP/1.1 ${answer.status} Refused\r\nConnection: close\r\n\r\n`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const s = { closed: false };
      sockets.push(s);
      ws.on("close", () => {
        s.closed = true;
      });
      if (answer.close) ws.close(answer.close, "machine removed");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    sockets,
    close: async () => {
      for (const c of wss.clients) c.terminate();
      wss.close();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A controller's CA and server certificate, as bootstrap makes them. */
async function controllerTls(t: ExecutionContext) {
  const dir = await mkdtemp(join(tmpdir(), "steward-conn-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { caCert } = await initControllerDir({ dataDir: dir, name: "conn", listen: { host: "127.0.0.1", port: 0 } });
  const [cert, key] = await Promise.all(
    [dataFiles.serverCert, dataFiles.serverKey].map((f) => readFile(join(dir, f), "utf8")),
  );
  return { caCert, cert: cert!, key: key! };
}

test("an agent drops a replica that stopped answering and redials another", async (t) => {
  const { caCert, cert, key } = await controllerTls(t);
  const silent = await replica({ cert, key }, false);
  const live = await replica({ cert, key }, true);
  t.teardown(async () => {
    await silent.close();
    await live.close();
  });

  const logged: string[] = [];
  // The silent replica is the only one known at first; once the agent is on it, only the live one.
  const addresses = (): string[] => (silent.sockets.length === 0 ? [silent.address] : [live.address]);
  const conn = new ControllerConnection({
    addresses,
    caCert: () => caCert,
    authorization: "m/0/x",
    pingMs: 100,
    log: createLogger({ level: "warn", write: (l) => logged.push(l) }),
    onView: () => undefined,
    onConnected: () => undefined,
  });
  t.teardown(() => conn.close());
  conn.start();
  await eventually("the agent on the silent replica", () => silent.sockets.length === 1);
  await eventually("the agent redialled the live replica", () => live.sockets.length === 1, 10_000);
  t.true(silent.sockets[0]!.closed, "the silent replica's socket was given up");
  t.true(
    logged.some((l) => /the controller stopped answering; reconnecting/.test(l)),
    logged.join("\n"),
  );
  // On the live replica, pings are answered: the agent stays.
  await new Promise((r) => setTimeout(r, 600));
  t.is(live.sockets.length, 1);
  t.false(live.sockets[0]!.closed);
});

/** An agent's connection to one replica, counting the times it concluded its machine was removed. */
function startAgent(t: ExecutionContext, address: string, caCert: string): { removed: number } {
  const agent = { removed: 0 };
  const conn = new ControllerConnection({
    addresses: () => [address],
    caCert: () => caCert,
    authorization: "m/0/x",
    pingMs: 100,
    log: createLogger({ level: "error", write: () => undefined }),
    onView: () => undefined,
    onConnected: () => undefined,
    onMachineRemoved: () => {
      agent.removed++;
    },
  });
  t.teardown(() => conn.close());
  conn.start();
  return agent;
}

test("told its machine was removed and then refused its credential, an agent stops for good", async (t) => {
  const { caCert, cert, key } = await controllerTls(t);
  // First login accepted and closed with 4404; every later login refused with 401.
  const gone = await replica({ cert, key }, true, (n) => (n === 0 ? { close: 4404 } : { status: 401 }));
  t.teardown(() => gone.close());
  const agent = startAgent(t, gone.address, caCert);
  await eventually("the agent gave up on its removed machine", () => agent.removed === 1, 10_000);
  // And it does not dial again.
  await new Promise((r) => setTimeout(r, 1500));
  t.is(agent.removed, 1);
  t.is(gone.sockets.length, 1);
});

test("a removal notice from one replica that the next login contradicts changes nothing", async (t) => {
  const { caCert, cert, key } = await controllerTls(t);
  // 4404, then a login that is accepted (so the notice was wrong) and closed for another reason;
  // then a 401 alone, which is no verdict: the agent keeps trying and gets in.
  const answers = [{ close: 4404 }, { close: 1001 }, { status: 401 }];
  const lagging = await replica({ cert, key }, true, (n) => answers[n] ?? {});
  t.teardown(() => lagging.close());
  const agent = startAgent(t, lagging.address, caCert);
  await eventually("the agent got in after the refused login", () => lagging.sockets.length === 3, 10_000);
  t.is(agent.removed, 0);
  t.false(lagging.sockets[2]!.closed);
});

test("an agent refuses to send a frame over the controller's bound instead of being cut off", async (t) => {
  const { caCert, cert, key } = await controllerTls(t);
  const live = await replica({ cert, key }, true);
  t.teardown(() => live.close());
  const conn = new ControllerConnection({
    addresses: () => [live.address],
    caCert: () => caCert,
    authorization: "m/0/x",
    log: createLogger({ level: "error", write: () => undefined }),
    onView: () => undefined,
    onConnected: () => undefined,
  });
  t.teardown(() => conn.close());
  conn.start();
  const big = {
    unit: "u/0",
    relations: [{ relationId: 1, app: false, set: { k: "v".repeat(TRANSPORT_LIMITS.agentFrameBytes) } }],
  };
  const err = await t.throwsAsync<StewardError>(conn.call("hook.commit", big));
  t.is(err?.code, "invalid-request");
  t.regex(err?.message ?? "", new RegExp(`more than the ${TRANSPORT_LIMITS.agentFrameBytes} an agent may send`));
  t.false(live.sockets[0]!.closed, "the connection stays up");
});

/** A server-to-client WebSocket text frame (unmasked), as a replica sends one. */
function textFrame(text: string): Buffer {
  const payload = Buffer.from(text, "utf8");
  if (payload.length < 126) return Buffer.concat([Buffer.from([0x81, payload.length]), payload]);
  const header = Buffer.from([0x81, 126, 0, 0]);
  header.writeUInt16BE(payload.length, 2);
  return Buffer.concat([header, payload]);
}

test("a view that arrives with the handshake's answer, in one read, reaches the agent", async (t) => {
  // On a loaded machine the agent may read the 101 and the replica's first view (the current
  // controller addresses) in one go; the view then rides in the upgrade's `head`, and a listener
  // attached a tick after `open` misses it. The replica only pushes again when the view changes,
  // so an agent that connected after the last address change kept its old list for good.
  const { caCert, cert, key } = await controllerTls(t);
  const view = { controllerAddresses: ["10.0.0.111:17070", "10.0.0.112:17070", "10.0.0.113:17070"] };
  const server = createServer({ cert, key });
  server.on("upgrade", (req, socket) => {
    const accept = createHash("sha1")
      .update(`${String(req.headers["sec-websocket-key"])}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest("base64");
    const answer = `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`;
    socket.write(
      Buffer.concat([Buffer.from(answer), textFrame(JSON.stringify({ t: "push", topic: "view", data: view }))]),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const seen: string[][] = [];
  let connected = 0;
  const conn = new ControllerConnection({
    addresses: () => [`127.0.0.1:${(server.address() as AddressInfo).port}`],
    caCert: () => caCert,
    authorization: "m/0/x",
    log: createLogger({ level: "error", write: () => undefined }),
    onView: (v) => seen.push(v.controllerAddresses),
    onConnected: () => {
      connected++;
    },
  });
  t.teardown(() => conn.close());
  conn.start();
  await eventually("the agent connected", () => connected === 1, 10_000);
  await eventually("the agent got the view sent with the handshake", () => seen.length === 1, 3000).catch(
    () => undefined,
  );
  t.deepEqual(seen, [view.controllerAddresses]);
});
