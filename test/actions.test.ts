/**
 * Actions end to end, against a real controller with real agent processes and the `actor` test
 * operator: parameters checked before anything is queued, results and logs kept, failures told
 * apart, actions queued behind hooks, and an action cut off by its agent's death reported failed,
 * never lost and never run again.
 */
import test from "ava";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { StewardError, TaskInfo } from "../api";
import { unitIsReady } from "../api";
import type { TestController } from "./harness/controller";
import { allReady, fixturesDir, operatorsDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { recordDir } from "./harness/operators";

let tc: TestController;
let actor: string;
test.before(async () => {
  tc = await startTestController();
  actor = await tc.upload(join(fixturesDir, "operators", "actor"));
});
test.after.always(async () => {
  await tc?.close();
});

async function deployActor(
  model: string,
  units: number,
  config: Record<string, string | number> = {},
): Promise<string> {
  const record = await recordDir("steward-actor-");
  await tc.admin.createModel(model);
  await tc.admin.deploy(model, { name: "act", operator: actor, units, config: { "record-dir": record, ...config } });
  await tc.waitForUnits(model, allReady(units), `${units} units active/idle`);
  return record;
}

const finished = (t: TaskInfo): boolean => t.status !== "pending" && t.status !== "running";
const waitTask = (model: string, id: number, timeoutMs = 20_000): Promise<TaskInfo> =>
  eventually(
    `task ${id} finished`,
    async () => {
      const t = await tc.admin.task(model, id);
      return finished(t) ? t : undefined;
    },
    timeoutMs,
  );
const logLines = async (record: string): Promise<string[]> =>
  (await readFile(join(record, "log"), "utf8").catch(() => "")).split("\n").filter(Boolean);

test("an action on every unit of an application: results, log and the operation that holds them", async (t) => {
  await deployActor("act-run", 2);
  const run = await tc.admin.runAction("act-run", ["act"], "echo", { text: "hi", times: "2" });
  t.deepEqual(
    run.tasks.map((x) => x.unit),
    ["act/0", "act/1"],
  );
  t.true(
    run.tasks.every((x) => x.id > run.operation),
    "task ids follow their operation's",
  );
  for (const { id, unit } of run.tasks) {
    const task = await waitTask("act-run", id);
    t.is(task.status, "completed", task.message);
    t.deepEqual(
      task.params,
      { text: "hi", times: 2, mode: "plain" },
      "text read as the declared integer, defaults filled in",
    );
    t.deepEqual(task.results, { echo: { text: "hihi", times: "2" }, unit, id: String(id) });
    t.deepEqual(
      task.log.map((l) => l.message),
      ["echoing 2 times"],
    );
    t.is(task.exitCode, 0);
    t.truthy(task.started && task.completed);
  }
  const { operations } = await tc.admin.operations("act-run");
  t.is(operations[0]!.id, run.operation);
  t.is(operations[0]!.status, "completed");
  t.is(operations[0]!.by, "admin");
  t.deepEqual(
    operations[0]!.tasks.map((x) => x.status),
    ["completed", "completed"],
  );
});

test("parameters and targets are checked before anything is queued; each refusal names what is wrong", async (t) => {
  await deployActor("act-bad", 1);
  const refusal = async (
    targets: string[],
    action: string,
    params: Record<string, string | number | boolean>,
  ): Promise<string> =>
    (await t.throwsAsync<StewardError>(tc.admin.runAction("act-bad", targets, action, params)))?.message ?? "";
  t.regex(await refusal(["act/0"], "echo", {}), /parameter "text" of action echo \(act\) is required/);
  t.regex(await refusal(["act/0"], "echo", { text: "x", times: 9 }), /parameter "times" .* must be at most 5, got 9/);
  t.regex(
    await refusal(["act/0"], "echo", { text: "x", times: "two" }),
    /parameter "times" .* must be a whole number, got the string "two"/,
  );
  t.regex(
    await refusal(["act/0"], "echo", { text: "x", mode: "loud" }),
    /parameter "mode" .* must be one of "plain", "upper"/,
  );
  t.regex(
    await refusal(["act/0"], "echo", { text: "x", colour: "red" }),
    /parameter "colour" .* is not a parameter it takes \(it takes: text, times, mode\)/,
  );
  t.regex(await refusal(["act/0"], "echo", { text: "y".repeat(101) }), /must be at most 100 characters/);
  t.regex(
    await refusal(["act/0"], "launch", {}),
    /has no action "launch"; its actions: echo, fail-on-purpose, crash, hang, keep/,
  );
  t.regex(await refusal(["act/7"], "echo", { text: "x" }), /unit "act\/7" not found/);
  t.regex(await refusal(["nope"], "echo", { text: "x" }), /application "nope" not found/);
  t.regex(await refusal(["act/0", "act/x"], "echo", { text: "x" }), /must be a unit \(web\/0\)/);
  t.deepEqual((await tc.admin.operations("act-bad")).operations, [], "nothing was queued");
});

test("failed actions: action-fail keeps its message and results, a non-zero exit its status and output", async (t) => {
  await deployActor("act-fail", 1);
  const failing = await tc.admin.runAction("act-fail", ["act/leader"], "fail-on-purpose");
  const crash = await tc.admin.runAction("act-fail", ["act/0"], "crash");
  const f = await waitTask("act-fail", failing.tasks[0]!.id);
  t.is(f.unit, "act/0", "act/leader named the leader");
  t.is(f.status, "failed");
  t.is(f.message, "asked to fail");
  t.deepEqual(f.results, { partial: "yes" });
  t.regex(f.output, /some output before failing/);
  const c = await waitTask("act-fail", crash.tasks[0]!.id);
  t.is(c.status, "failed");
  t.is(c.message, "exit status 3");
  t.is(c.exitCode, 3);
  t.regex(c.output, /crashing now/);
  t.is((await tc.admin.operations("act-fail")).operations[0]!.status, "failed");
  // The unit is none the worse: it goes back to idle, not error.
  await tc.waitForUnits("act-fail", allReady(1), "the unit idle after the failed actions");
});

test("an action waits for the hook that is running, and hooks and actions never overlap", async (t) => {
  const record = await deployActor("act-queue", 1);
  await tc.admin.updateApplication("act-queue", "act", { config: { "hook-sleep": 2 } });
  await eventually(
    "config-changed running",
    async () => (await logLines(record)).includes("act/0 hook config-changed start"),
    10_000,
  );
  const run = await tc.admin.runAction("act-queue", ["act/0"], "echo", { text: "after" });
  t.is((await waitTask("act-queue", run.tasks[0]!.id)).status, "completed");
  const lines = (await logLines(record)).filter((l) => !l.includes("update-status"));
  const hookEnd = lines.lastIndexOf("act/0 hook config-changed end");
  const actionStart = lines.indexOf("act/0 action echo start");
  t.true(hookEnd >= 0 && actionStart > hookEnd, lines.join("\n"));
  // Everything that started ended before the next thing started.
  for (let i = 0; i + 1 < lines.length; i += 2)
    t.is(lines[i]!.replace(/ start$/, " end"), lines[i + 1], lines.join("\n"));
});

test("an action cut off by its agent's death is reported failed, its process killed, and it never runs again", async (t) => {
  const record = await deployActor("act-kill", 1);
  const run = await tc.admin.runAction("act-kill", ["act/0"], "hang");
  const id = run.tasks[0]!.id;
  const orphan = await eventually(
    "the action killed its agent",
    async () => Number(await readFile(join(record, "hang-act-0"), "utf8").catch(() => "")) || undefined,
    20_000,
  );
  const task = await waitTask("act-kill", id, 40_000);
  t.is(task.status, "failed");
  t.regex(task.message, /the agent stopped while the action ran; it was not run again/);
  await tc.waitForUnits("act-kill", allReady(1), "the unit idle under its new agent", 40_000);
  const alive = (() => {
    try {
      process.kill(orphan, 0);
      return true;
    } catch {
      return false;
    }
  })();
  t.false(alive, "the orphaned action process is gone");
  // A later action runs; the cut-off one never ran a second time.
  const next = await tc.admin.runAction("act-kill", ["act/0"], "echo", { text: "x" });
  t.is((await waitTask("act-kill", next.tasks[0]!.id)).status, "completed");
  const lines = await logLines(record);
  t.is(lines.filter((l) => l === "act/0 action hang start").length, 1, lines.join("\n"));
  t.false(lines.some((l) => l.includes("outlived-its-agent")));
});

test("an action that moves a port leaves only the new one open: hello-http's restart, three times", async (t) => {
  const hello = await tc.upload(join(operatorsDir, "hello-http"));
  await tc.admin.createModel("act-ports");
  await tc.admin.deploy("act-ports", { name: "web", operator: hello, units: 1 });
  const portsOf = async (): Promise<string[]> =>
    (await tc.admin.status("act-ports")).applications.web!.units["web/0"]!.ports;
  await tc.waitForUnits(
    "act-ports",
    (units) => units.length === 1 && unitIsReady(units[0]!) && units[0]!.ports.length === 1,
    "web/0 active/idle with its port open",
  );
  let last = await portsOf();
  const seen = new Set(last);
  for (let i = 0; i < 3; i++) {
    const run = await tc.admin.runAction("act-ports", ["web/0"], "restart");
    const task = await waitTask("act-ports", run.tasks[0]!.id);
    t.is(task.status, "completed", task.message);
    // Each restart picks a free port (port 0) and closes the one it served on.
    const now = [`${String(task.results.port)}/tcp`];
    t.deepEqual(
      await eventually(
        `only ${now[0]} open after restart ${i + 1}`,
        async () => {
          const p = await portsOf();
          return p.join() === now.join() ? p : undefined;
        },
        15_000,
      ).catch(async () => portsOf()),
      now,
      `after restart ${i + 1} (before: ${last.join(", ")})`,
    );
    last = now;
    seen.add(now[0]!);
  }
  t.true(seen.size > 1, "the restarts moved the port");
  t.deepEqual(
    (await tc.admin.status("act-ports")).applications.web!.units["web/0"]!.ports,
    last,
    "status shows only the port open now",
  );
});

test("tasks and operations: unknown ids are 404s, bad limits 400s, and read access is enough to look", async (t) => {
  await deployActor("act-read", 1);
  const run = await tc.admin.runAction("act-read", ["act/0"], "echo", { text: "r" });
  await waitTask("act-read", run.tasks[0]!.id);
  t.is((await t.throwsAsync<StewardError>(tc.admin.task("act-read", 99_999)))?.code, "not-found");
  t.is((await t.throwsAsync<StewardError>(tc.admin.call("GET", "/v1/models/act-read/tasks/abc")))?.code, "not-found");
  t.is(
    (await t.throwsAsync<StewardError>(tc.admin.call("GET", "/v1/models/act-read/operations?limit=0")))?.code,
    "invalid-request",
  );
  await tc.admin.createUser("reader", "reader-password-1");
  await tc.admin.grant("act-read", "reader", "read");
  const reader = tc.clientFor("reader", "reader-password-1");
  t.is((await reader.task("act-read", run.tasks[0]!.id)).status, "completed");
  t.is((await reader.operations("act-read")).operations.length, 1);
  t.is(
    (await t.throwsAsync<StewardError>(reader.runAction("act-read", ["act/0"], "echo", { text: "no" })))?.code,
    "forbidden",
  );
});

test("one run may not write more than a store request holds: a clear refusal, nothing queued", async (t) => {
  await tc.admin.createModel("act-big");
  const machines = (await tc.admin.addMachines("act-big", "manual", 70)).machines.map((m) => m.id);
  await tc.admin.deploy("act-big", { name: "act", operator: actor, units: 70, to: machines });
  // 70 units × (task record + queue entry) × 60 KB of parameters: about 8.4 MB in one transaction.
  const err = await t.throwsAsync<StewardError>(
    tc.admin.runAction("act-big", ["act"], "keep", { blob: "b".repeat(60_000) }),
  );
  t.regex(
    err?.message ?? "",
    /running keep on 70 units with these parameters would write \d+ bytes at once, more than the 8388608 one run may: run it on fewer units at a time/,
  );
  t.deepEqual((await tc.admin.operations("act-big")).operations, []);
  const fewer = await tc.admin.runAction("act-big", ["act/0", "act/1"], "keep", { blob: "b".repeat(60_000) });
  t.is(fewer.tasks.length, 2, "on fewer units it is queued");
  // A unit whose agent is away (these machines have none) holds at most 100 waiting actions.
  for (let i = 1; i < 100; i++) await tc.admin.runAction("act-big", ["act/0"], "keep", { blob: "" });
  const full = await t.throwsAsync<StewardError>(tc.admin.runAction("act-big", ["act/0"], "keep", { blob: "" }));
  t.is(full?.code, "rate-limited");
  t.regex(full?.message ?? "", /unit act\/0 already has 100 actions waiting/);
  t.is(
    (await tc.admin.runAction("act-big", ["act/1"], "keep", { blob: "" })).tasks.length,
    1,
    "other units are not held up",
  );
});
