/**
 * The Pulumi Application's `storage` (issue 32), through the real Pulumi SDK and its dynamic-provider
 * process against a real local controller: bad storage comes back from check naming the field; the
 * storage given at create is what the units get; a change is an update, not a replacement, that
 * applies to units added after it (the units that exist keep their storage and its data); a directive
 * changed outside the program shows as drift on refresh, and the next up puts it back.
 */
import test from "ava";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { StorageInfo } from "../api";
import { Application, Model } from "../provider";
import type { ApplicationStorageArgs } from "../provider";
import { operatorsDir } from "./harness/controller";
import { providerTestBed } from "./harness/provider-bed";

const bed = providerTestBed(test, { controllers: 1 });
const { engine, connection } = bed;

function program(units: number, data: ApplicationStorageArgs | undefined): () => void {
  return () => {
    const model = new Model("vault", { connection: connection() });
    new Application("notebook", {
      model,
      operator: join(operatorsDir, "notebook"),
      units,
      ...(data ? { storage: { data } } : {}),
      timeoutSeconds: 120,
    });
  };
}

const storageOf = async (): Promise<StorageInfo[]> =>
  (await bed.controller.admin.listStorage("vault")).storage.sort((a, b) => a.id.localeCompare(b.id));

test.serial("bad storage comes back from check naming the field; nothing is created", async (t) => {
  const r = await engine.up(() => {
    const model = new Model("bad", { connection: connection() });
    new Application("bad-size", {
      model,
      operator: join(operatorsDir, "notebook"),
      storage: { data: { size: "10X" } },
    });
    new Application("too-small", { model, operator: join(operatorsDir, "notebook"), storage: { data: { size: 1 } } });
    new Application("bad-count", { model, operator: join(operatorsDir, "notebook"), storage: { data: { count: 3 } } });
    new Application("no-store", { model, operator: join(operatorsDir, "notebook"), storage: { logs: {} } });
  });
  const message = r.errors.map((e) => e.message).join("\n");
  t.regex(message, /storage\.data\.size: must be a size such as "512M" or "10G", or a number of MiB, not "10X"/);
  t.regex(message, /storage\.data\.size: 1M is below the operator's minimum-size 64M/);
  t.regex(message, /storage\.data\.count: must be a whole number from 1 to 2/);
  t.regex(message, /storage\.logs: operator notebook declares no storage "logs" \(it declares: data\)/);
  t.deepEqual(
    r.created.filter((n) => n !== "bad"),
    [],
  );
  await engine.destroy();
});

test.serial(
  "storage given at create is what the units get; a change is an update for units added after it; drift shows on refresh",
  async (t) => {
    t.timeout(420_000);
    const first = await engine.up(program(1, { size: "128M", count: 2 }));
    t.deepEqual(first.errors, []);
    t.deepEqual(first.created.sort(), ["notebook", "vault"]);
    const made = await storageOf();
    t.deepEqual(
      made.map((s) => [s.id, s.unit, s.pool, s.size, s.status]),
      [
        ["data/0", "notebook/0", "local", 128, "attached"],
        ["data/1", "notebook/0", "local", 128, "attached"],
      ],
    );
    t.deepEqual(engine.get("notebook")!.outputs.storageDirectives, { data: { pool: "local", size: 128, count: 2 } });
    const again = await engine.up(program(1, { size: 128, count: 2 }));
    t.deepEqual([again.created, again.updated, again.replaced], [[], [], []], "128 (MiB) and 128M mean the same");

    // A larger size and a second unit: an update, never a replacement; only the new unit's storage is larger.
    const grown = await engine.up(program(2, { size: "256M", count: 2 }));
    t.deepEqual(grown.errors, []);
    t.deepEqual([grown.updated, grown.replaced], [["notebook"], []]);
    const after = await storageOf();
    t.deepEqual(
      after.map((s) => [s.id, s.unit, s.size]),
      [
        ["data/0", "notebook/0", 128],
        ["data/1", "notebook/0", 128],
        ["data/2", "notebook/1", 256],
        ["data/3", "notebook/1", 256],
      ],
    );
    t.is(
      await readFile(join(after[0]!.location, "note"), "utf8"),
      "written by notebook/0\n",
      "the first unit's storage kept its data",
    );
    t.deepEqual((await bed.controller.admin.getApplication("vault", "notebook")).storage, {
      data: { pool: "local", size: 256, count: 2 },
    });

    // Changed outside the program: refresh reports it, and up puts it back.
    await bed.controller.admin.updateApplication("vault", "notebook", { storage: { data: { size: 512, count: 1 } } });
    const refreshed = await engine.refresh();
    const drift = refreshed.drifted.find((d) => d.name === "notebook");
    t.truthy(drift, JSON.stringify(refreshed));
    t.true(drift!.properties.includes("storage"), JSON.stringify(drift));
    t.true(drift!.properties.includes("storageDirectives"), JSON.stringify(drift));
    t.deepEqual(engine.get("notebook")!.outputs.storage, { data: { size: "512M", count: 1 } });
    t.deepEqual(engine.get("notebook")!.inputs.storage, { data: { size: "512M", count: 1 } });
    const back = await engine.up(program(2, { size: "256M", count: 2 }));
    t.deepEqual(back.errors, []);
    t.deepEqual([back.updated, back.replaced], [["notebook"], []]);
    t.deepEqual((await bed.controller.admin.getApplication("vault", "notebook")).storage, {
      data: { pool: "local", size: 256, count: 2 },
    });
    const quiet = await engine.refresh();
    t.falsy(
      quiet.drifted.find((d) => d.name === "notebook"),
      JSON.stringify(quiet),
    );

    // A part the program no longer gives goes back to the operator's default (count: its minimum, 1).
    const dropped = await engine.up(program(2, { size: "256M" }));
    t.deepEqual([dropped.errors, dropped.updated, dropped.replaced], [[], ["notebook"], []]);
    t.deepEqual((await bed.controller.admin.getApplication("vault", "notebook")).storage, {
      data: { pool: "local", size: 256, count: 1 },
    });
    t.is((await storageOf()).length, 4, "the units keep their instances");

    // The controller refuses what the operator does not allow, as at deploy, naming the rule.
    const refused = await bed.controller.admin
      .updateApplication("vault", "notebook", { storage: { data: { count: 5 } } })
      .catch((e: { reason?: string }) => e);
    t.is((refused as { reason?: string }).reason, "storage-out-of-range");
  },
);
