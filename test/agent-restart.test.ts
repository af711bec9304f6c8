/**
 * An agent that dies and is started again (the local substrate supervises its agents) against a real
 * controller: its units go on running update-status, and a hook the dead agent left running is
 * killed before anything runs again, so hooks on one machine never overlap.
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

async function hooksOf(recordDir: string, unit: string): Promise<string[]> {
  const text = await readFile(join(recordDir, "hooks.log"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((l) => l.startsWith(`${unit} `))
    .map((l) => l.split(" ")[1]!);
}

/** The agent process of machine 0 of `model`, as the local substrate records it. */
async function agentPidFile(model: string): Promise<string> {
  const uuid = (await tc.admin.listModels()).find((m) => m.name === model)!.uuid;
  return join(tc.dir, "c", "machines", uuid, "0", "agent.pid");
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test("after its agent restarts, a unit runs update-status again", async (t) => {
  const record = await recordDir();
  await tc.admin.createModel("us-restart", { updateStatusInterval: 1 });
  const op = await tc.upload(join(fixturesDir, "operators", "recorder"));
  await tc.admin.deploy("us-restart", { name: "rec", operator: op, units: 1, config: { "record-dir": record } });
  await tc.waitForUnits("us-restart", allReady(1), "unit active");
  await eventually(
    "update-status before the restart",
    async () => (await hooksOf(record, "rec/0")).includes("update-status"),
    20_000,
  );
  const pidFile = await agentPidFile("us-restart");
  const pid = Number(await readFile(pidFile, "utf8"));
  process.kill(pid, "SIGKILL");
  await eventually("a new agent process", async () => Number(await readFile(pidFile, "utf8")) !== pid, 20_000);
  await eventually(
    "machine 0 started again",
    async () => (await tc.admin.status("us-restart")).machines["0"]?.status.current === "started",
    20_000,
  );
  const before = (await hooksOf(record, "rec/0")).filter((h) => h === "update-status").length;
  // Every second (80–120 %): a few more within 20 s, none at all without the timer armed at start.
  const more = await eventually(
    "update-status after the restart",
    async () => {
      const n = (await hooksOf(record, "rec/0")).filter((h) => h === "update-status").length - before;
      return n >= 2 ? n : undefined;
    },
    20_000,
  ).catch(() => 0);
  t.true(more >= 2, `update-status ran ${more} times after the restart`);
});

test("a hook left running by an agent killed with SIGKILL is killed before the hook runs again", async (t) => {
  const record = await recordDir();
  await tc.admin.createModel("orphan");
  const op = await tc.upload(join(fixturesDir, "operators", "recorder"));
  // config-changed kills its agent (kill -9) and then sleeps on for 30 s in its own process group.
  await tc.admin.deploy("orphan", {
    name: "rec",
    operator: op,
    units: 1,
    config: { "record-dir": record, "kill-during": "config-changed" },
  });
  const orphanFile = join(record, "orphan-rec-0-config-changed");
  const orphan = await eventually(
    "the hook killed its agent",
    async () => Number(await readFile(orphanFile, "utf8").catch(() => "")) || undefined,
    30_000,
  );
  // The supervisor starts a new agent, which re-runs config-changed (it was never committed).
  await tc.waitForUnits("orphan", allReady(1), "unit active after the agent's restart", 40_000);
  const hooks = await hooksOf(record, "rec/0");
  t.false(
    hooks.includes("config-changed-overlapped"),
    `the re-run started while the orphan still ran: ${hooks.join(" ")}`,
  );
  t.deepEqual(
    hooks.filter((h) => h !== "update-status"),
    ["install", "leader-elected", "config-changed", "start"],
  );
  t.false(alive(orphan), "the orphaned hook process is gone");
});
