/**
 * The request transport's bounds (TRANSPORT_LIMITS, api/limits.ts), each against a real controller:
 * slow requests are answered 408 and closed, big headers 431, frames over a socket's bound close it
 * with 1009, and connections beyond the cap are refused. Short limits come from the controller's
 * `transport` option; nothing here measures time.
 */
import test from "ava";
import { TRANSPORT_LIMITS } from "../api";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { rawRequest } from "./harness/http";
import type { RawAnswer } from "./harness/raw-tls";
import { rawConnect, rawExchange, rawJsonBody, serverCloseCode, upgradeRequest, wsFrame } from "./harness/raw-tls";

const limits = {
  headersTimeoutMs: 500,
  requestTimeoutMs: 1000,
  watchFrameBytes: 1024,
  agentFrameBytes: 64 * 1024,
  maxConnections: 30,
};
let tc: TestController;
let token: string;
let agentAuth: string;
test.before(async () => {
  tc = await startTestController({ transport: limits });
  token = await tc.admin.login();
  const { uuid } = await tc.admin.createModel("m");
  const [machine] = (await tc.admin.addMachines("m", "manual", 1)).machines;
  agentAuth = `${uuid}/${machine!.id}/${machine!.credential!}`;
});
test.after.always(async () => {
  await tc?.close();
});

const trickle = (text: string): string[] => [...text];

function assertTimedOut(
  t: {
    is: (a: unknown, b: unknown, m?: string) => void;
    true: (v: boolean, m?: string) => void;
    regex: (s: string, r: RegExp) => void;
  },
  a: RawAnswer,
  limit: string,
): void {
  t.true(a.closed, "the controller closed the connection");
  t.is(a.status, 408, a.text);
  t.regex(rawJsonBody(a)?.message ?? "", new RegExp(limit));
}

test.serial("a body trickled in slower than the request timeout is answered 408 and closed", async (t) => {
  const body = JSON.stringify({ user: "admin", password: "x".repeat(200) });
  const head = `POST /v1/login HTTP/1.1\r\nhost: a\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`;
  // One byte every 50 ms: the body would need about 10 s, ten times the limit.
  const a = await rawExchange(tc.addresses[0]!, tc.caCert, [head, ...trickle(body)], { gapMs: 50, waitMs: 10_000 });
  assertTimedOut(t, a, `${limits.requestTimeoutMs} ms`);
});

test.serial("headers trickled in slower than the headers timeout are answered 408 and closed", async (t) => {
  const head = `GET /v1/health HTTP/1.1\r\nhost: a\r\nx-slow: ${"y".repeat(200)}\r\n\r\n`;
  const a = await rawExchange(tc.addresses[0]!, tc.caCert, trickle(head), { gapMs: 50, waitMs: 10_000 });
  assertTimedOut(t, a, `${limits.headersTimeoutMs} ms`);
});

test.serial("an agent and a watch stay connected past the request timeout", async (t) => {
  const a = await rawExchange(
    tc.addresses[0]!,
    tc.caCert,
    [upgradeRequest("/v1/agent", { authorization: `Agent ${agentAuth}` })],
    { waitMs: 3 * limits.requestTimeoutMs },
  );
  t.is(a.status, 101);
  t.false(a.closed, "the agent's socket is not a slow request");
  const w = await rawExchange(
    tc.addresses[0]!,
    tc.caCert,
    [upgradeRequest("/v1/models/m/watch", { authorization: `Bearer ${token}` })],
    { waitMs: 3 * limits.requestTimeoutMs },
  );
  t.is(w.status, 101);
  t.false(w.closed, "the watch's socket is not a slow request");
});

test("headers over the size limit are answered 431 naming it", async (t) => {
  const a = await rawExchange(tc.addresses[0]!, tc.caCert, [
    `GET /v1/health HTTP/1.1\r\nhost: a\r\nx-big: ${"y".repeat(TRANSPORT_LIMITS.maxHeaderBytes)}\r\n\r\n`,
  ]);
  t.is(a.status, 431);
  t.is(rawJsonBody(a)?.code, "invalid-request");
  t.regex(rawJsonBody(a)?.message ?? "", new RegExp(`${TRANSPORT_LIMITS.maxHeaderBytes} bytes`));
});

test("a status watch closes on a frame over its bound (1009) and takes frames under it", async (t) => {
  const upgrade = upgradeRequest("/v1/models/m/watch", { authorization: `Bearer ${token}` });
  const small = await rawExchange(
    tc.addresses[0]!,
    tc.caCert,
    [upgrade, wsFrame(1, Buffer.alloc(limits.watchFrameBytes, 0x61))],
    { gapMs: 100, waitMs: 500 },
  );
  t.is(small.status, 101);
  t.is(serverCloseCode(small.text), undefined, "a frame at the bound is taken");
  const big = await rawExchange(
    tc.addresses[0]!,
    tc.caCert,
    [upgrade, wsFrame(1, Buffer.alloc(limits.watchFrameBytes + 1, 0x61))],
    { gapMs: 100, waitMs: 5000 },
  );
  t.is(big.status, 101);
  t.is(serverCloseCode(big.text), 1009);
});

test("the agent socket closes on a frame over its bound (1009)", async (t) => {
  const upgrade = upgradeRequest("/v1/agent", { authorization: `Agent ${agentAuth}` });
  // Only the frame's header claims the size: the bound is checked before the payload is buffered.
  const a = await rawExchange(
    tc.addresses[0]!,
    tc.caCert,
    [upgrade, wsFrame(1, Buffer.alloc(16), { claimedLength: BigInt(limits.agentFrameBytes + 1) })],
    { gapMs: 100, waitMs: 5000 },
  );
  t.is(a.status, 101);
  t.is(serverCloseCode(a.text), 1009);
});

test.serial("connections beyond the cap are refused, and the controller answers again once they close", async (t) => {
  const open: Awaited<ReturnType<typeof rawConnect>>[] = [];
  let refused = false;
  try {
    for (let i = 0; i < 3 * limits.maxConnections && !refused; i++) {
      try {
        const s = await rawConnect(tc.addresses[0]!, tc.caCert);
        s.on("error", () => undefined);
        open.push(s);
        // The controller may drop a socket right after TLS: let it, then count only live ones.
        await new Promise((r) => setTimeout(r, 5));
        if (s.destroyed || s.readyState !== "open") refused = true;
      } catch {
        refused = true;
      }
    }
    t.true(refused, `a connection was refused before ${3 * limits.maxConnections}`);
    t.true(open.filter((s) => !s.destroyed).length <= limits.maxConnections);
  } finally {
    for (const s of open) s.destroy();
  }
  const health = await eventuallyHealthy();
  t.is(health, 200);
});

async function eventuallyHealthy(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const r = await rawRequest(tc.addresses[0]!, tc.caCert, "GET", "/v1/health").catch(() => undefined);
    if (r?.status === 200) return 200;
    await new Promise((res) => setTimeout(res, 100));
  }
  return 0;
}
