/**
 * A model with attached storage migrates between two real local controllers (issue 32): the
 * storage-attached hook writes a note; after the move the target lists the same instances attached
 * to the same units, the unit's next hook reads the note where it was (the volume stayed in place:
 * local machines that came by migration keep running where their first controller started them),
 * no storage-attached hook runs again, and on the target `remove-unit` keeps the storage (moved aside
 * with its data) and `add-unit --attach-storage` gives it to a new unit, which finds the note.
 */
import test from "ava";
import { appendFile, cp, mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { StorageInfo } from "../api";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { migrateAndWait } from "./harness/migration";

let a: TestController;
let b: TestController;

test.before(async () => {
  [a, b] = await Promise.all([startTestController(), startTestController()]);
});
// The target first: it supervises the moved agents, which run under the source's directory.
test.after.always(async () => {
  await b?.close();
  await a?.close();
});

/** The notebook operator, plus a `label` option whose config-changed hook reads the note in the unit's storage. */
async function readingNotebook(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "steward-op-"));
  await cp(join(operatorsDir, "notebook"), dir, { recursive: true });
  await appendFile(
    join(dir, "operator.yaml"),
    "config:\n  label:\n    type: string\n    default: first\n    description: Said in the status with the note.\n",
  );
  await writeFile(
    join(dir, "hooks", "config-changed"),
    `#!/bin/sh
set -eu
[ "$(config-get label)" = first ] && exit 0
id=$(storage-list data | head -n 1)
status-set active "label=$(config-get label) $id holds: $(cat "$(storage-get -s "$id" location)/note")"
`,
    { mode: 0o755 },
  );
  return dir;
}

const exists = async (path: string): Promise<boolean> => (await stat(path).catch(() => undefined)) !== undefined;
const storageOf = async (c: TestController, model: string): Promise<StorageInfo[]> =>
  (await c.admin.listStorage(model)).storage;
/** The hooks unit `unit` has committed, oldest first, from its state file on machine directory `machineDir`. */
const committed = async (machineDir: string, unit: string): Promise<string[]> =>
  (
    JSON.parse(await readFile(join(machineDir, "units", unit.replace("/", "-"), "state.json"), "utf8")) as {
      committed: string[];
    }
  ).committed;

test("a model migrates with its storage attached: same instances on the target, data in place, no storage hook re-run, and kept and re-attached there", async (t) => {
  t.timeout(360_000);
  await a.admin.createModel("vault");
  const op = await a.upload(await readingNotebook());
  await a.admin.deploy("vault", { name: "notebook", operator: op, units: 1 });
  await a.waitForUnits(
    "vault",
    (us) => us.length === 1 && us[0]!.workload.message === "data/0 new: written by notebook/0",
    "notebook/0 to write its note",
    90_000,
  );
  const before = await storageOf(a, "vault");
  t.like(before[0], { id: "data/0", unit: "notebook/0", status: "attached" });
  const machineDir = dirname(dirname(before[0]!.location));

  const m = await migrateAndWait(a.admin, "vault", {
    name: "b",
    addresses: b.addresses,
    caCert: b.caCert,
    user: "admin",
    password: b.adminPassword,
  });
  t.is(m.phase, "DONE", m.failure);

  // The same records, attached to the same unit, where they were.
  t.deepEqual(await storageOf(b, "vault"), before);
  t.deepEqual((await b.admin.status("vault")).applications.notebook!.units["notebook/0"]!.storage, ["data/0"]);

  // The unit's next hook, run for the target, reads the note.
  await b.admin.updateApplication("vault", "notebook", { config: { label: "on-b" } });
  await b.waitForUnits(
    "vault",
    (us) => us[0]?.workload.message === "label=on-b data/0 holds: written by notebook/0",
    "notebook/0's config-changed on the target to read the note",
    90_000,
  );
  const hooks = await committed(machineDir, "notebook/0");
  t.is(hooks.filter((h) => h === "data-storage-attached").length, 1, hooks.join(" "));
  t.is(hooks.filter((h) => h === "install").length, 1, hooks.join(" "));

  // On the target the unit goes: its storage is kept, detached, with its data.
  await b.admin.removeUnit("vault", "notebook/0");
  const kept = await eventually(
    "data/0 detached and kept on the target, machine 0 gone",
    async () => {
      const [s] = await storageOf(b, "vault");
      return s?.status === "detached" && (await b.admin.status("vault")).machines["0"] === undefined ? s : undefined;
    },
    90_000,
  );
  t.is(kept.unit, undefined);
  const keptNote = join(dirname(machineDir), "kept-storage", "data-0", "note");
  t.is(await readFile(keptNote, "utf8"), "written by notebook/0\n", "kept aside beside the model's machines");

  // A new unit on the target takes it over and finds the note.
  const { units } = await b.admin.addUnits("vault", "notebook", 1, undefined, ["data/0"]);
  t.deepEqual(units, ["notebook/1"]);
  await b.waitForUnits(
    "vault",
    (us) => us.some((u) => u.name === "notebook/1" && u.workload.message === "data/0 found: written by notebook/0"),
    "notebook/1 to find the note",
    90_000,
  );
  const [again] = await storageOf(b, "vault");
  t.like(again, { id: "data/0", unit: "notebook/1", status: "attached" });
  t.is(await readFile(join(again!.location, "note"), "utf8"), "written by notebook/0\n", "moved to its new machine");
  t.false(await exists(dirname(keptNote)), "no longer kept aside");
});
