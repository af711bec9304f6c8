/**
 * The aws kind's storage (issue 32): an EBS volume per storage instance, in the zone of the instance
 * of the machine it is attached to. The broker does EC2's half of an attachment (CreateVolume, then
 * AttachVolume at a free device name, each awaited until EC2 says it is done) and hands the machine's
 * agent the rest: find the volume under the name Nitro instances give it
 * (`/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_vol…`, or the `/dev/xvdX` Xen instances show),
 * make a filesystem on it once, mount it. Detached, the volume is kept (DeleteOnTermination is false
 * for volumes attached after launch, so even a terminated instance leaves it); only `destroy` deletes it.
 *
 * Every step may be repeated after a crash half-way: the volume is found by its handle, else by its
 * tags (controller, model, storage id), and created with a ClientToken of the model and storage id.
 */
import type { MachineVolumeWork } from "../../api/core";
import { ebsVolumeOf } from "../../api/core";
import type { MachineRef } from "../brokers";
import type { VolumeBroker, VolumeDeps, VolumeSpec } from "../volumes";
import type { EbsVolume } from "./ebs";
import { EBS_DEVICE_NAMES, Ebs, attachmentPoint, describe } from "./ebs";
import type { AwsInstance, AwsPlacement } from "./ec2";
import { Ec2, TAGS } from "./ec2";

/** Where a filesystem instance is mounted when the operator declares no location. */
export const EBS_MOUNT_ROOT = "/var/lib/steward/storage";

/** The name a Nitro instance gives an EBS volume under /dev/disk/by-id: its id without the hyphen. */
export const nitroDeviceName = (volumeId: string): string =>
  `nvme-Amazon_Elastic_Block_Store_${volumeId.replace("-", "")}`;

export class EbsVolumes implements VolumeBroker {
  private readonly ebs: Ebs;

  constructor(
    private readonly deps: VolumeDeps,
    private readonly ec2 = new Ec2(),
  ) {
    this.ebs = new Ebs(ec2);
  }

  async attach(
    v: VolumeSpec,
    m: MachineRef,
  ): Promise<{ handle: Record<string, string>; onMachine: MachineVolumeWork }> {
    const p = await this.placement(v.model);
    const instance = await this.runningInstance(p, m);
    const zone = instance.zone ?? "";
    let volume = await this.find(p, v);
    if (!volume && v.handle?.volumeId)
      throw new Error(
        `storage ${v.id} is EBS volume ${v.handle.volumeId}, which EC2 no longer has (deleted outside Steward?): its data is gone; remove the storage (remove-unit --destroy-storage)`,
      );
    if (!volume) {
      // Checked when it was asked for; checked again here, before anything is made.
      const spec = ebsVolumeOf(v.size, v.attributes);
      if ("problem" in spec) throw new Error(`storage ${v.id} cannot be an EBS volume: ${spec.problem}`);
      volume = await this.ebs.create(p, {
        zone,
        volume: spec.volume,
        tags: { Name: `steward-${v.id.replace("/", "-")}-${v.model.slice(0, 8)}`, ...tagsOf(v) },
        idempotencyKey: `${v.model}/${v.id}`,
      });
    }
    if (volume.zone !== zone)
      throw new Error(
        `storage ${v.id} is EBS volume ${volume.id} in ${volume.zone}, and machine ${m.machine}'s instance ${instance.id} is in ${zone}: an EBS volume attaches only to instances of its own zone`,
      );
    volume = await this.ebs.waitFor(
      p,
      volume.id,
      "free to attach",
      (x) => !x || usable(x, instance.id),
      (x) =>
        x?.attachment && x.attachment.instanceId !== instance.id && x.attachment.state !== "detaching"
          ? `it is ${describe(x)}; it must be detached from there first`
          : undefined,
    );
    if (!volume) throw new Error(`storage ${v.id}'s volume was deleted while it was being attached`);
    let device = volume.attachment?.device;
    if (!device) {
      const used = await this.ebs.devicesInUse(p, instance.id);
      device = EBS_DEVICE_NAMES.find((d) => !used.has(attachmentPoint(d)));
      if (!device)
        throw new Error(
          `instance ${instance.id} has no free device name for another EBS volume (${EBS_DEVICE_NAMES[0]} to ${EBS_DEVICE_NAMES.at(-1)} are taken)`,
        );
      await this.ebs.attach(p, volume.id, instance.id, device);
    }
    const attached = volume.id;
    await this.ebs.waitFor(
      p,
      attached,
      `attached to ${instance.id}`,
      (x) => x?.attachment?.instanceId === instance.id && x.attachment.state === "attached",
      (x) => (!x ? "deleted while being attached" : !x.attachment ? "EC2 gave up attaching it" : undefined),
    );
    return {
      handle: { volumeId: attached, zone, device },
      onMachine: {
        mode: "device",
        device: { byId: [nitroDeviceName(attached)], path: `/dev/${attachmentPoint(device)}` },
        kind: v.kind,
        ...(v.kind === "filesystem" ? { mountPoint: v.location ?? `${EBS_MOUNT_ROOT}/${v.id.replace("/", "-")}` } : {}),
      },
    };
  }

  async detach(v: VolumeSpec, _m: MachineRef): Promise<Record<string, string>> {
    const p = await this.placement(v.model);
    const volume = await this.find(p, v);
    // Never made, or gone: nothing to move off.
    if (!volume) return v.handle ?? {};
    const a = volume.attachment;
    if (a && a.state !== "detaching") await this.ebs.detach(p, volume.id, a.instanceId);
    if (a || volume.state === "creating")
      await this.ebs.waitFor(p, volume.id, "detached", (x) => !x || (x.state === "available" && !x.attachment));
    return { volumeId: volume.id, zone: volume.zone };
  }

  async destroy(v: VolumeSpec): Promise<void> {
    const p = await this.placement(v.model);
    const volume = await this.find(p, v);
    if (!volume) return;
    if (volume.attachment || volume.state === "creating") {
      if (volume.attachment && volume.attachment.state !== "detaching")
        await this.ebs.detach(p, volume.id, volume.attachment.instanceId);
      await this.ebs.waitFor(p, volume.id, "detached", (x) => !x || (x.state === "available" && !x.attachment));
    }
    await this.ebs.delete(p, volume.id);
  }

  close(): void {
    this.ec2.close();
  }

  private async placement(model: string): Promise<AwsPlacement> {
    if (!this.deps.placement) throw new Error("the aws volume broker needs the models' placements");
    return (await this.deps.placement(model)) as AwsPlacement;
  }

  /** The running instance of machine `m` (not yet running, or none: told to try again). */
  private async runningInstance(p: AwsPlacement, m: MachineRef): Promise<AwsInstance> {
    const [newest] = await this.ec2.instances(p, { [TAGS.model]: m.model, [TAGS.machine]: m.machine });
    if (!newest) throw new Error(`machine ${m.machine} has no instance yet`);
    if (newest.state !== "running")
      throw new Error(`machine ${m.machine}'s instance ${newest.id} is ${newest.state}, not running`);
    return newest;
  }

  /**
   * The instance's volume: by its handle, else by its tags (made by a call whose answer was lost). A
   * volume its handle names that EC2 no longer knows was deleted outside Steward: said, not made again empty.
   */
  private async find(p: AwsPlacement, v: VolumeSpec): Promise<EbsVolume | undefined> {
    const id = v.handle?.volumeId;
    if (id) {
      const known = await this.ebs.volume(p, id);
      if (known && known.state !== "deleting" && known.state !== "deleted") return known;
      return undefined;
    }
    return (await this.ebs.tagged(p, tagsOf(v)))[0];
  }
}

/** What marks a storage instance's volume (beside the controller). */
const tagsOf = (v: VolumeSpec): Record<string, string> => ({ [TAGS.model]: v.model, [TAGS.storage]: v.id });

/** Whether `v` can be attached to `instanceId` now (available), or already is (being) attached to it. */
function usable(v: EbsVolume, instanceId: string): boolean {
  if (v.attachment) return v.attachment.instanceId === instanceId && v.attachment.state !== "detaching";
  return v.state === "available";
}
