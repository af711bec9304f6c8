/**
 * Storage on hosts Steward does not make (issue 32): SSH hosts and machines added by hand. The
 * controller keeps no way into such a host but its agent, so this broker only decides; the host's
 * agent does the work (agent/machine-storage.ts) and reports where the unit finds it. The ssh and manual kinds share it.
 *
 * - `rootfs`: a directory on the host per instance: the operator's `location` when it declares one,
 *   else `<root>/<model uuid>/<data-0>` with root `/var/lib/steward/storage` (a pool's `location`
 *   attribute changes the root).
 * - `device`: one of the block devices declared for the host (`add-machine … --storage-device`), the
 *   first no other instance holds: ext4 made once and mounted (filesystem), or the device itself (block).
 *
 * Both live on their host for good (`machineBound`): detaching changes nothing there, a kept instance
 * is attached again only on the same host, and its data goes only when it is destroyed (the agent
 * deletes the directory or wipes the device as it releases it).
 */
import { join } from "node:path";
import type { MachineRef } from "./brokers";
import type { VolumeAttachment, VolumeBroker, VolumeDeps, VolumeSpec } from "./volumes";

/** Where directory instances live on a host unless the pool says otherwise. */
export const DEFAULT_STORAGE_ROOT = "/var/lib/steward/storage";

export class HostVolumes implements VolumeBroker {
  constructor(private readonly deps: VolumeDeps) {}

  attach(v: VolumeSpec, m: MachineRef): Promise<VolumeAttachment> {
    // A kept instance is where it was: its host is checked when it is given to a unit (state).
    if (v.pool === "device") return Promise.resolve(this.attachDevice(v, m));
    const path =
      v.handle?.path ?? v.location ?? join(v.attributes.location ?? DEFAULT_STORAGE_ROOT, v.model, dirName(v.id));
    return Promise.resolve({ handle: { machine: m.machine, path }, onMachine: { mode: "directory", path } });
  }

  private attachDevice(v: VolumeSpec, m: MachineRef): VolumeAttachment {
    const device = v.handle?.device ?? this.freeDevice(v, m);
    const mountPoint =
      v.handle?.mountPoint ?? v.location ?? join(v.attributes.location ?? DEFAULT_STORAGE_ROOT, v.model, dirName(v.id));
    return {
      handle: { machine: m.machine, device, ...(v.kind === "filesystem" ? { mountPoint } : {}) },
      onMachine: {
        mode: "device",
        device: { path: device },
        kind: v.kind,
        ...(v.kind === "filesystem" ? { mountPoint } : {}),
      },
    };
  }

  /** The first device declared for the machine that no other instance on it holds. */
  private freeDevice(v: VolumeSpec, m: MachineRef): string {
    const facts = this.deps.machineStorage?.(v.model, m.machine) ?? { devices: [], held: [] };
    const taken = new Map<string, string>();
    for (const h of facts.held) if (h.id !== v.id && h.handle?.device) taken.set(h.handle.device, h.id);
    const free = facts.devices.find((d) => !taken.has(d));
    if (free !== undefined) return free;
    throw new Error(
      facts.devices.length === 0
        ? `machine ${m.machine} has no storage device declared (add-machine ssh:… --storage-device /dev/…)`
        : `machine ${m.machine} has no free storage device: ${facts.devices.map((d) => `${d} holds ${taken.get(d)}`).join(", ")}`,
    );
  }

  /** Nothing moves: the data stays on its host (the agent has unmounted it). */
  detach(v: VolumeSpec): Promise<Record<string, string>> {
    return Promise.resolve(v.handle ?? {});
  }

  /** The agent deleted the directory or wiped the device as it released it; nothing is left here. */
  destroy(): Promise<void> {
    return Promise.resolve();
  }
}

/** `data/0` as one path part. */
const dirName = (id: string): string => id.replace("/", "-");
