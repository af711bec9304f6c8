/**
 * The agent's log forwarding under pressure: it never waits for the controller, keeps a bounded
 * queue (dropping the oldest and counting them), and sends the count with the next batch. Driven
 * through its `send` port with a controller that answers when the test says so.
 */
import test from "ava";
import type { AgentLogRecord } from "../api";
import { silentLogger } from "../api";
import { LineSplitter, LogForwarder, failureTail } from "../agent";
import { eventually } from "./harness/eventually";

const record = (i: number): AgentLogRecord => ({
  ts: new Date().toISOString(),
  level: "INFO",
  source: "hook",
  unit: "web/0",
  message: `line ${i}`,
});

test("a controller that does not answer costs the agent a bounded queue, and the drops are reported", async (t) => {
  const batches: { records: AgentLogRecord[]; dropped: number }[] = [];
  let answer: () => void = () => undefined;
  let connected = false;
  const forwarder = new LogForwarder({
    send: (b) => {
      batches.push(b);
      return new Promise<void>((r) => {
        answer = r;
      });
    },
    connected: () => connected,
    log: silentLogger,
    maxQueued: 100,
    batchSize: 50,
    lingerMs: 1,
  });
  // Disconnected: add returns at once however much is logged.
  for (let i = 0; i < 1000; i++) forwarder.add(record(i));
  t.is(batches.length, 0);

  connected = true;
  forwarder.flush();
  t.is(batches.length, 1);
  t.is(batches[0]!.dropped, 900, "the 900 oldest were dropped and counted");
  t.deepEqual(batches[0]!.records.map((r) => r.message).slice(0, 2), ["line 900", "line 901"], "the newest were kept");
  // While that batch is unanswered, more records come and none is sent.
  for (let i = 1000; i < 1020; i++) forwarder.add(record(i));
  t.is(batches.length, 1, "one batch in flight at a time");
  answer();
  await eventually("the second batch", () => batches.length === 2, 5000, 5);
  t.is(batches[1]!.dropped, 0, "drops are reported once");
  t.is(batches[1]!.records[0]!.message, "line 950");
  answer();
  await eventually("the third batch", () => batches.length === 3, 5000, 5);
  t.is(
    batches[2]!.records.map((r) => r.message).join(","),
    Array.from({ length: 20 }, (_, i) => `line ${1000 + i}`).join(","),
  );
  answer();
  forwarder.close();
});

test("a batch the controller refuses is dropped, not retried forever; one that did not arrive is kept", async (t) => {
  const sent: string[][] = [];
  const drops: number[] = [];
  let fail: { code: string } | undefined = { code: "unavailable" };
  const forwarder = new LogForwarder({
    send: (b) => {
      sent.push(b.records.map((r) => r.message));
      drops.push(b.dropped);
      return fail ? Promise.reject(Object.assign(new Error("no"), fail)) : Promise.resolve();
    },
    connected: () => true,
    log: silentLogger,
    lingerMs: 1,
  });
  forwarder.add(record(1));
  await eventually("first try", () => sent.length >= 1, 5000, 5);
  fail = { code: "invalid-request" };
  forwarder.flush();
  await eventually("second try", () => sent.length >= 2, 5000, 5);
  t.deepEqual(sent[1], ["line 1"], "kept after the connection failed");
  fail = undefined;
  forwarder.add(record(2));
  await eventually("third try", () => sent.length >= 3, 5000, 5);
  t.deepEqual(sent[2], ["line 2"], "the refused record is not sent again");
  t.is(drops[2], 1, "but counted as dropped");
  t.is(sent.length, 3, "a connection failure is not retried in a loop");
  forwarder.close();
});

test("hook output is cut into clean, bounded lines; a failure keeps the last 20", (t) => {
  const lines: string[] = [];
  const s = new LineSplitter((l) => lines.push(l));
  const euro = Buffer.from("price: 5 €\n");
  s.push(euro.subarray(0, euro.length - 2)); // a character split between chunks
  s.push(euro.subarray(euro.length - 2));
  s.push(Buffer.from("\x1b]0;title\x07bell\r\nno newline"));
  s.push(Buffer.from("x".repeat(5000)));
  s.end();
  t.deepEqual(lines.slice(0, 3), ["price: 5 €", "]0;titlebell", "no newline" + "x".repeat(2038)]);
  t.true(lines.every((l) => l.length <= 2048));
  t.is(lines.join("").length, "price: 5 €]0;titlebellno newline".length + 5000);

  const out = failureTail(Array.from({ length: 50 }, (_, i) => `l${i}\x1b[31m`).join("\n"));
  t.deepEqual(
    out.split("\n"),
    Array.from({ length: 20 }, (_, i) => `l${30 + i}[31m`),
  );
  t.true(failureTail("y".repeat(10_000)).length <= 4096);
});
