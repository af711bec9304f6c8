/**
 * The instance types Steward chooses from when a machine's constraints say cores, mem or arch
 * (an explicit `instance-type=` is passed to EC2 as given, listed here or not).
 *
 * A small, curated list of current general-purpose families, burstable and fixed, one of each for
 * each architecture: t3 and m6i (x86_64, Intel), t4g and m7g (arm64, Graviton). The figures (vCPUs
 * and memory in MiB, 1 GiB = 1024 MiB) are AWS's, from the Amazon EC2 documentation's instance type
 * specifications for general purpose instances ("Amazon EC2 Instance Types", General purpose).
 * To add a family, add its sizes here with their figures from that page; nothing else changes.
 */
import type { Arch, Constraints } from "../../api/core";
import { formatConstraints, invalidRequest } from "../../api/core";

export interface InstanceTypeInfo {
  name: string;
  arch: Arch;
  cores: number;
  mem: number;
}

const GIB = 1024;
const family = (
  prefix: string,
  arch: Arch,
  sizes: [size: string, cores: number, memGiB: number][],
): InstanceTypeInfo[] =>
  sizes.map(([size, cores, mem]) => ({ name: `${prefix}.${size}`, arch, cores, mem: mem * GIB }));
const burstable: [string, number, number][] = [
  ["nano", 2, 0.5],
  ["micro", 2, 1],
  ["small", 2, 2],
  ["medium", 2, 4],
  ["large", 2, 8],
  ["xlarge", 4, 16],
  ["2xlarge", 8, 32],
];

/** In order of preference among equals: burstable before fixed performance. */
export const INSTANCE_TYPES: readonly InstanceTypeInfo[] = [
  ...family("t3", "amd64", burstable),
  ...family("m6i", "amd64", [
    ["large", 2, 8],
    ["xlarge", 4, 16],
    ["2xlarge", 8, 32],
    ["4xlarge", 16, 64],
    ["8xlarge", 32, 128],
    ["12xlarge", 48, 192],
    ["16xlarge", 64, 256],
    ["24xlarge", 96, 384],
    ["32xlarge", 128, 512],
  ]),
  ...family("t4g", "arm64", burstable),
  ...family("m7g", "arm64", [
    ["medium", 1, 4],
    ["large", 2, 8],
    ["xlarge", 4, 16],
    ["2xlarge", 8, 32],
    ["4xlarge", 16, 64],
    ["8xlarge", 32, 128],
    ["12xlarge", 48, 192],
    ["16xlarge", 64, 256],
  ]),
];

export const instanceTypeInfo = (name: string): InstanceTypeInfo | undefined =>
  INSTANCE_TYPES.find((t) => t.name === name);

const fits = (t: InstanceTypeInfo, c: Constraints, arch: Arch): boolean =>
  t.arch === arch && t.cores >= (c.cores ?? 0) && t.mem >= (c.mem ?? 0);

/**
 * The instance type for a machine with constraints `c`, in a model whose default is `fallback`:
 * an explicit instance-type; else, with none of cores, mem and arch, the model's default; else the
 * model's default when it is listed and fits, or the smallest listed type that fits (least memory,
 * then fewest vCPUs, then the list's order). The architecture is the constraint's, else the
 * image's when known, else amd64 (Juju's default). Nothing fitting is an invalid-request error that
 * says what the largest types are.
 */
export function instanceTypeFor(
  c: Constraints,
  fallback: string,
  imageArch?: Arch,
): { name: string; info?: InstanceTypeInfo } {
  if (c.instanceType) {
    const info = instanceTypeInfo(c.instanceType);
    if (info && c.arch && info.arch !== c.arch)
      throw invalidRequest(`constraints: instance-type ${info.name} is ${info.arch}, not ${c.arch}`, {
        field: "constraints",
        key: "instance-type",
      });
    return { name: c.instanceType, ...(info ? { info } : {}) };
  }
  const arch: Arch = c.arch ?? imageArch ?? "amd64";
  const own = instanceTypeInfo(fallback);
  if (c.cores === undefined && c.mem === undefined && c.arch === undefined)
    return { name: fallback, ...(own ? { info: own } : {}) };
  if (own && fits(own, c, arch)) return { name: fallback, info: own };
  const best = INSTANCE_TYPES.filter((t) => fits(t, c, arch)).sort((a, b) => a.mem - b.mem || a.cores - b.cores)[0];
  if (best) return { name: best.name, info: best };
  const top = INSTANCE_TYPES.filter((t) => t.arch === arch).sort((x, y) => y.cores - x.cores || y.mem - x.mem)[0]!;
  throw invalidRequest(
    `constraints: no instance type Steward knows fits "${formatConstraints({ arch, ...c })}" (the largest ${arch} one: ${top.name}, ${top.cores} cores, ${top.mem / GIB}G): ask for less, or name a type with instance-type=`,
    { field: "constraints" },
  );
}

/** An instance type's hardware in constraint syntax, for `steward machines`. */
export function hardwareOf(info: InstanceTypeInfo, rootDisk?: number): Constraints {
  return {
    arch: info.arch,
    cores: info.cores,
    mem: info.mem,
    ...(rootDisk !== undefined ? { rootDisk } : {}),
    instanceType: info.name,
  };
}
