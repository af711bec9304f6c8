/**
 * EBS volumes for the FAKE EC2 endpoint (fake-ec2.ts), written from AWS's public documentation, not
 * from our code: the EC2 API Reference's CreateVolume, AttachVolume, DetachVolume, DeleteVolume and
 * DescribeVolumes, the Volume and VolumeAttachment data types, "Amazon EBS volume types" (sizes, IOPS
 * and throughput by type), "Device names on Linux instances" and "Error codes for the Amazon EC2 API".
 *
 * - CreateVolume: AvailabilityZone (required; unknown: InvalidZone.NotFound), Size in GiB (required:
 *   snapshots are not modelled, a SnapshotId is InvalidSnapshot.NotFound), VolumeType (default gp2;
 *   sizes gp2/gp3 1–16,384, io1 4–16,384, io2 4–65,536, st1/sc1 125–16,384, standard 1–1,024 GiB),
 *   Iops (gp3 3,000–16,000, default 3,000, at most 500 per GiB; io1 100–64,000, at most 50 per GiB;
 *   io2 100–256,000, at most 1,000 per GiB; required for io1/io2; refused for the other types),
 *   Throughput (gp3 only, 125–1,000 MiB/s), Encrypted, KmsKeyId (only with Encrypted), TagSpecification.N
 *   (ResourceType volume), ClientToken (the same request answers the same volume; another with the same
 *   token is IdempotentParameterMismatch). A volume is `creating`, then `available` a tick later.
 * - AttachVolume (Device, InstanceId, VolumeId): the instance `running` (or `stopped`), else
 *   IncorrectInstanceState; the volume `available`, else VolumeInUse (attached) or IncorrectState;
 *   in the instance's zone, else InvalidVolume.ZoneMismatch; the device name free on the instance
 *   (`/dev/sdf` and `/dev/xvdf` are the same attachment point), else InvalidParameterValue. The volume
 *   is `in-use` with its attachment `attaching`, then `attached` once the instance sees it (the
 *   `onAttach` callback, e.g. a loop device plugged into the instance's test host); a failed attach
 *   leaves the volume `available` again. DeleteOnTermination is false for volumes attached this way.
 * - DetachVolume (VolumeId; InstanceId and Device, if given, must name its attachment, else
 *   InvalidAttachment.NotFound; Force accepted): `detaching`, then the volume `available` once the
 *   instance has let it go (`onDetach`); a volume the instance still uses stays `detaching` (as on
 *   EC2: unmount it first) until a later DetachVolume finds it free. Not attached: IncorrectState.
 * - DeleteVolume: attached: VolumeInUse; `deleting`, then gone (InvalidVolume.NotFound afterwards).
 * - DescribeVolumes: VolumeId.N (malformed: InvalidVolumeID.Malformed; unknown: InvalidVolume.NotFound),
 *   filters volume-id, status, volume-type, size, encrypted, availability-zone, attachment.instance-id,
 *   attachment.device, attachment.status, attachment.delete-on-termination, tag:<key>, tag-key;
 *   MaxResults 5–500 with NextToken.
 * - Volumes an instance is launched with are volumes too (in-use, attached, DeleteOnTermination as
 *   mapped); terminating an instance deletes those marked DeleteOnTermination and detaches the others.
 * Not modelled: snapshots, Multi-Attach, Outposts, fast snapshot restore, ModifyVolume, volume status
 * checks, attachment limits per instance, detaching a running instance's root volume.
 */
import type { FakeInstance } from "./fake-ec2";
import { Ec2Error, bool, esc, filtered, hex17, int, list, paged, structs } from "./fake-ec2-query";

export type FakeVolumeState = "creating" | "available" | "in-use" | "deleting";
export type FakeAttachmentState = "attaching" | "attached" | "detaching";

export interface FakeAttachment {
  instanceId: string;
  device: string;
  state: FakeAttachmentState;
  attachTime: Date;
  deleteOnTermination: boolean;
}

/** An EBS volume as DescribeVolumes answers it. */
export interface FakeEbsVolume {
  id: string;
  zone: string;
  sizeGiB: number;
  volumeType: string;
  iops?: number;
  throughput?: number;
  encrypted: boolean;
  kmsKeyId?: string;
  tags: Record<string, string>;
  state: FakeVolumeState;
  createTime: Date;
  attachment?: FakeAttachment;
  /** Why the last detach has not finished (the instance still uses it): it stays `detaching`. */
  busy?: string;
}

export interface FakeEbsOptions {
  zones: readonly string[];
  /** The instance `id` (throws EC2's error for a malformed or unknown id). */
  instance(id: string): FakeInstance;
  /** How long a state change takes (creating → available, deleting → gone, each side of a callback), in ms. @default 50 */
  transitionMs?: number;
  /** The instance sees the volume (its device appears). A rejection fails the attachment. */
  onAttach?(v: FakeEbsVolume, i: FakeInstance): Promise<void>;
  /**
   * The instance lets the volume go (`terminated`: it no longer runs). A rejection while it runs
   * leaves the volume `detaching`, as EC2 does while the device is still in use.
   */
  onDetach?(v: FakeEbsVolume, i: FakeInstance, o: { force: boolean; terminated: boolean }): Promise<void>;
}

/** Volume sizes EC2 accepts, by type (GiB; CreateVolume's Size and EbsBlockDevice.VolumeSize). */
export const VOLUME_SIZES: Readonly<Record<string, readonly [number, number]>> = {
  gp2: [1, 16384],
  gp3: [1, 16384],
  io1: [4, 16384],
  io2: [4, 65536],
  st1: [125, 16384],
  sc1: [125, 16384],
  standard: [1, 1024],
};
/** Provisioned IOPS by type: range, and the most per GiB of size. */
const IOPS: Readonly<Record<string, { range: readonly [number, number]; perGiB: number; default?: number }>> = {
  gp3: { range: [3000, 16000], perGiB: 500, default: 3000 },
  io1: { range: [100, 64000], perGiB: 50 },
  io2: { range: [100, 256000], perGiB: 1000 },
};
const THROUGHPUT_GP3: readonly [number, number] = [125, 1000];

/** An unknown volume type, as EC2 words it. */
export const badVolumeType = (t: string): Ec2Error =>
  new Ec2Error(
    "InvalidParameterValue",
    `Value (${t}) for parameter volumeType is invalid. Valid values are ${Object.keys(VOLUME_SIZES).join(", ")}.`,
  );

/** DescribeVolumes filters other than tag:<key>, and the values of a volume each one matches. */
const FILTERS = new Map<string, (v: FakeEbsVolume) => string[]>([
  ["volume-id", (v) => [v.id]],
  ["status", (v) => [v.state]],
  ["volume-type", (v) => [v.volumeType]],
  ["size", (v) => [String(v.sizeGiB)]],
  ["encrypted", (v) => [String(v.encrypted)]],
  ["availability-zone", (v) => [v.zone]],
  ["attachment.instance-id", (v) => (v.attachment ? [v.attachment.instanceId] : [])],
  ["attachment.device", (v) => (v.attachment ? [v.attachment.device] : [])],
  ["attachment.status", (v) => (v.attachment ? [v.attachment.state] : [])],
  ["attachment.delete-on-termination", (v) => (v.attachment ? [String(v.attachment.deleteOnTermination)] : [])],
  ["tag-key", (v) => Object.keys(v.tags)],
]);

/** `/dev/sdf`, `sdf`, `/dev/xvdf`, `/dev/sda1`: the attachment point it names (`xvdf`), or undefined if none. */
function attachmentPoint(device: string): string | undefined {
  const m = /^(?:\/dev\/)?(?:sd([a-z])(?:[1-9]|1[0-5])?|xvd([a-z]{1,2}))$/.exec(device);
  return m ? `xvd${m[1] ?? m[2]}` : undefined;
}

export class FakeEbs {
  private readonly volumes = new Map<string, FakeEbsVolume>();
  private readonly byToken = new Map<string, { fingerprint: string; volumeId: string }>();
  private readonly background = new Set<Promise<void>>();

  constructor(private readonly o: FakeEbsOptions) {}

  /** Every volume not yet deleted. */
  all(): FakeEbsVolume[] {
    return [...this.volumes.values()];
  }

  /** Waits for every state change under way. */
  async settle(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background]);
  }

  readonly actions: Record<string, (p: Record<string, string>) => string> = {
    CreateVolume: (p) => this.create(p),
    AttachVolume: (p) => this.attach(p),
    DetachVolume: (p) => this.detach(p),
    DeleteVolume: (p) => this.delete(p),
    DescribeVolumes: (p) => this.describe(p),
  };

  /** The volumes with these ids, or EC2's error for a malformed or unknown one. */
  find(ids: string[]): FakeEbsVolume[] {
    const bad = ids.find((id) => !/^vol-[0-9a-f]{8,17}$/.test(id));
    if (bad) throw new Ec2Error("InvalidVolumeID.Malformed", `Invalid id: "${bad}" (expecting "vol-...")`);
    const missing = ids.filter((id) => !this.volumes.has(id));
    if (missing.length === 1)
      throw new Ec2Error("InvalidVolume.NotFound", `The volume '${missing[0]}' does not exist.`);
    if (missing.length > 1)
      throw new Ec2Error("InvalidVolume.NotFound", `The volumes '${missing.join(", ")}' do not exist.`);
    return ids.map((id) => this.volumes.get(id)!);
  }

  /** The volumes attached to instance `id` (being attached, attached or being detached), in the order attached. */
  attachedTo(id: string): FakeEbsVolume[] {
    return this.all().filter((v) => v.attachment?.instanceId === id);
  }

  /** The volumes an instance is launched with: in use and attached from the start, tagged as asked. */
  launched(
    i: FakeInstance,
    volumes: {
      volumeId: string;
      deviceName: string;
      sizeGiB: number;
      volumeType: string;
      deleteOnTermination: boolean;
    }[],
    tags: Record<string, string>,
  ): void {
    for (const v of volumes)
      this.volumes.set(v.volumeId, {
        id: v.volumeId,
        zone: i.zone,
        sizeGiB: v.sizeGiB,
        volumeType: v.volumeType,
        ...(IOPS[v.volumeType]?.default !== undefined ? { iops: IOPS[v.volumeType]!.default } : {}),
        encrypted: false,
        tags: { ...tags },
        state: "in-use",
        createTime: i.launchTime,
        attachment: {
          instanceId: i.id,
          device: v.deviceName,
          state: "attached",
          attachTime: i.launchTime,
          deleteOnTermination: v.deleteOnTermination,
        },
      });
  }

  /** Instance `i` is terminated: its volumes are let go, and those marked DeleteOnTermination deleted. */
  async terminated(i: FakeInstance): Promise<void> {
    for (const v of this.attachedTo(i.id)) {
      const a = v.attachment!;
      a.state = "detaching";
      await this.o.onDetach?.(v, i, { force: true, terminated: true }).catch(() => undefined);
      delete v.attachment;
      delete v.busy;
      if (a.deleteOnTermination) this.volumes.delete(v.id);
      else v.state = "available";
    }
  }

  /** Sets tags on volumes (CreateTags of `vol-` ids). */
  tag(ids: string[], tags: Record<string, string>[]): void {
    const volumes = this.find(ids);
    for (const t of tags) {
      if (!t.Key) throw new Ec2Error("InvalidParameterValue", "Tag keys must not be empty");
      for (const v of volumes) v.tags[t.Key] = t.Value ?? "";
    }
  }

  private create(p: Record<string, string>): string {
    const zone = p.AvailabilityZone;
    if (!zone) throw new Ec2Error("MissingParameter", "The request must contain the parameter AvailabilityZone");
    if (!this.o.zones.includes(zone)) throw new Ec2Error("InvalidZone.NotFound", `The zone '${zone}' does not exist.`);
    if (p.SnapshotId !== undefined)
      throw new Ec2Error("InvalidSnapshot.NotFound", `The snapshot '${p.SnapshotId}' does not exist.`);
    const size = int(p, "Size");
    if (size === undefined)
      throw new Ec2Error("MissingParameter", "The request must contain the parameter size or snapshotId");
    const volumeType = p.VolumeType ?? "gp2";
    const range = VOLUME_SIZES[volumeType];
    if (!range) throw badVolumeType(volumeType);
    if (size < range[0])
      throw new Ec2Error(
        "InvalidParameterValue",
        `Volume of ${size}GiB is too small for volume type ${volumeType}; minimum is ${range[0]}GiB`,
      );
    if (size > range[1])
      throw new Ec2Error(
        "InvalidParameterValue",
        `Volume of ${size}GiB is too large for volume type ${volumeType}; maximum is ${range[1]}GiB`,
      );
    const iops = this.iops(p, volumeType, size);
    const throughput = int(p, "Throughput");
    if (throughput !== undefined && volumeType !== "gp3")
      throw new Ec2Error(
        "InvalidParameterCombination",
        `The parameter throughput is not supported for ${volumeType} volumes.`,
      );
    if (throughput !== undefined && (throughput < THROUGHPUT_GP3[0] || throughput > THROUGHPUT_GP3[1]))
      throw new Ec2Error(
        "InvalidParameterValue",
        `Throughput of ${throughput} MiB/s is out of range for gp3: it must be from ${THROUGHPUT_GP3[0]} to ${THROUGHPUT_GP3[1]}`,
      );
    const encrypted = bool(p, "Encrypted") ?? false;
    if (p.KmsKeyId !== undefined && !encrypted)
      throw new Ec2Error(
        "InvalidParameterDependency",
        "The parameter KmsKeyId requires the parameter Encrypted to be set.",
      );
    const tags: Record<string, string> = {};
    for (const spec of structs(p, "TagSpecification")) {
      if (spec.ResourceType !== "volume")
        throw new Ec2Error(
          "InvalidParameterValue",
          `'${spec.ResourceType ?? ""}' is not a valid taggable resource type for this operation.`,
        );
      for (const t of structs(spec, "Tag")) if (t.Key) tags[t.Key] = t.Value ?? "";
    }
    const { ClientToken: token, ...rest } = p;
    const fingerprint = JSON.stringify(Object.entries(rest).sort(([a], [b]) => (a < b ? -1 : 1)));
    if (token !== undefined) {
      const seen = this.byToken.get(token);
      if (seen && seen.fingerprint !== fingerprint)
        throw new Ec2Error(
          "IdempotentParameterMismatch",
          "Arguments on this idempotent request are inconsistent with arguments used in previous request(s).",
        );
      const v = seen && this.volumes.get(seen.volumeId);
      if (v) return volumeFields(v);
    }
    const v: FakeEbsVolume = {
      id: `vol-${hex17()}`,
      zone,
      sizeGiB: size,
      volumeType,
      ...(iops !== undefined ? { iops } : {}),
      ...(volumeType === "gp3" ? { throughput: throughput ?? THROUGHPUT_GP3[0] } : {}),
      encrypted,
      ...(encrypted ? { kmsKeyId: p.KmsKeyId ?? "alias/aws/ebs" } : {}),
      tags,
      state: "creating",
      createTime: new Date(),
    };
    this.volumes.set(v.id, v);
    if (token !== undefined) this.byToken.set(token, { fingerprint, volumeId: v.id });
    this.later(async () => {
      if (v.state === "creating") v.state = "available";
    });
    return volumeFields(v);
  }

  /** The IOPS a volume of `volumeType` and `size` gets, checked as EC2 checks them. */
  private iops(p: Record<string, string>, volumeType: string, size: number): number | undefined {
    const given = int(p, "Iops");
    const rule = IOPS[volumeType];
    if (!rule) {
      if (given === undefined) return undefined;
      throw new Ec2Error(
        "InvalidParameterCombination",
        `The parameter iops is not supported for ${volumeType} volumes.`,
      );
    }
    const iops = given ?? rule.default;
    if (iops === undefined)
      throw new Ec2Error("MissingParameter", `The parameter iops must be specified for ${volumeType} volumes.`);
    if (iops < rule.range[0] || iops > rule.range[1])
      throw new Ec2Error(
        "InvalidParameterValue",
        `Volume iops of ${iops} is out of range for ${volumeType}: it must be from ${rule.range[0]} to ${rule.range[1]}`,
      );
    if (given !== undefined && iops / size > rule.perGiB)
      throw new Ec2Error(
        "InvalidParameterValue",
        `Iops to volume size ratio of ${(iops / size).toFixed(1)} is too high; maximum is ${rule.perGiB}.`,
      );
    return iops;
  }

  private attach(p: Record<string, string>): string {
    for (const name of ["Device", "InstanceId", "VolumeId"])
      if (!p[name]) throw new Ec2Error("MissingParameter", `The request must contain the parameter ${name}`);
    const [v] = this.find([p.VolumeId!]);
    const i = this.o.instance(p.InstanceId!);
    if (i.state !== "running") throw new Ec2Error("IncorrectInstanceState", `Instance '${i.id}' is not 'running'.`);
    if (v!.attachment) throw new Ec2Error("VolumeInUse", `${v!.id} is already attached to an instance`);
    if (v!.state !== "available") throw new Ec2Error("IncorrectState", `${v!.id} is not 'available'.`);
    if (v!.zone !== i.zone)
      throw new Ec2Error(
        "InvalidVolume.ZoneMismatch",
        `The volume '${v!.id}' is not in the same availability zone as instance '${i.id}'`,
      );
    const device = p.Device!;
    const point = attachmentPoint(device);
    if (!point)
      throw new Ec2Error(
        "InvalidParameterValue",
        `Invalid value '${device}' for unixDevice. Attachment point ${device} is not valid`,
      );
    if (this.attachedTo(i.id).some((o) => attachmentPoint(o.attachment!.device) === point))
      throw new Ec2Error(
        "InvalidParameterValue",
        `Invalid value '${device}' for unixDevice. Attachment point ${device} is already in use`,
      );
    const a: FakeAttachment = {
      instanceId: i.id,
      device,
      state: "attaching",
      attachTime: new Date(),
      deleteOnTermination: false,
    };
    v!.attachment = a;
    v!.state = "in-use";
    this.later(async () => {
      try {
        await this.o.onAttach?.(v!, i);
        if (v!.attachment === a && a.state === "attaching") a.state = "attached";
      } catch {
        if (v!.attachment !== a) return;
        delete v!.attachment;
        v!.state = "available";
      }
    });
    return attachmentFields(v!.id, a);
  }

  private detach(p: Record<string, string>): string {
    if (!p.VolumeId) throw new Ec2Error("MissingParameter", "The request must contain the parameter VolumeId");
    const [v] = this.find([p.VolumeId]);
    const a = v!.attachment;
    if (!a) throw new Ec2Error("IncorrectState", `Volume '${v!.id}' is in the '${v!.state}' state.`);
    if (
      (p.InstanceId !== undefined && p.InstanceId !== a.instanceId) ||
      (p.Device !== undefined && p.Device !== a.device)
    )
      throw new Ec2Error(
        "InvalidAttachment.NotFound",
        `The volume '${v!.id}' is not attached to ${p.InstanceId ?? a.instanceId} as ${p.Device ?? a.device}`,
      );
    if (a.state === "attaching") throw new Ec2Error("IncorrectState", `Volume '${v!.id}' is still attaching.`);
    const force = bool(p, "Force") ?? false;
    // Detaching already: asked again, the instance is asked again (it may have let go since).
    if (a.state === "detaching" && !v!.busy) return attachmentFields(v!.id, a);
    a.state = "detaching";
    delete v!.busy;
    const i = this.o.instance(a.instanceId);
    this.later(async () => {
      try {
        await this.o.onDetach?.(v!, i, { force, terminated: false });
      } catch (err) {
        if (v!.attachment === a) v!.busy = (err as Error)?.message ?? String(err);
        return;
      }
      if (v!.attachment !== a) return;
      delete v!.attachment;
      v!.state = "available";
    });
    return attachmentFields(v!.id, a);
  }

  private delete(p: Record<string, string>): string {
    if (!p.VolumeId) throw new Ec2Error("MissingParameter", "The request must contain the parameter VolumeId");
    const [v] = this.find([p.VolumeId]);
    if (v!.attachment)
      throw new Ec2Error("VolumeInUse", `Volume ${v!.id} is currently attached to ${v!.attachment.instanceId}`);
    if (v!.state === "creating") throw new Ec2Error("IncorrectState", `The volume '${v!.id}' is 'creating'.`);
    if (v!.state !== "deleting") {
      v!.state = "deleting";
      this.later(async () => {
        this.volumes.delete(v!.id);
      });
    }
    return "<return>true</return>";
  }

  private describe(p: Record<string, string>): string {
    const ids = list(p, "VolumeId");
    const found = filtered(ids.length > 0 ? this.find(ids) : this.all(), p, FILTERS);
    const { page, next } = paged(found, p, { min: 5, max: 500, idsGiven: ids.length > 0, idsParam: "volumeSet" });
    return `<volumeSet>${page.map((v) => `<item>${volumeFields(v)}</item>`).join("")}</volumeSet>${next}`;
  }

  /** Runs `step` after a tick, in the background (what {@link settle} waits for). */
  private later(step: () => Promise<void>): void {
    const ms = this.o.transitionMs ?? 50;
    const done = new Promise<void>((r) => setTimeout(r, ms))
      .then(step)
      .catch(() => undefined)
      .finally(() => this.background.delete(done));
    this.background.add(done);
  }
}

function attachmentFields(volumeId: string, a: FakeAttachment): string {
  return `<volumeId>${volumeId}</volumeId><instanceId>${a.instanceId}</instanceId><device>${esc(a.device)}</device><status>${a.state}</status><attachTime>${a.attachTime.toISOString()}</attachTime><deleteOnTermination>${a.deleteOnTermination}</deleteOnTermination>`;
}

function volumeFields(v: FakeEbsVolume): string {
  const opt = (tag: string, x: string | number | undefined) =>
    x === undefined ? "" : `<${tag}>${esc(String(x))}</${tag}>`;
  return [
    `<volumeId>${v.id}</volumeId>`,
    `<size>${v.sizeGiB}</size>`,
    "<snapshotId/>",
    `<availabilityZone>${esc(v.zone)}</availabilityZone>`,
    `<status>${v.state}</status>`,
    `<createTime>${v.createTime.toISOString()}</createTime>`,
    `<attachmentSet>${v.attachment ? `<item>${attachmentFields(v.id, v.attachment)}</item>` : ""}</attachmentSet>`,
    `<tagSet>${Object.entries(v.tags)
      .map(([k, x]) => `<item><key>${esc(k)}</key><value>${esc(x)}</value></item>`)
      .join("")}</tagSet>`,
    `<volumeType>${esc(v.volumeType)}</volumeType>`,
    opt("iops", v.iops),
    opt("throughput", v.throughput),
    `<encrypted>${v.encrypted}</encrypted>`,
    opt("kmsKeyId", v.kmsKeyId),
    "<multiAttachEnabled>false</multiAttachEnabled>",
  ].join("");
}
