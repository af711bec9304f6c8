/**
 * The machine half of a storage attachment (issue 32's seam for SSH hosts and cloud instances): who
 * does what when (the broker's work and the agent's, read from the document), the agents' reports
 * checked against the document (another machine's, stale or repeated reports change nothing), and
 * the agent's side on a real loop device plugged into a test host: ext4 made once and mounted, the
 * data kept through a release and a second attach, wiped when destroyed; a device that appears late.
 */
import test from "ava";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { MachineStorageWork, MachineVolumeWork, StorageOnMachineReport } from "../api";
import { silentLogger } from "../api";
import { MachineStorage } from "../agent";
import type { StorageDoc } from "../controller";
import {
  EmbeddedStore,
  StateOps,
  keys,
  machineStorageWork,
  pendingMachineWork,
  pendingVolumeWork,
} from "../controller";
import { eventually } from "./harness/eventually";
import { TestLab } from "./harness/hosts";

const run = promisify(execFile);
const root = process.getuid?.() === 0;
const M = "4b0c5e0a-9d1e-4f6a-8b7c-2d3e4f5a6b7c";
const device: MachineVolumeWork = {
  mode: "device",
  device: { byId: ["virtio-vol1"] },
  kind: "filesystem",
  mountPoint: "/srv/data",
};
const fresh = (over: Partial<StorageDoc> = {}): StorageDoc => ({
  id: "data/0",
  name: "data",
  app: "db",
  kind: "filesystem",
  pool: "device",
  size: 64,
  status: "attached",
  unit: "db/0",
  machine: "3",
  life: "alive",
  createdAt: "2026-11-27T00:00:00.000Z",
  ...over,
});

test("the broker's work and the agent's are told apart, step by step", (t) => {
  const steps: [string, StorageDoc, string | undefined, string | undefined][] = [
    ["new", fresh(), "attach", undefined],
    ["the broker did its half", fresh({ machineWork: device, handle: { device: "/dev/vdb" } }), undefined, "attach"],
    [
      "the agent mounted it",
      fresh({ machineWork: device, onMachine: { location: "/srv/data" }, location: "/srv/data" }),
      undefined,
      undefined,
    ],
    [
      "its unit went",
      fresh({ status: "detached", unit: undefined, machineWork: device, onMachine: { location: "/srv/data" } }),
      undefined,
      "release",
    ],
    ["the agent released it", fresh({ status: "detached", unit: undefined, machineWork: device }), "detach", undefined],
    ["kept", fresh({ status: "detached", unit: undefined, machine: undefined }), undefined, undefined],
    [
      "destroyed",
      fresh({ status: "detached", unit: undefined, machine: undefined, life: "dying" }),
      "destroy",
      undefined,
    ],
    ["local: the broker did it all", fresh({ location: "/x", handle: { dir: "/x" } }), undefined, undefined],
    ["local: its unit went", fresh({ status: "detached", unit: undefined, life: "dying" }), "detach", undefined],
  ];
  for (const [what, doc, broker, agent] of steps) {
    t.is(pendingVolumeWork(doc) as string | undefined, broker, `${what}: the broker's`);
    t.is(pendingMachineWork(doc) as string | undefined, agent, `${what}: the agent's`);
  }
  const docs = new Map<string, StorageDoc>([
    ["data/2", fresh({ id: "data/2", machineWork: device, onMachine: { location: "/srv/data" } })],
    [
      "data/1",
      fresh({
        id: "data/1",
        status: "detached",
        unit: undefined,
        life: "dying",
        machineWork: { mode: "directory", path: "/var/lib/x" },
        onMachine: { location: "/var/lib/x" },
      }),
    ],
    ["data/0", fresh({ machineWork: device, machine: "4" })],
    ["data/3", fresh({ id: "data/3", location: "/y" })],
  ]);
  t.deepEqual(machineStorageWork(docs, "3"), [
    { id: "data/1", op: "release", work: { mode: "directory", path: "/var/lib/x" }, destroy: true },
    { id: "data/2", op: "attach", work: device },
  ]);
  t.is(machineStorageWork(docs, "7"), undefined, "a machine with none has no field");
});

test("agents' reports are checked against the document", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-mstorage-"));
  const store = await EmbeddedStore.open({ dir });
  t.teardown(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  const ops = new StateOps(store);
  const read = async (): Promise<StorageDoc> =>
    JSON.parse((await store.get(keys.storage(M, "data/0")))!.value) as StorageDoc;
  await store.put(keys.storage(M, "data/0"), JSON.stringify(fresh()));

  await ops.storage.attached(M, "data/0", "3", { handle: { device: "vdb" }, onMachine: device });
  t.like(await read(), { machineWork: device, handle: { device: "vdb" } });
  t.is((await read()).location, undefined, "no location until the agent reports one");
  t.is(pendingMachineWork(await read()), "attach");

  await ops.storage.machineAttached(M, "4", "data/0", "/srv/data");
  t.is((await read()).onMachine, undefined, "another machine's report changes nothing");
  await ops.storage.machineReleased(M, "3", "data/0");
  t.is(pendingMachineWork(await read()), "attach", "a release of an attached instance changes nothing");
  await ops.storage.machineAttached(M, "3", "data/0", "/srv/data");
  t.like(await read(), { onMachine: { location: "/srv/data" }, location: "/srv/data" });
  const rev = (await store.get(keys.storage(M, "data/0")))!.modRevision;
  await ops.storage.machineAttached(M, "3", "data/0", "/srv/data");
  t.is((await store.get(keys.storage(M, "data/0")))!.modRevision, rev, "the same report again writes nothing");

  // The unit goes: the agent releases, then the broker detaches (and only then).
  const { unit: _, location: __, ...gone } = await read();
  await store.put(keys.storage(M, "data/0"), JSON.stringify({ ...gone, status: "detached" }));
  await ops.storage.detached(M, "data/0", "3", { device: "vdb" });
  t.is((await read()).machine, "3", "the broker cannot detach what the agent has not released");
  await ops.storage.machineAttached(M, "3", "data/0", "/srv/data");
  t.is(pendingMachineWork(await read()), "release", "a late attach report changes nothing");
  await ops.storage.machineReleased(M, "3", "data/0");
  t.is(pendingVolumeWork(await read()), "detach");
  await ops.storage.detached(M, "data/0", "3", { device: "vdb" });
  const kept = await read();
  t.is(kept.machine, undefined);
  t.is(kept.machineWork, undefined);
  t.deepEqual(kept.handle, { device: "vdb" });
});

const hostTest = root ? test.serial : test.skip; // loop devices and test hosts need root

hostTest(
  "a host's plugged disk is made ext4 once, mounted, kept through a release, wiped when destroyed",
  async (t) => {
    t.timeout(120_000);
    const lab = await TestLab.create(2);
    const mnt = await mkdtemp(join(tmpdir(), "steward-mstorage-mnt-"));
    t.teardown(async () => {
      await run("umount", [mnt]).catch(() => undefined);
      await lab.close();
      await rm(mnt, { recursive: true, force: true });
    });
    const [a, b] = lab.hosts as [(typeof lab.hosts)[0], (typeof lab.hosts)[0]];

    // The host sees its disk under its own /dev/disk/by-id; the other host does not.
    const { loop, file } = await a.plugDisk(32, ["virtio-vol1", "wwn-0x1"]);
    t.regex(loop, /^\/dev\/loop[0-9]+$/);
    t.is((await a.exec("readlink /dev/disk/by-id/virtio-vol1")).stdout.trim(), loop);
    t.not((await b.exec("ls /dev/disk/by-id/virtio-vol1")).code, 0, "private to its host");
    t.true((await stat(file)).size === 32 * 1024 * 1024);

    // The agent's side, run here against the host's by-id names (the mounts are this process's).
    const reports: StorageOnMachineReport[] = [];
    const agent = new MachineStorage({
      report: async (r) => void reports.push(r),
      log: silentLogger,
      diskById: join(a.devDiskDir, "by-id"),
    });
    t.teardown(() => agent.close());
    const work: MachineVolumeWork = {
      mode: "device",
      device: { byId: ["nvme-missing", "virtio-vol1"] },
      kind: "filesystem",
      mountPoint: mnt,
    };
    const attach: MachineStorageWork = { id: "data/0", op: "attach", work };
    agent.update([attach]);
    await eventually("attached", () => reports.length === 1);
    t.deepEqual(reports[0], { id: "data/0", op: "attached", location: mnt });
    t.is((await run("findmnt", ["-n", "-o", "SOURCE,FSTYPE", mnt])).stdout.trim(), `${loop} ext4`);
    await writeFile(join(mnt, "marker"), "kept\n");
    agent.update([attach]);
    await new Promise((r) => setTimeout(r, 300));
    t.is(reports.length, 1, "work done is not done again");

    agent.update([{ ...attach, op: "release" }]);
    await eventually("released", () => reports.length === 2);
    t.deepEqual(reports[1], { id: "data/0", op: "released" });
    t.is(
      await run("findmnt", ["-n", mnt]).then(
        () => "mounted",
        () => "not mounted",
      ),
      "not mounted",
    );

    // Attached again (as to a new unit): not formatted again, the data is there.
    agent.update([attach]);
    await eventually("attached again", () => reports.length === 3);
    t.is(await readFile(join(mnt, "marker"), "utf8"), "kept\n");

    // Destroyed: unmounted and wiped.
    agent.update([{ ...attach, op: "release", destroy: true }]);
    await eventually("destroyed", () => reports.length === 4);
    t.is(
      await run("blkid", ["-p", loop]).then(
        () => 0,
        (e: { code: number }) => e.code,
      ),
      2,
      "no filesystem left",
    );

    // A device that appears late (a cloud's volume): tried again until it is there.
    const late: MachineStorageWork = {
      id: "data/1",
      op: "attach",
      work: { mode: "device", device: { byId: ["virtio-late"] }, kind: "block" },
    };
    agent.update([late]);
    await new Promise((r) => setTimeout(r, 500));
    t.is(reports.length, 4, "nothing reported while the device is not there");
    const second = await a.plugDisk(16, ["virtio-late"]);
    await eventually("the late device found", () => reports.length === 5, 15_000);
    t.deepEqual(reports[4], { id: "data/1", op: "attached", location: join(a.devDiskDir, "by-id", "virtio-late") });

    await a.unplugDisk(second.loop);
    t.not((await a.exec("ls /dev/disk/by-id/virtio-late")).code, 0, "unplugged: its name is gone");
    t.false((await run("losetup", ["-a"])).stdout.includes(`${second.loop}:`), "and its loop device");
  },
);

hostTest("a directory instance is made, and deleted only when destroyed", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-mstorage-dir-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const reports: StorageOnMachineReport[] = [];
  const agent = new MachineStorage({ report: async (r) => void reports.push(r), log: silentLogger });
  t.teardown(() => agent.close());
  const path = join(dir, "model", "data-0");
  const attach: MachineStorageWork = { id: "data/0", op: "attach", work: { mode: "directory", path } };
  // Two instances may not share a place.
  agent.update([attach, { id: "data/1", op: "attach", work: { mode: "directory", path: path + "/" } }]);
  await eventually("one attached", () => reports.length >= 1);
  await new Promise((r) => setTimeout(r, 300));
  t.deepEqual(reports, [{ id: "data/0", op: "attached", location: path }], "the second one refused");
  await writeFile(join(path, "note"), "x");
  agent.update([{ ...attach, op: "release" }]);
  await eventually("released", () => reports.length === 2);
  t.is(await readFile(join(path, "note"), "utf8"), "x", "kept");
  agent.update([{ ...attach, op: "release", destroy: true }]);
  await eventually("destroyed", () => reports.length === 3);
  t.is(await stat(path).catch(() => undefined), undefined);
});
