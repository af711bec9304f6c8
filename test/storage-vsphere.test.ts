/**
 * Storage on vSphere (issue 32) end to end, with a real controller and real agents: VMs cloned on
 * VMware's own simulator (vcsim, real vim25 SOAP), each VM's guest a test host booted by the harness's
 * guest bridge (the FAKE part: vcsim has no guests; test/harness/vcsim.ts), which also plugs the disks
 * vcsim lists on a VM into its host as the VMDK file's loop device, named by the disk's UUID as Linux
 * names a VMware disk. The notebook operator's storage-attached hook writes a note into its storage;
 * the unit and its VM go, the VMDK stays; `add-unit --attach-storage data/0` gives it to a new VM,
 * where the new unit reads the note; `remove-unit --destroy-storage` deletes the file. A kept VMDK
 * deleted behind Steward's back: the attach vSphere refuses shows as the storage's error in
 * `steward storage`, and nothing is added to the VM.
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StorageInfo, UnitStatusView } from "../api";
import { ControllerClient, readOperatorDir, silentLogger } from "../api";
import { saveClientConfig } from "../cli";
import { Controller, initControllerDir } from "../controller";
import { vsphere } from "../substrates";
import type { CliResult } from "./harness/cli";
import { cliRunner } from "./harness/cli";
import { operatorsDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { TestLab } from "./harness/hosts";
import type { Vcsim } from "./harness/vcsim";
import { startVcsim, vcsimAvailable } from "./harness/vcsim";

const { MoRef, disksOf, isFault } = vsphere;
const root = process.getuid?.() === 0;
const run = root ? test.serial : test.skip; // namespaces and loop devices need root
let lab: TestLab;
let vc: Vcsim;
let controller: Controller;
let client: ControllerClient;
let dir: string;
let steward: (...args: string[]) => Promise<CliResult>;

test.before(async () => {
  if (!root) return;
  if (!vcsimAvailable())
    throw new Error("vcsim is not installed: run test/harness/vcsim/build.sh (npm test's pretest does)");
  lab = await TestLab.create(0);
  vc = await startVcsim(lab);
  dir = await mkdtemp(join(tmpdir(), "steward-vsphere-storage-"));
  const init = await initControllerDir({ dataDir: dir, name: "vss", listen: { host: `${lab.subnet}.1`, port: 0 } });
  controller = await Controller.start({ dataDir: dir, log: silentLogger, cloudPollIntervalMs: 500 });
  client = new ControllerClient({
    addresses: controller.apiAddresses,
    caCert: init.caCert,
    user: "admin",
    password: init.adminPassword!,
  });
  const home = join(dir, "home");
  await saveClientConfig(home, {
    current: "vss",
    controllers: {
      vss: { addresses: controller.apiAddresses, caCert: init.caCert, user: "admin", password: init.adminPassword! },
    },
  });
  steward = cliRunner(home, join(__dirname, "..", ".."));
  await client.putCredential("lab", "vsphere", { user: vc.user, password: vc.password });
  await client.createModel("vault", undefined, "vsphere", {
    credential: "lab",
    settings: { url: vc.url, datacenter: vc.datacenter, template: vc.template, caCert: vc.caCert },
  });
});
test.after.always(async () => {
  client?.close();
  await controller?.stop().catch(() => undefined);
  await vc?.stop().catch(() => undefined);
  await lab?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const storage = async (): Promise<StorageInfo[]> => (await client.listStorage("vault")).storage;
const unit = async (name: string): Promise<UnitStatusView | undefined> =>
  (await client.status("vault")).applications.notebook?.units[name];
/** The files of the disks vcsim lists on a VM. */
const filesOn = async (vm: string): Promise<string[]> =>
  disksOf(
    (await vc.client.propertiesOf(new MoRef("VirtualMachine", vm), ["config.hardware.device"]))?.get(
      "config.hardware.device",
    ),
  ).map((d) => d.file);
/** Whether vSphere still has the file (its disk manager knows its UUID). */
async function onDatastore(file: string): Promise<boolean> {
  const content = (await vc.client.call("RetrieveServiceContent", new MoRef("ServiceInstance", "ServiceInstance")))[0];
  const manager = vsphere.moRefOf(vsphere.child(content, "virtualDiskManager"))!;
  const datacenter = (await vc.client.findByInventoryPath(vc.datacenter))!;
  try {
    await vc.client.call("QueryVirtualDiskUuid", manager, { name: file, datacenter });
    return true;
  } catch (err) {
    if (isFault(err, "FileNotFound")) return false;
    throw err;
  }
}
const vmOfMachine = async (machine: string): Promise<string | undefined> =>
  (await client.listMachines("vault")).find((m) => m.id === machine)?.instance?.id;

run(
  "a note written into a VMDK by one unit is read by a unit on a new VM it is attached to; --destroy-storage deletes the file",
  async (t) => {
    t.timeout(400_000);
    const op = await client.uploadOperator((await readOperatorDir(join(operatorsDir, "notebook"))).bundle);
    await client.deploy("vault", { name: "notebook", operator: op.hash, units: 1, storage: { data: { size: 64 } } });
    await eventually(
      "notebook/0 to write its note",
      async () => (await unit("notebook/0"))?.workload.message === "data/0 new: written by notebook/0",
      180_000,
      250,
    );
    const [first] = await storage();
    t.like(first, { id: "data/0", unit: "notebook/0", pool: "vsphere", size: 64, status: "attached" });
    t.is(
      first!.location,
      "/srv/notebook/data-0",
      "mounted where the operator asked (a directory per instance: it may have two)",
    );
    const machine0 = (await unit("notebook/0"))!.machine!;
    const vm0 = (await vmOfMachine(machine0))!;
    const file = (await filesOn(vm0)).find((f) => f.includes("/data-0.vmdk"));
    t.truthy(file, "vcsim lists the instance's VMDK on the unit's VM");
    const guest = vc.bridge!.vms.get(vm0)!.host;
    t.regex(
      (await guest.exec("findmnt -n -o FSTYPE /srv/notebook/data-0")).stdout,
      /ext4/,
      "an ext4 disk mounted in the guest",
    );

    // The unit goes, and its machine (VM) with it; the VMDK is taken off first and stays.
    await client.removeUnit("vault", "notebook/0");
    await eventually(
      "data/0 detached and the VM destroyed",
      async () => {
        const [s] = await storage();
        const machineGone = (await client.status("vault")).machines[machine0] === undefined;
        const vms = await vc.client.propertiesUnder((await vc.client.serviceContent()).rootFolder, "VirtualMachine", [
          "name",
        ]);
        return s?.status === "detached" && machineGone && !vms.some((v) => v.obj.value === vm0) ? true : undefined;
      },
      120_000,
      250,
    );
    t.true(await onDatastore(file!), "the VMDK is kept on the datastore");

    // A new unit on a new VM gets it: the same file, and the note in it.
    const {
      units: [next],
    } = await client.addUnits("vault", "notebook", 1, undefined, ["data/0"]);
    await eventually(
      `${next} to read the note`,
      async () => (await unit(next!))?.workload.message === "data/0 found: written by notebook/0",
      180_000,
      250,
    );
    const machine1 = (await unit(next!))!.machine!;
    t.not(machine1, machine0);
    const vm1 = (await vmOfMachine(machine1))!;
    t.not(vm1, vm0, "another VM");
    t.true((await filesOn(vm1)).includes(file!), "vcsim lists the same VMDK on the new VM");
    // What the new guest mounted is that VMDK's own file (the bridge's loop device over it).
    const guest1 = vc.bridge!.vms.get(vm1)!.host;
    const source = (await guest1.exec("findmnt -n -o SOURCE /srv/notebook/data-0")).stdout.trim();
    t.regex(source, /^\/dev\/loop\d+$/);
    t.regex((await guest1.exec(`losetup -n -O BACK-FILE ${source}`)).stdout, /\/data-0-flat\.vmdk\s*$/);
    t.like((await storage())[0], { id: "data/0", unit: next, status: "attached", location: "/srv/notebook/data-0" });

    // Destroyed with its unit: the file goes from the datastore.
    await client.removeUnit("vault", next!, false, true);
    await eventually("data/0 destroyed", async () => ((await storage()).length === 0 ? true : undefined), 120_000, 250);
    t.false(await onDatastore(file!), "vSphere no longer has the VMDK");
  },
);

run(
  "a kept VMDK deleted by hand: the attach vSphere refuses shows in steward storage, nothing is added to the VM",
  async (t) => {
    t.timeout(400_000);
    const op = await client.uploadOperator((await readOperatorDir(join(operatorsDir, "notebook"))).bundle);
    await client.deploy("vault", { name: "ledger", operator: op.hash, units: 1, storage: { data: { size: 64 } } });
    const ledger = async (u: string): Promise<UnitStatusView | undefined> =>
      (await client.status("vault")).applications.ledger?.units[u];
    await eventually(
      "ledger/0 to write its note",
      async () => (await ledger("ledger/0"))?.workload.message?.includes("new: written by ledger/0"),
      180_000,
      250,
    );
    const mine = async (): Promise<StorageInfo> => (await storage()).find((s) => s.app === "ledger")!;
    const id = (await mine()).id;
    const ledgerMachine = (await ledger("ledger/0"))!.machine;
    const vm0 = (await vmOfMachine(ledgerMachine))!;
    const file = (await filesOn(vm0)).find((f) => f.endsWith(`/${id.replace("/", "-")}.vmdk`))!;
    await client.removeUnit("vault", "ledger/0");
    // Kept once off the VM, which goes then (status says detached at once: being detached, until then).
    await eventually(
      "the storage kept and the VM gone",
      async () =>
        (await mine()).status === "detached" && (await client.status("vault")).machines[ledgerMachine] === undefined,
      120_000,
      250,
    );
    t.true(await onDatastore(file));
    const content = (
      await vc.client.call("RetrieveServiceContent", new MoRef("ServiceInstance", "ServiceInstance"))
    )[0];
    const manager = vsphere.moRefOf(vsphere.child(content, "virtualDiskManager"))!;
    await vc.client.runTask("DeleteVirtualDisk_Task", manager, {
      name: file,
      datacenter: (await vc.client.findByInventoryPath(vc.datacenter))!,
    });

    const {
      units: [next],
    } = await client.addUnits("vault", "ledger", 1, undefined, [id]);
    const failed = await eventually(
      "the attach's error on the storage",
      async () => {
        const s = await mine();
        return s.message ? s : undefined;
      },
      180_000,
      250,
    );
    t.like(failed, { unit: next, status: "attached", location: "" });
    t.regex(failed.message!, /FileNotFound/, "vSphere's refusal, as it said it");
    const listed = await steward("storage", "-m", "vault");
    t.is(listed.code, 0, listed.stderr);
    t.regex(listed.stdout, new RegExp(`${id.replace("/", "\\/")}\\s+${next}\\s.*FileNotFound`));
    const vm = (await vmOfMachine((await ledger(next!))!.machine))!;
    t.false((await filesOn(vm)).includes(file), "no disk added to the new VM");
    t.is((await ledger(next!))?.workload.current === "active", false, "its unit waits for its storage");
    await client.removeUnit("vault", next!, true, true);
  },
);
