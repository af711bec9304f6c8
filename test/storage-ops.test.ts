/**
 * Operating storage (issue 32) on the local substrate with a real controller and real agents: a pool
 * made with a `location` puts its instances there (the broker got its attributes); `storage-add`
 * from a hook adds an instance within the operator's range (and a request beyond it fails the hook);
 * `detach-storage` on a live unit runs its detaching hook and keeps the data; `attach-storage` gives
 * it to another live unit, whose attached hook reads the note; `remove-storage` destroys it; every
 * refusal names its rule and makes nothing.
 */
import test from "ava";
import { chmod, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { StewardError, StorageInfo } from "../api";
import { saveClientConfig } from "../cli";
import { cliRunner } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";

let tc: TestController;
let op: string;
test.before(async () => {
  tc = await startTestController();
  op = await tc.upload(await scribe(join(tc.dir, "scribe")));
});
test.after.always(async () => {
  await tc?.close();
});

/** An operator whose storage hooks leave a note and a log in the storage, and whose config-changed runs storage-add. */
async function scribe(dir: string): Promise<string> {
  await mkdir(join(dir, "hooks"), { recursive: true });
  await writeFile(
    join(dir, "operator.yaml"),
    [
      "name: scribe",
      'version: "1.0.0"',
      "summary: Leaves notes in its storage.",
      "config:",
      "  want:",
      "    type: int",
      "    default: 1",
      "    description: How many data instances the unit should have (config-changed storage-adds the rest).",
      "storage:",
      "  data:",
      "    type: filesystem",
      "    minimum-size: 16M",
      "    multiple:",
      '      range: "1-3"',
      "",
    ].join("\n"),
  );
  const hooks: Record<string, string> = {
    "install": 'mkdir -p "$STEWARD_UNIT_DATA"',
    "data-storage-attached": [
      "dir=$(storage-get location)",
      'if [ -f "$dir/note" ]; then msg="$STEWARD_STORAGE_ID found: $(cat "$dir/note")"',
      'else echo "written by $STEWARD_UNIT_NAME" > "$dir/note"; msg="$STEWARD_STORAGE_ID new"; fi',
      'echo "attached to $STEWARD_UNIT_NAME" >> "$dir/log"',
      'status-set active "$msg"',
    ].join("\n"),
    "data-storage-detaching": [
      'echo "detaching from $STEWARD_UNIT_NAME" >> "$(storage-get location)/log"',
      'status-set active "$STEWARD_STORAGE_ID detached"',
    ].join("\n"),
    // Idempotent, as config-changed must be: it may run again for other reasons (a new address).
    "config-changed": [
      "want=$(config-get want)",
      "have=$(storage-list data | wc -l)",
      'if [ "$have" -lt "$want" ]; then storage-add "data=$((want - have))"; fi',
    ].join("\n"),
  };
  for (const [name, body] of Object.entries(hooks))
    await writeFile(join(dir, "hooks", name), `#!/bin/sh\nset -eu\n${body}\n`, { mode: 0o755 });
  return dir;
}

const storageOf = async (model: string): Promise<StorageInfo[]> => (await tc.admin.listStorage(model)).storage;
const one = async (model: string, id: string): Promise<StorageInfo | undefined> =>
  (await storageOf(model)).find((s) => s.id === id);
const exists = async (path: string): Promise<boolean> => (await stat(path).catch(() => undefined)) !== undefined;
const refusal = (p: Promise<unknown>): Promise<StewardError> =>
  p.then(
    () => {
      throw new Error("accepted");
    },
    (err: StewardError) => err,
  );
const message = (model: string, unit: string, text: string) =>
  tc.waitForUnits(
    model,
    (us) => us.some((u) => u.name === unit && u.workload.message === text),
    `${unit}: ${text}`,
    60_000,
  );

test("pools users make, storage-add, and detaching, attaching and removing storage on live units", async (t) => {
  const model = "ops";
  const { uuid } = await tc.admin.createModel(model);

  // --- pools ---
  t.deepEqual((await tc.admin.listStoragePools(model)).pools, [
    { name: "local", type: "local", kinds: ["filesystem"], attributes: {}, builtIn: true },
  ]);
  const fastDir = join(tc.dir, "fast");
  await mkdir(fastDir, { mode: 0o755 });
  await chmod(fastDir, 0o755);
  const fast = await tc.admin.createStoragePool(model, "fast", "local", { location: fastDir });
  t.deepEqual(fast, {
    name: "fast",
    type: "local",
    kinds: ["filesystem"],
    attributes: { location: fastDir },
    builtIn: false,
  });
  t.deepEqual(await tc.admin.createStoragePool(model, "fast", "local", { location: fastDir }), fast, "again: the same");
  const other = await refusal(tc.admin.createStoragePool(model, "fast", "local", { location: "/srv/elsewhere" }));
  t.is(other.code, "already-exists");
  t.is((await refusal(tc.admin.createStoragePool(model, "local", "local"))).code, "already-exists");
  const type = await refusal(tc.admin.createStoragePool(model, "big", "ebs"));
  t.is(type.reason, "storage-pool-unknown");
  t.regex(type.message, /not a pool type of the local substrate \(its types: local\)/);
  const attr = await refusal(tc.admin.createStoragePool(model, "big", "local", { iops: "3000" }));
  t.is(attr.reason, "storage-pool-attribute");
  t.regex(attr.message, /takes no attribute "iops" \(it takes: location\)/);
  const path = await refusal(tc.admin.createStoragePool(model, "big", "local", { location: "srv/../x" }));
  t.is(path.reason, "storage-pool-attribute");
  await tc.admin.createStoragePool(model, "spare", "local");
  t.deepEqual(
    (await tc.admin.listStoragePools(model)).pools.map((p) => `${p.name}:${p.type}`),
    ["local:local", "fast:local", "spare:local"],
  );
  await tc.admin.removeStoragePool(model, "spare");
  t.is((await refusal(tc.admin.removeStoragePool(model, "spare"))).code, "not-found");
  t.is((await refusal(tc.admin.removeStoragePool(model, "local"))).code, "invalid-request");

  // Deployed with the made pool: the broker was given its location.
  await tc.admin.deploy(model, { name: "scribe", operator: op, units: 1, storage: { data: { pool: "fast" } } });
  await message(model, "scribe/0", "data/0 new");
  const d0 = join(fastDir, uuid, "data-0");
  t.like(await one(model, "data/0"), { unit: "scribe/0", pool: "fast", status: "attached", location: d0 });
  t.is(await readFile(join(d0, "note"), "utf8"), "written by scribe/0\n");
  t.like(await tc.admin.showStorage(model, "data/0"), {
    id: "data/0",
    unit: "scribe/0",
    machine: "0",
    pool: "fast",
    poolType: "local",
    kind: "filesystem",
    size: 16,
    status: "attached",
    life: "alive",
  });
  const inUse = await refusal(tc.admin.removeStoragePool(model, "fast"));
  t.is(inUse.reason, "storage-pool-in-use");
  t.regex(inUse.message, /in use by storage data\/0 and by the new units of scribe/);

  // --- storage-add from a hook (config-changed), within the range; beyond it the hook fails ---
  await tc.waitForUnits(model, (us) => us[0]?.agent.current === "idle", "scribe/0 started", 60_000);
  let t0 = Date.now();
  await tc.admin.updateApplication(model, "scribe", { config: { want: 2 } });
  await message(model, "scribe/0", "data/1 new");
  t.log(`config change to storage-add's instance attached and its hook run: ${Date.now() - t0} ms`);
  t.like(await one(model, "data/1"), { unit: "scribe/0", pool: "fast", location: join(fastDir, uuid, "data-1") });
  await tc.admin.updateApplication(model, "scribe", { config: { want: 5 } });
  const failed = await eventually(
    "scribe/0's storage-add beyond the range refused",
    async () => {
      const u = await tc.admin.showUnit(model, "scribe/0");
      return u.failure ? u : undefined;
    },
    60_000,
  );
  t.is(failed.failure!.hook, "config-changed");
  t.regex(failed.failure!.output, /storage-add data=3: scribe\/0 has 2, and the operator allows at most 3/);
  t.is((await storageOf(model)).length, 2, "nothing made by the refused hook");
  // Back to one: new units add none (and scribe/0, with two, removes none).
  await tc.admin.updateApplication(model, "scribe", { config: { want: 1 } });
  await tc.admin.resolve(model, "scribe/0", true).catch(() => undefined); // retried by itself meanwhile: nothing to resolve
  await tc.waitForUnits(model, (us) => us[0]?.agent.current === "idle", "scribe/0 idle again", 60_000);

  // --- detach-storage on the live unit: its detaching hook runs, the data stays ---
  const below = await refusal(tc.admin.detachStorage(model, ["data/0", "data/1"]));
  t.is(below.reason, "storage-below-minimum");
  t.regex(below.message, /its operator needs at least 1 \(multiple\.range\)/);
  t.is((await one(model, "data/0"))?.status, "attached", "nothing detached by the refusal");
  t.is((await refusal(tc.admin.detachStorage(model, ["data/9"]))).code, "not-found");
  t0 = Date.now();
  await tc.admin.detachStorage(model, ["data/1"]);
  await eventually("data/1 detached and kept", async () => (await one(model, "data/1"))?.status === "detached", 60_000);
  t.log(`detach-storage to its hook run and the instance kept: ${Date.now() - t0} ms`);
  const d1 = join(fastDir, uuid, "data-1");
  t.is(await readFile(join(d1, "log"), "utf8"), "attached to scribe/0\ndetaching from scribe/0\n", "the hook ran");
  t.is(await readFile(join(d1, "note"), "utf8"), "written by scribe/0\n", "kept with its data");
  t.like(await tc.admin.showStorage(model, "data/1"), { status: "detached", life: "alive", location: "" });
  t.is((await tc.admin.showStorage(model, "data/1")).unit, undefined);
  await tc.admin.detachStorage(model, ["data/1"]); // again: as asked, nothing to do

  // --- attach-storage to another live unit: its attached hook reads the note ---
  await tc.admin.addUnits(model, "scribe", 1);
  await message(model, "scribe/1", "data/2 new");
  t0 = Date.now();
  await tc.admin.attachStorage(model, "scribe/1", ["data/1"]);
  await message(model, "scribe/1", "data/1 found: written by scribe/0");
  t.log(`attach-storage to the unit's hook reading the note: ${Date.now() - t0} ms`);
  t.like(await one(model, "data/1"), { unit: "scribe/1", status: "attached", location: d1 });
  await tc.admin.attachStorage(model, "scribe/1", ["data/1"]); // again: as asked
  const busy = await refusal(tc.admin.attachStorage(model, "scribe/0", ["data/1"]));
  t.is(busy.reason, "storage-attached");
  t.regex(busy.message, /storage data\/1 is attached to scribe\/1: only detached storage can be attached/);
  const machine = (await tc.admin.status(model)).applications.scribe!.units["scribe/0"]!.machine!;
  await tc.admin.deploy(model, { name: "other", operator: op, units: 1, to: [machine] });
  const foreign = await refusal(tc.admin.attachStorage(model, "other/0", ["data/1"]));
  t.is(foreign.reason, "storage-of-another-application");
  t.is((await refusal(tc.admin.attachStorage(model, "scribe/1", ["data/9"]))).code, "not-found");
  t.is((await refusal(tc.admin.attachStorage(model, "scribe/7", ["data/1"]))).code, "not-found");

  // --- remove-storage: attached only with --force, which detaches it first; then it is destroyed ---
  const attached = await refusal(tc.admin.removeStorage(model, ["data/1"]));
  t.is(attached.reason, "storage-attached");
  t.regex(attached.message, /detach it first \(detach-storage\), or remove it with --force/);
  t.is((await refusal(tc.admin.showStorage(model, "data/9"))).code, "not-found");
  t0 = Date.now();
  await tc.admin.removeStorage(model, ["data/1"], true);
  await message(model, "scribe/1", "data/1 detached");
  await eventually("data/1 destroyed", async () => (await one(model, "data/1")) === undefined, 60_000);
  t.log(`remove-storage --force to detached (its hook run) and destroyed: ${Date.now() - t0} ms`);
  t.false(await exists(d1), "its data went with it");
  t.true(await exists(join(d0, "note")), "the others' stayed");
  t.deepEqual(
    (await storageOf(model)).map((s) => `${s.id}@${s.unit ?? "-"}`),
    ["data/0@scribe/0", "data/2@scribe/1", "data/3@other/0"],
  );
});

test("the storage commands through the CLI: pools made, listed and removed; refusals exit 1 naming the rule", async (t) => {
  await tc.admin.createModel("cli");
  const home = join(tc.dir, "cli-home");
  await saveClientConfig(home, {
    current: "t",
    controllers: {
      t: { addresses: tc.addresses, caCert: tc.caCert, user: "admin", password: tc.adminPassword, currentModel: "cli" },
    },
  });
  const steward = cliRunner(home, tc.dir);
  const made = await steward("create-storage-pool", "slow", "local", `location=${tc.dir}`);
  t.is(made.code, 0, made.stderr);
  t.is(made.stdout, `Storage pool slow (type local, location=${tc.dir}).\n`);
  const list = await steward("storage-pools");
  t.regex(list.stdout, /^Name\s+Type\s+Kinds\s+Attributes\n/);
  t.regex(list.stdout, /\nlocal\s+local \(built-in\)\s+filesystem\s*\n/);
  t.regex(list.stdout, new RegExp(`\\nslow\\s+local\\s+filesystem\\s+location=${tc.dir}\\n`));
  const json = JSON.parse((await steward("storage-pools", "--format", "json")).stdout) as { name: string }[];
  t.deepEqual(
    json.map((p) => p.name),
    ["local", "slow"],
  );
  const badArg = await steward("create-storage-pool", "x", "local", "location");
  t.is(badArg.code, 1);
  t.regex(badArg.stderr, /"location" is not an attribute: give key=value/);
  const badType = await steward("create-storage-pool", "x", "ebs");
  t.is(badType.code, 1);
  t.regex(badType.stderr, /"ebs" is not a pool type of the local substrate/);
  const unknown = await steward("show-storage", "data/5");
  t.is(unknown.code, 1);
  t.regex(unknown.stderr, /storage "?data\/5"? (does not exist|not found)/i);
  // An application whose new units would use it holds it too, before it has any unit.
  await tc.admin.deploy("cli", { name: "idle", operator: op, units: 0, storage: { data: { pool: "slow" } } });
  const held = await steward("remove-storage-pool", "slow");
  t.is(held.code, 1);
  t.regex(held.stderr, /pool "slow" is in use by the new units of idle: remove those first/);
  await tc.admin.removeApplication("cli", "idle");
  await eventually("idle gone", async () => !(await tc.admin.status("cli")).applications.idle);
  t.is((await steward("remove-storage-pool", "slow")).code, 0);
  t.deepEqual(
    (await tc.admin.listStoragePools("cli")).pools.map((p) => p.name),
    ["local"],
  );
});
