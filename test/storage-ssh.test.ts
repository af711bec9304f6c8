/**
 * Storage on SSH hosts (issue 32) with real sshd test hosts, a real controller and real agents: the
 * notebook operator's storage-attached hook writes a note into a `rootfs` directory on the host; the
 * unit goes and the directory stays; `add-unit --attach-storage` puts the new unit on that host,
 * whose hook reads the note. The same on a `device`: a loop disk plugged into the host and declared
 * with add-machine's storage devices, made ext4 once and mounted by the host's agent, unmounted when
 * its unit goes and mounted again, not formatted again, for the next, and after the host reboots. Destroyed, a directory is
 * deleted and a device wiped. Refusals: a device that is not a /dev path, a device pool on a host with
 * no free device, kept storage given to a unit on another host, removing the host that keeps it.
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ControllerClient, StewardError, StorageInfo, UnitStatusView } from "../api";
import { readOperatorDir } from "../api";
import { cliRunner } from "./harness/cli";
import { eventually } from "./harness/eventually";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";
import type { TestHost } from "./harness/hosts";
import { TestLab, sshMachineStarted } from "./harness/hosts";

const root = process.getuid?.() === 0;
const ssh = root ? test.serial : test.skip; // namespaces, sshd and loop devices need root

let lab: TestLab;
let tc: TestController;
let client: ControllerClient;
const M = "hosts";

test.before(async () => {
  if (!root) return;
  lab = await TestLab.create(2);
  tc = await startTestController({ listenHost: `${lab.subnet}.1` });
  client = tc.admin;
  await client.createModel(M, undefined, "ssh");
});
test.after.always(async () => {
  await tc?.close();
  await lab?.close();
});

const storageOf = async (id: string): Promise<StorageInfo | undefined> =>
  (await client.listStorage(M)).storage.find((s) => s.id === id);
const unitsOf = async (app: string): Promise<Record<string, UnitStatusView>> =>
  (await client.status(M)).applications[app]?.units ?? {};
const noted = (app: string, unit: string, message: string) =>
  eventually(`${unit}: ${message}`, async () => (await unitsOf(app))[unit]?.workload.message === message, 120_000, 250);
const refusal = (p: Promise<unknown>): Promise<StewardError> =>
  p.then(
    () => {
      throw new Error("accepted");
    },
    (err: StewardError) => err,
  );
/** Adds a unit with kept storage once it is off its machine (detached and released, not still being detached). */
const attachKept = (app: string, id: string) =>
  eventually(
    `${id} attachable`,
    () =>
      client.addUnits(M, app, 1, undefined, [id]).then(
        (r) => r.units,
        (err: StewardError) => {
          if (err.reason === "storage-attached") return undefined;
          throw err;
        },
      ),
    60_000,
    250,
  );
const installed = (h: TestHost): Promise<string> => sshMachineStarted(client, M, h);

ssh("storage on SSH hosts: a directory and a declared device outlive their units", async (t) => {
  t.timeout(600_000);
  const [a, b] = lab.hosts as [TestHost, TestHost];
  const bad = await refusal(client.addSshMachine(M, lab.sshTarget(a), { storageDevices: ["sdb"] }));
  t.is(bad.code, "invalid-request");
  t.regex(bad.message, /device path under \/dev/);

  await a.plugDisk(64, ["stw-disk-1"]);
  await client.addSshMachine(M, lab.sshTarget(a), { storageDevices: ["/dev/disk/by-id/stw-disk-1"] });
  await client.addSshMachine(M, lab.sshTarget(b));
  const [ma, mb] = await Promise.all([installed(a), installed(b)]);
  const op = await readOperatorDir(join(operatorsDir, "notebook"));
  await client.uploadOperator(op.bundle);

  // rootfs (the ssh kind's first pool): a directory on the host.
  await client.deploy(M, { name: "notebook", operator: op.hash, units: 1, to: [ma] });
  await noted("notebook", "notebook/0", "data/0 new: written by notebook/0");
  t.like(await storageOf("data/0"), { pool: "rootfs", location: "/srv/notebook/data-0", status: "attached" });
  t.is((await a.exec("cat /srv/notebook/data-0/note")).stdout, "written by notebook/0\n", "on the host");

  await client.removeUnit(M, "notebook/0");
  await eventually("data/0 kept", async () => (await storageOf("data/0"))?.status === "detached", 60_000);
  t.is((await a.exec("cat /srv/notebook/data-0/note")).stdout, "written by notebook/0\n", "still there");
  const held = await refusal(client.removeMachine(M, ma));
  t.is(held.reason, "machine-holds-storage");
  t.regex(held.message, /data\/0/);
  // A machine of another kind in the model (here one added by hand) is out of the ssh pools' reach.
  const [manual] = (await client.addMachines(M, "manual")).machines;
  const mixed = await refusal(client.deploy(M, { name: "nb-manual", operator: op.hash, units: 1, to: [manual!.id] }));
  t.is(mixed.reason, "storage-not-supported");
  t.regex(mixed.message, /a manual machine, and this model's storage comes from the ssh substrate's pools/);
  await client.removeMachine(M, manual!.id);
  const elsewhere = await refusal(client.addUnits(M, "notebook", 1, [mb], ["data/0"]));
  t.is(elsewhere.reason, "storage-on-another-machine");
  t.regex(elsewhere.message, new RegExp(`lives on machine ${ma}\\b`));

  // Without --to, the new unit goes where its storage is, and finds the note.
  const t0 = Date.now();
  t.deepEqual(await attachKept("notebook", "data/0"), ["notebook/1"]);
  await noted("notebook", "notebook/1", "data/0 found: written by notebook/0");
  t.log(`rootfs: add-unit --attach-storage to the hook reading the note: ${Date.now() - t0} ms`);
  t.is((await client.status(M)).applications.notebook!.units["notebook/1"]!.machine, ma);

  // A declared device: ext4 made once and mounted at the operator's location.
  await client.deploy(M, {
    name: "disk",
    operator: op.hash,
    units: 1,
    to: [ma],
    storage: { data: { pool: "device" } },
  });
  await noted("disk", "disk/0", "data/1 new: written by disk/0");
  const mounted = (await a.exec("findmnt -n -o SOURCE,FSTYPE /srv/notebook/data-1")).stdout.trim().split(/\s+/);
  t.regex(mounted[0] ?? "", /^\/dev\/loop[0-9]+$/);
  t.is(mounted[1], "ext4");
  t.is((await b.exec("findmnt /srv/notebook/data-1")).code, 1, "mounted on its host only");
  const none = await refusal(
    client.deploy(M, { name: "disk2", operator: op.hash, units: 1, to: [ma], storage: { data: { pool: "device" } } }),
  );
  t.is(none.reason, "storage-device-unavailable");
  t.regex(none.message, /stw-disk-1/);

  await client.removeUnit(M, "disk/0");
  await eventually("data/1 kept", async () => (await storageOf("data/1"))?.status === "detached", 60_000);
  await eventually(
    "data/1 unmounted when its unit went",
    async () => (await a.exec("findmnt /srv/notebook/data-1")).code === 1,
    60_000,
  );
  await attachKept("disk", "data/1");
  await noted("disk", "disk/1", "data/1 found: written by disk/0");
  t.is((await a.exec("findmnt -n -o FSTYPE /srv/notebook/data-1")).stdout.trim(), "ext4", "not formatted again");

  // A reboot loses the host's mounts: its agent, started again, mounts the device again.
  await a.restart();
  await eventually(
    "data/1 mounted again after the reboot",
    async () => (await a.exec("findmnt -n -o FSTYPE /srv/notebook/data-1")).stdout.trim() === "ext4",
    120_000,
    250,
  );
  t.is((await a.exec("cat /srv/notebook/data-1/note")).stdout, "written by disk/0\n");

  // Destroyed: the directory deleted, the device wiped.
  await client.removeUnit(M, "notebook/1", false, true);
  await client.removeUnit(M, "disk/1", false, true);
  await eventually("both destroyed", async () => (await client.listStorage(M)).storage.length === 0, 60_000);
  t.is((await a.exec("ls /srv/notebook/data-0")).code, 2, "the directory is gone");
  t.is((await a.exec("findmnt /srv/notebook/data-1")).code, 1);
  t.is((await a.exec(`blkid -p ${mounted[0]}`)).code, 2, "the device holds no filesystem");

  // A pool made from device (create-storage-pool) takes a declared device as the built-in one does.
  await client.createStoragePool(M, "disks", "device");
  await client.deploy(M, { name: "made", operator: op.hash, units: 1, to: [ma], storage: { data: { pool: "disks" } } });
  await noted("made", "made/0", "data/2 new: written by made/0");
  t.is(
    (await a.exec("findmnt -n -o SOURCE,FSTYPE /srv/notebook/data-2")).stdout.trim(),
    `${mounted[0]} ext4`,
    "the made pool's instance is the freed device, made ext4 again",
  );
});

test("add-machine refuses a storage device that is not a /dev path, and one for a machine it does not install", async (t) => {
  const home = await mkdtemp(join(tmpdir(), "steward-storage-ssh-cli-"));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const steward = cliRunner(home, process.cwd());
  const hostKey = "SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
  const relative = await steward("add-machine", "ssh:root@10.0.0.9", "--host-key", hostKey, "--storage-device", "sdb");
  t.is(relative.code, 1);
  t.regex(relative.stderr + relative.stdout, /--storage-device "sdb" is not a device path under \/dev/);
  const climbing = await steward(
    "add-machine",
    "ssh:root@10.0.0.9",
    "--host-key",
    hostKey,
    "--storage-device",
    "/dev/../etc/passwd",
  );
  t.is(climbing.code, 1);
  t.regex(climbing.stderr + climbing.stdout, /is not a device path under \/dev/);
  const manual = await steward("add-machine", "manual", "--storage-device", "/dev/sdb");
  t.is(manual.code, 1);
  t.regex(
    manual.stderr + manual.stdout,
    /--storage-device declares a device of an ssh: host; manual machines take none/,
  );
});
