/**
 * The volume broker every substrate kind with storage implements (issue 32; Juju's
 * `storage.VolumeSource`/`FilesystemSource`): it makes a storage instance exist, puts it on a
 * machine where the unit's hooks find it, moves it off again (kept: never deleted) and destroys it
 * when asked. The controller's storage provisioner decides what should be where from the store; a
 * broker only does it, idempotently (each call may be repeated after a crash half-way).
 */
import type { StorageType } from "../api/core";
import type { MachineRef } from "./brokers";

/** One storage instance, as a broker is given it. */
export interface VolumeSpec {
  /** The model's uuid. */
  model: string;
  /** `data/0` */
  id: string;
  kind: StorageType;
  pool: string;
  /** MiB */
  size: number;
  /** What the broker said of it last time (absent: it has never made it). */
  handle?: Record<string, string>;
}

export interface VolumeBroker {
  /** Makes the instance (if not made) and attaches it to `machine`: where the unit's hooks find it, and its new handle. */
  attach(v: VolumeSpec, machine: MachineRef): Promise<{ location: string; handle: Record<string, string> }>;
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
