/**
 * Storage that outlives its units (issue 32), on the local substrate with a real controller and real
 * agent processes: a unit's storage-attached hook writes a note into its storage before install; the
 * unit is removed and its storage is kept, detached, moved aside; a new unit given it with
 * `--attach-storage` finds the note; the refusals (another application's storage, storage still
 * attached, a count out of range) make nothing; `--destroy-storage` destroys it and its data.
 */
import test from "ava";
import { readFile, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { StewardError, StorageInfo } from "../api";
import { formatStatusTabular } from "../cli";
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

const storageOf = async (model: string): Promise<StorageInfo[]> => (await tc.admin.listStorage(model)).storage;
const exists = async (path: string): Promise<boolean> => (await stat(path).catch(() => undefined)) !== undefined;
const refusal = (p: Promise<unknown>): Promise<StewardError> =>
  p.then(
    () => {
      throw new Error("accepted");
    },
    (err: StewardError) => err,
  );

test("a note written into storage by one unit is read by the next unit it is attached to", async (t) => {
  await tc.admin.createModel("notes");
  const op = await tc.upload(join(operatorsDir, "notebook"));
  await tc.admin.deploy("notes", { name: "notebook", operator: op, units: 1 });
  await tc.waitForUnits(
    "notes",
    (units) => units.length === 1 && units[0]!.workload.message === "data/0 new: written by notebook/0",
    "notebook/0 to write its note",
    60_000,
  );
  const [first] = await storageOf("notes");
  t.like(first, { id: "data/0", app: "notebook", unit: "notebook/0", status: "attached", pool: "local", size: 64 });
  t.is(await readFile(join(first!.location, "note"), "utf8"), "written by notebook/0\n");
  const status = await tc.admin.status("notes");
  t.deepEqual(
    status.applications.notebook!.units["notebook/0"]!.storage,
    ["data/0"],
    "status shows the unit's storage",
  );
  t.regex(formatStatusTabular(status), /Storage[^\n]*\n[^\n]*notebook\/0\*?\s.*\bdata\/0\b/, "in the table too");

  // The unit goes; its storage stays, detached, moved out of the machine's directory before that goes.
  await tc.admin.removeUnit("notes", "notebook/0");
  const kept = await eventually(
    "data/0 detached and moved aside",
    async () => {
      const [s] = await storageOf("notes");
      return s?.status === "detached" && (await tc.admin.status("notes")).machines["0"] === undefined ? s : undefined;
    },
    60_000,
  );
  t.is(kept.unit, undefined);
  t.false(await exists(first!.location), "no longer in the removed machine's directory");
  const keptDir = join(dirname(dirname(dirname(first!.location))), "kept-storage", "data-0");
  t.is(await readFile(join(keptDir, "note"), "utf8"), "written by notebook/0\n", "kept aside with its data");

  // Refusals name the rule and make nothing.
  const tooMany = await refusal(tc.admin.addUnits("notes", "notebook", 2, undefined, ["data/0"]));
  t.is(tooMany.code, "invalid-request");
  await tc.admin.deploy("notes", { name: "other", operator: op, units: 0 });
  const other = await refusal(tc.admin.addUnits("notes", "other", 1, undefined, ["data/0"]));
  t.is(other.reason, "storage-of-another-application");
  const range = await refusal(
    tc.admin.deploy("notes", { name: "third", operator: op, units: 1, storage: { data: { count: 3 } } }),
  );
  t.is(range.reason, "storage-out-of-range");
  t.regex(range.message, /outside the operator's range 1-2/);
  const small = await refusal(
    tc.admin.deploy("notes", { name: "third", operator: op, units: 1, storage: { data: { size: 1 } } }),
  );
  t.is(small.reason, "storage-out-of-range");
  const pool = await refusal(
    tc.admin.deploy("notes", { name: "third", operator: op, units: 1, storage: { data: { pool: "ebs" } } }),
  );
  t.is(pool.reason, "storage-pool-unknown");
  const after = await tc.admin.status("notes");
  t.deepEqual(Object.keys(after.applications).sort(), ["notebook", "other"], "no application made by a refusal");
  t.is(Object.keys(after.applications.other!.units).length, 0);
  t.is((await storageOf("notes")).length, 1, "no storage made by a refusal");

  // A new unit takes it over: its storage-attached hook (before install) finds the note.
  const t0 = Date.now();
  const { units } = await tc.admin.addUnits("notes", "notebook", 1, undefined, ["data/0"]);
  t.deepEqual(units, ["notebook/1"]);
  const busy = await refusal(tc.admin.addUnits("notes", "notebook", 1, undefined, ["data/0"]));
  t.is(busy.reason, "storage-attached");
  await tc.waitForUnits(
    "notes",
    (us) => us.some((u) => u.name === "notebook/1" && u.workload.message === "data/0 found: written by notebook/0"),
    "notebook/1 to find the note",
    60_000,
  );
  t.log(`add-unit --attach-storage to the hook reading the note: ${Date.now() - t0} ms`);
  const [again] = await storageOf("notes");
  t.like(again, { id: "data/0", unit: "notebook/1", status: "attached" });
  const state = JSON.parse(
    await readFile(join(dirname(dirname(again!.location)), "units", "notebook-1", "state.json"), "utf8"),
  ) as { committed: string[] };
  t.deepEqual(
    state.committed.slice(0, 2),
    ["data-storage-attached", "install"],
    "storage-attached runs before install",
  );

  // Destroyed when asked: the record and the data go.
  await tc.admin.removeUnit("notes", "notebook/1", false, true);
  await eventually("data/0 destroyed", async () => (await storageOf("notes")).length === 0, 60_000);
  t.false(await exists(again!.location));
  t.false(await exists(keptDir));
});

test("remove-application keeps its units' storage, detached; with --destroy-storage the storage and its data go too", async (t) => {
  await tc.admin.createModel("apps-storage");
  const op = await tc.upload(join(operatorsDir, "notebook"));
  for (const name of ["kept", "gone"]) await tc.admin.deploy("apps-storage", { name, operator: op, units: 1 });
  await tc.waitForUnits(
    "apps-storage",
    (units) => units.length === 2 && units.every((u) => /^data\/\d+ new: written by /.test(u.workload.message)),
    "both units to write their notes",
    60_000,
  );
  const before = await storageOf("apps-storage");
  const gone = before.find((s) => s.app === "gone")!;

  await tc.admin.removeApplication("apps-storage", "kept");
  await tc.admin.removeApplication("apps-storage", "gone", false, true);
  const after = await eventually(
    "both applications gone, their storage settled",
    async () => {
      const s = await storageOf("apps-storage");
      const apps = Object.keys((await tc.admin.status("apps-storage")).applications);
      return apps.length === 0 && s.length === 1 && s[0]!.status === "detached" ? s : undefined;
    },
    60_000,
  );
  t.like(after[0], { app: "kept", status: "detached" }, "the storage of the application removed plainly is kept");
  t.false(await exists(gone.location), "the destroyed storage's data is gone");
});
