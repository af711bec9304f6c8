/**
 * The agent's connection to the controller when a replica goes silent without closing the socket
 * (its host lost power or its address): the agent must notice and redial, not wait for TCP to give
 * up. Two real TLS WebSocket servers stand in for replicas: one that never answers pings, one that does.
 */
import test from "ava";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocketServer } from "ws";
import { createLogger } from "../api";
import { ControllerConnection } from "../agent";
import { dataFiles, initControllerDir } from "../controller";
import { eventually } from "./harness/eventually";

async function replica(tls: { cert: string; key: string }, answersPings: boolean) {
  const server = createServer({ cert: tls.cert, key: tls.key });
  const wss = new WebSocketServer({ server, autoPong: answersPings });
  const sockets: { closed: boolean }[] = [];
  wss.on("connection", (ws) => {
    const s = { closed: false };
    sockets.push(s);
    ws.on("close", () => { s.closed = true; });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    sockets,
    close: async () => { for (const c of wss.clients) c.terminate(); wss.close(); await new Promise((r) => server.close(r)); },
  };
}

test("an agent drops a replica that stopped answering and redials another", async (t) => {
  // A controller's CA and server certificate, as bootstrap makes them.
  const dir = await mkdtemp(join(tmpdir(), "steward-conn-"));
  const { caCert } = await initControllerDir({ dataDir: dir, name: "conn", listen: { host: "127.0.0.1", port: 0 } });
  const [cert, key] = await Promise.all([dataFiles.serverCert, dataFiles.serverKey].map((f) => readFile(join(dir, f), "utf8")));
  const silent = await replica({ cert: cert!, key: key! }, false);
  const live = await replica({ cert: cert!, key: key! }, true);
  t.teardown(async () => { await silent.close(); await live.close(); await rm(dir, { recursive: true, force: true }); });

  const logged: string[] = [];
  // The silent replica is the only one known at first; once the agent is on it, only the live one.
  const addresses = (): string[] => (silent.sockets.length === 0 ? [silent.address] : [live.address]);
  const conn = new ControllerConnection({
    addresses, caCert, authorization: "m/0/x", pingMs: 100,
    log: createLogger({ level: "warn", write: (l) => logged.push(l) }), onView: () => undefined, onConnected: () => undefined,
  });
  t.teardown(() => conn.close());
  conn.start();
  await eventually("the agent on the silent replica", () => silent.sockets.length === 1);
  await eventually("the agent redialled the live replica", () => live.sockets.length === 1, 10_000);
  t.true(silent.sockets[0]!.closed, "the silent replica's socket was given up");
  t.true(logged.some((l) => /the controller stopped answering; reconnecting/.test(l)), logged.join("\n"));
  // On the live replica, pings are answered: the agent stays.
  await new Promise((r) => setTimeout(r, 600));
  t.is(live.sockets.length, 1);
  t.false(live.sockets[0]!.closed);
});
