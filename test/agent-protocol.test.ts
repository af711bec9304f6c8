/**
 * The controller's side of the agent protocol, driven by a simulated agent over a real WebSocket:
 * what a hook commits is checked there too (leadership, sizes, ownership), all or nothing.
 */
import test from "ava";
import type { StewardError } from "../api";
import { CONTROLLER_TLS_NAME } from "../api";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import WebSocket from "ws";
import { eventually } from "./harness/eventually";
import type { SimulatedAgent } from "./harness/simulated-agent";
import { simulatedAgent as simulatedAgentOf } from "./harness/simulated-agent";
import { recorderVariant } from "./harness/operators";

let tc: TestController;
test.before(async () => {
  tc = await startTestController();
});
test.after.always(async () => {
  await tc?.close();
});

/** A simulated agent (harness/simulated-agent.ts) of this file's controller. */
const simulatedAgent = (model: string, machine: string, credential: string): Promise<SimulatedAgent> =>
  simulatedAgentOf(tc, model, machine, credential);

test("hook commits are checked by the controller and applied all or nothing", async (t) => {
  const { uuid } = await tc.admin.createModel("proto");
  const [m] = (await tc.admin.addMachines("proto", "manual", 1)).machines;
  const op = await tc.upload(await recorderVariant({ peers: { peer: "rec-peer" } }));
  await tc.admin.deploy("proto", { name: "p", operator: op, units: 2, to: [m!.id, m!.id] });
  const agent = await simulatedAgent(uuid, m!.id, m!.credential!);
  t.teardown(agent.close);
  const view = await eventually("a view with two units", () =>
    agent.view()?.units.length === 2 ? agent.view() : undefined,
  );
  const peer = view.units[0]!.relations[0]!;
  t.is(peer.role, "peer");

  t.deepEqual(await agent.call("leader.claim", { unit: "p/0" }), { leader: true, leaseSeconds: 60 });
  t.deepEqual(await agent.call("leader.claim", { unit: "p/1" }), { leader: false });
  t.deepEqual(
    await agent.call("leader.claim", { unit: "p/0" }),
    { leader: true, leaseSeconds: 60 },
    "the holder renews",
  );

  // Both units enter the peer relation.
  for (const unit of ["p/0", "p/1"]) await agent.call("hook.commit", { unit, relations: [], enterScope: [peer.id] });
  await eventually(
    "p/0 sees p/1 in the relation",
    () => "p/1" in (agent.view()?.units[0]?.relations[0]?.remoteUnits ?? {}),
  );

  // A follower writing the application databag: refused, and its unit-bag write in the same commit is not applied.
  const notLeader = await t.throwsAsync<StewardError>(
    agent.call("hook.commit", {
      unit: "p/1",
      relations: [
        { relationId: peer.id, app: false, set: { mine: "x" } },
        { relationId: peer.id, app: true, set: { shared: "y" } },
      ],
    }),
  );
  t.is(notLeader?.code, "forbidden");
  t.regex(notLeader!.message, /p\/1 is not the leader of p: only the leader may write the application databag/);
  t.deepEqual(await agent.call("relation.get", { unit: "p/0", relationId: peer.id, target: { unit: "p/1" } }), {
    data: {},
  });

  const big = "x".repeat(40_000);
  const oversized = await t.throwsAsync<StewardError>(
    agent.call("hook.commit", {
      unit: "p/0",
      relations: [{ relationId: peer.id, app: false, set: { a: big, b: big } }],
    }),
  );
  t.regex(oversized!.message, /the databag of p\/0 would hold \d+ bytes; the limit is 65536 bytes per databag/);

  await agent.call("hook.commit", {
    unit: "p/0",
    relations: [
      { relationId: peer.id, app: true, set: { shared: "y" } },
      { relationId: peer.id, app: false, set: { mine: "z" } },
    ],
    ports: { open: ["8080/tcp"], close: [] },
  });
  t.deepEqual(await agent.call("relation.get", { unit: "p/1", relationId: peer.id, target: { app: "p" } }), {
    data: { shared: "y" },
  });
  t.deepEqual(await agent.call("relation.get", { unit: "p/1", relationId: peer.id, target: { unit: "p/0" } }), {
    data: { mine: "z" },
  });
  t.deepEqual((await tc.admin.status("proto")).applications.p!.units["p/0"]!.ports, ["8080/tcp"]);
  // Ports are taken only as the hook tools normalise them: none outside 1-65535, no terminal escapes.
  for (const port of ["99999/tcp", "0/udp", "80/tcp\u001b[2J", "80", "10-5/tcp"]) {
    const bad = await t.throwsAsync<StewardError>(
      agent.call("hook.commit", { unit: "p/0", relations: [], ports: { open: [port], close: [] } }),
    );
    t.is(bad?.code, "invalid-request", port);
    t.regex(
      bad!.message,
      /must be a port such as 80\/tcp, 53\/udp, 8000-8010\/tcp or icmp, with ports in 1-65535/,
      port,
    );
  }
  t.deepEqual((await tc.admin.status("proto")).applications.p!.units["p/0"]!.ports, ["8080/tcp"]);

  const unknown = await t.throwsAsync<StewardError>(
    agent.call("relation.get", { unit: "p/0", relationId: 99, target: {} }),
  );
  t.regex(unknown!.message, /integration 99 does not exist or does not involve p/);
  const follower = await t.throwsAsync<StewardError>(agent.call("leader.set", { unit: "p/1", data: { k: "v" } }));
  t.regex(follower!.message, /only the leader may leader-set/);
  await agent.call("leader.set", { unit: "p/0", data: { k: "v" } });
  t.deepEqual(await agent.call("leader.get", { unit: "p/1" }), { data: { k: "v" } });
  const before = agent.view()!.units[1]!.leaderSettingsVersion;
  await agent.call("leader.set", { unit: "p/0", data: { k: "v" } });
  await new Promise((r) => setTimeout(r, 200));
  t.is(agent.view()!.units[1]!.leaderSettingsVersion, before, "setting the same data again wakes nobody");

  const badMethod = await t.throwsAsync<StewardError>(agent.call("unit.explode", {}));
  t.regex(badMethod!.message, /unknown agent method "unit.explode"/);
  const badParams = await t.throwsAsync<StewardError>(agent.call("hook.commit", { unit: "p/0", relationz: [] }));
  t.regex(badParams!.message, /unknown field "relationz"/);
});

test("an agent may act only for units on its own machine", async (t) => {
  const { uuid } = await tc.admin.createModel("owned");
  const [m1, m2] = (await tc.admin.addMachines("owned", "manual", 2)).machines;
  const op = await tc.upload(await recorderVariant({}));
  await tc.admin.deploy("owned", { name: "o", operator: op, units: 1, to: [m2!.id] });
  const agent = await simulatedAgent(uuid, m1!.id, m1!.credential!);
  t.teardown(agent.close);
  for (const [method, params] of [
    ["unit.status", { unit: "o/0", workload: { current: "active", message: "hijacked" } }],
    ["leader.claim", { unit: "o/0" }],
    ["hook.commit", { unit: "o/0", relations: [] }],
  ] as const) {
    const err = await t.throwsAsync<StewardError>(agent.call(method, params));
    t.is(err?.code, "forbidden", method);
  }
  t.not((await tc.admin.status("owned")).applications.o!.units["o/0"]!.workload.message, "hijacked");
  const wrong = await t.throwsAsync(simulatedAgent(uuid, m1!.id, "not-the-credential"));
  t.regex(String(wrong?.message), /401/);
});

test("secret.get answers values only to units that may read: another application's agent gets 403", async (t) => {
  const { uuid } = await tc.admin.createModel("secrets");
  const [m1, m2] = (await tc.admin.addMachines("secrets", "manual", 2)).machines;
  const op = await tc.upload(await recorderVariant({}));
  await tc.admin.deploy("secrets", { name: "pg", operator: op, units: 1, to: [m1!.id] });
  await tc.admin.deploy("secrets", { name: "other", operator: op, units: 1, to: [m2!.id] });
  const owner = await simulatedAgent(uuid, m1!.id, m1!.credential!);
  t.teardown(owner.close);
  const stranger = await simulatedAgent(uuid, m2!.id, m2!.credential!);
  t.teardown(stranger.close);
  await eventually("both views", () => owner.view()?.units.length === 1 && stranger.view()?.units.length === 1);
  t.deepEqual(await owner.call("leader.claim", { unit: "pg/0" }), { leader: true, leaseSeconds: 60 });
  const uri = "secret:cs1k4tb5h0ut5tqbqq10";
  await owner.call("hook.commit", {
    unit: "pg/0",
    relations: [],
    secrets: [{ op: "add", uri, owner: "application", label: "creds", content: { password: "s3cr3t-value" } }],
  });
  t.deepEqual(await owner.call("secret.get", { unit: "pg/0", uri }), {
    uri,
    revision: 1,
    values: { password: "s3cr3t-value" },
  });
  t.like(await owner.call<{ owner: string }>("secret.info", { unit: "pg/0", uri }), { owner: "application:pg" });
  const seen = await eventually("the owner's view lists it", () => owner.view()?.units[0]?.secrets);
  t.deepEqual(seen, [{ uri, label: "creds", owner: true, latest: 1 }]);
  t.is(stranger.view()?.units[0]?.secrets, undefined, "the other application's view does not list it");

  const refused = await t.throwsAsync<StewardError>(stranger.call("secret.get", { unit: "other/0", uri }));
  t.is(refused?.code, "forbidden");
  t.is(refused?.reason, "secret-not-readable");
  t.false(refused!.message.includes("s3cr3t"), "the refusal carries no value");
  // Nor by naming the owner's unit, which is not on its machine.
  const notMine = await t.throwsAsync<StewardError>(stranger.call("secret.get", { unit: "pg/0", uri }));
  t.is(notMine?.code, "forbidden");
  t.regex(notMine!.message, /not on machine/);
  const info = await t.throwsAsync<StewardError>(stranger.call("secret.info", { unit: "other/0", uri }));
  t.is(info?.code, "forbidden");
});

test("status history keeps each change once, the newest 50, each message cut at 256 characters", async (t) => {
  const { uuid } = await tc.admin.createModel("history");
  const [m] = (await tc.admin.addMachines("history", "manual", 1)).machines;
  await tc.admin.deploy("history", {
    name: "h",
    operator: await tc.upload(await recorderVariant({})),
    units: 1,
    to: [m!.id],
  });
  const agent = await simulatedAgent(uuid, m!.id, m!.credential!);
  t.teardown(agent.close);
  await agent.call("unit.status", { unit: "h/0", agent: { current: "executing", message: "running install hook" } });
  await agent.call("unit.status", { unit: "h/0", agent: { current: "executing", message: "running install hook" } }); // no change: no entry
  for (let i = 0; i < 60; i++)
    await agent.call("unit.status", { unit: "h/0", workload: { current: "active", message: `step ${i}` } });
  await agent.call("unit.status", { unit: "h/0", workload: { current: "blocked", message: "x".repeat(1000) } });
  const { entries } = await tc.admin.statusLog("history", "h/0");
  t.is(entries.length, 50);
  t.deepEqual(
    entries.slice(0, 2).map((e) => [e.type, e.status, e.message]),
    [
      ["workload", "active", "step 11"],
      ["workload", "active", "step 12"],
    ],
  );
  t.deepEqual(
    [entries.at(-1)!.type, entries.at(-1)!.status, entries.at(-1)!.message.length],
    ["workload", "blocked", 256],
  );
  t.false(
    entries.some((e) => e.type === "agent"),
    "the agent's one change is among the oldest, forgotten",
  );
});

test("a reconnect storm is spread out by the login limit and every agent gets in", async (t) => {
  // A limit far below what 60 simultaneous logins ask for, even on a loaded machine where the
  // handshakes themselves come slowly (at 50/s the test saw no refusal under load).
  const limited = await startTestController({ agentLogins: { perSecond: 3, burst: 5 } });
  t.teardown(() => limited.close());
  const { uuid } = await limited.admin.createModel("storm");
  const machines = (await limited.admin.addMachines("storm", "manual", 60)).machines;
  let refused = 0;
  // Each simulated agent retries a refused login after a short jittered pause, as real agents do.
  const connect = async (m: { id: string; credential?: string }): Promise<WebSocket> => {
    for (;;) {
      const ws = new WebSocket(`wss://${limited.addresses[0]}/v1/agent`, {
        ca: limited.caCert,
        servername: CONTROLLER_TLS_NAME,
        headers: { authorization: `Agent ${uuid}/${m.id}/${m.credential}` },
      } as WebSocket.ClientOptions);
      const outcome = await new Promise<"open" | number>((resolve) => {
        ws.once("open", () => resolve("open"));
        ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
        ws.once("error", () => resolve(0));
      });
      if (outcome === "open") return ws;
      t.is(outcome, 503);
      refused++;
      ws.terminate();
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 200));
    }
  };
  const sockets = await Promise.all(machines.map(connect));
  t.teardown(() => {
    for (const ws of sockets) ws.terminate();
  });
  t.true(refused > 0, "the burst was over the limit, so some logins were refused first");
  await eventually(
    "all 60 machines present",
    async () =>
      Object.values((await limited.admin.status("storm")).machines).every((m) => m.status.current === "started"),
    30_000,
    200,
  );
});
