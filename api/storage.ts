/**
 * Storage an operator declares (issue 32, Juju's `metadata.yaml` `storage:`): the `storage:` section of
 * operator.yaml, sizes and counts as people write them (`1G`, `"1-3"`), and a deploy's
 * `--storage data=pool,size,count` request. Browser-safe: the CLI and the controller check the same way.
 */
import { StewardError } from "./errors";
import { sectionEntries } from "./operator-sections";

export const STORAGE_TYPES = ["filesystem", "block"] as const;
export type StorageType = (typeof STORAGE_TYPES)[number];

/** One declared store, as operator.yaml's `storage.<name>` says it. Sizes in MiB. */
export interface StorageSpec {
  type: StorageType;
  /** Where a filesystem is mounted for the workload (absent: the agent chooses one per instance). */
  location?: string;
  /** The smallest size an instance may have, in MiB (default 1024 when not declared). */
  minimumSize: number;
  /** How many instances a unit may have: `{min, max}` (`multiple: {range: "1-3"}`; without it exactly 1). */
  count: { min: number; max: number };
  readOnly: boolean;
  shared: boolean;
}

/** What `storage:` says by default for a size (1 GiB, as Juju) and a count. */
export const DEFAULT_STORAGE_MIB = 1024;
/** The most instances of one store a unit may have: bounds the documents one request can make. */
export const MAX_STORAGE_COUNT = 64;
/** The most stores one operator may declare. */
export const MAX_STORAGE_ENTRIES = 32;
/** The largest size anyone may ask for, in MiB (1 PiB): sizes are checked before anything is made. */
export const MAX_STORAGE_MIB = 1024 * 1024 * 1024;

const STORAGE_NAME = /^[a-z][a-z0-9-]{0,62}$/;
const STORAGE_FIELDS = ["type", "location", "minimum-size", "multiple", "read-only", "shared", "description"];

/** `1G`, `512M`, `2T`, `100` (MiB) as MiB; undefined when it is not a size. */
export function parseSizeMiB(text: string | number): number | undefined {
  if (typeof text === "number") return Number.isInteger(text) && text > 0 && text <= MAX_STORAGE_MIB ? text : undefined;
  const m = /^([0-9]{1,13})([MGTP]i?B?)?$/i.exec(text.trim());
  if (!m) return undefined;
  const unit = (m[2] ?? "M")[0]!.toUpperCase();
  const mib = Number(m[1]) * { M: 1, G: 1024, T: 1024 * 1024, P: 1024 * 1024 * 1024 }[unit]!;
  return mib > 0 && mib <= MAX_STORAGE_MIB ? mib : undefined;
}

/** A size in MiB as people read it: `1G`, `1536M`. */
export function formatSizeMiB(mib: number): string {
  if (mib % (1024 * 1024) === 0) return `${mib / (1024 * 1024)}T`;
  if (mib % 1024 === 0) return `${mib / 1024}G`;
  return `${mib}M`;
}

/** `"1-3"`, `"2"`, `"2-"` (2 or more, up to the bound) as a count range; undefined when it is not one. */
export function parseCountRange(text: string | number): { min: number; max: number } | undefined {
  const m = /^([0-9]{1,3})(?:(-)([0-9]{1,3})?)?$/.exec(String(text).trim());
  if (!m) return undefined;
  const min = Number(m[1]);
  const max = m[2] ? (m[3] !== undefined ? Number(m[3]) : MAX_STORAGE_COUNT) : min;
  if (min < 0 || max < 1 || max < min || max > MAX_STORAGE_COUNT) return undefined;
  return { min, max };
}

/** operator.yaml's `storage:` section, checked; `fail` names the field (and line) of the first problem. */
export function parseStorageSection(
  raw: unknown,
  fail: (path: (string | number)[], problem: string) => never,
): Record<string, StorageSpec> {
  const entries = sectionEntries(
    raw,
    "storage",
    {
      shape: "storage name to {type, location, minimum-size, multiple, …}",
      noun: "stores",
      max: MAX_STORAGE_ENTRIES,
    },
    fail,
  );
  const out: Record<string, StorageSpec> = {};
  const locations = new Map<string, string>();
  for (const [name, def] of entries) {
    const at = ["storage", name];
    if (!STORAGE_NAME.test(name))
      fail(at, "is not a valid storage name (lower-case letters, digits, hyphens, starting with a letter)");
    if (typeof def !== "object" || def === null || Array.isArray(def))
      fail(at, 'must be a mapping with at least "type: filesystem" or "type: block"');
    const d = def as Record<string, unknown>;
    for (const k of Object.keys(d))
      if (!STORAGE_FIELDS.includes(k))
        fail([...at, k], `is not a known storage field (known: ${STORAGE_FIELDS.join(", ")})`);
    if (!STORAGE_TYPES.includes(d.type as StorageType))
      fail([...at, "type"], `is required and must be one of ${STORAGE_TYPES.join(", ")}`);
    const type = d.type as StorageType;
    if (d.location !== undefined) {
      if (type === "block")
        fail([...at, "location"], "applies to filesystem storage only (a block device is not mounted)");
      if (
        typeof d.location !== "string" ||
        !/^\/[^\0\n]{0,4094}$/.test(d.location) ||
        d.location.split("/").includes("..")
      )
        fail([...at, "location"], "must be an absolute path without '..', such as /srv/data");
      const other = locations.get(d.location as string);
      if (other !== undefined) fail([...at, "location"], `is also storage "${other}"'s location; each needs its own`);
      locations.set(d.location as string, name);
    }
    let minimumSize = DEFAULT_STORAGE_MIB;
    if (d["minimum-size"] !== undefined) {
      const mib = parseSizeMiB(d["minimum-size"] as string | number);
      if (mib === undefined) fail([...at, "minimum-size"], "must be a size such as 512M, 1G or 2T");
      minimumSize = mib!;
    }
    let count = { min: 1, max: 1 };
    if (d.multiple !== undefined) {
      const m = d.multiple as Record<string, unknown> | null;
      if (typeof m !== "object" || m === null || Array.isArray(m) || Object.keys(m).some((k) => k !== "range"))
        fail([...at, "multiple"], 'must be a mapping with one field, range (e.g. {range: "1-3"})');
      const range = parseCountRange((m as { range?: string | number }).range ?? "");
      if (!range)
        fail(
          [...at, "multiple", "range"],
          `must be a count or a range such as "1-3" or "2-" (at most ${MAX_STORAGE_COUNT})`,
        );
      count = range!;
    }
    for (const f of ["read-only", "shared"])
      if (d[f] !== undefined && typeof d[f] !== "boolean") fail([...at, f], "must be true or false");
    if (d.description !== undefined && typeof d.description !== "string")
      fail([...at, "description"], "must be a string");
    out[name] = {
      type,
      ...(d.location !== undefined ? { location: d.location as string } : {}),
      minimumSize,
      count,
      readOnly: d["read-only"] === true,
      shared: d.shared === true,
    };
  }
  return out;
}

/** The hooks a store `name` brings: `<name>-storage-attached`, `<name>-storage-detaching`. */
export const storageHooks = (name: string): [string, string] => [
  `${name}-storage-attached`,
  `${name}-storage-detaching`,
];

/** A deploy's (or add-unit's) request for one store: `data=local,1G,2` → pool, size and count, each optional. */
export interface StorageRequest {
  pool?: string;
  /** MiB */
  size?: number;
  count?: number;
}

/**
 * `name=pool,size,count`, as Juju's: any part may be left out and they may come in any order; a size
 * has a unit (`512M`, `1G`), a bare number is a count. Refuses with the problem named.
 */
export function parseStorageArg(text: string): { name: string; request: StorageRequest } {
  const eq = text.indexOf("=");
  const bad = (problem: string): StewardError =>
    new StewardError("invalid-request", `--storage ${text}: ${problem}`, { details: { field: "storage" } });
  if (eq <= 0) throw bad("must be name=pool,size,count (e.g. data=local,1G,2)");
  const name = text.slice(0, eq);
  if (!STORAGE_NAME.test(name)) throw bad(`"${name}" is not a storage name`);
  const request: StorageRequest = {};
  for (const part of text
    .slice(eq + 1)
    .split(",")
    .map((p) => p.trim())) {
    if (part === "") continue;
    if (/^[0-9]+$/.test(part)) {
      if (request.count !== undefined) throw bad(`"${part}": the count is given twice`);
      request.count = Number(part);
      if (request.count < 1 || request.count > MAX_STORAGE_COUNT) throw bad(`count must be 1 to ${MAX_STORAGE_COUNT}`);
    } else if (/^[0-9]/.test(part)) {
      if (request.size !== undefined) throw bad(`"${part}": the size is given twice`);
      const mib = parseSizeMiB(part);
      if (mib === undefined || /^[0-9]+$/.test(part)) throw bad(`"${part}" is not a size such as 512M or 1G`);
      request.size = mib;
    } else if (STORAGE_NAME.test(part) && request.pool === undefined) request.pool = part;
    else throw bad(`"${part}" is not a pool name, a size or a count`);
  }
  return { name, request };
}

/**
 * What each new unit of an application gets of one store (`steward deploy --storage`, the Pulumi
 * `Application`'s `storage`): the pool, the size in MiB and the count. A change applies to units added
 * after it; the instances units have keep their pool and size.
 */
export interface StorageDirectiveView {
  pool: string;
  /** MiB */
  size: number;
  count: number;
}

/** One storage instance as the API shows it (`steward storage`, status, the agent's storage-get). */
export interface StorageInfo {
  /** `data/0` */
  id: string;
  /** The store's name in operator.yaml (`data`). */
  name: string;
  app: string;
  /** The unit it is attached to; absent when detached. */
  unit?: string;
  kind: StorageType;
  pool: string;
  /** MiB */
  size: number;
  /**
   * `detaching`: its unit's `-storage-detaching` hook is due (`detach-storage`), or its unit went and
   * its volume broker has not yet moved it off the machine; `detached`: kept, and attachable.
   */
  status: "attached" | "detaching" | "detached";
  /** Where the unit's hooks find it (a directory; a device path for block storage). */
  location: string;
  /** Why attaching, detaching or destroying it has not worked yet (absent when nothing is wrong). */
  message?: string;
}

/** One instance in full (`steward show-storage`). */
export interface StorageDetails extends StorageInfo {
  /** The machine it is on (while attached, and until its broker has moved it off). */
  machine?: string;
  /** The type of its pool (a built-in pool's own name; a made pool's TYPE). */
  poolType: string;
  /** `dying`: to be destroyed once detached (`remove-storage`, `remove-unit --destroy-storage`). */
  life: "alive" | "dying";
  createdAt: string;
}

/** A storage pool of a model (`steward storage-pools`): its substrate's built-in ones and the ones users made. */
export interface StoragePoolInfo {
  name: string;
  /** A built-in pool's own name; a made pool's TYPE (the built-in pool it is made from). */
  type: string;
  kinds: StorageType[];
  attributes: Record<string, string>;
  builtIn: boolean;
}

/** The most attributes one made pool may set. */
export const MAX_POOL_ATTRIBUTES = 32;

/** `key=value` arguments (`create-storage-pool NAME TYPE key=value…`) as attributes; refuses with the problem named. */
export function parsePoolAttributes(args: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const arg of args) {
    const eq = arg.indexOf("=");
    const key = arg.slice(0, eq);
    if (eq <= 0 || !/^[a-z][a-z0-9-]{0,62}$/.test(key))
      throw new StewardError("invalid-request", `"${arg}" is not an attribute: give key=value (e.g. location=/srv/x)`, {
        details: { field: "attributes" },
      });
    if (key in out)
      throw new StewardError("invalid-request", `attribute "${key}" is given twice`, {
        details: { field: "attributes" },
      });
    out[key] = arg.slice(eq + 1);
  }
  return out;
}

/**
 * Where a device shows up on a machine: names under `/dev/disk/by-id` tried in order, then `path`.
 * Not there yet, the agent tries again (a cloud's volume appears some time after its attach call).
 */
export interface DeviceMatch {
  byId?: string[];
  path?: string;
}

/**
 * The machine half of an attachment (issue 32): what a machine's agent does once the substrate's
 * volume broker has done its half, since the controller has no way into a machine but its agent.
 * `directory`: a directory made at `path` (the location). `device`, kind `filesystem`: ext4 made on
 * the device once (only when it holds no filesystem) and mounted at `mountPoint` (the location);
 * kind `block`: the device's path is the location.
 */
export type MachineVolumeWork =
  { mode: "directory"; path: string } | { mode: "device"; device: DeviceMatch; kind: StorageType; mountPoint?: string };

/** Where the unit finds an instance once its machine half is done, when the work alone says it. */
export function locationOfWork(work: MachineVolumeWork): string | undefined {
  if (work.mode === "directory") return work.path;
  return work.kind === "filesystem" ? work.mountPoint : undefined;
}

/** A block device declared for a host's storage (`add-machine ssh:… --storage-device /dev/sdb`). */
export const STORAGE_DEVICE_PATTERN = /^\/dev\/[A-Za-z0-9._:+-][A-Za-z0-9._:+/-]{0,200}$/;
