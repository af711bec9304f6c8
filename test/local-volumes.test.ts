/**
 * The local kind's volume broker (substrates/local/volumes.ts) on real directories: an instance of a
 * model that came by migration is found where its handle says, kept aside in the same model
 * directory and attached to a migrated machine there or to one of this controller's; a handle that
 * names anything but this instance's own storage directories (an imported export's) is not followed:
 * nothing there is moved or deleted.
 */
import test from "ava";
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MachineRef, VolumeBroker, VolumeSpec } from "../substrates";
import { substrateKind } from "../substrates";

let root: string;
test.before(async () => {
  root = await mkdtemp(join(tmpdir(), "steward-volumes-"));
});
test.after.always(async () => {
  await rm(root, { recursive: true, force: true });
});

const exists = async (path: string): Promise<boolean> => (await stat(path).catch(() => undefined)) !== undefined;

/** This controller's machines directory and another local controller's, each with the model's machines `own`/`theirs`. */
async function layout(own: string[], theirs: string[]) {
  const dir = await mkdtemp(join(root, "c-"));
  const model = randomUUID();
  const mine = join(dir, "mine", "machines");
  const source = join(dir, "source", "agents");
  for (const m of own) await mkdir(join(mine, model, m), { recursive: true });
  for (const m of theirs) {
    await mkdir(join(source, model, m), { recursive: true });
    await writeFile(join(source, model, m, "agent.json"), "{}");
  }
  const volumes: VolumeBroker = substrateKind("local").volumes!({ machinesDir: mine });
  // The local broker does the whole attachment itself: its answer always has the location.
  const broker = {
    attach: async (v: VolumeSpec, m: MachineRef) => {
      const done = await volumes.attach(v, m);
      if (!("location" in done)) throw new Error("the local broker left work to a machine's agent");
      return done;
    },
    detach: (v: VolumeSpec, m: MachineRef) => volumes.detach(v, m),
    destroy: (v: VolumeSpec) => volumes.destroy(v),
  };
  const spec = (handleDir?: string): VolumeSpec => ({
    model,
    id: "data/0",
    kind: "filesystem",
    pool: "local",
    poolType: "local",
    size: 64,
    attributes: {},
    ...(handleDir ? { handle: { dir: handleDir } } : {}),
  });
  return { dir, model, mine, source, broker, spec };
}

test("a migrated model's instance is kept beside its machines and attached to a machine of either controller", async (t) => {
  const { model, mine, source, broker, spec } = await layout(["1"], ["0", "2"]);
  const attached = join(source, model, "0", "storage", "data-0");
  await mkdir(attached, { recursive: true });
  await writeFile(join(attached, "note"), "kept\n");

  const kept = await broker.detach(spec(attached), { model, machine: "0" });
  t.deepEqual(kept, { dir: join(source, model, "kept-storage", "data-0") });
  t.false(await exists(attached));
  t.is(await readFile(join(kept.dir!, "note"), "utf8"), "kept\n");

  // A migrated machine (its directory under the source's, not this controller's) takes it there.
  const onTheirs = await broker.attach(spec(kept.dir), { model, machine: "2" });
  t.is(onTheirs.location, join(source, model, "2", "storage", "data-0"));
  t.is(await readFile(join(onTheirs.location, "note"), "utf8"), "kept\n");

  // Kept again, then one of this controller's machines takes it into its own directory.
  const again = await broker.detach(spec(onTheirs.handle.dir), { model, machine: "2" });
  const onMine = await broker.attach(spec(again.dir), { model, machine: "1" });
  t.true(onMine.location.endsWith(join(model, "1", "storage", "data-0")), onMine.location);
  t.true(onMine.location.includes("/mine/"), onMine.location);
  t.is(await readFile(join(onMine.location, "note"), "utf8"), "kept\n");
  t.false(await exists(again.dir!));

  await broker.detach(spec(onMine.handle.dir), { model, machine: "1" });
  await broker.destroy(spec(join(mine, model, "kept-storage", "data-0")));
  t.false(await exists(join(mine, model, "kept-storage", "data-0")));
});

test("a handle naming another path is not followed: nothing there is moved or deleted", async (t) => {
  const { dir, model, broker, spec } = await layout(["0"], []);
  const victims = [
    join(dir, "victim"),
    join(dir, "data-0"),
    join(dir, "elsewhere", "kept-storage", "data-0"),
    join(dir, randomUUID(), "kept-storage", "data-0"),
    join(dir, model, "kept-storage", "data-1"),
    join(dir, model, "0", "notstorage", "data-0"),
  ];
  for (const v of victims) {
    await mkdir(v, { recursive: true });
    await writeFile(join(v, "precious"), "x");
  }
  for (const v of [...victims, `${dir}/${model}/kept-storage/../../victim`]) {
    await broker.destroy(spec(v));
    const { location } = await broker.attach(spec(v), { model, machine: "0" });
    t.false(await exists(join(location, "precious")), `${v}: not moved into the machine`);
    await broker.detach(spec(location), { model, machine: "0" });
    await broker.destroy(spec(location));
  }
  for (const v of victims) t.true(await exists(join(v, "precious")), `${v}: left alone`);
});
