/**
 * The example operators under churn, as a new user runs them: hello-http's units come and go
 * (add-unit, remove-unit) while http-checker checks each one. A unit removed between the checker's
 * relation-list and its relation-get must not put the checker in error: Juju charms skip a unit
 * that left, and ours must too. The race is made certain by an upstream that does not answer
 * (web/0's server stopped with SIGSTOP): the checker waits on it between listing a unit and
 * reading that unit's data, and the unit is removed meanwhile.
 */
import test from "ava";
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import type { StatusLogEntry } from "../api";
import { unitIsReady } from "../api";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";

let tc: TestController;
test.before(async () => {
  tc = await startTestController();
});
test.after.always(async () => {
  await tc?.close();
});

const MODEL = "churn";

test("http-checker stays out of error while web units are added and removed several times", async (t) => {
  t.timeout(600_000);
  await tc.admin.createModel(MODEL, { updateStatusInterval: 5 });
  await tc.admin.deploy(MODEL, { name: "web", operator: await tc.upload(join(operatorsDir, "hello-http")), units: 1 });
  await tc.admin.deploy(MODEL, {
    name: "checker",
    operator: await tc.upload(join(operatorsDir, "http-checker")),
    units: 1,
  });
  await tc.admin.integrate(MODEL, "checker:upstream", "web:website");
  const checkerSays = (want: RegExp) => async (): Promise<boolean> => {
    const u = (await tc.admin.status(MODEL)).applications.checker?.units["checker/0"];
    return u !== undefined && u.agent.current === "idle" && want.test(u.workload.message);
  };
  await tc.waitForUnits(
    MODEL,
    (units) => units.length === 2 && units.every(unitIsReady),
    "web/0 and checker/0 active/idle",
    120_000,
  );
  await eventually("the checker sees web/0", checkerSays(/^1\/1 upstreams answer/), 60_000);

  // Everything the checker shows while the churn goes on, polled as well as kept in its status log
  // (which keeps the last 50 changes only).
  const shown: StatusLogEntry[] = [];
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const u = (await tc.admin.status(MODEL).catch(() => undefined))?.applications.checker?.units["checker/0"];
      if (u)
        for (const s of [
          { type: "workload" as const, ...u.workload },
          { type: "agent" as const, ...u.agent },
        ])
          shown.push({ since: "", type: s.type, status: s.current, message: s.message });
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    for (let round = 0; round < 2; round++) {
      const { units } = await tc.admin.addUnits(MODEL, "web", 3);
      await eventually(
        `round ${round + 1}: the checker sees 4 upstreams`,
        checkerSays(/^4\/4 upstreams answer/),
        120_000,
      );
      // Removed at once, while the checker's hooks for them run.
      for (const u of units) await tc.admin.removeUnit(MODEL, u);
      await tc.waitForUnits(MODEL, (all) => all.length === 2, `round ${round + 1}: the removed units gone`, 120_000);
      await eventually(
        `round ${round + 1}: the checker back to 1 upstream`,
        checkerSays(/^1\/1 upstreams answer/),
        60_000,
      );
    }
    // web/0 stops answering: each check now waits timeout-ms on it before it reads the next unit's data.
    const server = Number(await readFile(await unitDataFile("web/0", "server.pid"), "utf8"));
    process.kill(server, "SIGSTOP");
    for (let round = 0; round < 3; round++) {
      const [added] = (await tc.admin.addUnits(MODEL, "web", 1)).units;
      await eventually(
        `race ${round + 1}: the checker sees ${added}`,
        checkerSays(/^1\/2 upstreams answer; not answering: web\/0$/),
        120_000,
      );
      // A config change runs a check: once it has listed the units and waits on web/0, the new unit goes.
      await tc.admin.updateApplication(MODEL, "checker", { config: { "timeout-ms": 6000 + round } });
      await eventually(
        `race ${round + 1}: the check running`,
        async () =>
          /config-changed/.test(
            (await tc.admin.status(MODEL)).applications.checker?.units["checker/0"]?.agent.message ?? "",
          ),
        30_000,
        50,
      );
      await new Promise((r) => setTimeout(r, 500));
      await tc.admin.removeUnit(MODEL, added!);
      await tc.waitForUnits(MODEL, (all) => all.length === 2, `race ${round + 1}: ${added} gone`, 120_000);
      await eventually(
        `race ${round + 1}: the checker back to web/0 alone`,
        checkerSays(/^0\/1 upstreams answer; not answering: web\/0$/),
        60_000,
      );
    }
    process.kill(server, "SIGCONT");
  } finally {
    polling = false;
    await poller;
  }
  const log = (await tc.admin.statusLog(MODEL, "checker/0")).entries;
  const errors = [...shown, ...log].filter((e) => e.status === "error");
  t.deepEqual(errors, [], `the checker went into error: ${errors.map((e) => `${e.type} ${e.message}`).join("; ")}`);
  t.true(shown.length > 0);
});

/** A file in `unit`'s data directory (STEWARD_UNIT_DATA) under the test controller's agents. */
async function unitDataFile(unit: string, name: string): Promise<string> {
  const suffix = join("units", unit.replace("/", "-"), "data", name);
  const found = (await readdir(tc.dir, { recursive: true })).find((p) => p.endsWith(suffix));
  if (!found) throw new Error(`no ${suffix} under ${tc.dir}`);
  return join(tc.dir, found);
}
