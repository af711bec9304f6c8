/**
 * The agent against a real controller with real agent processes: the hook sequence of each unit is
 * recorded by the recorder operator and asserted exactly.
 */
import test from "ava";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { TestController } from "./harness/controller";
import { allReady, fixturesDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { recordDir } from "./harness/operators";

let tc: TestController;
test.before(async () => {
  tc = await startTestController();
});
test.after.always(async () => {
  await tc?.close();
});

async function hooksOf(recordDir: string): Promise<Map<string, string[]>> {
  const text = await readFile(join(recordDir, "hooks.log"), "utf8").catch(() => "");
  const byUnit = new Map<string, string[]>();
  for (const line of text.split("\n").filter(Boolean)) {
    const [unit, hook] = line.split(" ");
    byUnit.set(unit!, [...(byUnit.get(unit!) ?? []), hook!]);
  }
  return byUnit;
}
const withoutUpdateStatus = (hooks: string[] | undefined): string[] =>
  (hooks ?? []).filter((h) => h !== "update-status");

test("deploy, config change, update-status and unit removal run hooks in Juju's order", async (t) => {
  const record = await recordDir();
  await tc.admin.createModel("lifecycle", { updateStatusInterval: 1 });
  const op = await tc.upload(join(fixturesDir, "operators", "recorder"));
  await tc.admin.deploy("lifecycle", { name: "rec", operator: op, units: 3, config: { "record-dir": record } });
  await tc.waitForUnits("lifecycle", allReady(3), "3 units active/idle");
  let hooks = await hooksOf(record);
  const leaders = ["rec/0", "rec/1", "rec/2"].filter((u) => withoutUpdateStatus(hooks.get(u))[1] === "leader-elected");
  t.is(leaders.length, 1, "exactly one unit is elected leader");
  const second = (u: string): string => (leaders.includes(u) ? "leader-elected" : "leader-settings-changed");
  for (const u of ["rec/0", "rec/1", "rec/2"])
    t.deepEqual(withoutUpdateStatus(hooks.get(u)), ["install", second(u), "config-changed", "start"], u);

  await tc.admin.updateApplication("lifecycle", "rec", { config: { label: "b" } });
  const s = await tc.waitForUnits(
    "lifecycle",
    (units) => units.length === 3 && units.every((u) => u.workload.message === "label=b"),
    "status to show the new label",
  );
  t.is(s.applications.rec!.status.current, "active");
  // An update-status already running when the change lands may show the new label first (config-get
  // reads the current config): wait for config-changed itself.
  hooks = await eventually(
    "config-changed recorded on every unit",
    async () => {
      const h = await hooksOf(record);
      return ["rec/0", "rec/1", "rec/2"].every((u) => withoutUpdateStatus(h.get(u)).length >= 5) ? h : undefined;
    },
    20_000,
  ).catch(() => hooksOf(record));
  for (const u of ["rec/0", "rec/1", "rec/2"])
    t.deepEqual(
      withoutUpdateStatus(hooks.get(u)),
      ["install", second(u), "config-changed", "start", "config-changed"],
      u,
    );

  // The model runs update-status every second (jittered 80–120 %).
  await eventually(
    "update-status on every unit",
    async () => {
      const h = await hooksOf(record);
      return ["rec/0", "rec/1", "rec/2"].every(
        (u) => (h.get(u) ?? []).filter((x) => x === "update-status").length >= 2,
      );
    },
    20_000,
  );

  await tc.admin.removeUnit("lifecycle", "rec/1");
  await tc.waitForUnits(
    "lifecycle",
    (units) => units.length === 2 && !units.some((u) => u.name === "rec/1"),
    "rec/1 gone",
  );
  hooks = await hooksOf(record);
  t.deepEqual(withoutUpdateStatus(hooks.get("rec/1")).slice(-2), ["stop", "remove"]);
  // The machine created for rec/1 goes with it, once its agent has been stopped.
  const status = await eventually(
    "machine 1 removed",
    async () => {
      const st = await tc.admin.status("lifecycle");
      return "1" in st.machines ? undefined : st;
    },
    20_000,
  );
  t.deepEqual(Object.keys(status.machines).sort(), ["0", "2"]);
});

test("a failing hook puts the unit in error, is retried with backoff, then succeeds", async (t) => {
  const record = await recordDir();
  await tc.admin.createModel("flaky");
  const op = await tc.upload(join(fixturesDir, "operators", "recorder"));
  await tc.admin.deploy("flaky", {
    name: "rec",
    operator: op,
    units: 1,
    config: { "record-dir": record, "fail-hook": "install", "fail-times": 2 },
  });
  const failed = await tc.waitForUnits("flaky", (units) => units[0]?.workload.current === "error", "the unit in error");
  t.is(failed.applications.rec!.units["rec/0"]!.workload.message, 'hook failed: "install"');
  t.is(failed.applications.rec!.units["rec/0"]!.agent.current, "error");
  t.is(failed.applications.rec!.status.current, "error", "the application shows its most severe unit");
  // Retries come after 5 s and then 10 s.
  await tc.waitForUnits("flaky", allReady(1), "the unit active after retries", 40_000);
  const hooks = (await hooksOf(record)).get("rec/0");
  t.deepEqual(withoutUpdateStatus(hooks), [
    "install",
    "install",
    "install",
    "leader-elected",
    "config-changed",
    "start",
  ]);
});

test.serial("an agent killed with kill -9 is restarted and re-runs no committed hook", async (t) => {
  const record = await recordDir();
  await tc.admin.createModel("restart");
  const op = await tc.upload(join(fixturesDir, "operators", "recorder"));
  await tc.admin.deploy("restart", { name: "rec", operator: op, units: 1, config: { "record-dir": record } });
  await tc.waitForUnits("restart", allReady(1), "unit active");
  const before = withoutUpdateStatus((await hooksOf(record)).get("rec/0"));
  const uuid = (await tc.admin.listModels()).find((m) => m.name === "restart")!.uuid;
  const pidFile = join(tc.dir, "c", "machines", uuid, "0", "agent.pid");
  const pid = Number(await readFile(pidFile, "utf8"));
  process.kill(pid, "SIGKILL");
  await eventually(
    "machine 0 shown down",
    async () => (await tc.admin.status("restart")).machines["0"]?.status.current === "down",
    20_000,
  );
  // The local substrate supervises its agents and starts a new one.
  await eventually("a new agent process", async () => Number(await readFile(pidFile, "utf8")) !== pid, 20_000);
  await eventually(
    "machine 0 started again",
    async () => (await tc.admin.status("restart")).machines["0"]?.status.current === "started",
    20_000,
  );
  await tc.admin.updateApplication("restart", "rec", { config: { label: "after-restart" } });
  await tc.waitForUnits(
    "restart",
    (units) => units[0]?.workload.message === "label=after-restart" && units[0].agent.current === "idle",
    "config applied after restart",
  );
  t.deepEqual(withoutUpdateStatus((await hooksOf(record)).get("rec/0")), [...before, "config-changed"]);
});

test("a hook's tools see the unit's config and report status and version", async (t) => {
  await tc.admin.createModel("tools");
  const op = await tc.upload(join(__dirname, "..", "..", "operators", "motd"));
  await tc.admin.deploy("tools", {
    name: "motd",
    operator: op,
    units: 1,
    config: { message: "hello tools", uppercase: true },
  });
  const s = await tc.waitForUnits("tools", allReady(1), "motd active");
  t.is(s.applications.motd!.units["motd/0"]!.workload.message, "motd: HELLO TOOLS");
  t.is(s.applications.motd!.version, "1.0.0");
  t.is(s.applications.motd!.config.uppercase, true);
});
