/**
 * The volume broker every substrate kind with storage implements (issue 32; Juju's
 * `storage.VolumeSource`/`FilesystemSource`): it makes a storage instance exist, puts it on a
 * machine where the unit's hooks find it, moves it off again (kept: never deleted) and destroys it
 * when asked. The controller's storage provisioner decides what should be where from the store; a
 * broker only does it, idempotently (each call may be repeated after a crash half-way).
 *
 * On machines the controller cannot reach but through their agents (SSH hosts, cloud instances), an
 * attachment has two halves: the broker does the substrate's (a cloud volume made and attached to the
 * instance; an SSH host's declared device chosen) and answers what remains as `onMachine` work, which
 * the machine's agent does (finds the device, formats it once, mounts it; or makes the directory)
 * and reports with the location (agent/machine-storage.ts).
 */
import type { MachineVolumeWork, StorageType } from "../api/core";
import type { MachineRef } from "./brokers";

/** One storage instance, as a broker is given it. */
export interface VolumeSpec {
  /** The model's uuid. */
  model: string;
  /** `data/0` */
  id: string;
  kind: StorageType;
  pool: string;
  /** The pool's type: a built-in pool's own name, or the built-in pool a made pool is made from. */
  poolType: string;
  /** A made pool's attributes, checked against what its type takes (`{}` for a built-in pool): kubernetes reads `storage-class`, rootfs `location`. */
  attributes: Record<string, string>;
  /** MiB */
  size: number;
  /** What the broker said of it last time (absent: it has never made it). */
  handle?: Record<string, string>;
  /** The operator's declared `location`, if any, which a mount point should honour. */
  location?: string;
  /** The unit it is attached (or being attached) to: on pods, the unit number is the pod's ordinal. */
  unit?: string;
}

/**
 * What an attach did: the instance is where the unit's hooks find it (`location`), or the substrate's
 * half is done and the machine's agent does `onMachine` (the location comes from its report).
 */
export type VolumeAttachment =
  | { location: string; handle: Record<string, string> }
  | { handle: Record<string, string>; onMachine: MachineVolumeWork };

export interface VolumeBroker {
  /** Makes the instance (if not made) and attaches it to `machine`: where the unit's hooks find it (or what the machine's agent still does), and its new handle. */
  attach(v: VolumeSpec, machine: MachineRef): Promise<VolumeAttachment>;
  /** Moves the instance off `machine`, keeping its data: its handle now. Already off: nothing to do. */
  detach(v: VolumeSpec, machine: MachineRef): Promise<Record<string, string>>;
  /** Destroys the (detached) instance and its data. Already gone: nothing to do. */
  destroy(v: VolumeSpec): Promise<void>;
  /** Closes what it keeps open (a cloud's connections); called when its provisioner stops. */
  close?(): void;
}

/** What a kind's volume broker may need of the controller that runs it. */
export interface VolumeDeps {
  /** Where the controller keeps its local machines' directories (`<dir>/<model>/<machine>/`). */
  machinesDir: string;
  /**
   * The model's placement, as its kind's `placement` makes it from the model's settings and its credential
   * opened (a cloud's broker calls the cloud with it). Rejects when the model is gone or has no credential.
   */
  placement?(model: string): Promise<unknown>;
  /**
   * The storage devices declared for a machine (`add-machine … --storage-device`) and the instances
   * that live on it for good (machine-bound pools) with their handles: which devices are free.
   */
  machineStorage?: (model: string, machine: string) => MachineStorageFacts;
}

/** What a machine has of storage: its declared devices, and the machine-bound instances on it. */
export interface MachineStorageFacts {
  devices: string[];
  held: { id: string; pool: string; handle?: Record<string, string> }[];
}

/**
 * Thrown by a broker when the machine is not ready for the instance yet (its VM or its agent not
 * up): tried again on the next pass, and not shown as the instance's error.
 */
export class VolumeNotReady extends Error {
  constructor(message: string) {
    super(message);
    this.name = "VolumeNotReady";
  }
}
