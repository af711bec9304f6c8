/**
 * A client's retry of a mutating request (same request id) gets the first try's answer: never
 * "already exists" for what it created itself, never a second copy of what it added. Checked
 * through a real controller over HTTPS, and at the state layer for the case where the first try
 * committed but its answer was never recorded (the replica died, or the store answered late).
 */
import test from "ava";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPLAYED_HEADER, REQUEST_ID_HEADER } from "../api";
import { EmbeddedStore, RequestScope, StateOps, credentialMatches, requestKeys, runInRequest } from "../controller";
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
  await tc.admin.deploy("m", { name: "motd", operator: motd, units: 0 });
});
test.after.always(async () => {
  await tc?.close();
});

const send = (method: string, path: string, body: unknown, id: string, bearer = token) =>
  rawRequest(tc.addresses[0]!, tc.caCert, method, path, JSON.stringify(body), {
    authorization: `Bearer ${bearer}`,
    [REQUEST_ID_HEADER]: id,
  });

test("a retried model creation gets the first answer, not 409, and makes one model", async (t) => {
  const id = randomUUID();
  const first = await send("POST", "/v1/models", { name: "once" }, id);
  const again = await send("POST", "/v1/models", { name: "once" }, id);
  t.is(first.status, 201);
  t.is(again.status, 201);
  t.deepEqual(again.body, first.body);
  t.is(again.headers[REPLAYED_HEADER], "true");
  t.is((await tc.admin.listModels()).filter((m) => m.name === "once").length, 1);
  // A new request for the same name is still refused: only the same request id is answered again.
  const other = await send("POST", "/v1/models", { name: "once" }, randomUUID());
  t.is(other.status, 409);
});

test("a retried add-unit adds the units once", async (t) => {
  const id = randomUUID();
  const first = await send("POST", "/v1/models/m/applications/motd/units", { count: 2 }, id);
  const again = await send("POST", "/v1/models/m/applications/motd/units", { count: 2 }, id);
  t.is(first.status, 201);
  t.deepEqual(again.body, first.body);
  t.is((await tc.admin.getApplication("m", "motd")).units.length, 2);
});

test("a request id reused for another request is refused; another user's retry is not answered from the record", async (t) => {
  const id = randomUUID();
  t.is((await send("POST", "/v1/models", { name: "reused" }, id)).status, 201);
  const wrongPath = await send("PATCH", "/v1/models/reused", { config: { updateStatusInterval: 60 } }, id);
  t.is(wrongPath.status, 400);
  t.regex(wrongPath.body.message!, /already used for POST \/v1\/models/);
  await tc.admin.createUser("bob", "bob-password-1", false);
  const bob = await tc.clientFor("bob", "bob-password-1").login();
  const stolen = await send("POST", "/v1/models", { name: "reused" }, id, bob);
  t.is(stolen.status, 403, "bob is served as a new request (and may not create models)");
  t.is(stolen.headers[REPLAYED_HEADER], undefined);
});

test("a malformed request id is refused with 400 naming the header", async (t) => {
  const r = await send("POST", "/v1/models", { name: "badid" }, "x y");
  t.is(r.status, 400);
  t.regex(r.body.message!, new RegExp(REQUEST_ID_HEADER));
});

test("a request whose first try committed but never answered is rebuilt from its recorded steps", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-idem-"));
  const store = await EmbeddedStore.open({ dir });
  t.teardown(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  const ops = new StateOps(store);
  const id = randomUUID();
  // First try: the model is created; its answer is lost (no response record is written here).
  const first = await runInRequest(new RequestScope(id), () => ops.models.create("admin", "lost-answer"));
  t.truthy(await store.get(requestKeys.step(id, 0)));
  t.is(await store.get(requestKeys.response(id)), undefined);
  // The retry runs the same code in a new scope with the same id: the recorded result comes back.
  const retry = await runInRequest(new RequestScope(id), () => ops.models.create("admin", "lost-answer"));
  t.is(retry.uuid, first.uuid);
  t.is(retry.revision, first.revision);
  // Without the id it is a new request, refused as before.
  await t.throwsAsync(() => ops.models.create("admin", "lost-answer"), { message: /already exists/ });
  // Several writes in one request are replayed step by step, in order.
  const twoId = randomUUID();
  const both = () =>
    runInRequest(new RequestScope(twoId), async () => [
      await ops.models.create("admin", "a"),
      await ops.models.create("admin", "b"),
    ]);
  const [a1, b1] = await both();
  const [a2, b2] = await both();
  t.deepEqual([a2!.uuid, b2!.uuid], [a1!.uuid, b1!.uuid]);
});

test("requests without an id are their own, even to a controller started inside another request", async (t) => {
  // enable-ha restarts the controller from inside its request; the new server must not serve
  // every later request as part of that one.
  const outer = randomUUID();
  const inner = await runInRequest(new RequestScope(outer), () => startTestController());
  t.teardown(() => inner.close());
  const innerToken = await inner.admin.login();
  const post = (name: string, headers: Record<string, string> = {}) =>
    rawRequest(inner.addresses[0]!, inner.caCert, "POST", "/v1/models", JSON.stringify({ name }), {
      authorization: `Bearer ${innerToken}`,
      ...headers,
    });
  // The enclosing request's own answer is on record, as enable-ha's is when the restart happens.
  t.is((await post("zero", { [REQUEST_ID_HEADER]: outer })).status, 201);
  const a = await post("first");
  const b = await post("second");
  t.is(a.status, 201);
  t.is(b.status, 201);
  t.is(b.headers[REPLAYED_HEADER], undefined);
  t.deepEqual((await inner.admin.listModels()).map((m) => m.name).sort(), ["first", "second", "zero"]);
});

test("a retried SSH install issues its agent a credential that is written again, not replayed", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-idem-"));
  const store = await EmbeddedStore.open({ dir });
  t.teardown(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  const ops = new StateOps(store);
  const { uuid } = await ops.models.create("admin", "installs");
  const [machine] = (await ops.machines.add(uuid, "local", 1)).machines;
  const id = randomUUID();
  await runInRequest(new RequestScope(id), () => ops.machines.issueCredential(uuid, machine!.id));
  // The retry hands the agent a new credential: the stored hash must be that one's.
  const second = await runInRequest(new RequestScope(id), () => ops.machines.issueCredential(uuid, machine!.id));
  const doc = JSON.parse((await store.get(`/models/${uuid}/machines/${machine!.id}`))!.value) as {
    credentialHash: string;
  };
  t.true(credentialMatches(second, doc.credentialHash));
});
