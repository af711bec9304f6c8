/**
 * The route table (api/routes.ts) is the REST API: every route a real controller serves is in it
 * and every route in it is served, and each route's access rule holds on the wire. A route that
 * forgot its rule (or a handler registered beside the table) fails here: without credentials every
 * non-public route answers 401; a user without access to a model is told it does not exist (404);
 * a user who is not a superuser is refused superusers' routes (403).
 */
import test from "ava";
import { randomUUID } from "node:crypto";
import type { RouteSpec } from "../api";
import { routes } from "../api";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { rawRequest } from "./harness/http";

let tc: TestController;
let outsiderToken: string;
test.before(async () => {
  tc = await startTestController();
  await tc.admin.createModel("m");
  await tc.admin.createUser("outsider", "outsider-password");
  outsiderToken = await tc.clientFor("outsider", "outsider-password").login();
});
test.after.always(async () => {
  await tc?.close();
});

const table = Object.entries(routes) as [string, RouteSpec][];
const methodsOf = (r: RouteSpec): string[] => (typeof r.method === "string" ? [r.method] : [...r.method]);

/** A path of `r` on model `m`, with plausible values for its other parameters. */
function pathFor(r: RouteSpec): string {
  const values: Record<string, string> = {
    model: "m",
    app: "web",
    n: "0",
    user: "admin",
    name: "cred",
    hash: "a".repeat(64),
    file: "app.js",
    id: randomUUID(),
  };
  return r.path.replace(/:([A-Za-z]+)/g, (_, name: string) => values[name] ?? "x").replace("*", "x");
}

function send(r: RouteSpec, token?: string): ReturnType<typeof rawRequest> {
  const method = methodsOf(r)[0]!;
  const body = method === "POST" || method === "PUT" || method === "PATCH" ? "{}" : undefined;
  return rawRequest(
    tc.addresses[0]!,
    tc.caCert,
    method,
    pathFor(r),
    body,
    token ? { authorization: `Bearer ${token}` } : {},
  );
}

test("every route the controller serves is in the table, and every route in the table is served", (t) => {
  const served = new Set(tc.controller.httpRoutes.map((r) => `${r.method} ${r.url}`));
  const declared = new Set(table.flatMap(([, r]) => methodsOf(r).map((m) => `${m} ${r.path}`)));
  // Fastify answers HEAD for every GET by itself.
  const notDeclared = [...served].filter(
    (s) => !declared.has(s) && !(s.startsWith("HEAD ") && declared.has(s.replace(/^HEAD /, "GET "))),
  );
  const notServed = [...declared].filter((d) => !served.has(d));
  t.deepEqual(notDeclared, [], "served but not in api/routes.ts");
  t.deepEqual(notServed, [], "in api/routes.ts but not served");
  t.true(declared.size >= 60, `routes in the table: ${declared.size}`);
  // A route on a model says who may reach that model: its users by their access, or superusers.
  const unguarded = table
    .filter(([, r]) => r.path.includes("/:model") && !r.access.startsWith("model:") && r.access !== "superuser")
    .map(([name]) => name);
  t.deepEqual(unguarded, [], "routes on a model without a model or superuser rule");
});

test("every route but the public ones refuses a caller without credentials (401)", async (t) => {
  const wrong: string[] = [];
  for (const [name, r] of table.filter(([, r]) => r.access !== "public")) {
    const res = await send(r);
    if (res.status !== 401 || res.body.code !== "unauthorized")
      wrong.push(`${name}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
  }
  t.deepEqual(wrong, []);
});

test("every route with model access tells a user without access that the model does not exist (404)", async (t) => {
  const modelRoutes = table.filter(([, r]) => r.access.startsWith("model:") && r.access !== "model:write-any");
  t.true(modelRoutes.length >= 25, `model routes: ${modelRoutes.length}`);
  const wrong: string[] = [];
  for (const [name, r] of modelRoutes) {
    const res = await send(r, outsiderToken);
    if (res.status !== 404 || res.body.details?.kind !== "model" || res.body.details?.name !== "m")
      wrong.push(`${name}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
  }
  t.deepEqual(wrong, []);
  // The same routes answer the model's admin otherwise: the model exists.
  const res = await send(routes.listMachines, await tc.admin.login());
  t.is(res.status, 200);
});

test("every superuser route refuses a user who is not a superuser (403)", async (t) => {
  const wrong: string[] = [];
  for (const [name, r] of table.filter(([, r]) => r.access === "superuser")) {
    const res = await send(r, outsiderToken);
    if (res.status !== 403 || res.body.code !== "forbidden")
      wrong.push(`${name}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
  }
  t.deepEqual(wrong, []);
});
