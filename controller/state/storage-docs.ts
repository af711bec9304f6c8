/**
 * Storage instances as stored (issue 32): one document per instance (`data/0`), kept apart from its
 * unit because it outlives it. What an instance is for the people and agents that look at it
 * (attached to a unit or detached and kept) and what the substrate's volume broker still has to do
 * (make it, move it to a unit's machine, move it aside, destroy it) are both read from it.
 */
import type { MachineStorageWork, MachineVolumeWork, StorageInfo, StorageType } from "../../api";

export interface StorageDoc {
  /** `data/0`: the store's name in operator.yaml and a number unique in the model. */
  id: string;
  name: string;
  /** The application whose units it may be attached to. */
  app: string;
  kind: StorageType;
  pool: string;
  /** MiB */
  size: number;
  /** `attached` to `unit`, or `detached` (kept) since its unit went. */
  status: "attached" | "detached";
  /** The unit it is attached to (absent when detached). */
  unit?: string;
  /**
   * The machine it is on: set from attachment until the volume broker has moved it off (a detached
   * instance that still names one is being detached; the machine waits for it before it goes).
   */
  machine?: string;
  /** A machine-bound pool's instance (an SSH host's directory or disk): the machine it lives on, for good. */
  boundTo?: string;
  /** Where the unit's hooks find it, once the broker (or, with `machineWork`, the machine's agent) has attached it (absent: being attached). */
  location?: string;
  /** What the substrate's volume broker knows it by (local: its directory), once made. */
  handle?: Record<string, string>;
  /** The machine half of the attachment, as the broker answered it: the machine's agent does it (absent: the broker did it all). */
  machineWork?: MachineVolumeWork;
  /** The machine's agent has done `machineWork` (mounted, made the directory): where the unit finds it. */
  onMachine?: { location: string };
  /** `dying`: `remove-unit --destroy-storage` (or `remove-storage`): the broker destroys it, then the document goes. */
  life: "alive" | "dying";
  createdAt: string;
  /** Why the volume broker's last try at its work failed (it tries again); gone once the work is done. */
  error?: string;
}

/** The instance as the API shows it. */
export function storageInfoOf(d: StorageDoc): StorageInfo {
  return {
    id: d.id,
    name: d.name,
    app: d.app,
    ...(d.unit ? { unit: d.unit } : {}),
    kind: d.kind,
    pool: d.pool,
    size: d.size,
    status: d.status,
    location: d.location ?? "",
    ...(d.error ? { error: d.error } : {}),
  };
}

/** The ids of the instances attached to `unit`, sorted (the status a unit shows). */
export function storageIdsOf(storage: ReadonlyMap<string, StorageDoc>, unit: string): string[] {
  const ids: string[] = [];
  if (storage.size === 0) return ids;
  for (const s of storage.values()) if (s.unit === unit && s.status === "attached") ids.push(s.id);
  return ids.sort();
}

/**
 * What the volume broker still has to do for `d`, if anything. While the machine's agent has its half
 * to do (see {@link pendingMachineWork}) the broker waits: it detaches only what the agent released.
 */
export function pendingVolumeWork(d: StorageDoc): "attach" | "detach" | "destroy" | undefined {
  if (d.status === "detached") {
    if (d.machine === undefined) return d.life === "dying" ? "destroy" : undefined;
    return d.onMachine ? undefined : "detach";
  }
  return d.location === undefined && d.machineWork === undefined ? "attach" : undefined;
}

/** What the agent of `d`'s machine still has to do for it, if anything: its half of an attach, or undo it. */
export function pendingMachineWork(d: StorageDoc): "attach" | "release" | undefined {
  if (d.machine === undefined || d.machineWork === undefined) return undefined;
  if (d.status === "attached") return d.onMachine ? undefined : "attach";
  return d.onMachine ? "release" : undefined;
}

/**
 * What the agent of `machine` is told to do for storage: the machine half of every instance attached
 * there (done already or not: an agent that starts again after a reboot mounts them again) and of
 * every instance it must release; sorted by id. Undefined when there is none.
 */
export function machineStorageWork(
  storage: ReadonlyMap<string, StorageDoc>,
  machine: string,
): MachineStorageWork[] | undefined {
  if (storage.size === 0) return undefined;
  const out: MachineStorageWork[] = [];
  for (const d of storage.values()) {
    if (d.machine !== machine || d.machineWork === undefined) continue;
    if (d.status === "attached") out.push({ id: d.id, op: "attach", work: d.machineWork });
    else if (d.onMachine)
      out.push({
        id: d.id,
        op: "release",
        work: d.machineWork,
        ...(d.life === "dying" ? { destroy: true as const } : {}),
      });
  }
  return out.length > 0 ? out.sort((a, b) => a.id.localeCompare(b.id)) : undefined;
}
