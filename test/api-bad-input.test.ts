/** Every kind of bad input gets a 4xx with a stable code and a message that names what is wrong; nothing is half-written. */
import test from "ava";
import { chmod, cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import type { StewardError } from "../api";
import { readOperatorDir } from "../api";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";
import { rawRequest } from "./harness/http";

let tc: TestController;
let token: string;
let motd: string;
test.before(async () => {
  tc = await startTestController();
  token = await tc.admin.login();
  await tc.admin.createModel("m");
  motd = await tc.upload(join(operatorsDir, "motd"));
  await tc.admin.deploy("m", { name: "motd", operator: motd, units: 0, config: { message: "kept" } });
});
test.after.always(async () => {
  await tc?.close();
});

const req = (method: string, path: string, body?: unknown, auth = true) =>
  rawRequest(
    tc.addresses[0]!,
    tc.caCert,
    method,
    path,
    body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    auth ? { authorization: `Bearer ${token}` } : {},
  );

test("a malformed field is refused with 400 naming the field", async (t) => {
  const r = await req("POST", "/v1/models", { name: "Not Valid" });
  t.is(r.status, 400);
  t.is(r.body.code, "invalid-request");
  t.regex(r.body.message!, /"name"/);
});

test("an unknown field is refused with 400 naming it", async (t) => {
  const r = await req("POST", "/v1/models/m/applications", { name: "x", operator: motd, unitz: 3 });
  t.is(r.status, 400);
  t.regex(r.body.message!, /unknown field "unitz"/);
});

test("a body that is not JSON is refused with 400", async (t) => {
  const r = await req("POST", "/v1/models", "{not json");
  t.is(r.status, 400);
  t.is(r.body.code, "invalid-request");
  t.regex(r.body.message!, /not valid JSON/);
  t.is((r.body as { retryable?: boolean }).retryable, false, "the wire error's full shape, as every other error");
});

test("unknown model, application, unit and machine get 404 with the name", async (t) => {
  for (const [path, name] of [
    ["/v1/models/nope/status", "nope"],
    ["/v1/models/m/applications/ghost", "ghost"],
    ["/v1/models/m/machines/42", "42"],
  ] as const) {
    const r = await req(path.includes("machines") ? "DELETE" : "GET", path);
    t.is(r.status, 404, path);
    t.is(r.body.code, "not-found");
    t.true(r.body.message!.includes(`"${name}"`), r.body.message);
  }
  const u = await req("DELETE", "/v1/models/m/units/motd/9");
  t.is(u.status, 404);
  t.regex(u.body.message!, /unit "motd\/9" not found/);
  const e = await req("GET", "/v1/nothing-here");
  t.is(e.status, 404);
  t.regex(e.body.message!, /no such endpoint/);
  t.is((e.body as { retryable?: boolean }).retryable, false);
});

test("missing or wrong credentials get 401", async (t) => {
  t.is((await req("GET", "/v1/models", undefined, false)).status, 401);
  const bad = await rawRequest(tc.addresses[0]!, tc.caCert, "GET", "/v1/models", undefined, {
    authorization: "Bearer forged.token",
  });
  t.is(bad.status, 401);
  t.is(bad.body.code, "unauthorized");
  const login = await rawRequest(
    tc.addresses[0]!,
    tc.caCert,
    "POST",
    "/v1/login",
    JSON.stringify({ user: "admin", password: "wrong" }),
    {},
  );
  t.is(login.status, 401);
  t.is(login.body.message, "wrong user name or password");
  const agent = await rawRequest(tc.addresses[0]!, tc.caCert, "GET", "/v1/models", undefined, {
    authorization: "Agent x/0/secret",
  });
  t.is(agent.status, 401);
});

test("insufficient permission gets 403 and changes nothing", async (t) => {
  await tc.admin.createUser("reader", "reader-password", false);
  await tc.admin.grant("m", "reader", "read");
  await tc.admin.createUser("stranger", "stranger-password", false);
  const reader = tc.clientFor("reader", "reader-password");
  t.truthy(await reader.status("m"));
  const err = await t.throwsAsync<StewardError>(reader.deploy("m", { name: "sneaky", operator: motd, units: 0 }));
  t.is(err?.code, "forbidden");
  t.regex(err!.message, /reader has read access to model m; this needs write/);
  const cfg = await t.throwsAsync<StewardError>(
    reader.updateApplication("m", "motd", { config: { message: "changed" } }),
  );
  t.is(cfg?.code, "forbidden");
  t.is((await tc.admin.getApplication("m", "motd")).config.message, "kept");
  t.is((await t.throwsAsync<StewardError>(reader.createModel("mine")))?.code, "forbidden");
  const stranger = tc.clientFor("stranger", "stranger-password");
  t.is((await t.throwsAsync<StewardError>(stranger.status("m")))?.code, "not-found");
  t.deepEqual(await stranger.listModels(), []);
  t.false("sneaky" in (await tc.admin.status("m")).applications);
});

test("a model the user has no access to is answered exactly as one that does not exist", async (t) => {
  await tc.admin.createUser("outsider", "outsider-password", false);
  const outsiderToken = await tc.clientFor("outsider", "outsider-password").login();
  const as = (method: string, path: string, body?: unknown) =>
    rawRequest(tc.addresses[0]!, tc.caCert, method, path, body === undefined ? undefined : JSON.stringify(body), {
      authorization: `Bearer ${outsiderToken}`,
    });
  const calls: [string, string, unknown?][] = [
    ["GET", "/v1/models/NAME/status"],
    ["GET", "/v1/models/NAME/applications/motd"],
    ["GET", "/v1/models/NAME/machines"],
    ["POST", "/v1/models/NAME/applications", { name: "x", operator: motd, units: 0 }],
    ["DELETE", "/v1/models/NAME"],
    ["PUT", "/v1/models/NAME/access/outsider", { access: "admin" }],
    ["GET", "/v1/models/NAME/logs?tail=false"],
    ["GET", "/v1/models/NAME/export"],
    ["POST", "/v1/models/NAME/actions", { units: ["motd/0"], action: "x", params: {} }],
  ];
  for (const [method, path, body] of calls) {
    const hidden = await as(method, path.replace("NAME", "m"), body);
    const unknown = await as(method, path.replace("NAME", "no-such-model"), body);
    t.is(hidden.status, 404, `${method} ${path}: ${JSON.stringify(hidden.body)}`);
    t.is(hidden.status, unknown.status, `${method} ${path}`);
    t.deepEqual(
      hidden.body,
      JSON.parse(JSON.stringify(unknown.body).replaceAll("no-such-model", "m")),
      `${method} ${path}`,
    );
    t.is(hidden.body.message, 'model "m" not found');
  }
  // A superuser still gets the precise answer, and a user with some access is told what is missing.
  t.is((await req("GET", "/v1/models/no-such-model/status")).body.message, 'model "no-such-model" not found');
  await tc.admin.grant("m", "outsider", "read");
  const refused = await as("DELETE", "/v1/models/m");
  t.is(refused.status, 403);
  t.regex(refused.body.message!, /outsider has read access to model m; this needs admin/);
  t.truthy(await tc.admin.status("m"), "nothing was destroyed");
});

async function brokenOperator(mutate: (dir: string) => Promise<void>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "steward-op-"));
  await cp(join(operatorsDir, "motd"), dir, { recursive: true });
  await mutate(dir);
  return dir;
}

test("an operator without operator.yaml is refused at upload, naming the file", async (t) => {
  const dir = await brokenOperator((d) => rm(join(d, "operator.yaml")));
  await t.throwsAsync(readOperatorDir(dir), { message: /operator\.yaml: is missing/ });
  // The controller refuses the same bundle on its own, whatever the client checked.
  const files = [{ path: "hooks/install", mode: 0o755, content: Buffer.from("#!/bin/sh\n").toString("base64") }];
  const r = await req("POST", "/v1/operators", { files });
  t.is(r.status, 400);
  t.is(r.body.code, "operator-invalid");
  t.regex(r.body.message!, /operator\.yaml: is missing/);
});

test("an invalid operator.yaml is refused naming the field and line", async (t) => {
  const dir = await brokenOperator((d) =>
    writeFile(join(d, "operator.yaml"), 'name: motd\nversion: "1"\nconfig:\n  message:\n    type: text\n'),
  );
  const err = await t.throwsAsync<StewardError>(readOperatorDir(dir));
  t.is(err?.code, "operator-invalid");
  t.is(err?.message, 'operator.yaml:5: "config.message.type" must be one of string, int, float, boolean, secret');
  const unknown = await brokenOperator((d) =>
    writeFile(join(d, "operator.yaml"), 'name: motd\nversion: "1"\nsumary: typo\n'),
  );
  await t.throwsAsync(readOperatorDir(unknown), { message: /operator\.yaml:3: "sumary" is not a known field/ });
});

test("a hook that is not executable is refused naming the hook", async (t) => {
  const dir = await brokenOperator((d) => chmod(join(d, "hooks", "install"), 0o644));
  await t.throwsAsync(readOperatorDir(dir), { message: "hooks/install: is not executable (chmod +x hooks/install)" });
  const files = [
    { path: "operator.yaml", mode: 0o644, content: Buffer.from("name: x\nversion: '1'\n").toString("base64") },
    { path: "hooks/start", mode: 0o644, content: Buffer.from("#!/bin/sh\n").toString("base64") },
  ];
  const r = await req("POST", "/v1/operators", { files });
  t.is(r.status, 400);
  t.regex(r.body.message!, /hooks\/start: is not executable/);
});

test("config of the wrong type or unknown key is refused and nothing changes", async (t) => {
  const before = await tc.admin.getApplication("m", "motd");
  const wrongType = await t.throwsAsync<StewardError>(
    tc.admin.updateApplication("m", "motd", { config: { message: "new", uppercase: "yes" } }),
  );
  t.is(wrongType?.code, "config-invalid");
  t.regex(wrongType!.message, /config "uppercase" of motd: must be true or false, got the string "yes"/);
  const unknown = await t.throwsAsync<StewardError>(
    tc.admin.updateApplication("m", "motd", { config: { colour: "red" } }),
  );
  t.regex(unknown!.message, /"colour" is not an option of motd .*known options: message, uppercase/);
  t.deepEqual((await tc.admin.getApplication("m", "motd")).config, before.config);
  const deploy = await t.throwsAsync<StewardError>(
    tc.admin.deploy("m", { name: "typed", operator: motd, units: 1, config: { uppercase: 1 } }),
  );
  t.is(deploy?.code, "config-invalid");
  t.false("typed" in (await tc.admin.status("m")).applications);
});

test("placing a unit on a machine that does not exist creates nothing", async (t) => {
  const err = await t.throwsAsync<StewardError>(
    tc.admin.deploy("m", { name: "placed", operator: motd, units: 1, to: ["77"] }),
  );
  t.is(err?.code, "not-found");
  t.regex(err!.message, /machine "77" not found/);
  const s = await tc.admin.status("m");
  t.false("placed" in s.applications);
  t.deepEqual(Object.keys(s.machines), []);
});

test("deploying an application twice is a conflict naming it", async (t) => {
  const err = await t.throwsAsync<StewardError>(tc.admin.deploy("m", { name: "motd", operator: motd, units: 0 }));
  t.is(err?.code, "already-exists");
  t.regex(err!.message, /application "motd" already exists/);
});
