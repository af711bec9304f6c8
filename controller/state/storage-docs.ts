/**
 * Storage instances as stored (issue 32): one document per instance (`data/0`), kept apart from its
 * unit because it outlives it. What an instance is for the people and agents that look at it
 * (attached to a unit or detached and kept) and what the substrate's volume broker still has to do
 * (make it, move it to a unit's machine, move it aside, destroy it) are both read from it.
 */
import type { StorageInfo, StorageType } from "../../api";

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
  /** Where the unit's hooks find it, once the broker has attached it (absent: being attached). */
  location?: string;
  /** What the substrate's volume broker knows it by (local: its directory), once made. */
  handle?: Record<string, string>;
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

/** What the volume broker still has to do for `d`, if anything. */
export function pendingVolumeWork(d: StorageDoc): "attach" | "detach" | "destroy" | undefined {
  if (d.life === "dying" && d.status === "detached") return "destroy";
  if (d.status === "attached" && d.location === undefined) return "attach";
  if (d.status === "detached" && d.machine !== undefined) return "detach";
  return undefined;
}
