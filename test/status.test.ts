/**
 * Status as users read it, through a real controller: filters the controller applies, the ports and
 * addresses real units report (hello-http with real agents), and which unit's message the
 * application shows (simulated agents reporting over the real agent protocol).
 */
import test from "ava";
import { join } from "node:path";
import type { ModelStatus, StewardError } from "../api";
import { expandStatusColumns } from "../api";
import { SimAgent } from "../bench/sim-agent";
import { formatStatusTabular } from "../cli";
import type { TestController } from "./harness/controller";
import { allReady, operatorsDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { rawRequest } from "./harness/http";

let tc: TestController;
const agents: SimAgent[] = [];
test.before(async () => {
  tc = await startTestController();
});
test.after.always(async () => {
  for (const a of agents) a.close();
  await tc?.close();
});

/** Deploys `units` units of motd on manual machines, each with a simulated agent; returns the agents by unit. */
async function simulatedUnits(model: string, app: string, units: number): Promise<Map<string, SimAgent>> {
  const { uuid } = await tc.admin.createModel(model);
  const machines = (await tc.admin.addMachines(model, "manual", units)).machines;
  const op = await tc.upload(join(operatorsDir, "motd"));
  await tc.admin.deploy(model, { name: app, operator: op, units, to: machines.map((m) => m.id) });
  const byUnit = new Map<string, SimAgent>();
  for (const m of machines) {
    const a = await SimAgent.connect(tc.addresses[0]!, tc.caCert, uuid, m.id, m.credential!);
    agents.push(a);
    const unit = await eventually(`machine ${m.id}'s unit in its view`, () => a.view?.units[0]?.name);
    byUnit.set(unit, a);
  }
  return byUnit;
}

const report = (a: SimAgent, unit: string, current: string, message: string): Promise<unknown> =>
  a.call("unit.status", { unit, workload: { current, message }, agent: { current: "idle", message: "" } });

test("the application shows its leader's message or its most severe unit's, not an arbitrary unit's", async (t) => {
  const units = await simulatedUnits("severity", "app", 3);
  // app/1 leads; every unit is active, each with its own message.
  t.true(
    await units
      .get("app/1")!
      .call<{ leader: boolean }>("leader.claim", { unit: "app/1" })
      .then((r) => r.leader),
  );
  for (const [name, a] of units) await report(a, name, "active", `serving ${name}`);
  let s = await tc.admin.status("severity");
  t.is(s.applications.app!.units["app/1"]!.leader, true);
  t.deepEqual(
    [s.applications.app!.status.current, s.applications.app!.status.message],
    ["active", "serving app/1"],
    "a tie goes to the leader",
  );

  // A blocked unit is more severe than the leader's active: its message is the application's.
  await report(units.get("app/2")!, "app/2", "blocked", "disk full on app/2");
  s = await tc.admin.status("severity");
  t.deepEqual(
    [s.applications.app!.status.current, s.applications.app!.status.message],
    ["blocked", "disk full on app/2"],
  );

  // Two blocked units: the lower-numbered one, as neither leads.
  await report(units.get("app/0")!, "app/0", "blocked", "disk full on app/0");
  s = await tc.admin.status("severity");
  t.is(s.applications.app!.status.message, "disk full on app/0");

  // The leader blocked too: its message wins the tie.
  await report(units.get("app/1")!, "app/1", "blocked", "disk full on the leader");
  s = await tc.admin.status("severity");
  t.is(s.applications.app!.status.message, "disk full on the leader");
});

test("status filters by application, unit and machine are applied by the controller", async (t) => {
  await simulatedUnits("filters", "web", 3);
  const op = await tc.upload(join(operatorsDir, "motd"));
  await tc.admin.deploy("filters", { name: "board", operator: op, units: 0 });
  const all = await tc.admin.status("filters");
  const machineOf = (unit: string): string => all.applications.web!.units[unit]!.machine;

  const byApp = await tc.admin.status("filters", { applications: ["board"] });
  t.deepEqual(Object.keys(byApp.applications), ["board"]);
  t.deepEqual(Object.keys(byApp.machines), [], "board has no units, so no machines");

  const byUnit = await tc.admin.status("filters", { units: ["web/1"] });
  t.deepEqual(Object.keys(byUnit.applications), ["web"]);
  t.deepEqual(Object.keys(byUnit.applications.web!.units), ["web/1"]);
  t.is(byUnit.applications.web!.scale, 3, "the application keeps its real scale");
  t.deepEqual(Object.keys(byUnit.machines), [machineOf("web/1")]);

  const byMachine = await tc.admin.status("filters", { machines: [machineOf("web/2")] });
  t.deepEqual(Object.keys(byMachine.applications.web!.units), ["web/2"]);
  t.deepEqual(Object.keys(byMachine.machines), [machineOf("web/2")]);

  const union = await tc.admin.status("filters", { applications: ["board"], units: ["web/0"] });
  t.deepEqual(Object.keys(union.applications).sort(), ["board", "web"]);
  t.deepEqual(Object.keys(union.applications.web!.units), ["web/0"]);

  // The unfiltered document is the same whether or not filtered reads came between.
  const again = await tc.admin.status("filters");
  t.deepEqual({ ...again, timestamp: "" }, { ...all, timestamp: "" });

  const missing = await t.throwsAsync<StewardError>(tc.admin.status("filters", { units: ["web/7"] }));
  t.is(missing?.code, "not-found");
  t.regex(missing?.message ?? "", /web\/7/);
  const token = await tc.admin.login();
  const bad = await rawRequest(tc.addresses[0]!, tc.caCert, "GET", "/v1/models/filters/status?unit=web", undefined, {
    authorization: `Bearer ${token}`,
  });
  t.is(bad.status, 400);
  t.is(bad.body.code, "invalid-request");
  t.regex(bad.body.message ?? "", /"web" is not a unit name such as web\/0/);
});

test("the compact status form (what the client reads) is the plain document as column tables, filtered or not", async (t) => {
  const units = await simulatedUnits("compact", "app", 3);
  await report(units.get("app/1")!, "app/1", "blocked", "waiting for a peer");
  const token = await tc.admin.login();
  const get = async (query: string): Promise<{ status: number; text: string; body: unknown }> => {
    const r = await rawRequest(tc.addresses[0]!, tc.caCert, "GET", `/v1/models/compact/status${query}`, undefined, {
      authorization: `Bearer ${token}`,
    });
    return { status: r.status, text: JSON.stringify(r.body), body: r.body };
  };
  const untimed = (s: unknown): string => JSON.stringify({ ...(s as ModelStatus), timestamp: "" });
  for (const filter of ["", "unit=app/1", "application=app", "machine=0"]) {
    const plain = await get(`?${filter}`);
    const compact = await get(`?${filter}${filter ? "&" : ""}format=columns`);
    t.is(compact.status, 200);
    if (filter !== "unit=app/1" && filter !== "machine=0")
      t.true(compact.text.length < plain.text.length, `the compact form is smaller (${filter || "unfiltered"})`);
    t.is(
      untimed(expandStatusColumns(compact.body)),
      untimed(plain.body),
      `same document, key order included (${filter || "unfiltered"})`,
    );
  }
  // Kept between reads and dropped on change, like the plain document.
  await report(units.get("app/2")!, "app/2", "maintenance", "resizing");
  const after = expandStatusColumns((await get("?format=columns")).body);
  t.is(after.applications.app!.units["app/2"]!.workload.message, "resizing");
  t.deepEqual(
    (await tc.admin.status("compact")).applications.app!.units["app/2"]!.workload,
    after.applications.app!.units["app/2"]!.workload,
  );
  const bad = await get("?format=yaml");
  t.is(bad.status, 400);
  t.regex((bad.body as { message?: string }).message ?? "", /"format" must be "plain" or "columns"/);
});

test("status follows each change (the rendered document is not served stale)", async (t) => {
  const units = await simulatedUnits("fresh", "app", 2);
  for (const [name, a] of units) await report(a, name, "active", "first");
  const before = await tc.admin.status("fresh");
  t.is(before.applications.app!.units["app/1"]!.workload.message, "first");
  const filteredBefore = await tc.admin.status("fresh", { units: ["app/0"] });
  t.is(filteredBefore.applications.app!.status.current, "active");
  await report(units.get("app/1")!, "app/1", "maintenance", "second");
  const after = await tc.admin.status("fresh");
  t.is(after.applications.app!.units["app/1"]!.workload.message, "second");
  t.is(after.applications.app!.units["app/0"]!.workload.message, "first");
  t.true(after.model.revision > before.model.revision);
  // A filtered read derives the application's status from every unit, including those it does not list.
  const filteredAfter = await tc.admin.status("fresh", { units: ["app/0"] });
  t.deepEqual(Object.keys(filteredAfter.applications.app!.units), ["app/0"]);
  t.deepEqual(
    [filteredAfter.applications.app!.status.current, filteredAfter.applications.app!.status.message],
    ["maintenance", "second"],
  );
  t.deepEqual(filteredAfter.applications.app!.status, after.applications.app!.status);
  // A unit's agent going away shows at once: its fragment depends on its machine's presence too.
  units.get("app/0")!.close();
  const lost = await eventually("app/0 lost", async () => {
    const s = await tc.admin.status("fresh");
    return s.applications.app!.units["app/0"]!.agent.current === "lost" ? s : undefined;
  });
  t.not(lost.machines[lost.applications.app!.units["app/0"]!.machine]!.status.current, "started");
});

test("hello-http units show the port they opened and the address they serve on", async (t) => {
  await tc.admin.createModel("web");
  const op = await tc.upload(join(operatorsDir, "hello-http"));
  await tc.admin.deploy("web", { name: "hello", operator: op, units: 1 });
  const s: ModelStatus = await tc.waitForUnits("web", allReady(1), "hello/0 active/idle", 60_000);
  const unit = s.applications.hello!.units["hello/0"]!;
  const url = new URL(/serving on (\S+)/.exec(unit.workload.message)![1]!);
  t.deepEqual(unit.ports, [`${url.port}/tcp`]);
  t.is(unit.address, url.hostname, "the unit's address is the one it serves on (STEWARD_UNIT_ADDRESS)");
  const res = await fetch(`http://${unit.address}:${url.port}/`);
  t.regex(await res.text(), /Hello from Steward \(hello\/0\)/);
  t.regex(
    formatStatusTabular(s),
    new RegExp(
      `^hello/0\\*?\\s+active\\s+idle\\s+\\d+\\s+${unit.address!.replace(/\./g, "\\.")}\\s+${url.port}/tcp\\s`,
      "m",
    ),
  );

  // Another port: config-changed restarts the server there, closing the old port and opening the new.
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  await tc.admin.updateApplication("web", "hello", { config: { port } });
  const moved = await eventually(
    "the new port in status",
    async () => {
      const u = (await tc.admin.status("web")).applications.hello!.units["hello/0"]!;
      return u.workload.message.endsWith(`:${port}/`) && u.agent.current === "idle" ? u : undefined;
    },
    30_000,
  );
  t.deepEqual(moved.ports, [`${port}/tcp`]);
});

test("simulated agents retry the login limiter's 503 after its Retry-After", async (t) => {
  const limited = await startTestController({ agentLogins: { perSecond: 1, burst: 1 } });
  const sims: SimAgent[] = [];
  try {
    const { uuid } = await limited.admin.createModel("limited");
    const machines = (await limited.admin.addMachines("limited", "manual", 3)).machines;
    sims.push(
      ...(await Promise.all(
        machines.map((m) => SimAgent.connect(limited.addresses[0]!, limited.caCert, uuid, m.id, m.credential!)),
      )),
    );
    t.is(sims.length, 3);
    t.true(
      sims.reduce((n, a) => n + a.refusals, 0) >= 2,
      "two of three were refused at first (burst 1) and got in later",
    );
  } finally {
    for (const a of sims) a.close();
    await limited.close();
  }
});
