/**
 * The EBS calls Steward makes for storage (issue 32): create a volume tagged with the controller,
 * model and storage instance (found again by those tags after a crash half-way, and created once per
 * instance whatever the retries through a ClientToken), find it, attach it at a free device name,
 * detach it, delete it, and wait for each change as EC2 makes it: a volume is `creating`, then
 * `available`; an attachment `attaching`, then `attached`; a detach `detaching`, then the volume
 * `available` again.
 */
import { createHash } from "node:crypto";
import type { Volume } from "@aws-sdk/client-ec2";
import type { EbsVolumeOptions } from "../../api/core";
import type { AwsPlacement, Ec2 } from "./ec2";
import { TAGS, loadSdk } from "./ec2";

/** A volume as Steward reads it. */
export interface EbsVolume {
  id: string;
  zone: string;
  /** creating, available, in-use, deleting, deleted, error */
  state: string;
  sizeGiB: number;
  tags: Record<string, string>;
  attachment?: { instanceId: string; device: string; state: string };
}

/** The device names AWS recommends for EBS volumes on Linux ("Device names on Linux instances"), in the order tried. */
export const EBS_DEVICE_NAMES = "fghijklmnop".split("").map((l) => `/dev/sd${l}`);

/** How long a volume's change may take before the caller is told to try again (its next pass finds it where it got). */
const WAIT_MS = 120_000;

export class Ebs {
  constructor(private readonly ec2: Ec2) {}

  /** Creates a volume in `zone` tagged with the controller and `tags`; `idempotencyKey` makes EC2 create it once. */
  async create(
    p: AwsPlacement,
    o: { zone: string; volume: EbsVolumeOptions; tags: Record<string, string>; idempotencyKey: string },
  ): Promise<EbsVolume> {
    const { CreateVolumeCommand } = loadSdk();
    const tags = { [TAGS.controller]: p.controllerUuid, ...o.tags };
    const v = o.volume;
    const res = await this.ec2.client(p).send(
      new CreateVolumeCommand({
        AvailabilityZone: o.zone,
        Size: v.sizeGiB,
        VolumeType: v.volumeType as never,
        ...(v.iops !== undefined ? { Iops: v.iops } : {}),
        ...(v.throughput !== undefined ? { Throughput: v.throughput } : {}),
        ...(v.encrypted ? { Encrypted: true } : {}),
        ...(v.kmsKeyId !== undefined ? { KmsKeyId: v.kmsKeyId } : {}),
        TagSpecifications: [
          { ResourceType: "volume", Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) },
        ],
        ClientToken: createHash("sha256").update(o.idempotencyKey).digest("hex"),
      }),
    );
    if (!res.VolumeId) throw new Error("EC2 accepted CreateVolume but named no volume");
    return recordOf(res);
  }

  /** The volume `id` (undefined once EC2 no longer knows it). */
  async volume(p: AwsPlacement, id: string): Promise<EbsVolume | undefined> {
    const { DescribeVolumesCommand } = loadSdk();
    try {
      const v = (await this.ec2.client(p).send(new DescribeVolumesCommand({ VolumeIds: [id] }))).Volumes?.[0];
      return v?.VolumeId ? recordOf(v) : undefined;
    } catch (err) {
      if ((err as Error).name === "InvalidVolume.NotFound") return undefined;
      throw err;
    }
  }

  /** This controller's volumes with `tags`, not being deleted. */
  async tagged(p: AwsPlacement, tags: Record<string, string>): Promise<EbsVolume[]> {
    const { DescribeVolumesCommand } = loadSdk();
    const out: EbsVolume[] = [];
    let NextToken: string | undefined;
    do {
      const res = await this.ec2.client(p).send(
        new DescribeVolumesCommand({
          Filters: [
            { Name: `tag:${TAGS.controller}`, Values: [p.controllerUuid] },
            ...Object.entries(tags).map(([k, v]) => ({ Name: `tag:${k}`, Values: [v] })),
            { Name: "status", Values: ["creating", "available", "in-use"] },
          ],
          MaxResults: 500,
          ...(NextToken ? { NextToken } : {}),
        }),
      );
      for (const v of res.Volumes ?? []) if (v.VolumeId) out.push(recordOf(v));
      NextToken = res.NextToken;
    } while (NextToken);
    return out;
  }

  /** The device names in use on instance `id` (its root and every volume attached), as EC2 lists them. */
  async devicesInUse(p: AwsPlacement, instanceId: string): Promise<Set<string>> {
    const { DescribeInstancesCommand } = loadSdk();
    const res = await this.ec2.client(p).send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
    const i = res.Reservations?.[0]?.Instances?.[0];
    const used = new Set<string>();
    for (const m of i?.BlockDeviceMappings ?? []) if (m.DeviceName) used.add(attachmentPoint(m.DeviceName));
    if (i?.RootDeviceName) used.add(attachmentPoint(i.RootDeviceName));
    return used;
  }

  async attach(p: AwsPlacement, volumeId: string, instanceId: string, device: string): Promise<void> {
    const { AttachVolumeCommand } = loadSdk();
    await this.ec2
      .client(p)
      .send(new AttachVolumeCommand({ VolumeId: volumeId, InstanceId: instanceId, Device: device }));
  }

  async detach(p: AwsPlacement, volumeId: string, instanceId: string): Promise<void> {
    const { DetachVolumeCommand } = loadSdk();
    await this.ec2.client(p).send(new DetachVolumeCommand({ VolumeId: volumeId, InstanceId: instanceId }));
  }

  /** Deletes the volume (already gone: nothing to do). */
  async delete(p: AwsPlacement, volumeId: string): Promise<void> {
    const { DeleteVolumeCommand } = loadSdk();
    try {
      await this.ec2.client(p).send(new DeleteVolumeCommand({ VolumeId: volumeId }));
    } catch (err) {
      if ((err as Error).name !== "InvalidVolume.NotFound") throw err;
    }
  }

  /**
   * Polls the volume until `done` says it is as wanted (answering it), backing off from 100 ms to 2 s;
   * throws saying `what` it waited for after {@link WAIT_MS} (or when `failed` names a state it will not leave).
   */
  async waitFor(
    p: AwsPlacement,
    id: string,
    what: string,
    done: (v: EbsVolume | undefined) => boolean,
    failed?: (v: EbsVolume | undefined) => string | undefined,
  ): Promise<EbsVolume | undefined> {
    const deadline = Date.now() + WAIT_MS;
    for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
      const v = await this.volume(p, id);
      if (done(v)) return v;
      const why = failed?.(v);
      if (why) throw new Error(`volume ${id}: ${why}`);
      if (Date.now() > deadline)
        throw new Error(
          `volume ${id} is not ${what} after ${WAIT_MS / 1000} s (it is ${v ? describe(v) : "gone"}); will look again`,
        );
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** `/dev/sdf`, `sdf`, `/dev/xvdf` → `xvdf`: EC2 takes sdX and xvdX as the same attachment point. */
export function attachmentPoint(device: string): string {
  const name = device.replace(/^\/dev\//, "");
  return name.startsWith("sd") ? `xvd${name.slice(2).replace(/[0-9]+$/, "")}` : name;
}

/** `vol-0123…` and its state, for messages. */
export function describe(v: EbsVolume): string {
  const a = v.attachment;
  return a ? `${v.state}, ${a.state} to ${a.instanceId} as ${a.device}` : v.state;
}

function recordOf(v: Volume): EbsVolume {
  const a = v.Attachments?.[0];
  return {
    id: v.VolumeId ?? "",
    zone: v.AvailabilityZone ?? "",
    state: v.State ?? "unknown",
    sizeGiB: v.Size ?? 0,
    tags: Object.fromEntries((v.Tags ?? []).flatMap((t) => (t.Key ? [[t.Key, t.Value ?? ""]] : []))),
    ...(a?.InstanceId
      ? { attachment: { instanceId: a.InstanceId, device: a.Device ?? "", state: a.State ?? "unknown" } }
      : {}),
  };
}
