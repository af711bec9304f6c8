/**
 * Agent credentials at the controller's door: checked before the login budget that spreads out
 * reconnect storms is spent (a flood of bad credentials must not turn real agents away), bad ones
 * limited per source address (401, then 429), and good only for the agent protocol and operator
 * downloads: model reads and status watches are for users.
 */
import test from "ava";
import { join } from "node:path";
import WebSocket from "ws";
import { CONTROLLER_TLS_NAME } from "../api";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";
import { rawRequest } from "./harness/http";
import { rawExchange, rawJsonBody, upgradeRequest } from "./harness/raw-tls";

/** An agent login: "open" or the HTTP status it was refused with. */
async function agentLogin(tc: TestController, authorization: string): Promise<"open" | number> {
  const ws = new WebSocket(`wss://${tc.addresses[0]}/v1/agent`, {
    ca: tc.caCert,
    servername: CONTROLLER_TLS_NAME,
    headers: { authorization },
  } as WebSocket.ClientOptions);
  const outcome = await new Promise<"open" | number>((resolve) => {
    ws.once("open", () => resolve("open"));
    ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
    ws.once("error", () => resolve(0));
  });
  ws.terminate();
  return outcome;
}

test("a flood of bad agent credentials never gets a real agent refused", async (t) => {
  // A small storm budget: without authentication first, the flood would exhaust it at once.
  const tc = await startTestController({ agentLogins: { perSecond: 20, burst: 20 } });
  t.teardown(() => tc.close());
  const { uuid } = await tc.admin.createModel("m");
  const [m] = (await tc.admin.addMachines("m", "manual", 1)).machines;
  const good = `Agent ${uuid}/${m!.id}/${m!.credential!}`;
  const bad = [`Agent ${uuid}/${m!.id}/wrong`, "Agent x/0/secret", "Agent ///", "Bearer forged.token", "Basic eDp4"];

  let stop = false;
  const floodAnswers = new Map<number | "open", number>();
  const flooder = async (i: number): Promise<void> => {
    for (let n = i; !stop; n += 16) {
      const a = await agentLogin(tc, bad[n % bad.length]!);
      floodAnswers.set(a, (floodAnswers.get(a) ?? 0) + 1);
    }
  };
  const flood = Array.from({ length: 16 }, (_, i) => flooder(i));
  // Let the flood get going, then log the real agent in 13 times while it goes on.
  while ([...floodAnswers.values()].reduce((a, b) => a + b, 0) < 200) await new Promise((r) => setTimeout(r, 20));
  const real: ("open" | number)[] = [];
  for (let i = 0; i < 13; i++) real.push(await agentLogin(tc, good));
  stop = true;
  await Promise.all(flood);

  t.deepEqual(real, Array(13).fill("open"), "the real agent got in every time");
  t.log("flood answers", Object.fromEntries(floodAnswers));
  t.deepEqual(
    [...floodAnswers.keys()].filter((k) => k !== 401 && k !== 403 && k !== 429),
    [],
    "bad credentials get 401/403 or 429, never in and never 503",
  );
  t.true((floodAnswers.get(429) ?? 0) > 0, "a source that keeps failing is answered 429");
});

test("a source sending bad credentials is answered 401, then 429 with Retry-After", async (t) => {
  // One attempt back per 100 s: on a loaded machine an exchange can take over a second, and a faster
  // refill would answer each one 401 again, however fast this source "floods".
  const tc = await startTestController({ transport: { failedAgentLoginsPerSecond: 0.01, failedAgentLoginsBurst: 3 } });
  t.teardown(() => tc.close());
  const statuses: number[] = [];
  let last = await rawExchange(tc.addresses[0]!, tc.caCert, [
    upgradeRequest("/v1/agent", { authorization: "Agent x/0/secret" }),
  ]);
  for (let i = 0; i < 6; i++) {
    last = await rawExchange(tc.addresses[0]!, tc.caCert, [
      upgradeRequest("/v1/agent", { authorization: "Agent x/0/secret" }),
    ]);
    statuses.push(last.status ?? 0);
  }
  t.true(statuses.includes(429), `statuses: ${statuses.join(",")}`);
  t.regex(last.text, /\r\nRetry-After: \d+\r\n/);
  t.regex(rawJsonBody(last)?.message ?? "", /too many refused agent logins/);
});

test("an agent credential may not read the model or watch its status (403), but may download its operators", async (t) => {
  const tc = await startTestController();
  t.teardown(() => tc.close());
  const { uuid } = await tc.admin.createModel("m");
  const [m] = (await tc.admin.addMachines("m", "manual", 1)).machines;
  const motd = await tc.upload(join(operatorsDir, "motd"));
  await tc.admin.deploy("m", { name: "motd", operator: motd, units: 0, config: { message: "private" } });
  const authorization = `Agent ${uuid}/${m!.id}/${m!.credential!}`;
  for (const path of [
    "/v1/models/m/status",
    "/v1/models/m/applications/motd",
    "/v1/models/m/machines",
    "/v1/models",
    "/v1/controller",
  ]) {
    const r = await rawRequest(tc.addresses[0]!, tc.caCert, "GET", path, undefined, { authorization });
    t.is(r.status, 403, path);
    t.is(r.body.code, "forbidden");
    t.regex(r.body.message!, /agent protocol \(\/v1\/agent\)/, path);
  }
  const watch = await rawExchange(tc.addresses[0]!, tc.caCert, [
    upgradeRequest("/v1/models/m/watch", { authorization }),
  ]);
  t.is(watch.status, 403);
  t.regex(rawJsonBody(watch)?.message ?? "", /agent protocol/);
  const download = await rawRequest(tc.addresses[0]!, tc.caCert, "HEAD", `/v1/operators/${motd}`, undefined, {
    authorization,
  });
  t.is(download.status, 200);
});

test("an agent downloads only the operators its own model runs; another model's is answered as unknown", async (t) => {
  const tc = await startTestController();
  t.teardown(() => tc.close());
  const { uuid } = await tc.admin.createModel("mine");
  const [m] = (await tc.admin.addMachines("mine", "manual", 1)).machines;
  const authorization = `Agent ${uuid}/${m!.id}/${m!.credential!}`;
  await tc.admin.createModel("theirs");
  const theirs = await tc.upload(join(operatorsDir, "static-site"));
  await tc.admin.deploy("theirs", { name: "site", operator: theirs, units: 0 });
  const get = (hash: string) =>
    rawRequest(tc.addresses[0]!, tc.caCert, "GET", `/v1/operators/${hash}`, undefined, { authorization });
  const unknownHash = `v2-${"0".repeat(64)}`;
  const [other, unknown] = [await get(theirs), await get(unknownHash)];
  t.is(other.status, 404, JSON.stringify(other.body).slice(0, 200));
  t.is(other.body.code, "not-found");
  t.is(other.body.message, `operator "${theirs}" not found`);
  t.deepEqual(
    Object.keys(other.body).sort(),
    Object.keys(unknown.body).sort(),
    "the same answer as a hash nobody uploaded",
  );
  t.is(
    (await rawRequest(tc.addresses[0]!, tc.caCert, "HEAD", `/v1/operators/${theirs}`, undefined, { authorization }))
      .status,
    404,
  );
  // Once its own model runs it, the agent gets it; a user still may.
  await tc.admin.deploy("mine", { name: "site", operator: theirs, units: 0 });
  const now = await get(theirs);
  t.is(now.status, 200);
  t.true(Array.isArray((now.body as { files?: unknown[] }).files));
  t.is(
    (
      await rawRequest(tc.addresses[0]!, tc.caCert, "HEAD", `/v1/operators/${theirs}`, undefined, {
        authorization: `Bearer ${await tc.admin.login()}`,
      })
    ).status,
    200,
  );
});
