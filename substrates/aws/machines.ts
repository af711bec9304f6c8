/**
 * The AWS substrate's machines: one EC2 instance per machine, launched with user data that enrols
 * its agent (../cloud-init.ts), tagged with the controller, model and machine so the controller can
 * find its instances again after a restart or a change of leader, spread over the model's subnets
 * (or the region's zones) in turn. Removing a machine terminates its instance.
 */
import { createHash } from "node:crypto";
import type { MachineBroker, MachineSpec, MachineTarget, Progress, StartedMachine } from "../brokers";
import { enrolmentUserData } from "../cloud-init";
import type { AwsInstance, AwsPlacement } from "./ec2";
import { Ec2, LIVE_STATES, TAGS } from "./ec2";

/** A machine's instance: the instance and which machine it is. */
export type MachineInstance = AwsInstance & { machine?: string };

export class AwsMachines implements MachineBroker<AwsPlacement> {
  constructor(private readonly ec2 = new Ec2()) {}

  async startMachine(spec: MachineSpec<AwsPlacement>, opts: { progress?: Progress } = {}): Promise<StartedMachine> {
    const p = spec.placement;
    const existing = (await this.ec2.instances(p, { [TAGS.model]: spec.model, [TAGS.machine]: spec.machine }, LIVE_STATES))[0];
    if (existing) {
      opts.progress?.(`instance ${existing.id} is ${existing.state}`);
      await spec.waitForLogin?.();
      return { instanceId: existing.id, changed: false };
    }
    if (!spec.issueEnrolment) throw new Error("aws machines enrol themselves: the spec needs issueEnrolment");
    const token = await spec.issueEnrolment();
    opts.progress?.(`launching a ${p.settings.instanceType} instance`);
    const launched = await this.ec2.launch(p, {
      n: Number(spec.machine), name: `steward-${spec.machine}-${spec.model.slice(0, 8)}`,
      tags: { [TAGS.model]: spec.model, [TAGS.machine]: spec.machine },
      userData: enrolmentUserData({ model: spec.model, machine: spec.machine, controller: spec.controller, token }),
      // Stable for this launch (retries of it), new for the next one: the enrolment token is.
      idempotencyKey: `${spec.model}/${spec.machine}/${createHash("sha256").update(token).digest("hex")}`,
    });
    opts.progress?.(`instance ${launched.id} launched in ${launched.zone ?? "?"}; waiting for its agent to enrol`);
    await spec.waitForLogin?.();
    return { instanceId: launched.id, changed: true };
  }

  /** Terminates the machine's instances (a machine already gone is fine). */
  async stopMachine(target: MachineTarget<AwsPlacement>): Promise<void> {
    const live = await this.ec2.instances(target.placement, { [TAGS.model]: target.model, [TAGS.machine]: target.machine }, LIVE_STATES);
    await this.ec2.terminate(target.placement, live.map((i) => i.id));
  }

  /** The model's instances (every state unless `states`), newest first. */
  async instances(p: AwsPlacement, model: string, states?: string[]): Promise<MachineInstance[]> {
    return (await this.ec2.instances(p, { [TAGS.model]: model }, states)).map((i) => (i.tags[TAGS.machine] !== undefined ? { ...i, machine: i.tags[TAGS.machine] } : i));
  }

  close(): void { this.ec2.close(); }
}
