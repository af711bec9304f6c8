/**
 * Who is told where a moved model went. The source's answer for a model that moved (410 `moved`)
 * names the target's addresses and CA: it goes only to authenticated users who had access to the
 * model (and superusers); anyone else gets what an unknown model gets, and without credentials a
 * 401. A user with access still follows the move, through the client and the CLI. An agent is told
 * only with its own machine's credential.
 */
import test from "ava";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { AgentConfig, StewardError } from "../api";
import { ControllerClient, isModelMoved } from "../api";
import { saveClientConfig } from "../cli";
import { cliRunner } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { rawRequest } from "./harness/http";
import { rawExchange, rawJsonBody, upgradeRequest } from "./harness/raw-tls";
import { migrateAndWait } from "./harness/migration";

let a: TestController;
let b: TestController;
let agentConfig: AgentConfig;
test.before(async () => {
  [a, b] = await Promise.all([startTestController(), startTestController()]);
  for (const c of [a, b]) {
    await c.admin.createUser("carol", "carol-password-1");
    await c.admin.createUser("mallory", "mallory-password-1");
  }
  await a.admin.createModel("hushed");
  await a.admin.grant("hushed", "carol", "read");
  const target = { name: "b", addresses: b.addresses, caCert: b.caCert, user: "admin", password: b.adminPassword };
  const m = await migrateAndWait(a.admin, "hushed", target);
  if (m.phase !== "DONE") throw new Error(`the migration ended in ${m.phase}: ${m.failure ?? ""}`);
  // A model with a machine whose agent runs: its credential is what tells its agents where it went.
  const { uuid } = await a.admin.createModel("tended");
  await a.admin.addMachines("tended", "local", 1);
  const config = join(a.dir, "c", "machines", uuid, "0", "agent.json");
  agentConfig = await eventually(
    "the agent's config",
    async () => JSON.parse(await readFile(config, "utf8")) as AgentConfig,
    60_000,
    250,
  );
  await eventually(
    "the agent connected",
    async () =>
      (await a.admin.call<{ status: string }[]>("GET", "/v1/models/tended/machines"))[0]?.status === "started" ||
      undefined,
    60_000,
    250,
  );
  const tended = await migrateAndWait(a.admin, "tended", target);
  if (tended.phase !== "DONE")
    throw new Error(`the migration of tended ended in ${tended.phase}: ${tended.failure ?? ""}`);
});
test.after.always(async () => {
  await b?.close();
  await a?.close();
});

const get = (path: string, token?: string) =>
  rawRequest(a.addresses[0]!, a.caCert, "GET", path, undefined, token ? { authorization: `Bearer ${token}` } : {});

test("without credentials a moved model's requests get 401, not where it went", async (t) => {
  for (const path of ["/v1/models/hushed/status", "/v1/models/hushed/applications/x", "/v1/models/hushed/logs"]) {
    const r = await get(path);
    t.is(r.status, 401, `${path}: ${JSON.stringify(r.body)}`);
    t.is(r.body.code, "unauthorized");
    t.false(JSON.stringify(r.body).includes(b.addresses[0]!), "no target address");
  }
  const write = await rawRequest(a.addresses[0]!, a.caCert, "DELETE", "/v1/models/hushed", undefined, {});
  t.is(write.status, 401);
});

test("a user who never had access gets the unknown model's answer; one who had it, and a superuser, are told where it went", async (t) => {
  const mallory = await a.clientFor("mallory", "mallory-password-1").login();
  const hidden = await get("/v1/models/hushed/status", mallory);
  const unknown = await get("/v1/models/never-was/status", mallory);
  t.is(hidden.status, 404, JSON.stringify(hidden.body));
  t.deepEqual(hidden.body, JSON.parse(JSON.stringify(unknown.body).replaceAll("never-was", "hushed")));
  t.is((await get("/v1/models/hushed/migration", mallory)).status, 404, "nor the migration's record");

  for (const user of [
    { name: "carol", password: "carol-password-1" },
    { name: "admin", password: a.adminPassword },
  ]) {
    const r = await get("/v1/models/hushed/status", await a.clientFor(user.name, user.password).login());
    t.is(r.status, 410, user.name);
    t.is(r.body.code, "moved");
    t.true(isModelMoved(r.body.details), JSON.stringify(r.body.details));
    t.deepEqual((r.body.details as { target: { addresses: string[] } }).target.addresses, b.addresses);
  }
  const carolToken = await a.clientFor("carol", "carol-password-1").login();
  t.is((await get("/v1/models/hushed/migration", carolToken)).body.phase, "DONE", "carol may see how it moved");
});

test("a user with access follows the move, through the client and the CLI", async (t) => {
  const following = new ControllerClient({
    addresses: a.addresses,
    caCert: a.caCert,
    user: "carol",
    password: "carol-password-1",
    onMoved: (mv) => ({
      addresses: mv.target.addresses,
      caCert: mv.target.caCert,
      user: "carol",
      password: "carol-password-1",
    }),
  });
  t.teardown(() => following.close());
  t.deepEqual((await following.status("hushed")).applications, {});
  const stays = a.clientFor("mallory", "mallory-password-1");
  t.is((await t.throwsAsync<StewardError>(stays.status("hushed")))?.code, "not-found");

  const home = `${a.dir}/carol-home`;
  await saveClientConfig(home, {
    current: "a",
    controllers: {
      a: {
        addresses: a.addresses,
        caCert: a.caCert,
        user: "carol",
        password: "carol-password-1",
        currentModel: "hushed",
      },
      b: { addresses: b.addresses, caCert: b.caCert, user: "carol", password: "carol-password-1" },
    },
  });
  const s = await cliRunner(home, home)("status", "-m", "hushed", "-c", "a");
  t.is(s.code, 0, s.stdout + s.stderr);
  t.regex(s.stderr, /moved to controller b/);
});

test("only the moved model's own agents are told where it went: another credential is refused as any bad one", async (t) => {
  const login = async (secret: string, machine = agentConfig.machine) =>
    rawExchange(a.addresses[0]!, a.caCert, [
      upgradeRequest("/v1/agent", { authorization: `Agent ${agentConfig.model}/${machine}/${secret}` }),
    ]);
  const own = await login(agentConfig.credential);
  t.is(own.status, 410);
  t.deepEqual((rawJsonBody(own)?.details as { target: { addresses: string[] } }).target.addresses, b.addresses);
  for (const [secret, machine] of [
    ["not-the-credential", agentConfig.machine],
    [agentConfig.credential, "7"],
    ["", agentConfig.machine],
  ] as const) {
    const other = await login(secret, machine);
    t.is(other.status, 401, `${machine}/${secret.slice(0, 4)}: ${other.text.slice(0, 200)}`);
    t.false(other.text.includes(b.addresses[0]!), "no target address");
  }
});
