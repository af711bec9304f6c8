/**
 * Machine constraints as Juju writes them (`--constraints "cores=2 mem=4G"`): space-separated
 * `key=value` pairs saying what a provisioned machine must at least have. Sizes (`mem`,
 * `root-disk`) take the suffixes M, G, T (and P) for MiB, GiB, TiB, PiB; a bare number is MiB, as
 * in Juju. Browser-safe: no Node imports.
 *
 * A model's constraints are the default for its machines; an application's are merged over them
 * for the machines made for its units; `add-machine --constraints` merges over the model's. What a
 * machine gets is recorded with it when it is created (as Juju does), so changing a model later
 * changes no machine that exists.
 */
import { invalidRequest } from "./errors";
import type { ModelSubstrate } from "./substrate-kinds";
import { contractNamed, kindsWhere } from "./substrate-kinds";

export const ARCHES = ["amd64", "arm64"] as const;
export type Arch = (typeof ARCHES)[number];

/** Parsed constraints; sizes in MiB. */
export interface Constraints {
  arch?: Arch;
  cores?: number;
  mem?: number;
  rootDisk?: number;
  instanceType?: string;
}

/** The keys Steward understands, in the order {@link formatConstraints} writes them (Juju's). */
const KEYS = {
  "arch": "arch",
  "cores": "cores",
  "mem": "mem",
  "root-disk": "rootDisk",
  "instance-type": "instanceType",
} as const;
type Key = keyof typeof KEYS;
/** Juju's other keys: known, so refused with a reason rather than as typos. */
const JUJU_ONLY = [
  "cpu-power",
  "tags",
  "spaces",
  "virt-type",
  "zones",
  "container",
  "allocate-public-ip",
  "image-id",
  "root-disk-source",
];
const ACCEPTED = `${Object.keys(KEYS).join(", ")}, e.g. "cores=2 mem=4G root-disk=20G"`;
/** Bounds that catch slips (mem=4 meaning 4 MiB is allowed; mem=4000T is not). */
const MAX_CORES = 1024;
const MAX_MIB = 64 * 1024 * 1024; // 64 TiB
const SIZE = /^(\d+(?:\.\d+)?)([MGTP]?)$/;
const UNIT_MIB: Record<string, number> = { "": 1, M: 1, G: 1024, T: 1024 ** 2, P: 1024 ** 3 };
/** An instance type as EC2 names them: family and size, `t3.medium`, `m7g.2xlarge`, `u-6tb1.metal`. */
export const INSTANCE_TYPE_PATTERN = /^[a-z][a-z0-9-]*\.[a-z0-9]+$/;

const bad = (message: string, key?: string) =>
  invalidRequest(`constraints: ${message}`, { field: "constraints", ...(key ? { key } : {}) });

/** Parses Juju's constraint syntax; an empty text is no constraints. Throws invalid-request naming the bad key or value. */
export function parseConstraints(text: string): Constraints {
  const out: Constraints = {};
  const seen = new Set<string>();
  for (const pair of text.trim().split(/\s+/).filter(Boolean)) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw bad(`"${pair}" is not key=value (accepted keys: ${ACCEPTED})`);
    const key = pair.slice(0, eq),
      value = pair.slice(eq + 1);
    if (JUJU_ONLY.includes(key))
      throw bad(`"${key}" is a Juju constraint Steward does not support (accepted keys: ${ACCEPTED})`, key);
    if (!Object.hasOwn(KEYS, key)) throw bad(`unknown key "${key}" (accepted keys: ${ACCEPTED})`, key);
    if (seen.has(key)) throw bad(`"${key}" is given twice`, key);
    seen.add(key);
    if (value === "") throw bad(`"${key}" has no value`, key);
    switch (key as Key) {
      case "arch":
        if (!(ARCHES as readonly string[]).includes(value))
          throw bad(`arch "${value}" is not one of ${ARCHES.join(", ")}`, key);
        out.arch = value as Arch;
        break;
      case "cores": {
        const n = /^\d+$/.test(value) ? Number(value) : NaN;
        if (!(n >= 1 && n <= MAX_CORES))
          throw bad(`cores "${value}" is not a whole number of cores from 1 to ${MAX_CORES}`, key);
        out.cores = n;
        break;
      }
      case "mem":
      case "root-disk": {
        const m = SIZE.exec(value);
        const mib = m ? Math.ceil(Number(m[1]) * UNIT_MIB[m[2]!]!) : NaN;
        if (!(mib >= 1 && mib <= MAX_MIB))
          throw bad(
            `${key} "${value}" is not a size such as 512M, 4G or 1.5T (a bare number is MiB; at most 64T)`,
            key,
          );
        out[KEYS[key as "mem" | "root-disk"]] = mib;
        break;
      }
      case "instance-type":
        if (!INSTANCE_TYPE_PATTERN.test(value) || value.length > 64)
          throw bad(`instance-type "${value}" is not an instance type such as t3.medium`, key);
        out.instanceType = value;
        break;
    }
  }
  if (out.instanceType && (out.cores !== undefined || out.mem !== undefined)) {
    throw bad(
      `instance-type says the cores and memory itself: give instance-type or cores/mem, not both`,
      "instance-type",
    );
  }
  return out;
}

/** A size in MiB as Juju writes it: `4G` when whole GiB, else `1536M`. */
export function formatSize(mib: number): string {
  if (mib % (1024 * 1024) === 0) return `${mib / (1024 * 1024)}T`;
  return mib % 1024 === 0 ? `${mib / 1024}G` : `${mib}M`;
}

/** Constraints back in Juju's syntax (parseConstraints(formatConstraints(c)) equals c). */
export function formatConstraints(c: Constraints): string {
  const parts: string[] = [];
  if (c.arch) parts.push(`arch=${c.arch}`);
  if (c.cores !== undefined) parts.push(`cores=${c.cores}`);
  if (c.mem !== undefined) parts.push(`mem=${formatSize(c.mem)}`);
  if (c.rootDisk !== undefined) parts.push(`root-disk=${formatSize(c.rootDisk)}`);
  if (c.instanceType) parts.push(`instance-type=${c.instanceType}`);
  return parts.join(" ");
}

export const hasConstraints = (c: Constraints | undefined): c is Constraints => !!c && Object.keys(c).length > 0;

/**
 * `over` merged onto `base` (an application's onto its model's), as Juju merges them: a key in
 * `over` wins, and one that conflicts removes `base`'s (an instance type replaces cores and mem,
 * and cores or mem replace an instance type).
 */
export function mergeConstraints(base: Constraints | undefined, over: Constraints | undefined): Constraints {
  const out: Constraints = { ...base };
  if (over?.instanceType) {
    delete out.cores;
    delete out.mem;
  }
  if (over?.cores !== undefined || over?.mem !== undefined) delete out.instanceType;
  return { ...out, ...over };
}

/** Why `substrate` cannot honour `c`, or undefined when it can (the cloud may still find nothing that fits). */
export function constraintsProblem(substrate: ModelSubstrate, c: Constraints): string | undefined {
  if (!hasConstraints(c)) return undefined;
  const check = contractNamed(substrate)?.constraintsProblem;
  if (!check)
    return `constraints: they size the machines a cloud makes (${kindsWhere((k) => !!k.constraintsProblem)} models); ${substrate} machines take none`;
  const problem = check((Object.keys(KEYS) as Key[]).filter((k) => c[KEYS[k]] !== undefined));
  return problem ? `constraints: ${problem}` : undefined;
}
