/**
 * No request, whatever its bytes, may end or stall the controller. Malformed paths, headers,
 * credentials, bodies and WebSocket frames are sent to every REST route and every upgrade of a real
 * controller; after each batch it must still answer health and login. Every answer must be a 4xx in
 * our `{code, message}` shape, never a 500. The cases come from a seeded generator: a failure names
 * its seed, and HOSTILE_SEED=<seed> replays it.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { join } from "node:path";
import type { RawAnswer } from "./harness/raw-tls";
import { rawExchange, rawJsonBody, serverCloseCode, upgradeRequest, wsFrame } from "./harness/raw-tls";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";
import { rawRequest } from "./harness/http";

const SEED = Number(process.env.HOSTILE_SEED ?? 0x5eed);

let tc: TestController;
let token: string;
let agentAuth: string;
test.before(async () => {
  // Consoles (/v1/console) are fuzzed too, more of them at once than one user may normally open.
  tc = await startTestController({ consoles: { maxPerUser: 50, maxSessions: 50 } });
  token = await tc.admin.login();
  // "keep" is never among the generated names, so no generated write can remove it.
  const { uuid } = await tc.admin.createModel("keep");
  const [m] = (await tc.admin.addMachines("keep", "manual", 1)).machines;
  agentAuth = `${uuid}/${m!.id}/${m!.credential!}`;
  await tc.admin.createModel("m");
  const motd = await tc.upload(join(operatorsDir, "motd"));
  await tc.admin.deploy("m", { name: "motd", operator: motd, units: 0 });
});
test.after.always(async () => {
  await tc?.close();
});

/** mulberry32: small, fast and the same on every machine. */
function prng(seed: number): { pick<T>(xs: readonly T[]): T; below(n: number): number } {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
  return { pick: (xs) => xs[Math.floor(next() * xs.length)]!, below: (n) => Math.floor(next() * n) };
}

const segments = [
  "%",
  "%zz",
  "%E0%A4%A",
  "%00",
  "%ff%fe",
  "%c0%af",
  "..",
  "%2e%2e",
  "a%2Fb",
  "%25",
  "ü",
  "",
  "m",
  "motd",
  "0",
  "x".repeat(20_000),
  "é".repeat(300),
] as const;
const authorizations = (): (string | undefined)[] => [
  undefined,
  "",
  "Bearer",
  "Bearer ",
  `Bearer ${token}`,
  `Bearer ${token}junk`,
  "Bearer a.b",
  `Bearer ${"x".repeat(12_000)}`,
  "Agent",
  "Agent ",
  "Agent ///",
  "Agent %/%/%",
  "Agent m/0/x",
  `Agent ${agentAuth}`,
  `Agent ${"/".repeat(5000)}`,
  "Basic YWRtaW46eA==",
  "Bearer \u00ff\u00fe",
];
const headerSets: readonly Record<string, string>[] = [
  {},
  { "content-type": "application/json" },
  { "content-type": "text/plain" },
  { "content-type": "application/json; charset=\u00ff" },
  { "x-huge": "y".repeat(20_000) },
  { "transfer-encoding": "chunked" },
  { expect: "100-continue" },
  { "content-length": "-1" },
  { "content-length": "1e9" },
];
const bodies = [
  "",
  "{",
  "null",
  "[]",
  '"x"',
  '{"__proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"p":1}}}',
  '{"name":"\\u0000"}',
  "[".repeat(50_000),
  '{"a":'.repeat(20_000),
  "\u00ff\u00fe\u0000garbage",
  '{"name":"' + "a".repeat(2 * 1024 * 1024) + '"}',
] as const;

function request(method: string, path: string, headers: Record<string, string>, body: string): string {
  const all: Record<string, string> = {
    host: "steward",
    connection: "close",
    "content-length": String(Buffer.byteLength(body, "latin1")),
    ...headers,
  };
  if (all["transfer-encoding"]) delete all["content-length"];
  return `${method} ${path} HTTP/1.1\r\n${Object.entries(all)
    .map(([k, v]) => `${k}: ${v}`)
    .join("\r\n")}\r\n\r\n${body}`;
}

/** What an answer must not be: a 5xx, or an error outside our shape (HEAD answers have no body). */
function violation(what: string, a: RawAnswer, head = false): string | undefined {
  if (a.status === undefined) return undefined; // closed or still waiting: neither ends the process
  if (a.status >= 500) return `${what} → ${a.status}: ${a.text.slice(0, 300)}`;
  if (a.status >= 400 && !head && typeof rawJsonBody(a)?.code !== "string")
    return `${what} → ${a.status} outside our error shape: ${a.text.slice(0, 300)}`;
  return undefined;
}

async function inBatches<T>(items: T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(fn));
}

async function assertAlive(t: ExecutionContext, after: string): Promise<void> {
  t.is(tc.controller.getState(), "RUNNING", `controller state after ${after}`);
  const health = await rawRequest(tc.addresses[0]!, tc.caCert, "GET", "/v1/health");
  t.is(health.status, 200, `health after ${after}`);
  const login = await rawRequest(
    tc.addresses[0]!,
    tc.caCert,
    "POST",
    "/v1/login",
    JSON.stringify({ user: "admin", password: tc.adminPassword }),
  );
  t.is(login.status, 200, `login after ${after}`);
}

const show = (s: string): string => (s.length > 80 ? `${s.slice(0, 80)}…(${s.length})` : s);

test("hostile requests to every REST route are answered 4xx in our shape and the controller lives", async (t) => {
  t.log(`seed ${SEED} (replay: HOSTILE_SEED=${SEED})`);
  const r = prng(SEED);
  const routes = tc.controller.httpRoutes;
  t.true(routes.length >= 20, `routes found: ${routes.length}`);
  const violations: string[] = [];
  for (const [n, route] of routes.entries()) {
    const cases = Array.from({ length: 6 }, () => {
      const path = route.url.replace(/:[a-z]+/g, () => r.pick(segments));
      const auth = r.pick(authorizations());
      const headers = { ...r.pick(headerSets), ...(auth === undefined ? {} : { authorization: auth }) };
      const body = route.method === "GET" || route.method === "HEAD" ? r.pick(["", "", "{}"]) : r.pick(bodies);
      return {
        what: `#${n} ${route.method} ${show(path)} auth=${show(auth ?? "-")} headers=${show(JSON.stringify(headers))} body=${show(body)}`,
        bytes: request(route.method, path, headers, body),
      };
    });
    await inBatches(cases, 6, async (c) => {
      const v = violation(
        c.what,
        await rawExchange(tc.addresses[0]!, tc.caCert, [Buffer.from(c.bytes, "latin1")], { waitMs: 1500 }),
        route.method === "HEAD",
      );
      if (v) violations.push(v);
    });
    if (n % 8 === 7) await assertAlive(t, `routes up to #${n}`);
  }
  t.deepEqual(violations, [], `seed ${SEED}`);
  await assertAlive(t, "every route");
});

test("malformed request lines and headers are answered 4xx and the controller lives", async (t) => {
  const lines = [
    "GET /v1/health\r\n\r\n",
    "GARBAGE\r\n\r\n",
    "GET /v1/health HTTP/9.9\r\n\r\n",
    "GET /v1/health HTTP/1.1\r\nno-colon-here\r\n\r\n",
    "GET /v1/health HTTP/1.1\r\nhost: a\r\nhost: b\r\n\r\n",
    `GET /${"a".repeat(100_000)} HTTP/1.1\r\nhost: a\r\n\r\n`,
    `GET /v1/health HTTP/1.1\r\n${Array.from({ length: 3000 }, (_, i) => `x-${i}: 1`).join("\r\n")}\r\n\r\n`,
    "GET /v1/health HTTP/1.1\r\nhost: a\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
    "POST /v1/login HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\ncontent-type: application/json\r\n\r\nfffffffffffffffff\r\n",
    "GET /v1/health HTTP/1.1\r\nhost: a\u0000b\r\n\r\n",
    "\u0016\u0003\u0001\u0000\u00a5\u0001",
    "GET /v1/%%%% HTTP/1.1\r\nhost: a\r\n\r\n",
  ];
  const violations: string[] = [];
  for (const l of lines) {
    const v = violation(
      show(JSON.stringify(l)),
      await rawExchange(tc.addresses[0]!, tc.caCert, [Buffer.from(l, "latin1")], { waitMs: 1500 }),
    );
    if (v) violations.push(v);
  }
  t.deepEqual(violations, []);
  await assertAlive(t, "malformed requests");
});

test("hostile WebSocket upgrades are answered 4xx in our shape and the controller lives", async (t) => {
  const r = prng(SEED + 1);
  const paths = [
    "/v1/agent",
    "/v1/models/keep/watch",
    "/v1/models/%/watch",
    "/v1/models/%zz/watch",
    "/v1/models/%00/watch",
    "/v1/models/%E0%A4%A/watch",
    `/v1/models/${"a".repeat(20_000)}/watch`,
    "/v1/models/../watch",
    "/v1/models/keep/watch/../x",
    "/v1/agent?%",
    "/v1/nothing",
    "/v1/models//watch",
    "*",
    "/v1/console",
    "/v1/console?%",
    "/v1/console/../agent",
  ];
  const mutations: readonly { headers?: Record<string, string>; method?: string }[] = [
    {},
    { headers: { "sec-websocket-key": "short" } },
    { headers: { "sec-websocket-version": "99" } },
    { headers: { upgrade: "h2c" } },
    { method: "POST" },
    { headers: { "sec-websocket-extensions": "permessage-deflate; server_max_window_bits=99" } },
    { headers: { "sec-websocket-protocol": "\u00ff" } },
  ];
  const violations: string[] = [];
  const cases = Array.from({ length: 150 }, () => {
    const path = r.pick(paths);
    const auth = r.pick(authorizations());
    const m = r.pick(mutations);
    return {
      what: `upgrade ${show(path)} auth=${show(auth ?? "-")} ${JSON.stringify(m)}`,
      bytes: upgradeRequest(path, { ...(auth === undefined ? {} : { authorization: auth }), ...m.headers }, m.method),
    };
  });
  // The first one is the crash this test was written for.
  cases.unshift({
    what: "upgrade /v1/models/%/watch as admin",
    bytes: upgradeRequest("/v1/models/%/watch", { authorization: `Bearer ${token}` }),
  });
  await inBatches(cases, 10, async (c) => {
    const v = violation(
      c.what,
      await rawExchange(tc.addresses[0]!, tc.caCert, [Buffer.from(c.bytes, "latin1")], { waitMs: 1000 }),
    );
    if (v) violations.push(v);
  });
  t.deepEqual(violations, [], `seed ${SEED + 1}`);
  await assertAlive(t, "hostile upgrades");
});

test("bad WebSocket frames on the agent socket, a status watch and a console leave the controller alive", async (t) => {
  const r = prng(SEED + 2);
  const text = (s: string): Buffer => Buffer.from(s);
  const frames: readonly Buffer[] = [
    Buffer.from("\u00ff\u00fe garbage that is not a frame", "latin1"),
    wsFrame(1, text("{}"), { mask: false }),
    wsFrame(3, text("reserved opcode")),
    wsFrame(1, text("rsv bits"), { rsv: 7 }),
    wsFrame(9, text("fragmented ping"), { fin: false }),
    wsFrame(8, Buffer.from([3])),
    wsFrame(1, Buffer.alloc(0), { claimedLength: 2n ** 63n - 1n }),
    wsFrame(1, Buffer.alloc(16), { claimedLength: 90n * 1024n * 1024n }),
    wsFrame(1, Buffer.from([0xc3, 0x28, 0xa0, 0xa1])),
    wsFrame(1, text("not json")),
    wsFrame(1, text("null")),
    wsFrame(1, text('{"t":"req","id":1,"method":"__proto__","params":{}}')),
    wsFrame(1, text('{"t":"req","id":1,"method":"constructor","params":null}')),
    wsFrame(1, text('{"t":"req","id":1,"method":"unit.status","params":{"__proto__":{"x":1},"unit":"u/0"}}')),
    wsFrame(1, text('{"t":"req","id":{},"method":"hook.commit","params":[]}')),
    wsFrame(2, Buffer.alloc(70_000, 1)),
    wsFrame(1, text("fragment"), { fin: false }),
  ];
  const targets = [
    { path: "/v1/agent", authorization: `Agent ${agentAuth}` },
    { path: "/v1/models/keep/watch", authorization: `Bearer ${token}` },
    { path: "/v1/console", authorization: `Bearer ${token}` },
  ];
  const violations: string[] = [];
  for (let i = 0; i < 40; i++) {
    const target = r.pick(targets);
    const picked = Array.from({ length: 1 + r.below(3) }, () => r.pick(frames));
    const a = await rawExchange(
      tc.addresses[0]!,
      tc.caCert,
      [upgradeRequest(target.path, { authorization: target.authorization }), ...picked],
      { gapMs: 50, waitMs: 500 },
    );
    if (a.status !== 101) violations.push(`${target.path}: handshake answered ${a.status}: ${a.text.slice(0, 200)}`);
  }
  t.deepEqual(violations, [], `seed ${SEED + 2}`);
  await assertAlive(t, "bad frames");
});

test("a bad percent-encoding in a REST path is answered 400 in our shape", async (t) => {
  const a = await rawExchange(tc.addresses[0]!, tc.caCert, [
    request("GET", "/v1/models/%/status", { authorization: `Bearer ${token}` }, ""),
  ]);
  t.is(a.status, 400);
  const body = rawJsonBody(a);
  t.is(body?.code, "invalid-request");
  t.regex(body?.message ?? "", /not valid percent-encoding/);
});

test("an upgrade to a watch with a bad percent-encoding is answered 400, not a crash", async (t) => {
  const a = await rawExchange(tc.addresses[0]!, tc.caCert, [
    upgradeRequest("/v1/models/%/watch", { authorization: `Bearer ${token}` }),
  ]);
  t.is(a.status, 400);
  t.is(rawJsonBody(a)?.code, "invalid-request");
  const unknown = await rawExchange(tc.addresses[0]!, tc.caCert, [upgradeRequest("/v1/elsewhere")]);
  t.is(unknown.status, 404);
  t.regex(rawJsonBody(unknown)?.message ?? "", /no WebSocket endpoint/);
  await assertAlive(t, "a bad watch path");
});

test("prototype keys in a JSON body are refused by name", async (t) => {
  for (const [body, key] of [
    ['{"name":"x","__proto__":{"polluted":true}}', "__proto__"],
    ['{"name":"x","config":{"constructor":{"prototype":{}}}}', "constructor"],
    ['{"name":"x","\\u005f_proto__":{}}', "__proto__"],
  ] as const) {
    const res = await rawRequest(tc.addresses[0]!, tc.caCert, "POST", "/v1/models", body, {
      authorization: `Bearer ${token}`,
    });
    t.is(res.status, 400, body);
    t.is(res.body.code, "invalid-request");
    t.regex(res.body.message!, new RegExp(`key "${key}" is not allowed`));
    t.is(res.body.details?.key, key);
  }
  t.false(
    (await tc.admin.listModels()).some((m) => m.name === "x"),
    "nothing was created",
  );
});

test("a read-only user's watch refuses a 90 MiB frame at its header (1009)", async (t) => {
  await tc.admin.createUser("watcher", "watcher-password", false);
  await tc.admin.grant("keep", "watcher", "read");
  const watcherToken = await tc.clientFor("watcher", "watcher-password").login();
  const a = await rawExchange(
    tc.addresses[0]!,
    tc.caCert,
    [
      upgradeRequest("/v1/models/keep/watch", { authorization: `Bearer ${watcherToken}` }),
      wsFrame(2, Buffer.alloc(64 * 1024), { claimedLength: 90n * 1024n * 1024n }),
    ],
    { gapMs: 100, waitMs: 5000 },
  );
  t.is(a.status, 101);
  t.is(serverCloseCode(a.text), 1009);
});
