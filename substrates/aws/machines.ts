/**
 * The AWS substrate's machines: one EC2 instance per machine, launched with user data that enrols
 * its agent (../cloud-init.ts), tagged with the controller, model and machine so the controller can
 * find its instances again after a restart or a change of leader, spread over the model's subnets
 * (or the region's zones) in turn. Removing a machine terminates its instance.
 *
 * The EC2 client is loaded on first use: the CLI imports this folder and must not pay for the SDK.
 */
import { createHash } from "node:crypto";
import { Agent } from "node:https";
import type { EC2Client, Filter, Instance } from "@aws-sdk/client-ec2";
import type { AwsModelSettings } from "../../api/core";
import type { MachineBroker, MachineSpec, MachineTarget, Progress, StartedMachine } from "../brokers";
import { enrolmentUserData } from "../cloud-init";

export interface AwsCredentials { accessKeyId: string; secretAccessKey: string; sessionToken?: string }

/** Where an aws model's machine goes: its model's settings and credential, and the controller it belongs to. */
export interface AwsPlacement {
  settings: AwsModelSettings;
  credentials: AwsCredentials;
  controllerUuid: string;
}

/** An instance as the controller records it. */
export interface AwsInstance { id: string; machine?: string; zone?: string; state: string; address?: string }

export const TAGS = { controller: "steward:controller", model: "steward:model", machine: "steward:machine" };
/** States of an instance that still is (or will be) the machine. */
const LIVE_STATES = ["pending", "running", "stopping", "stopped"];

// eslint-disable-next-line @typescript-eslint/consistent-type-imports
type Ec2Sdk = typeof import("@aws-sdk/client-ec2");
let sdk: Ec2Sdk | undefined;
const loadSdk = (): Ec2Sdk => (sdk ??= require("@aws-sdk/client-ec2") as Ec2Sdk);

export class AwsMachines implements MachineBroker<AwsPlacement> {
  private readonly clients = new Map<string, EC2Client>();
  private readonly zones = new Map<string, Promise<string[]>>();

  /** One client per region, endpoint and key (reused: each holds a connection pool). */
  client(p: AwsPlacement): EC2Client {
    const key = [p.settings.region, p.settings.endpoint ?? "", p.credentials.accessKeyId, createHash("sha256").update(p.credentials.secretAccessKey + (p.credentials.sessionToken ?? "")).digest("hex")].join("|");
    let c = this.clients.get(key);
    if (!c) {
      const { EC2Client } = loadSdk();
      c = new EC2Client({
        region: p.settings.region, credentials: p.credentials, maxAttempts: 4,
        ...(p.settings.endpoint ? { endpoint: p.settings.endpoint } : {}),
        ...(p.settings.endpointCaCert ? { requestHandler: { httpsAgent: new Agent({ ca: p.settings.endpointCaCert, keepAlive: true }) } } : {}),
      });
      this.clients.set(key, c);
    }
    return c;
  }

  async startMachine(spec: MachineSpec<AwsPlacement>, opts: { progress?: Progress } = {}): Promise<StartedMachine> {
    const p = spec.placement;
    const existing = (await this.instances(p, spec.model, [{ Name: `tag:${TAGS.machine}`, Values: [spec.machine] }], LIVE_STATES))[0];
    if (existing) {
      opts.progress?.(`instance ${existing.id} is ${existing.state}`);
      await spec.waitForLogin?.();
      return { instanceId: existing.id, changed: false };
    }
    if (!spec.issueEnrolment) throw new Error("aws machines enrol themselves: the spec needs issueEnrolment");
    const token = await spec.issueEnrolment();
    const userData = enrolmentUserData({ model: spec.model, machine: spec.machine, controller: spec.controller, token });
    const where = await this.placementFor(p, Number(spec.machine));
    opts.progress?.(`launching a ${p.settings.instanceType} instance${where.zone ? ` in ${where.zone}` : where.subnet ? ` in ${where.subnet}` : ""}`);
    const { RunInstancesCommand } = loadSdk();
    const res = await this.client(p).send(new RunInstancesCommand({
      ImageId: p.settings.imageId, InstanceType: p.settings.instanceType as never, MinCount: 1, MaxCount: 1,
      // The SDK sends UserData as given: EC2 wants it base64-encoded.
      UserData: userData.toString("base64"),
      ...(where.subnet ? { SubnetId: where.subnet } : {}),
      ...(where.zone ? { Placement: { AvailabilityZone: where.zone } } : {}),
      ...(p.settings.securityGroupIds ? { SecurityGroupIds: p.settings.securityGroupIds } : {}),
      TagSpecifications: [{ ResourceType: "instance", Tags: [
        { Key: "Name", Value: `steward-${spec.machine}-${spec.model.slice(0, 8)}` },
        { Key: TAGS.controller, Value: p.controllerUuid }, { Key: TAGS.model, Value: spec.model }, { Key: TAGS.machine, Value: spec.machine },
      ] }],
      // Stable for this launch (retries of it), new for the next one: the enrolment token is.
      ClientToken: createHash("sha256").update(`${spec.model}/${spec.machine}/${token}`).digest("hex"),
    }));
    const launched = res.Instances?.[0];
    if (!launched?.InstanceId) throw new Error("EC2 accepted RunInstances but named no instance");
    opts.progress?.(`instance ${launched.InstanceId} launched in ${launched.Placement?.AvailabilityZone ?? "?"}; waiting for its agent to enrol`);
    await spec.waitForLogin?.();
    return { instanceId: launched.InstanceId, changed: true };
  }

  /** Terminates the machine's instances (a machine already gone is fine). */
  async stopMachine(target: MachineTarget<AwsPlacement>): Promise<void> {
    const ids = (await this.instances(target.placement, target.model, [{ Name: `tag:${TAGS.machine}`, Values: [target.machine] }], [...LIVE_STATES])).map((i) => i.id);
    if (ids.length === 0) return;
    const { TerminateInstancesCommand } = loadSdk();
    await this.client(target.placement).send(new TerminateInstancesCommand({ InstanceIds: ids }));
  }

  /** The model's instances (every state unless `states`), newest first. */
  async instances(p: AwsPlacement, model: string, filters: Filter[] = [], states?: string[]): Promise<AwsInstance[]> {
    const { DescribeInstancesCommand } = loadSdk();
    const out: (AwsInstance & { launched: number })[] = [];
    let NextToken: string | undefined;
    do {
      const res = await this.client(p).send(new DescribeInstancesCommand({
        Filters: [{ Name: `tag:${TAGS.controller}`, Values: [p.controllerUuid] }, { Name: `tag:${TAGS.model}`, Values: [model] }, ...filters, ...(states ? [{ Name: "instance-state-name", Values: states }] : [])],
        MaxResults: 1000, ...(NextToken ? { NextToken } : {}),
      }));
      for (const r of res.Reservations ?? []) for (const i of r.Instances ?? []) out.push({ ...recordOf(i), launched: i.LaunchTime?.getTime() ?? 0 });
      NextToken = res.NextToken;
    } while (NextToken);
    return out.sort((a, b) => b.launched - a.launched).map(({ launched: _, ...i }) => i);
  }

  /** Machine `n` goes to the n-th subnet (or zone) in turn, so a model's machines spread over zones. */
  private async placementFor(p: AwsPlacement, n: number): Promise<{ subnet?: string; zone?: string }> {
    const subnets = p.settings.subnetIds ?? [];
    if (subnets.length > 0) return { subnet: subnets[n % subnets.length]! };
    const zones = await this.zonesOf(p);
    return zones.length > 0 ? { zone: zones[n % zones.length]! } : {};
  }

  private zonesOf(p: AwsPlacement): Promise<string[]> {
    const key = `${p.settings.region}|${p.settings.endpoint ?? ""}`;
    let z = this.zones.get(key);
    if (!z) {
      const { DescribeAvailabilityZonesCommand } = loadSdk();
      z = this.client(p).send(new DescribeAvailabilityZonesCommand({ Filters: [{ Name: "state", Values: ["available"] }] }))
        .then((r) => (r.AvailabilityZones ?? []).flatMap((a) => (a.ZoneName ? [a.ZoneName] : [])).sort());
      z.catch(() => this.zones.delete(key));
      this.zones.set(key, z);
    }
    return z;
  }

  close(): void {
    for (const c of this.clients.values()) c.destroy();
    this.clients.clear();
  }
}

function recordOf(i: Instance): AwsInstance {
  const machine = i.Tags?.find((t) => t.Key === TAGS.machine)?.Value;
  return {
    id: i.InstanceId ?? "", state: i.State?.Name ?? "unknown",
    ...(machine ? { machine } : {}), ...(i.Placement?.AvailabilityZone ? { zone: i.Placement.AvailabilityZone } : {}), ...(i.PrivateIpAddress ? { address: i.PrivateIpAddress } : {}),
  };
}
