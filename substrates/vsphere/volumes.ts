/**
 * vSphere storage (issue 32): a VMDK per storage instance, added to the machine's VM as a
 * VirtualDisk on its SCSI controller (ReconfigVM_Task), removed from it again on detach WITHOUT its
 * file (the disk stays on the datastore, kept), added to another VM as that existing file on
 * `--attach-storage`, and deleted (VirtualDiskManager.DeleteVirtualDisk_Task) only when destroyed.
 * The guest's half (find the disk, ext4 once, mount) is the machine agent's (agent/machine-storage.ts):
 * the broker answers the names the guest's Linux gives the disk.
 *
 * Each instance's file is its own, named from the model and the instance
 * (`[datastore] steward-<model uuid>/data-0.vmdk`), so every step can be repeated after a crash half-way:
 * a disk already on the VM is found by its file; a file made by a create whose answer was lost is found
 * (FileAlreadyExists) and added as it is instead of making a second one.
 *
 * Pool `vsphere` (filesystem or block); attributes: `datastore` (default: the datastore of the VM
 * the instance is first attached to, where the model's VMs are) and `provisioning` (`thin`, the default,
 * or `thick`).
 */
import type { MachineVolumeWork } from "../../api/core";
import type { MachineRef } from "../brokers";
import type { VolumeBroker, VolumeSpec } from "../volumes";
import { VolumeNotReady } from "../volumes";
import type { VspherePlacement } from "./machines";
import { VsphereMachines } from "./machines";
import { MoRef, Typed, VsphereFault, child, isFault, moRefOf, textAt } from "./soap";
import { byIdNamesOf, datastorePath, diskFileOf, disksOf, freeScsiSlot, parseDatastorePath } from "./disks";

/** The attributes a `vsphere` pool takes. */
export const VSPHERE_POOL_ATTRIBUTES = ["datastore", "provisioning"] as const;
const PROVISIONING = ["thin", "thick"] as const;

/** What the broker is given beyond the instance: each model's placement (its vCenter, credential, controller). */
export interface VsphereVolumeDeps {
  placement(model: string): Promise<VspherePlacement>;
}

export class VsphereVolumes implements VolumeBroker {
  private readonly machines = new VsphereMachines();

  constructor(private readonly deps: VsphereVolumeDeps) {}

  async attach(
    v: VolumeSpec,
    m: MachineRef,
  ): Promise<{ handle: Record<string, string>; onMachine: MachineVolumeWork }> {
    const p = await this.deps.placement(v.model);
    const vc = this.machines.clientOf(p);
    const dc = await this.machines.datacenterRef(p);
    const vm = await this.vmOf(p, v.model, m.machine);
    const props = await vc.propertiesOf(vm, ["config.hardware.device", "config.files.vmPathName"]);
    if (!props) throw new Error(`machine ${m.machine}'s VM ${vm.value} is gone`);
    const attributes = v.attributes;
    const provisioning = attributes.provisioning ?? "thin";
    if (!(PROVISIONING as readonly string[]).includes(provisioning))
      throw new Error(`vsphere pool attribute provisioning must be thin or thick, not ${JSON.stringify(provisioning)}`);
    const vmDatastore = parseDatastorePath(textAt(props.get("config.files.vmPathName")) ?? "")?.datastore;
    const file =
      v.handle?.file ??
      diskFileOf(attributes.datastore ?? vmDatastore ?? fail(`VM ${vm.value} names no datastore`), v.model, v.id);
    const datastore = parseDatastorePath(file)!.datastore;

    let disk = disksOf(props.get("config.hardware.device")).find((d) => d.file === file);
    if (!disk) {
      const slot = freeScsiSlot(props.get("config.hardware.device"));
      if (!slot) throw new Error(`VM ${vm.value} has no SCSI controller with a free unit for ${v.id}'s disk`);
      const add = async (create: boolean): Promise<void> => {
        await vc.runTask("ReconfigVM_Task", vm, {
          spec: {
            deviceChange: [
              {
                operation: "add",
                ...(create ? { fileOperation: "create" } : {}),
                device: new Typed("VirtualDisk", {
                  key: -100,
                  backing: new Typed("VirtualDiskFlatVer2BackingInfo", {
                    fileName: file,
                    diskMode: "persistent",
                    ...(create ? { thinProvisioned: provisioning === "thin" } : {}),
                  }),
                  controllerKey: slot.controllerKey,
                  unitNumber: slot.unitNumber,
                  ...(create ? { capacityInKB: v.size * 1024 } : {}),
                }),
              },
            ],
          },
        });
      };
      if (v.handle?.file) await add(false);
      else {
        // The instance's folder first (vCenter makes no parent folders for a disk).
        const { fileManager } = await this.managers(p);
        await vc
          .call("MakeDirectory", fileManager, {
            name: datastorePath(datastore, `steward-${v.model}`),
            datacenter: dc,
            createParentDirectories: true,
          })
          .catch((err: unknown) => {
            if (!isFault(err, "FileAlreadyExists")) throw err;
          });
        try {
          await add(true);
        } catch (err) {
          // Made by an attach whose answer was lost: that file is this instance's disk.
          if (!isFault(err, "FileAlreadyExists")) throw err;
          await add(false);
        }
      }
      const after = await vc.propertiesOf(vm, ["config.hardware.device"]);
      disk = disksOf(after?.get("config.hardware.device")).find((d) => d.file === file);
      if (!disk) throw new Error(`vSphere added ${file} to VM ${vm.value}, but the VM does not list it`);
    }
    const uuid = disk.uuid ?? (await this.queryUuid(p, file));
    return {
      handle: { file, datastore, uuid },
      onMachine: {
        mode: "device",
        device: { byId: byIdNamesOf(uuid) },
        kind: v.kind,
        ...(v.kind === "filesystem"
          ? { mountPoint: v.location ?? `/var/lib/steward/storage/${v.model}/${v.id.replace("/", "-")}` }
          : {}),
      },
    };
  }

  async detach(v: VolumeSpec, m: MachineRef): Promise<Record<string, string>> {
    const handle = v.handle ?? {};
    const file = handle.file;
    if (!file) return handle; // never made
    const p = await this.deps.placement(v.model);
    const vm = await this.vmOf(p, v.model, m.machine).catch(() => undefined);
    if (!vm) return handle; // its VM is gone (its disk was taken off before: see machines.ts destroy)
    await this.machines
      .removeDisks(p, vm, (f) => f === file)
      .catch((err: unknown) => {
        if (!isFault(err, "ManagedObjectNotFound")) throw err;
      });
    return handle;
  }

  async destroy(v: VolumeSpec): Promise<void> {
    const file = v.handle?.file;
    if (!file) return; // never made
    const p = await this.deps.placement(v.model);
    const vc = this.machines.clientOf(p);
    const dc = await this.machines.datacenterRef(p);
    const { virtualDiskManager } = await this.managers(p);
    try {
      await vc.runTask("DeleteVirtualDisk_Task", virtualDiskManager, { name: file, datacenter: dc });
    } catch (err) {
      if (isFault(err, "FileNotFound")) return;
      // Some hosts answer CannotDeleteFile for a file that is not there: gone is what was asked.
      const there = await this.queryUuid(p, file).then(
        () => true,
        (e: unknown) => !isFault(e, "FileNotFound", "CannotAccessFile"),
      );
      if (there) throw err;
    }
  }

  close(): void {
    this.machines.close();
  }

  private async vmOf(p: VspherePlacement, model: string, machine: string): Promise<MoRef> {
    const vm = await this.machines.machineVmOf(p, model, machine);
    if (!vm) throw new VolumeNotReady(`machine ${machine} has no VM yet`);
    return new MoRef("VirtualMachine", vm.id);
  }

  private async managers(p: VspherePlacement): Promise<{ fileManager: MoRef; virtualDiskManager: MoRef }> {
    const vc = this.machines.clientOf(p);
    const sc = (await vc.call("RetrieveServiceContent", new MoRef("ServiceInstance", "ServiceInstance")))[0];
    const fileManager = moRefOf(child(sc, "fileManager"));
    const virtualDiskManager = moRefOf(child(sc, "virtualDiskManager"));
    if (!fileManager || !virtualDiskManager)
      throw new Error(`vSphere at ${vc.url} has no file or virtual disk manager: is it a vCenter or ESXi?`);
    return { fileManager, virtualDiskManager };
  }

  /** The disk's UUID as the host has it (for hosts whose VM config does not show `backing.uuid`). */
  private async queryUuid(p: VspherePlacement, file: string): Promise<string> {
    const vc = this.machines.clientOf(p);
    const { virtualDiskManager } = await this.managers(p);
    const answer = textAt(
      (
        await vc.call("QueryVirtualDiskUuid", virtualDiskManager, {
          name: file,
          datacenter: await this.machines.datacenterRef(p),
        })
      )[0],
    );
    if (!answer) throw new VsphereFault("NoUuid", "QueryVirtualDiskUuid", `no UUID for ${file}`);
    return answer;
  }
}

const fail = (why: string): never => {
  throw new Error(why);
};
