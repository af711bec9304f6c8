/**
 * The AWS substrate's machines: one EC2 instance per machine, launched with user data that enrols
 * its agent (../cloud-init.ts), tagged with the controller, model and machine so the controller can
 * find its instances again after a restart or a change of leader, spread over the model's subnets
 * (or the region's zones) in turn. Removing a machine terminates its instance.
 *
 * Constraints size the instance (instance-types.ts) and its root volume; what cannot be honoured
 * (nothing fits, an image of another architecture, a root disk smaller than the image's) is an
 * error before the enrolment token is issued or anything is launched.
 */
import { createHash } from "node:crypto";
import type { Arch, Constraints } from "../../api/core";
import { formatSize, hasConstraints, invalidRequest } from "../../api/core";
import type { MachineBroker, MachineSpec, MachineTarget, Progress, StartedMachine } from "../brokers";
import { enrolmentUserData } from "../cloud-init";
import { Ebs } from "./ebs";
import type { AwsInstance, AwsPlacement } from "./ec2";
import { Ec2, LIVE_STATES, TAGS } from "./ec2";
import { hardwareOf, instanceTypeFor, instanceTypeInfo } from "./instance-types";

/** EC2's architecture names, as constraints write them. */
const ARCH_OF_IMAGE: Record<string, Arch> = { x86_64: "amd64", arm64: "arm64" };

/** What to launch for a machine's constraints. */
export interface LaunchPlan {
  instanceType: string;
  rootVolume?: { deviceName: string; sizeGiB: number };
  hardware: Constraints;
}

/** A machine's instance: the instance and which machine it is. */
export type MachineInstance = AwsInstance & { machine?: string };

export class AwsMachines implements MachineBroker<AwsPlacement> {
  constructor(private readonly ec2 = new Ec2()) {}

  async startMachine(
    spec: MachineSpec<AwsPlacement>,
    opts: { progress?: Progress; signal?: AbortSignal } = {},
  ): Promise<StartedMachine> {
    const p = spec.placement;
    const existing = (
      await this.ec2.instances(p, { [TAGS.model]: spec.model, [TAGS.machine]: spec.machine }, LIVE_STATES)
    )[0];
    if (existing) {
      opts.progress?.(`instance ${existing.id} is ${existing.state}`);
      await spec.waitForLogin?.();
      const info = existing.instanceType ? instanceTypeInfo(existing.instanceType) : undefined;
      return { instanceId: existing.id, changed: false, ...(info ? { hardware: hardwareOf(info) } : {}) };
    }
    if (!spec.issueEnrolment) throw new Error("aws machines enrol themselves: the spec needs issueEnrolment");
    const plan = await this.plan(p, spec.constraints ?? {});
    const zone = spec.storageHandles?.find((h) => h.zone)?.zone;
    // Stopped before EC2 was asked: nothing made, no token spent.
    opts.signal?.throwIfAborted();
    const token = await spec.issueEnrolment();
    opts.progress?.(
      `launching a ${plan.instanceType} instance${plan.rootVolume ? ` with a ${plan.rootVolume.sizeGiB} GiB root volume` : ""}`,
    );
    const launched = await this.ec2.launch(p, {
      instanceType: plan.instanceType,
      ...(plan.rootVolume ? { rootVolume: plan.rootVolume } : {}),
      // Kept EBS volumes attach only within their zone (volumes.ts records it in their handles).
      ...(zone ? { zone } : {}),
      n: Number(spec.machine),
      name: `steward-${spec.machine}-${spec.model.slice(0, 8)}`,
      tags: { [TAGS.model]: spec.model, [TAGS.machine]: spec.machine },
      userData: enrolmentUserData({ model: spec.model, machine: spec.machine, controller: spec.controller, token }),
      // Stable for this launch (retries of it), new for the next one: the enrolment token is.
      idempotencyKey: `${spec.model}/${spec.machine}/${createHash("sha256").update(token).digest("hex")}`,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    opts.progress?.(`instance ${launched.id} launched in ${launched.zone ?? "?"}; waiting for its agent to enrol`);
    await spec.waitForLogin?.();
    return { instanceId: launched.id, changed: true, hardware: plan.hardware };
  }

  /**
   * The instance type and root volume for constraints `c` (the model's default type without
   * any). The image is looked up only when there are constraints: for its architecture (the
   * default arch) and its root device (what root-disk resizes).
   */
  async plan(p: AwsPlacement, c: Constraints): Promise<LaunchPlan> {
    if (!hasConstraints(c)) {
      const info = instanceTypeInfo(p.settings.instanceType);
      return {
        instanceType: p.settings.instanceType,
        hardware: info ? hardwareOf(info) : { instanceType: p.settings.instanceType },
      };
    }
    const image = await this.ec2.image(p, p.settings.imageId);
    if (!image)
      throw invalidRequest(
        `image ${p.settings.imageId} was not found in ${p.settings.region}: the model's image must exist there for its machines`,
        { field: "imageId" },
      );
    const imageArch = image.architecture ? ARCH_OF_IMAGE[image.architecture] : undefined;
    const chosen = instanceTypeFor(c, p.settings.instanceType, imageArch);
    if (chosen.info && image.architecture && chosen.info.arch !== imageArch) {
      const other = imageArch ?? image.architecture;
      throw invalidRequest(
        `constraints: instance type ${chosen.name} is ${chosen.info.arch}, but image ${image.id} is ${image.architecture}: ask for an ${other} type (or arch=${other}), or give the model an ${chosen.info.arch} image`,
        { field: "constraints" },
      );
    }
    let rootVolume: LaunchPlan["rootVolume"];
    if (c.rootDisk !== undefined) {
      if (image.rootDeviceType !== "ebs" || !image.rootDeviceName)
        throw invalidRequest(
          `constraints: root-disk needs an EBS-backed image; ${image.id}'s root device is ${image.rootDeviceType ?? "of an unknown type"}`,
          { field: "constraints", key: "root-disk" },
        );
      // EBS sizes are whole GiB: round up, so the disk is at least what was asked.
      const sizeGiB = Math.ceil(c.rootDisk / 1024);
      if (image.rootVolumeGiB !== undefined && sizeGiB < image.rootVolumeGiB) {
        throw invalidRequest(
          `constraints: root-disk=${formatSize(c.rootDisk)} is smaller than image ${image.id}'s root volume (${image.rootVolumeGiB}G): ask for at least root-disk=${image.rootVolumeGiB}G`,
          { field: "constraints", key: "root-disk" },
        );
      }
      rootVolume = { deviceName: image.rootDeviceName, sizeGiB };
    }
    const disk = rootVolume ? rootVolume.sizeGiB * 1024 : undefined;
    const hardware: Constraints = chosen.info
      ? hardwareOf(chosen.info, disk)
      : {
          ...(imageArch ? { arch: imageArch } : {}),
          ...(disk !== undefined ? { rootDisk: disk } : {}),
          instanceType: chosen.name,
        };
    return { instanceType: chosen.name, ...(rootVolume ? { rootVolume } : {}), hardware };
  }

  /**
   * A model migrated here from the controller `fromController`: its instances and its storage's EBS
   * volumes, tagged as that controller's, are tagged as this one's (`p.controllerUuid`), so it finds
   * them as its own and the source, which lists only its own, can no longer touch them (Juju's
   * AdoptResources). Returns how many instances.
   */
  async adopt(p: AwsPlacement, model: string, fromController: string): Promise<number> {
    const from = { ...p, controllerUuid: fromController };
    const theirs = await this.ec2.instances(from, { [TAGS.model]: model });
    const volumes = await new Ebs(this.ec2).tagged(from, { [TAGS.model]: model });
    await this.ec2.tag(p, [...theirs.map((i) => i.id), ...volumes.map((v) => v.id)], {
      [TAGS.controller]: p.controllerUuid,
    });
    return theirs.length;
  }

  /** Terminates the machine's instances (a machine already gone is fine). */
  async stopMachine(target: MachineTarget<AwsPlacement>): Promise<void> {
    const live = await this.ec2.instances(
      target.placement,
      { [TAGS.model]: target.model, [TAGS.machine]: target.machine },
      LIVE_STATES,
    );
    await this.ec2.terminate(
      target.placement,
      live.map((i) => i.id),
    );
  }

  /** The model's instances (every state unless `states`), newest first. */
  async instances(p: AwsPlacement, model: string, states?: string[]): Promise<MachineInstance[]> {
    return (await this.ec2.instances(p, { [TAGS.model]: model }, states)).map((i) =>
      i.tags[TAGS.machine] !== undefined ? { ...i, machine: i.tags[TAGS.machine] } : i,
    );
  }

  close(): void {
    this.ec2.close();
  }
}
