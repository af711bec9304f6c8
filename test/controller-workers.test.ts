/**
 * A whole controller replica as a group of workers (controller/workers/): once stop() returns, `done`
 * has resolved, it no longer leads, and a replica started again on the same data directory leads
 * (nothing of the first still holds the store). A real in-process controller on the embedded store.
 */
import test from "ava";
import { join } from "node:path";
import { silentLogger } from "../api";
import { Controller } from "../controller";
import { startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";

test("a stopped controller has resolved done and stepped down; the next one on its data directory leads", async (t) => {
  const tc = await startTestController();
  t.teardown(() => tc.close());
  await eventually("the replica leads", () => tc.controller.isLeader, 10_000, 20);
  let settled: string | undefined;
  void tc.controller.done.then(
    () => {
      settled = "resolved";
    },
    () => {
      settled = "rejected";
    },
  );
  await tc.controller.stop();
  await Promise.resolve();
  t.is(settled, "resolved");
  t.is(tc.controller.getState(), "STOPPED");
  t.false(tc.controller.isLeader);
  tc.controller = await Controller.start({
    dataDir: join(tc.dir, "c"),
    log: silentLogger,
    localMachines: { agentsDir: join(tc.dir, "agents") },
  });
  await eventually("the next replica leads", () => tc.controller.isLeader, 10_000, 20);
  t.true(tc.controller.isLeader);
});
