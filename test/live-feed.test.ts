/**
 * The dashboard's session and live feed at the protocol level: the cookie's flags, CSRF-checked
 * writes, Origin-checked upgrades, model patches that rebuild exactly the status the REST API
 * serves, topics ended when access is revoked, feeds ended at logout, and hostile requests that
 * leave the controller answering.
 */
import test from "ava";
import WebSocket from "ws";
import type { LiveMessage, ModelStatus } from "../api";
import { CONTROLLER_TLS_NAME, applyModelPatch } from "../api";
import type { TestController } from "./harness/controller";
import { allReady, operatorsDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { rawRequest } from "./harness/http";
import { request } from "node:https";
import { join } from "node:path";

let tc: TestController;
test.before(async () => {
  tc = await startTestController();
  await tc.admin.createModel("live");
  await tc.admin.createUser("reader", "reader-password-1");
  await tc.admin.grant("live", "reader", "read");
  await tc.admin.deploy("live", { name: "board", operator: await tc.upload(join(operatorsDir, "motd")), units: 2 });
  await tc.waitForUnits("live", allReady(2), "board active", 60_000);
});
test.after.always(async () => {
  await tc?.close();
});

const address = (): string => tc.addresses[0]!;

/** Logs in for a dashboard session: the cookie to send and the CSRF token. */
async function session(user: string, password: string): Promise<{ cookie: string; csrf: string; setCookie: string }> {
  const r = await rawRequest(address(), tc.caCert, "POST", "/v1/session", JSON.stringify({ user, password }));
  if (r.status !== 200) throw new Error(`login: ${r.status} ${r.body.message}`);
  const setCookie = String([r.headers["set-cookie"]].flat()[0]);
  return { cookie: setCookie.split(";")[0]!, csrf: String(r.body.csrf), setCookie };
}

/** A live feed with what it received, in order. */
function feed(headers: Record<string, string>): {
  ws: WebSocket;
  messages: LiveMessage[];
  opened: Promise<"open" | number>;
  closed: Promise<number>;
} {
  const ws = new WebSocket(`wss://${address()}/v1/live`, {
    ca: tc.caCert,
    servername: CONTROLLER_TLS_NAME,
    headers,
  } as WebSocket.ClientOptions);
  const messages: LiveMessage[] = [];
  ws.on("error", () => undefined);
  ws.on("message", (d) => messages.push(JSON.parse(d.toString()) as LiveMessage));
  const opened = new Promise<"open" | number>((resolve) => {
    ws.once("open", () => resolve("open"));
    ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
    ws.once("error", () => resolve(0));
  });
  const closed = new Promise<number>((resolve) => ws.once("close", (code) => resolve(code)));
  return { ws, messages, opened, closed };
}

const origin = (): string => `https://${address()}`;

test.serial(
  "the session cookie is HttpOnly, Secure and SameSite=Strict; writes need its CSRF token; logout ends it",
  async (t) => {
    const s = await session("admin", tc.adminPassword);
    t.regex(s.setCookie, /^steward-session=[A-Za-z0-9_.-]+; Max-Age=\d+; Path=\/; HttpOnly; Secure; SameSite=Strict$/);
    const who = await rawRequest(address(), tc.caCert, "GET", "/v1/session", undefined, { cookie: s.cookie });
    t.is(who.status, 200);
    t.is(who.body.user, "admin");
    t.is(who.body.csrf, s.csrf);
    t.false(JSON.stringify(who.body).includes(s.cookie.split("=")[1]!), "the token itself is never in an answer body");
    const patch = JSON.stringify({ config: { message: "by cookie" } });
    const noToken = await rawRequest(address(), tc.caCert, "PATCH", "/v1/models/live/applications/board", patch, {
      cookie: s.cookie,
    });
    t.is(noToken.status, 403);
    t.regex(String(noToken.body.message), /x-steward-csrf/);
    const wrongToken = await rawRequest(address(), tc.caCert, "PATCH", "/v1/models/live/applications/board", patch, {
      cookie: s.cookie,
      "x-steward-csrf": "A".repeat(43),
    });
    t.is(wrongToken.status, 403);
    const otherSite = await rawRequest(address(), tc.caCert, "PATCH", "/v1/models/live/applications/board", patch, {
      cookie: s.cookie,
      "x-steward-csrf": s.csrf,
      origin: "https://evil.example",
    });
    t.is(otherSite.status, 403);
    const ok = await rawRequest(address(), tc.caCert, "PATCH", "/v1/models/live/applications/board", patch, {
      cookie: s.cookie,
      "x-steward-csrf": s.csrf,
      origin: origin(),
    });
    t.is(ok.status, 200, JSON.stringify(ok.body));
    // Reads need no CSRF token.
    t.is((await rawRequest(address(), tc.caCert, "GET", "/v1/models", undefined, { cookie: s.cookie })).status, 200);
    const out = await rawRequest(address(), tc.caCert, "DELETE", "/v1/session", undefined, {
      cookie: s.cookie,
      "x-steward-csrf": s.csrf,
    });
    t.is(out.status, 204);
    t.regex(String([out.headers["set-cookie"]].flat()[0]), /^steward-session=; Max-Age=0/);
    const after = await rawRequest(address(), tc.caCert, "GET", "/v1/session", undefined, { cookie: s.cookie });
    t.is(after.status, 401);
    t.regex(String(after.body.message), /session has ended/);
  },
);

test.serial("an upgrade authenticated by the cookie must come from this controller's page", async (t) => {
  const s = await session("admin", tc.adminPassword);
  t.is(await feed({ cookie: s.cookie }).opened, 403, "no Origin");
  t.is(await feed({ cookie: s.cookie, origin: "https://evil.example" }).opened, 403, "another site");
  const f = feed({ cookie: s.cookie, origin: origin() });
  t.is(await f.opened, "open");
  f.ws.close();
  // The status watch checks the same.
  const watch = new WebSocket(`wss://${address()}/v1/models/live/watch`, {
    ca: tc.caCert,
    servername: CONTROLLER_TLS_NAME,
    headers: { cookie: s.cookie, origin: "https://evil.example" },
  } as WebSocket.ClientOptions);
  watch.on("error", () => undefined);
  t.is(
    await new Promise<number>((resolve) => {
      watch.once("unexpected-response", (_r, res) => resolve(res.statusCode ?? 0));
      watch.once("open", () => resolve(101));
    }),
    403,
  );
  watch.terminate();
});

test.serial(
  "an upgrade whose Origin agrees with its Host but is not one of the controller's addresses is refused (DNS rebinding)",
  async (t) => {
    const s = await session("admin", tc.adminPassword);
    const port = address().split(":").pop()!;
    const rebound = `rebound.example:${port}`;
    const f = feed({ cookie: s.cookie, host: rebound, origin: `https://${rebound}` });
    t.is(await f.opened, 403, "a name that merely resolves here");
    f.ws.terminate();
    for (const path of ["/v1/models/live/watch", "/v1/console"]) {
      const ws = new WebSocket(`wss://${address()}${path}`, {
        ca: tc.caCert,
        servername: CONTROLLER_TLS_NAME,
        headers: { cookie: s.cookie, host: rebound, origin: `https://${rebound}` },
      } as WebSocket.ClientOptions);
      ws.on("error", () => undefined);
      t.is(
        await new Promise<number>((resolve) => {
          ws.once("unexpected-response", (_r, res) => resolve(res.statusCode ?? 0));
          ws.once("open", () => resolve(101));
        }),
        403,
        path,
      );
      ws.terminate();
    }
    // A name the controller's certificate carries, at its port, is its own page.
    const named = feed({ cookie: s.cookie, host: `localhost:${port}`, origin: `https://localhost:${port}` });
    t.is(await named.opened, "open");
    named.ws.close();
    const plain = feed({ cookie: s.cookie, origin: origin() });
    t.is(await plain.opened, "open");
    plain.ws.close();
  },
);

test.serial("a model's patches rebuild the very status the REST API serves", async (t) => {
  const token = await tc.admin.login();
  const f = feed({ authorization: `Bearer ${token}` });
  t.is(await f.opened, "open");
  f.ws.send(JSON.stringify({ subscribe: ["model:live", "models"] }));
  await eventually("the first status", () => f.messages.some((m) => "status" in m));
  let doc = (f.messages.find((m) => "status" in m) as { status: ModelStatus }).status;
  t.deepEqual(Object.keys(doc.applications.board!.units).sort(), ["board/0", "board/1"]);
  t.true(f.messages.some((m) => "models" in m && m.models.some((x) => x.name === "live")));
  const seen = f.messages.length;
  await tc.admin.updateApplication("live", "board", { config: { message: "patched" } });
  await tc.admin.addUnits("live", "board", 1);
  await tc.waitForUnits(
    "live",
    (units) =>
      units.length === 3 && units.every((u) => u.workload.message === "motd: patched" && u.agent.current === "idle"),
    "three units with the new message",
    60_000,
  );
  await tc.admin.removeUnit("live", "board/2");
  // Every patch since the first status, applied in order, gives what REST serves, once both settle
  // (the unit's machine goes some time after the unit).
  // Compared with keys in one order (a patch adds a unit at the end; the page sorts what it shows).
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v && typeof v === "object"
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
          )
        : v;
  const strip = (s: ModelStatus): unknown =>
    sorted({ ...s, timestamp: undefined, model: { ...s.model, revision: undefined } });
  const rebuilt = (): ModelStatus => {
    let d = (f.messages.find((m) => "status" in m) as { status: ModelStatus }).status;
    for (const m of f.messages) if ("patch" in m) d = applyModelPatch(d, m.patch);
    return d;
  };
  const rest = await eventually(
    "the unit and its machine to be gone, and the patches to agree",
    async () => {
      const now = await tc.admin.status("live");
      const settled = Object.keys(now.applications.board!.units).length === 2 && Object.keys(now.machines).length === 2;
      return settled && JSON.stringify(strip(rebuilt())) === JSON.stringify(strip(now)) ? now : undefined;
    },
    60_000,
  ).catch(async () => tc.admin.status("live"));
  doc = rebuilt();
  t.deepEqual(strip(doc), strip(rest));
  const patches = f.messages.slice(seen).filter((m) => "patch" in m) as {
    patch: { units?: Record<string, unknown> };
  }[];
  t.true(patches.length > 0);
  // A patch carries what changed, not the whole model: none names all units while only one moved.
  t.true(patches.some((p) => p.patch.units && Object.keys(p.patch.units).length === 1));
  f.ws.close();
});

test.serial(
  "a topic of a model the user cannot see is refused, and ends when access is revoked; other topics go on",
  async (t) => {
    await tc.admin.createModel("secret");
    const s = await session("reader", "reader-password-1");
    const f = feed({ cookie: s.cookie, origin: origin() });
    t.is(await f.opened, "open");
    f.ws.send(JSON.stringify({ subscribe: ["model:secret", "model:live", "unit:live/board/0", "models"] }));
    await eventually(
      "answers",
      () => f.messages.some((m) => "unit" in m) && f.messages.some((m) => "error" in m && "topic" in m),
    );
    const refused = f.messages.find((m) => "error" in m && "topic" in m && m.topic === "model:secret") as {
      error: { code: string };
    };
    t.is(refused.error.code, "not-found", "answered as an unknown model");
    const models = f.messages.find((m) => "models" in m) as { models: { name: string }[] };
    t.deepEqual(
      models.models.map((m) => m.name),
      ["live"],
      "the models list shows only what the user may see",
    );
    await tc.admin.revoke("live", "reader");
    await eventually(
      "the topics to end",
      () =>
        f.messages.some((m) => "error" in m && "topic" in m && m.topic === "model:live") &&
        f.messages.some((m) => "error" in m && "topic" in m && m.topic === "unit:live/board/0"),
    );
    await eventually("the models list to drop live", () =>
      f.messages.some((m) => "models" in m && m.models.length === 0),
    );
    t.is(f.ws.readyState, WebSocket.OPEN, "the feed itself stays");
    f.ws.close();
    await tc.admin.grant("live", "reader", "read");
  },
);

test.serial("the controller topic shows a user who is not a superuser the overview only", async (t) => {
  await tc.admin.createUser("glance", "glance-password-1");
  const f = feed({ cookie: (await session("glance", "glance-password-1")).cookie, origin: origin() });
  t.is(await f.opened, "open");
  f.ws.send(JSON.stringify({ subscribe: ["controller"] }));
  const m = await eventually(
    "the controller",
    () => f.messages.find((x) => "controller" in x) as { controller: Record<string, unknown> } | undefined,
  );
  t.deepEqual(Object.keys(m.controller).sort(), ["addresses", "caFingerprint", "name", "uuid", "version"]);
  f.ws.close();
  const a = feed({ cookie: (await session("admin", tc.adminPassword)).cookie, origin: origin() });
  t.is(await a.opened, "open");
  a.ws.send(JSON.stringify({ subscribe: ["controller"] }));
  const whole = await eventually(
    "the controller",
    () => a.messages.find((x) => "controller" in x) as { controller: Record<string, unknown> } | undefined,
  );
  t.truthy(whole.controller.cluster, "a superuser's feed holds the cluster");
  a.ws.close();
});

test.serial("logging out ends the feed with the token-ended code", async (t) => {
  const s = await session("admin", tc.adminPassword);
  const f = feed({ cookie: s.cookie, origin: origin() });
  t.is(await f.opened, "open");
  f.ws.send(JSON.stringify({ subscribe: ["models"] }));
  await eventually("the models list", () => f.messages.length > 0);
  await rawRequest(address(), tc.caCert, "DELETE", "/v1/session", undefined, {
    cookie: s.cookie,
    "x-steward-csrf": s.csrf,
  });
  t.is(await f.closed, 4401);
});

test.serial("malformed, oversized and binary requests close that feed only; the controller answers", async (t) => {
  const token = await tc.admin.login();
  const bad: (string | Buffer)[] = [
    "not json",
    JSON.stringify({ subscribe: "models" }),
    JSON.stringify({ subscribe: Array(9).fill("models") }),
    JSON.stringify({ subscribe: ["model:"] }),
    JSON.stringify({ subscribe: ["unit:live/board"] }),
    JSON.stringify({ subscribe: [{ toString: 1 }] }),
    "x".repeat(10_000),
    Buffer.from([0, 1, 2]),
    JSON.stringify({ subscribe: ["%%%"] }),
  ];
  for (const frame of bad) {
    const f = feed({ authorization: `Bearer ${token}` });
    t.is(await f.opened, "open");
    f.ws.send(frame);
    const code = await f.closed;
    t.true(code === 1008 || code === 1009, `closed with ${code} for ${String(frame).slice(0, 40)}`);
  }
  // A topic for a model that does not exist is answered, not fatal.
  const f = feed({ authorization: `Bearer ${token}` });
  await f.opened;
  f.ws.send(JSON.stringify({ subscribe: ["model:nope", "unit:live/board/99"] }));
  await eventually("two refusals", () => f.messages.filter((m) => "error" in m).length === 2);
  t.deepEqual(
    f.messages.map((m) => ("error" in m ? m.error.code : "?")),
    ["not-found", "not-found"],
  );
  f.ws.close();
  t.is(await feed({}).opened, 401, "no credentials");
  t.is((await rawRequest(address(), tc.caCert, "GET", "/v1/health")).status, 200);
});

test.serial("the page is served with a strict Content-Security-Policy; unknown files are 404", async (t) => {
  // The page is HTML, not our JSON: a plain request.
  const [host, port] = address().split(":");
  const res = await new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
    (resolve, reject) => {
      const req = request({ host, port, path: "/", ca: tc.caCert, servername: CONTROLLER_TLS_NAME }, (r) => {
        let b = "";
        r.on("data", (d: Buffer) => {
          b += d.toString();
        });
        r.on("end", () => resolve({ status: r.statusCode ?? 0, headers: r.headers, body: b }));
      });
      req.on("error", reject);
      req.end();
    },
  );
  t.is(res.status, 200);
  t.regex(
    String(res.headers["content-security-policy"]),
    /default-src 'none'; script-src 'self'; style-src 'self'.*frame-ancestors 'none'/,
  );
  t.is(res.headers["x-frame-options"], "DENY");
  t.regex(res.body, /<script type="module" src="\/dashboard\/app.js"><\/script>/);
  t.notRegex(res.body, /<script>|style=/, "nothing inline");
  for (const path of [
    "/dashboard/index.html",
    "/dashboard/../controller/main.js",
    "/dashboard/chunk-AAAAAAAA.js",
    "/dashboard/%2e%2e%2fpackage.json",
  ]) {
    t.is((await rawRequest(address(), tc.caCert, "GET", path)).status, 404, path);
  }
});
