/**
 * In Pulumi, pointing a Model at another controller migrates it (provider/impl/model-migration.ts):
 * the engine sees an update, never a replacement; the units move and keep running on the target,
 * and the source keeps only the record. Through the real Pulumi SDK and its dynamic-provider process.
 */
import test from "ava";
import { join } from "node:path";
import { StewardError } from "../api";
import { Application, Model } from "../provider";
import type { TestController } from "./harness/controller";
import { fixturesDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { recordDir, sequences } from "./harness/operators";
import { providerTestBed } from "./harness/provider-bed";

let rec: string;
// Two controllers, "a" and "b", the model moves between; the stack is left as it is after the test.
const bed = providerTestBed(test, {
  controllers: 2,
  destroy: false,
  setUp: async () => {
    rec = await recordDir();
  },
});
const { engine, connection } = bed;

function program(on: TestController): () => void {
  return () => {
    const model = new Model("moving", { connection: connection(on) });
    new Application("rec", {
      model,
      operator: join(fixturesDir, "operators", "recorder"),
      units: 2,
      config: { "record-dir": rec },
      timeoutSeconds: 90,
    });
  };
}

test("a Model pointed at another controller is migrated there: an update, not a replacement, with no hook run again", async (t) => {
  t.timeout(300_000);
  const [a, b] = bed.controllers as [TestController, TestController];
  const first = await engine.up(program(a));
  t.deepEqual(first.errors, []);
  const uuid = engine.get("moving")!.outputs.uuid as string;
  const before = await sequences(rec);

  const moved = await engine.up(program(b));
  t.deepEqual(moved.errors, []);
  t.deepEqual(moved.replaced, [], "nothing is replaced");
  t.deepEqual(moved.created, []);
  t.true(moved.updated.includes("moving"), `updated: ${moved.updated.join(", ")}`);
  t.is(engine.get("moving")!.outputs.uuid, uuid, "the model keeps its uuid");

  const units = await eventually(
    "both units active on the target",
    async () => {
      const s = await b.admin.status("moving");
      const u = Object.values(s.applications).flatMap((x) => Object.values(x.units));
      return u.length === 2 && u.every((x) => x.workload.current === "active") ? u : undefined;
    },
    60_000,
  );
  const after = await sequences(rec);
  for (const u of units)
    t.deepEqual(
      after.get(u.name)?.filter((h) => h === "install" || h === "start"),
      before.get(u.name)?.filter((h) => h === "install" || h === "start"),
      `${u.name}: no install or start again`,
    );
  const gone = await a.admin.status("moving").catch((e: unknown) => e);
  t.true(StewardError.isInstance(gone) && gone.code === "moved", String(gone));

  // Nothing changed since: the next up does nothing.
  const again = await engine.up(program(b));
  t.deepEqual([again.created, again.updated, again.replaced, again.errors], [[], [], [], []]);
});
