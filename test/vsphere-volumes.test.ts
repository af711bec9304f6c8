/**
 * The vsphere volume broker (issue 32) against vcsim, VMware's own vSphere simulator (real vim25 SOAP;
 * test/harness/vcsim.ts): a storage instance is a VMDK of its own added to the machine's VM, taken off
 * it again with its file kept, added to another VM as that same file, and deleted only when destroyed;
 * every step repeated changes nothing. The VMs are cloned as the substrate clones a machine's (no guest
 * here: the broker's half only; storage-vsphere.test.ts runs the whole of it with agents).
 */
import test from "ava";
import { randomUUID } from "node:crypto";
import { SUBSTRATE_CONTRACTS } from "../api";
import { vsphere } from "../substrates";
import type { Vcsim } from "./harness/vcsim";
import { startVcsim, vcsimAvailable } from "./harness/vcsim";

const { MoRef, VsphereMachines, VsphereVolumes, byIdNamesOf, disksOf, isFault } = vsphere;
type VspherePlacement = vsphere.VspherePlacement;

const withVcsim = process.getuid?.() === 0 || vcsimAvailable() ? test.serial : test.skip;
let vc: Vcsim;
let p: VspherePlacement;
const machines = new VsphereMachines();
const model = randomUUID();

test.before(async () => {
  if (!vcsimAvailable() && process.getuid?.() !== 0) return;
  vc = await startVcsim();
  p = {
    settings: { url: vc.url, datacenter: vc.datacenter, template: vc.template, caCert: vc.caCert },
    credentials: { user: vc.user, password: vc.password },
    controllerUuid: randomUUID(),
  };
});
test.after.always(async () => {
  machines.close();
  await vc?.stop();
});

const broker = (): InstanceType<typeof VsphereVolumes> => new VsphereVolumes({ placement: () => Promise.resolve(p) });
const vmOf = async (machine: string): Promise<vsphere.MoRef> =>
  new MoRef(
    "VirtualMachine",
    await machines.cloneWith(p, { model, machine, userData: Buffer.from("#cloud-config\n") }),
  );
const disksOn = async (vm: vsphere.MoRef): Promise<vsphere.VmDisk[]> =>
  disksOf((await vc.client.propertiesOf(vm, ["config.hardware.device"]))?.get("config.hardware.device"));
/** Whether vSphere has the file (its disk manager knows its UUID). */
async function fileExists(file: string): Promise<boolean> {
  const sc = (await vc.client.call("RetrieveServiceContent", new MoRef("ServiceInstance", "ServiceInstance")))[0];
  const vdm = vsphere.moRefOf(vsphere.child(sc, "virtualDiskManager"))!;
  const dc = (await vc.client.findByInventoryPath(vc.datacenter))!;
  try {
    await vc.client.call("QueryVirtualDiskUuid", vdm, { name: file, datacenter: dc });
    return true;
  } catch (err) {
    if (isFault(err, "FileNotFound")) return false;
    throw err;
  }
}

withVcsim(
  "a VMDK per instance: added to the VM, taken off with its file kept, added to another VM as the same file, deleted only when destroyed",
  async (t) => {
    t.timeout(120_000);
    const b = broker();
    const vm0 = await vmOf("0");
    const before = await disksOn(vm0);
    const spec = {
      model,
      id: "data/0",
      kind: "filesystem" as const,
      pool: "vsphere",
      poolType: "vsphere",
      size: 64,
      attributes: {},
    };
    const made = await b.attach(spec, { model, machine: "0" });
    const file = made.handle.file!;
    t.regex(
      file,
      new RegExp(`^\\[LocalDS_0\\] steward-${model}/data-0\\.vmdk$`),
      "its own file, in the VM's datastore",
    );
    t.is(made.handle.datastore, "LocalDS_0");
    const on0 = (await disksOn(vm0)).filter((d) => !before.some((x) => x.key === d.key));
    t.deepEqual(
      on0.map((d) => d.file),
      [file],
      "the VM lists one disk more: the instance's",
    );
    t.deepEqual(made.onMachine, {
      mode: "device",
      device: { byId: byIdNamesOf(made.handle.uuid!) },
      kind: "filesystem",
      mountPoint: `/var/lib/steward/storage/${model}/data-0`,
    });
    t.regex(byIdNamesOf(made.handle.uuid!)[0]!, /^wwn-0x[0-9a-f]{32}$/);

    // Again (a crash before the answer was recorded): the same disk, not a second one.
    const again = await b.attach(spec, { model, machine: "0" });
    t.deepEqual(again, made);
    t.is((await disksOn(vm0)).length, before.length + 1);

    // Detached: off the VM, the file kept (twice changes nothing).
    const kept = await b.detach({ ...spec, handle: made.handle }, { model, machine: "0" });
    t.deepEqual(kept, made.handle);
    await b.detach({ ...spec, handle: kept }, { model, machine: "0" });
    t.deepEqual(await disksOn(vm0), before, "off the VM");
    t.true(await fileExists(file), "the VMDK stays on the datastore");

    // Attached to another VM: that same file, the same disk UUID (so the same names in the guest).
    const vm1 = await vmOf("1");
    const moved = await b.attach({ ...spec, handle: kept }, { model, machine: "1" });
    t.deepEqual(moved, made);
    t.true((await disksOn(vm1)).some((d) => d.file === file));

    // The VM destroyed with the disk on it (its machine removed by force): the disk comes off first.
    await machines.stopMachine({ model, machine: "1", placement: p });
    t.false(await vc.client.propertiesOf(vm1, ["name"]).then(Boolean), "the VM is gone");
    t.true(await fileExists(file), "its storage disk is not");
    t.deepEqual(await b.detach({ ...spec, handle: moved.handle }, { model, machine: "1" }), moved.handle);

    // Destroyed: the file goes (twice is fine).
    await b.destroy({ ...spec, handle: moved.handle });
    t.false(await fileExists(file), "the VMDK is deleted");
    await b.destroy({ ...spec, handle: moved.handle });
    b.close();
  },
);

withVcsim(
  "a file made by an attach whose answer was lost is found again, not made twice; block storage has no mount point",
  async (t) => {
    t.timeout(60_000);
    const b = broker();
    const vm = await vmOf("2");
    const spec = {
      model,
      id: "raw/0",
      kind: "block" as const,
      pool: "vsphere",
      poolType: "vsphere",
      size: 32,
      attributes: {},
    };
    const first = await b.attach(spec, { model, machine: "2" });
    t.deepEqual(first.onMachine, { mode: "device", device: { byId: byIdNamesOf(first.handle.uuid!) }, kind: "block" });
    // Taken off behind the broker's back, its handle never recorded: the next attach finds the file.
    await machines.removeDisks(p, vm, (f) => f === first.handle.file);
    const second = await b.attach(spec, { model, machine: "2" });
    t.deepEqual(second, first);
    t.is((await disksOn(vm)).filter((d) => d.file === first.handle.file).length, 1);
    b.close();
  },
);

withVcsim("a datastore that does not exist: refused by vSphere, nothing made", async (t) => {
  t.timeout(60_000);
  const b = broker();
  const vm = await vmOf("3");
  const before = await disksOn(vm);
  const spec = {
    model,
    id: "data/9",
    kind: "filesystem" as const,
    pool: "vsphere",
    poolType: "vsphere",
    size: 64,
    attributes: { datastore: "nope" },
  };
  const err = await t.throwsAsync(b.attach(spec, { model, machine: "3" }));
  t.regex(err?.message ?? "", /InvalidDatastore/);
  t.deepEqual(await disksOn(vm), before, "no disk added");
  const bad = await t.throwsAsync(
    b.attach({ ...spec, attributes: { provisioning: "sparse" } }, { model, machine: "3" }),
  );
  t.regex(bad?.message ?? "", /provisioning must be thin or thick/);
  t.deepEqual(await disksOn(vm), before);
  b.close();
});

test("the vsphere pool's attributes, as create-storage-pool checks them: a datastore's name, thin or thick", (t) => {
  const pool = SUBSTRATE_CONTRACTS.vsphere.storagePools[0];
  t.deepEqual(pool.kinds, ["filesystem", "block"]);
  const check = (name: string, value: string): string | undefined =>
    pool.attributes.find((a) => a.name === name)!.problem(value);
  t.is(check("datastore", "LocalDS_0"), undefined);
  t.is(check("datastore", "vsan Datastore"), undefined);
  t.regex(check("datastore", "[LocalDS_0]") ?? "", /datastore's name/);
  t.regex(check("datastore", "") ?? "", /datastore's name/);
  t.is(check("provisioning", "thick"), undefined);
  t.regex(check("provisioning", "sparse") ?? "", /thin or thick/);
});
