/**
 * The disks of vSphere VMs as Steward reads and names them (issue 32): datastore paths, the file a
 * storage instance's VMDK has, the disks a VM's configuration lists and a free SCSI slot for one more,
 * and the names a Linux guest gives a disk. Shared by the volume broker (volumes.ts) and the machines
 * (machines.ts: a VM's storage disks come off before it is destroyed).
 */
import type { XmlNode } from "./soap";
import { textAt } from "./soap";

/** A vSphere datastore path, `[datastore] folder/file.vmdk`. */
export const datastorePath = (datastore: string, path: string): string => `[${datastore}] ${path}`;
/** `[ds] a/b.vmdk` → `{datastore: "ds", path: "a/b.vmdk"}`. */
export function parseDatastorePath(p: string): { datastore: string; path: string } | undefined {
  const m = /^\[([^\]]+)\]\s*(.*)$/.exec(p);
  return m ? { datastore: m[1]!, path: m[2]! } : undefined;
}

/** The instance's file in its datastore: one per model, one per instance (`data/0` → `data-0.vmdk`). */
export const diskFileOf = (datastore: string, model: string, id: string): string =>
  datastorePath(datastore, `steward-${model}/${id.replace("/", "-")}.vmdk`);

/**
 * The names a Linux guest gives a VMware virtual disk under /dev/disk/by-id, from the disk's UUID (the
 * API's `backing.uuid`, or VirtualDiskManager.QueryVirtualDiskUuid: `6000C29a-…` or `60 00 C2 9a …`).
 * With `disk.EnableUUID = TRUE` in the VM's configuration (set on every VM Steward clones), the virtual
 * SCSI disk answers INQUIRY's device identification page (VPD 0x83) with an NAA designator that is the
 * disk UUID's 32 hex digits; udev's 60-persistent-storage.rules names it `wwn-0x<naa>` and
 * `scsi-3<naa>` (scsi_id's 3 = an NAA id). The Kubernetes vSphere cloud provider and the vSphere CSI
 * driver find attached disks by the same `wwn-0x` name.
 */
export function byIdNamesOf(diskUuid: string): string[] {
  const hex = diskUuid.replace(/[^0-9a-f]/gi, "").toLowerCase();
  if (hex.length !== 32) throw new Error(`vSphere disk UUID ${JSON.stringify(diskUuid)} is not 16 bytes`);
  return [`wwn-0x${hex}`, `scsi-3${hex}`];
}

/** Whether a disk file is a storage instance's (`[ds] steward-<model uuid>/…vmdk`), not a VM's own. */
export const isStorageDisk = (file: string): boolean =>
  /^\[[^\]]+\] ?steward-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/[^/]+\.vmdk$/.test(file);

/** One disk on a VM, as its config lists it. */
export interface VmDisk {
  key: number;
  file: string;
  controllerKey: number;
  unitNumber: number;
  uuid?: string;
}

const SCSI_CONTROLLER = /(SCSIController|LsiLogicController|LsiLogicSASController|BusLogicController)$/;
/** A SCSI controller's own unit number: never a disk's. */
const SCSI_CONTROLLER_UNIT = 7;
const SCSI_UNITS = 16;

/** The file-backed disks of a VM's `config.hardware.device`. */
export function disksOf(devices: XmlNode | undefined): VmDisk[] {
  const out: VmDisk[] = [];
  for (const d of devices?.children ?? []) {
    if (d.xsiType !== "VirtualDisk") continue;
    const file = textAt(d, "backing/fileName");
    if (!file) continue;
    const uuid = textAt(d, "backing/uuid");
    out.push({
      key: Number(textAt(d, "key")),
      file,
      controllerKey: Number(textAt(d, "controllerKey")),
      unitNumber: Number(textAt(d, "unitNumber")),
      ...(uuid ? { uuid } : {}),
    });
  }
  return out;
}

/** The first free unit on the VM's SCSI controllers (a controller's own unit 7 never). */
export function freeScsiSlot(devices: XmlNode | undefined): { controllerKey: number; unitNumber: number } | undefined {
  const all = devices?.children ?? [];
  for (const c of all) {
    if (!SCSI_CONTROLLER.test(c.xsiType ?? "")) continue;
    const key = Number(textAt(c, "key"));
    const used = new Set(
      all.filter((d) => Number(textAt(d, "controllerKey")) === key).map((d) => Number(textAt(d, "unitNumber"))),
    );
    for (let unit = 0; unit < SCSI_UNITS; unit++)
      if (unit !== SCSI_CONTROLLER_UNIT && !used.has(unit)) return { controllerKey: key, unitNumber: unit };
  }
  return undefined;
}
