/**
 * Users' secrets over the REST API (issue 33) on a real controller: add answers 201 with a uri, the
 * same again 200; show and list carry metadata and never a value; reveal is for the user who made the
 * secret or a superuser (403 secret-not-readable for another writer of the model); grants name the
 * model's applications; update makes a revision only from new values; limits are refused with their
 * reason; remove ends it. And the controller's test schedule (secretRotateSeconds) reaches its leader's
 * schedule: an operator's secret rotating hourly falls due within seconds, in its owner's pushed view.
 */
import test from "ava";
import WebSocket from "ws";
import type { AgentView, RevealedSecret, SecretInfo, StewardError } from "../api";
import { CONTROLLER_TLS_NAME, routes } from "../api";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { recorderVariant } from "./harness/operators";

let tc: TestController;
test.before(async () => {
  tc = await startTestController({ secretRotateSeconds: 1 });
});
test.after.always(async () => {
  await tc?.close();
});

test("user secrets: add, show without values, reveal for its maker or a superuser only, grant, update, remove", async (t) => {
  // Not a local model: writes there need a superuser, and bob and carol are writers.
  await tc.admin.createModel("vault", undefined, "ssh");
  const [m] = (await tc.admin.addMachines("vault", "manual", 1)).machines;
  await tc.admin.deploy("vault", {
    name: "web",
    operator: await tc.upload(await recorderVariant({})),
    units: 1,
    to: [m!.id],
  });
  await tc.admin.createUser("bob", "bob-password-1");
  await tc.admin.createUser("carol", "carol-password-1");
  await tc.admin.grant("vault", "bob", "write");
  await tc.admin.grant("vault", "carol", "write");
  const bob = tc.clientFor("bob", "bob-password-1");
  const carol = tc.clientFor("carol", "carol-password-1");

  const added = await bob.call(
    routes.addSecret,
    { model: "vault" },
    { name: "api-key", values: { token: "tok-value-1" } },
  );
  t.regex(added.uri, /^secret:[0-9a-v]{20}$/);
  t.is(added.revision, 1);
  t.deepEqual(
    await bob.call(routes.addSecret, { model: "vault" }, { name: "api-key", values: { token: "tok-value-1" } }),
    added,
    "the same name with the same values again is the same secret",
  );
  const other = await t.throwsAsync<StewardError>(
    bob.call(routes.addSecret, { model: "vault" }, { name: "api-key", values: { token: "another" } }),
  );
  t.is(other?.code, "already-exists");

  const shown = (await carol.call(routes.showSecret, { model: "vault", secret: "api-key" })) as SecretInfo;
  t.like(shown, { uri: added.uri, name: "api-key", owner: "model", latestRevision: 1, rotate: "never" });
  t.false(JSON.stringify(shown).includes("tok-value"), "show carries no value");
  const listed = await carol.call(routes.listSecrets, { model: "vault" });
  t.deepEqual(
    listed.secrets.map((s) => s.uri),
    [added.uri],
  );
  t.false(JSON.stringify(listed).includes("tok-value"));

  // Reveal: the maker and a superuser; another writer of the model is refused.
  const reveal = { reveal: "true" } as never;
  const byBob = (await bob.call(
    routes.showSecret,
    { model: "vault", secret: added.uri },
    undefined,
    reveal,
  )) as RevealedSecret;
  t.deepEqual(byBob.content, { revision: 1, values: { token: "tok-value-1" } });
  const byAdmin = (await tc.admin.call(
    routes.showSecret,
    { model: "vault", secret: "api-key" },
    undefined,
    reveal,
  )) as RevealedSecret;
  t.deepEqual(byAdmin.content.values, { token: "tok-value-1" });
  const refused = await t.throwsAsync<StewardError>(
    carol.call(routes.showSecret, { model: "vault", secret: "api-key" }, undefined, reveal),
  );
  t.is(refused?.code, "forbidden");
  t.is(refused?.reason, "secret-not-readable");
  t.false(refused!.message.includes("tok-value"));

  // Grants name applications of the model.
  const granted = await bob.call(routes.grantSecret, { model: "vault", secret: "api-key" }, { apps: ["web"] });
  t.deepEqual(granted.grants, [{ app: "web" }]);
  const noApp = await t.throwsAsync<StewardError>(
    bob.call(routes.grantSecret, { model: "vault", secret: "api-key" }, { apps: ["nope"] }),
  );
  t.is(noApp?.code, "not-found");

  // Update: the same values make no revision; new ones do (nobody tracks 1, so it is pruned).
  t.deepEqual(
    await bob.call(routes.updateSecret, { model: "vault", secret: "api-key" }, { values: { token: "tok-value-1" } }),
    added,
  );
  const updated = await bob.call(
    routes.updateSecret,
    { model: "vault", secret: "api-key" },
    { values: { token: "tok-value-2" }, description: "the web API key" },
  );
  t.is(updated.revision, 2);
  const after = (await bob.call(
    routes.showSecret,
    { model: "vault", secret: "api-key" },
    undefined,
    reveal,
  )) as RevealedSecret;
  t.deepEqual(after.content, { revision: 2, values: { token: "tok-value-2" } });
  t.deepEqual(
    after.revisions.map((r) => r.revision),
    [2],
  );
  t.is(after.description, "the web API key");

  const tooBig = await t.throwsAsync<StewardError>(
    bob.call(routes.updateSecret, { model: "vault", secret: "api-key" }, { values: { token: "x".repeat(65_536) } }),
  );
  t.is(tooBig?.reason, "secret-too-large");
  t.is(tooBig?.code, "quota-exceeded");

  await bob.call(routes.revokeSecret, { model: "vault", secret: "api-key" }, { apps: ["web"] });
  await bob.call(routes.removeSecret, { model: "vault", secret: "api-key" });
  const gone = await t.throwsAsync<StewardError>(carol.call(routes.showSecret, { model: "vault", secret: "api-key" }));
  t.is(gone?.code, "not-found");
});

test("on the test schedule an operator's secret falls due for rotation within seconds, in its owner's view", async (t) => {
  const { uuid } = await tc.admin.createModel("rotating", undefined, "ssh");
  const [m] = (await tc.admin.addMachines("rotating", "manual", 1)).machines;
  await tc.admin.deploy("rotating", {
    name: "db",
    operator: await tc.upload(await recorderVariant({})),
    units: 1,
    to: [m!.id],
  });
  // A bare agent of the machine: it keeps the last view pushed and makes calls.
  let view: AgentView | undefined;
  let n = 0;
  const answers = new Map<number, (f: { result?: unknown; error?: unknown }) => void>();
  const ws = new WebSocket(`wss://${tc.addresses[0]}/v1/agent`, {
    ca: tc.caCert,
    servername: CONTROLLER_TLS_NAME,
    headers: { authorization: `Agent ${uuid}/${m!.id}/${m!.credential!}` },
  } as WebSocket.ClientOptions);
  t.teardown(() => ws.close());
  ws.on("message", (d: Buffer) => {
    const f = JSON.parse(d.toString()) as {
      t: string;
      id: number;
      data?: AgentView;
      result?: unknown;
      error?: unknown;
    };
    if (f.t === "push") view = f.data;
    else if (f.t === "res") answers.get(f.id)?.(f);
  });
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  const call = (method: string, params: unknown) =>
    new Promise<{ result?: unknown; error?: unknown }>((resolve) => {
      answers.set(++n, resolve);
      ws.send(JSON.stringify({ t: "req", id: n, method, params }));
    });
  await eventually("a view", () => view?.units.length === 1);
  t.deepEqual((await call("leader.claim", { unit: "db/0" })).result, { leader: true, leaseSeconds: 60 });
  const uri = "secret:cs1k4tb5h0ut5tqbqq20";
  const added = await call("hook.commit", {
    unit: "db/0",
    relations: [],
    secrets: [{ op: "add", uri, owner: "application", rotate: "hourly", content: { password: "p1" } }],
  });
  t.is(added.error, undefined);
  const due = await eventually(
    "rotation due in the owner's view",
    () => view?.units[0]?.secrets?.[0]?.rotateDue,
    15_000,
  );
  t.true(Date.parse(due) <= Date.now());
  // A new revision ends it.
  await call("hook.commit", {
    unit: "db/0",
    relations: [],
    secrets: [{ op: "set", uri, content: { password: "p2" } }],
  });
  await eventually(
    "no longer due",
    () => view?.units[0]?.secrets?.[0]?.latest === 2 && !view.units[0].secrets[0].rotateDue,
  );
});
