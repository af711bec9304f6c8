/** The pod's probe endpoint (agent/health-server.ts) over real HTTP: paths, methods, and checks that fail or throw. */
import test from "ava";
import { request } from "node:http";
import { HealthServer } from "../agent";
import type { HealthChecks } from "../agent";

function call(port: number, method: string, path: string): Promise<{ status: number; body: string; allow?: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, timeout: 2000 }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => {
        body += d.toString();
      });
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body, ...(res.headers.allow ? { allow: res.headers.allow } : {}) }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

test("GET and HEAD of /livez and /readyz answer the checks; other paths 404, other methods 405; a throwing check is a 503", async (t) => {
  let checks: HealthChecks = {
    live: () => ({ ok: true, reason: "ok" }),
    ready: () => ({ ok: false, reason: "db/0 is not ready:\nwaiting" }),
  };
  const server = new HealthServer({ host: "127.0.0.1", port: 0, checks: () => checks });
  const port = await server.start();
  t.teardown(() => server.close());
  t.deepEqual(await call(port, "GET", "/livez"), { status: 200, body: "ok\n" });
  t.deepEqual(
    await call(port, "GET", "/readyz?verbose=1"),
    { status: 503, body: "db/0 is not ready: waiting\n" },
    "one line",
  );
  t.deepEqual(await call(port, "HEAD", "/readyz"), { status: 503, body: "" });
  t.is((await call(port, "GET", "/")).status, 404);
  t.is((await call(port, "GET", "/livez/x")).status, 404);
  t.deepEqual(await call(port, "DELETE", "/livez"), {
    status: 405,
    body: "DELETE is not allowed: use GET or HEAD\n",
    allow: "GET, HEAD",
  });
  checks = {
    live: () => {
      throw new Error("boom");
    },
    ready: () => ({ ok: true, reason: "x".repeat(5000) }),
  };
  t.deepEqual(await call(port, "GET", "/livez"), { status: 503, body: "the live check failed: boom\n" });
  const long = await call(port, "GET", "/readyz");
  t.is(long.status, 200);
  t.is(long.body.length, 1025, "a reason is cut to 1024 characters");
});
