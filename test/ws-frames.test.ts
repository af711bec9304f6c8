/** sendText: one write per message, the same frames `ws.send` would make, in order with what `ws` sends itself. */
import test from "ava";
import type { ExecutionContext } from "ava";
import type { AddressInfo } from "node:net";
import WebSocket, { WebSocketServer } from "ws";
import { sendText } from "../controller";

async function pair(
  t: ExecutionContext,
): Promise<{ server: WebSocket; received: string[]; next: (n: number) => Promise<void> }> {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await new Promise<void>((r) => wss.once("listening", () => r()));
  const accepted = new Promise<WebSocket>((r) => wss.once("connection", (ws) => r(ws)));
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  const received: string[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  client.on("message", (d, isBinary) => {
    received.push(`${isBinary ? "binary:" : ""}${d.toString()}`);
    for (const w of waiters.splice(0))
      if (received.length >= w.n) w.resolve();
      else waiters.push(w);
  });
  await new Promise<void>((r) => client.once("open", () => r()));
  t.teardown(() => {
    client.terminate();
    wss.close();
  });
  return {
    server: await accepted,
    received,
    next: (n) =>
      received.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })),
  };
}

test("messages of every length class and in UTF-8 arrive whole, as text, in order with ws.send's", async (t) => {
  const { server, received, next } = await pair(t);
  const messages = ["", "x".repeat(125), "y".repeat(126), "z".repeat(65535), "w".repeat(65536), "é€😀 unicode"];
  let viaLibrary = 0;
  const send = server.send.bind(server);
  server.send = ((...args: Parameters<WebSocket["send"]>) => {
    viaLibrary++;
    send(...args);
  }) as WebSocket["send"];
  for (const m of messages) sendText(server, m);
  t.is(viaLibrary, 0, "an idle sender is bypassed: one write per message");
  server.ping();
  send("from ws.send");
  sendText(server, "after");
  await next(messages.length + 2);
  t.deepEqual(received, [...messages, "from ws.send", "after"]);
});

test("a closed socket gets nothing and no error", async (t) => {
  const { server } = await pair(t);
  server.close();
  t.notThrows(() => sendText(server, "late"));
});
