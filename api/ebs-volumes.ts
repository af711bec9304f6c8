/**
 * EBS volumes as AWS documents them ("Amazon EBS volume types"; CreateVolume in the EC2 API
 * Reference): the sizes and IOPS each volume type takes, and what the aws kind's `ebs` storage pool
 * says of a volume through its attributes. Browser-safe, in the contract's part: a deploy asking for
 * what EC2 would refuse is refused before anything is made, with the same rule the aws kind's volume
 * broker (substrates/aws/volumes.ts) follows when it turns the attributes into CreateVolume's parameters.
 */

/** A volume type's sizes (GiB) and, where it has them, provisioned IOPS (range, most per GiB, default). */
interface EbsVolumeType {
  sizeGiB: readonly [number, number];
  iops?: { range: readonly [number, number]; perGiB: number; default?: number };
  /** Throughput can be provisioned (MiB/s). */
  throughput?: readonly [number, number];
}

export const EBS_VOLUME_TYPES: Readonly<Record<string, EbsVolumeType>> = {
  gp3: { sizeGiB: [1, 16384], iops: { range: [3000, 16000], perGiB: 500, default: 3000 }, throughput: [125, 1000] },
  gp2: { sizeGiB: [1, 16384] },
  io1: { sizeGiB: [4, 16384], iops: { range: [100, 64000], perGiB: 50 } },
  io2: { sizeGiB: [4, 65536], iops: { range: [100, 256000], perGiB: 1000 } },
  st1: { sizeGiB: [125, 16384] },
  sc1: { sizeGiB: [125, 16384] },
  standard: { sizeGiB: [1, 1024] },
};

/** The volume type of an `ebs` pool that says none. */
export const EBS_DEFAULT_VOLUME_TYPE = "gp3";

/** "a gp3", "an io2": the article a volume type's name takes. */
const a = (volumeType: string): string => `${/^[aeio]/.test(volumeType) ? "an" : "a"} ${volumeType}`;
const whole = (v: string): number | undefined => (/^[0-9]{1,9}$/.test(v) ? Number(v) : undefined);

/**
 * The attributes an `ebs` pool takes, with what each says and the check of a value alone (the shape
 * of a pool type's attributes in the contract); what they say together, and of a size, is
 * {@link ebsVolumeOf}'s to check.
 */
export const EBS_POOL_ATTRIBUTES: readonly {
  name: string;
  description: string;
  problem(value: string): string | undefined;
}[] = [
  {
    name: "volume-type",
    description: `the EBS volume type: ${Object.keys(EBS_VOLUME_TYPES).join(", ")} (default ${EBS_DEFAULT_VOLUME_TYPE})`,
    problem: (v) =>
      Object.hasOwn(EBS_VOLUME_TYPES, v)
        ? undefined
        : `is not an EBS volume type (${Object.keys(EBS_VOLUME_TYPES).join(", ")})`,
  },
  {
    name: "iops",
    description: "provisioned IOPS (gp3: 3000-16000; io1 and io2, where it is required: from 100)",
    problem: (v) => (whole(v) !== undefined ? undefined : "is not a whole number of IOPS"),
  },
  {
    name: "throughput",
    description: "provisioned throughput in MiB/s (gp3: 125-1000)",
    problem: (v) => (whole(v) !== undefined ? undefined : "is not a whole number of MiB/s"),
  },
  {
    name: "encrypted",
    description: "true to encrypt the volume (default false)",
    problem: (v) => (v === "true" || v === "false" ? undefined : "is neither true nor false"),
  },
  {
    name: "kms-key-id",
    description: "the KMS key that encrypts it (with encrypted=true; default: AWS's EBS key)",
    problem: (v) => (/^[\x21-\x7e]{1,2048}$/.test(v) ? undefined : "is not a KMS key id, ARN or alias"),
  },
];

/** What CreateVolume is asked for an instance. */
export interface EbsVolumeOptions {
  volumeType: string;
  sizeGiB: number;
  iops?: number;
  throughput?: number;
  encrypted: boolean;
  kmsKeyId?: string;
}

/**
 * The volume an instance of `sizeMiB` gets from a pool with `attributes` (sizes round up to whole
 * GiB), or the rule it breaks, said as the person who asked can fix it.
 */
export function ebsVolumeOf(
  sizeMiB: number,
  attributes: Readonly<Record<string, string>>,
): { volume: EbsVolumeOptions } | { problem: string } {
  const unknown = Object.keys(attributes).filter((k) => !EBS_POOL_ATTRIBUTES.some((a) => a.name === k));
  if (unknown.length > 0)
    return {
      problem: `the ebs pool takes no attribute ${unknown.join(", ")} (it takes ${EBS_POOL_ATTRIBUTES.map((a) => a.name).join(", ")})`,
    };
  for (const attribute of EBS_POOL_ATTRIBUTES) {
    const value = attributes[attribute.name];
    const problem = value === undefined ? undefined : attribute.problem(value);
    if (problem) return { problem: `${attribute.name} "${value}" ${problem}` };
  }
  const volumeType = attributes["volume-type"] ?? EBS_DEFAULT_VOLUME_TYPE;
  // Checked above: a known type.
  const type = EBS_VOLUME_TYPES[volumeType]!;
  const sizeGiB = Math.ceil(sizeMiB / 1024);
  const [min, max] = type.sizeGiB;
  if (sizeGiB < min || sizeGiB > max)
    return {
      problem: `${sizeGiB}G is outside what ${a(volumeType)} EBS volume can be (${min}G to ${max}G)`,
    };
  const volume: EbsVolumeOptions = { volumeType, sizeGiB, encrypted: false };
  if (attributes.iops !== undefined) {
    const iops = whole(attributes.iops)!;
    if (!type.iops) return { problem: `${a(volumeType)} EBS volume takes no iops (gp3, io1 and io2 do)` };
    const [lo, hi] = type.iops.range;
    if (iops < lo || iops > hi) return { problem: `iops=${iops} is outside ${volumeType}'s ${lo} to ${hi}` };
    if (iops > sizeGiB * type.iops.perGiB)
      return {
        problem: `iops=${iops} is more than ${type.iops.perGiB} per GiB of a ${sizeGiB}G ${volumeType} volume (at most ${sizeGiB * type.iops.perGiB})`,
      };
    volume.iops = iops;
  } else if (type.iops && type.iops.default === undefined)
    return { problem: `${a(volumeType)} EBS volume needs iops (from ${type.iops.range[0]} to ${type.iops.range[1]})` };
  if (attributes.throughput !== undefined) {
    const throughput = whole(attributes.throughput)!;
    if (!type.throughput) return { problem: `${a(volumeType)} EBS volume takes no throughput (gp3 does)` };
    const [lo, hi] = type.throughput;
    if (throughput < lo || throughput > hi)
      return { problem: `throughput=${throughput} is outside ${volumeType}'s ${lo} to ${hi} MiB/s` };
    volume.throughput = throughput;
  }
  volume.encrypted = attributes.encrypted === "true";
  if (attributes["kms-key-id"] !== undefined) {
    if (!volume.encrypted) return { problem: "kms-key-id is given, but encrypted is not true" };
    volume.kmsKeyId = attributes["kms-key-id"];
  }
  return { volume };
}
