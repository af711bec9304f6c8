/**
 * The EC2 calls Steward makes, for machines and for controller replicas alike: launch one tagged
 * instance with user data, list instances by tags, terminate. Every instance Steward launches is
 * tagged with its controller, so one controller never touches another's (or anyone else's).
 *
 * The SDK is loaded on first use: the CLI imports this folder and must not pay for it.
 */
import { createHash } from "node:crypto";
import { Agent } from "node:https";
import type { EC2Client, Filter, Instance } from "@aws-sdk/client-ec2";
import type { AwsModelSettings } from "../../api/core";

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** A stored aws credential's attributes (api/substrate-kinds.ts, the kind's credential) as the SDK takes them. */
export function awsCredentialsOf(attributes: Record<string, string>): AwsCredentials {
  return {
    accessKeyId: attributes["access-key-id"]!,
    secretAccessKey: attributes["secret-access-key"]!,
    ...(attributes["session-token"] ? { sessionToken: attributes["session-token"] } : {}),
  };
}

/** Where instances go: region and settings, the credential, and the controller they belong to. */
export interface AwsPlacement {
  settings: AwsModelSettings;
  credentials: AwsCredentials;
  controllerUuid: string;
}

/** An instance as Steward records it. */
export interface AwsInstance {
  id: string;
  tags: Record<string, string>;
  zone?: string;
  state: string;
  address?: string;
  instanceType?: string;
}
/** What a launch needs to know of an image: its architecture (EC2's `x86_64`, `arm64`…) and root device. */
export interface AwsImage {
  id: string;
  architecture?: string;
  rootDeviceName?: string;
  rootDeviceType?: string;
  rootVolumeGiB?: number;
}

export const TAGS = {
  controller: "steward:controller",
  model: "steward:model",
  machine: "steward:machine",
  replica: "steward:replica",
  /** A storage instance's volume: its id in the model (`data/0`). */
  storage: "steward:storage",
};
/** What marks a controller replica's instance, whoever launched it (the quorum keeper, or `steward bootstrap aws:…`). */
export const REPLICA_TAGS: Readonly<Record<string, string>> = { [TAGS.replica]: "replicas" };
export const replicaInstanceName = (controllerUuid: string): string =>
  `steward-controller-${controllerUuid.slice(0, 8)}`;
/** States of an instance that still is (or will be) what it was launched as. */
export const LIVE_STATES = ["pending", "running", "stopping", "stopped"];
export const GONE_STATES = new Set(["shutting-down", "terminated"]);

// eslint-disable-next-line @typescript-eslint/consistent-type-imports
type Ec2Sdk = typeof import("@aws-sdk/client-ec2");
let sdk: Ec2Sdk | undefined;
export const loadSdk = (): Ec2Sdk => {
  // The SDK's version is the one our lockfile pins; its warning about future releases needing
  // Node 22 would only land in every controller log (the SDK's own switch turns it off).
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  return (sdk ??= require("@aws-sdk/client-ec2") as Ec2Sdk);
};

export class Ec2 {
  private readonly clients = new Map<string, EC2Client>();
  private readonly zones = new Map<string, Promise<string[]>>();

  /** One client per region, endpoint and key (reused: each holds a connection pool); ebs.ts calls it too. */
  client(p: AwsPlacement): EC2Client {
    const key = [
      p.settings.region,
      p.settings.endpoint ?? "",
      p.credentials.accessKeyId,
      createHash("sha256")
        .update(p.credentials.secretAccessKey + (p.credentials.sessionToken ?? ""))
        .digest("hex"),
    ].join("|");
    let c = this.clients.get(key);
    if (!c) {
      const { EC2Client } = loadSdk();
      c = new EC2Client({
        region: p.settings.region,
        credentials: p.credentials,
        maxAttempts: 4,
        ...(p.settings.endpoint ? { endpoint: p.settings.endpoint } : {}),
        ...(p.settings.endpointCaCert
          ? { requestHandler: { httpsAgent: new Agent({ ca: p.settings.endpointCaCert, keepAlive: true }) } }
          : {}),
      });
      this.clients.set(key, c);
    }
    return c;
  }

  /**
   * Launches one instance tagged with the controller and `tags`, in the `n`-th subnet (or zone) in
   * turn, or in `zone` when the model has no subnets. `idempotencyKey` makes EC2 launch it once
   * however often the call is retried.
   */
  async launch(
    p: AwsPlacement,
    o: {
      n: number;
      name: string;
      tags: Record<string, string>;
      userData: Buffer;
      idempotencyKey: string;
      instanceType?: string;
      rootVolume?: { deviceName: string; sizeGiB: number };
      /** The zone it should be in (where the volumes it is to have are); with subnets, the n-th subnet is taken all the same. */
      zone?: string;
      /** Aborts the request (a launch EC2 took anyway is found by its tags, or answered again for its idempotency key). */
      signal?: AbortSignal;
    },
  ): Promise<AwsInstance> {
    const where = o.zone && !p.settings.subnetIds?.length ? { zone: o.zone } : await this.placementFor(p, o.n);
    const { RunInstancesCommand } = loadSdk();
    const tags = { Name: o.name, [TAGS.controller]: p.controllerUuid, ...o.tags };
    const res = await this.client(p).send(
      new RunInstancesCommand({
        ImageId: p.settings.imageId,
        InstanceType: (o.instanceType ?? p.settings.instanceType) as never,
        MinCount: 1,
        MaxCount: 1,
        // The image's own root device, resized: any other device name would add a second volume.
        ...(o.rootVolume
          ? {
              BlockDeviceMappings: [
                {
                  DeviceName: o.rootVolume.deviceName,
                  Ebs: { VolumeSize: o.rootVolume.sizeGiB, DeleteOnTermination: true },
                },
              ],
            }
          : {}),
        // The SDK sends UserData as given: EC2 wants it base64-encoded.
        UserData: o.userData.toString("base64"),
        ...(where.subnet ? { SubnetId: where.subnet } : {}),
        ...(where.zone ? { Placement: { AvailabilityZone: where.zone } } : {}),
        ...(p.settings.securityGroupIds ? { SecurityGroupIds: p.settings.securityGroupIds } : {}),
        TagSpecifications: [
          { ResourceType: "instance", Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) },
        ],
        ClientToken: createHash("sha256").update(o.idempotencyKey).digest("hex"),
      }),
      o.signal ? { abortSignal: o.signal } : {},
    );
    const launched = res.Instances?.[0];
    if (!launched?.InstanceId) throw new Error("EC2 accepted RunInstances but named no instance");
    return recordOf(launched);
  }

  /** This controller's instances matching `tags` (every state unless `states`), newest first. */
  async instances(p: AwsPlacement, tags: Record<string, string>, states?: string[]): Promise<AwsInstance[]> {
    const { DescribeInstancesCommand } = loadSdk();
    const filters: Filter[] = [
      { Name: `tag:${TAGS.controller}`, Values: [p.controllerUuid] },
      ...Object.entries(tags).map(([k, v]) => ({ Name: `tag:${k}`, Values: [v] })),
    ];
    if (states) filters.push({ Name: "instance-state-name", Values: states });
    const out: (AwsInstance & { launched: number })[] = [];
    let NextToken: string | undefined;
    do {
      const res = await this.client(p).send(
        new DescribeInstancesCommand({ Filters: filters, MaxResults: 1000, ...(NextToken ? { NextToken } : {}) }),
      );
      for (const r of res.Reservations ?? [])
        for (const i of r.Instances ?? []) out.push({ ...recordOf(i), launched: i.LaunchTime?.getTime() ?? 0 });
      NextToken = res.NextToken;
    } while (NextToken);
    return out.sort((a, b) => b.launched - a.launched).map(({ launched: _, ...i }) => i);
  }

  /** One instance by id (undefined once EC2 no longer knows it). */
  async instance(p: AwsPlacement, id: string): Promise<AwsInstance | undefined> {
    const { DescribeInstancesCommand } = loadSdk();
    try {
      const res = await this.client(p).send(new DescribeInstancesCommand({ InstanceIds: [id] }));
      const i = res.Reservations?.[0]?.Instances?.[0];
      return i ? recordOf(i) : undefined;
    } catch (err) {
      if ((err as Error).name === "InvalidInstanceID.NotFound") return undefined;
      throw err;
    }
  }

  /** The image `id` (undefined when EC2 does not know it, or it is not visible to this account). */
  async image(p: AwsPlacement, id: string): Promise<AwsImage | undefined> {
    const { DescribeImagesCommand } = loadSdk();
    try {
      const i = (await this.client(p).send(new DescribeImagesCommand({ ImageIds: [id] }))).Images?.[0];
      if (!i?.ImageId) return undefined;
      const root = i.BlockDeviceMappings?.find((b) => b.DeviceName === i.RootDeviceName)?.Ebs?.VolumeSize;
      return {
        id: i.ImageId,
        ...(i.Architecture ? { architecture: i.Architecture } : {}),
        ...(i.RootDeviceName ? { rootDeviceName: i.RootDeviceName } : {}),
        ...(i.RootDeviceType ? { rootDeviceType: i.RootDeviceType } : {}),
        ...(root !== undefined ? { rootVolumeGiB: root } : {}),
      };
    } catch (err) {
      if ((err as Error).name === "InvalidAMIID.NotFound") return undefined;
      throw err;
    }
  }

  /** Sets `tags` on resources `ids`, instances or volumes (existing keys are overwritten, as EC2's CreateTags does). */
  async tag(p: AwsPlacement, ids: string[], tags: Record<string, string>): Promise<void> {
    if (ids.length === 0) return;
    const { CreateTagsCommand } = loadSdk();
    await this.client(p).send(
      new CreateTagsCommand({ Resources: ids, Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) }),
    );
  }

  async terminate(p: AwsPlacement, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const { TerminateInstancesCommand } = loadSdk();
    await this.client(p).send(new TerminateInstancesCommand({ InstanceIds: ids }));
  }

  /** Instance `n` goes to the n-th subnet (or zone) in turn, so instances spread over zones. */
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
      z = this.client(p)
        .send(new DescribeAvailabilityZonesCommand({ Filters: [{ Name: "state", Values: ["available"] }] }))
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
  return {
    id: i.InstanceId ?? "",
    state: i.State?.Name ?? "unknown",
    tags: Object.fromEntries((i.Tags ?? []).flatMap((t) => (t.Key ? [[t.Key, t.Value ?? ""]] : []))),
    ...(i.Placement?.AvailabilityZone ? { zone: i.Placement.AvailabilityZone } : {}),
    ...(i.PrivateIpAddress ? { address: i.PrivateIpAddress } : {}),
    ...(i.InstanceType ? { instanceType: i.InstanceType } : {}),
  };
}
