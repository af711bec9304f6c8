/**
 * The fake EC2 endpoint (test/harness/fake-ec2.ts) as the real @aws-sdk/client-ec2 sees it, and the
 * cloud-init runner (test/harness/cloud-init.ts) on real test hosts (those tests need root).
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { createHash, createHmac } from "node:crypto";
import type { BinaryLike, Hash, Hmac } from "node:crypto";
import { Agent, request } from "node:https";
import { gzipSync } from "node:zlib";
import {
  AttachVolumeCommand,
  CreateTagsCommand,
  CreateVolumeCommand,
  DeleteVolumeCommand,
  DescribeAvailabilityZonesCommand,
  DescribeInstancesCommand,
  DescribeVolumesCommand,
  DetachVolumeCommand,
  EC2Client,
  RunInstancesCommand,
  TerminateInstancesCommand,
} from "@aws-sdk/client-ec2";
import type { CreateVolumeCommandInput, RunInstancesCommandInput, Volume } from "@aws-sdk/client-ec2";
import { SignatureV4 } from "@smithy/signature-v4";
import { FakeEc2, ec2ClientFor } from "./harness/fake-ec2";
import type { FakeEc2Options, FakeInstance } from "./harness/fake-ec2";
import { CLOUD_INIT_OUTPUT_LOG, fakeEc2Boot, parseCloudConfig, runCloudInit } from "./harness/cloud-init";
import { SUDO_USER, TestLab } from "./harness/hosts";
import { ssh, sshBootstrapUserData } from "../substrates";
import { eventually } from "./harness/eventually";

const region = "eu-west-3";
const credentials = { accessKeyId: "AKIAFAKEEC2TEST00001", secretAccessKey: "fake/secret+key/for/tests" };
const AMI = "ami-0123456789abcdef0";
const root = process.getuid?.() === 0;
const asRoot = root ? test.serial : test.skip; // skipped only without root: test hosts need namespaces

/** A started fake whose instances boot when the test says so; closed when the test ends. */
async function fake(
  t: ExecutionContext,
  more: Pick<FakeEc2Options, "onAttach" | "onDetach" | "volumeTransitionMs"> = {},
): Promise<{
  ec2: FakeEc2;
  client: EC2Client;
  booted: Map<string, () => void>;
  stopped: string[];
}> {
  const booted = new Map<string, () => void>();
  const stopped: string[] = [];
  const ec2 = new FakeEc2({
    region,
    credentials,
    ...more,
    boot: (i: FakeInstance) =>
      new Promise((resolve) =>
        booted.set(i.id, () =>
          resolve({
            privateIp: "10.0.0.5",
            stop: async () => {
              stopped.push(i.id);
            },
          }),
        ),
      ),
  });
  await ec2.start();
  const client = ec2ClientFor(ec2);
  // stop() waits for boots in progress (to stop what they started): finish those the test left.
  t.teardown(async () => {
    client.destroy();
    for (const up of booted.values()) up();
    await ec2.stop();
  });
  return { ec2, client, booted, stopped };
}

const launch = (over: Partial<RunInstancesCommandInput> = {}): RunInstancesCommand =>
  new RunInstancesCommand({ ImageId: AMI, MinCount: 1, MaxCount: 1, ...over });
/** The error an SDK call fails with (name, as the SDK maps EC2's <Code>, and HTTP status). */
async function failure(p: Promise<unknown>): Promise<{ name: string; message: string; status?: number }> {
  const err = await p.then(
    () => undefined,
    (e: { name: string; message: string; $metadata?: { httpStatusCode?: number } }) => e,
  );
  if (!err) throw new Error("the call succeeded");
  return { name: err.name, message: err.message, status: err.$metadata?.httpStatusCode };
}

test("RunInstances with tags, user data and zone: pending, then running once booted, found by tag", async (t) => {
  const { ec2, client, booted } = await fake(t);
  const userData = Buffer.from("#cloud-config\nruncmd:\n  - echo hi\n");
  const out = await client.send(
    launch({
      InstanceType: "t3.small",
      UserData: userData.toString("base64"),
      Placement: { AvailabilityZone: `${region}b` },
      SubnetId: "subnet-0abc",
      SecurityGroupIds: ["sg-0123", "sg-0456"],
      TagSpecifications: [
        {
          ResourceType: "instance",
          Tags: [
            { Key: "steward:model", Value: "m/1 <&>" },
            { Key: "Name", Value: "web" },
          ],
        },
      ],
    }),
  );
  t.is(out.Instances?.length, 1);
  const id = out.Instances![0]!.InstanceId!;
  t.regex(id, /^i-[0-9a-f]{17}$/);
  t.regex(out.ReservationId!, /^r-[0-9a-f]{17}$/);
  t.is(out.Instances![0]!.State?.Name, "pending");
  t.is(out.Instances![0]!.State?.Code, 0);
  t.truthy(out.$metadata.requestId);

  const byTag = new DescribeInstancesCommand({
    Filters: [
      { Name: "tag:steward:model", Values: ["m/1 <&>"] },
      { Name: "instance-state-name", Values: ["pending", "running"] },
    ],
  });
  const pending = (await client.send(byTag)).Reservations?.flatMap((r) => r.Instances ?? []);
  t.is(pending?.length, 1);
  t.is(pending![0]!.State?.Name, "pending");
  booted.get(id)!();
  const running = await eventually("running", async () => {
    const i = (await client.send(byTag)).Reservations?.[0]?.Instances?.[0];
    return i?.State?.Name === "running" ? i : undefined;
  });
  t.is(running.State?.Code, 16);
  t.is(running.PrivateIpAddress, "10.0.0.5");
  t.is(running.InstanceType, "t3.small");
  t.is(running.ImageId, AMI);
  t.is(running.Placement?.AvailabilityZone, `${region}b`);
  t.is(running.SubnetId, "subnet-0abc");
  t.deepEqual(
    running.SecurityGroups?.map((g) => g.GroupId),
    ["sg-0123", "sg-0456"],
  );
  t.deepEqual(Object.fromEntries(running.Tags!.map((x) => [x.Key, x.Value])), {
    "steward:model": "m/1 <&>",
    Name: "web",
  });
  t.true(running.LaunchTime instanceof Date);
  t.deepEqual(ec2.instances()[0]!.userData, userData);
  t.is(ec2.calls.filter((c) => c.action === "RunInstances").length, 1);

  t.is(
    (
      await client.send(
        new DescribeInstancesCommand({
          Filters: [
            { Name: "tag-key", Values: ["Name"] },
            { Name: "availability-zone", Values: [`${region}?`] },
          ],
        }),
      )
    ).Reservations?.length,
    1,
  );
  t.is(
    (await client.send(new DescribeInstancesCommand({ Filters: [{ Name: "tag:Name", Values: ["db*"] }] }))).Reservations
      ?.length,
    0,
  );
  await client.send(new CreateTagsCommand({ Resources: [id], Tags: [{ Key: "role", Value: "db" }] }));
  t.is(
    (await client.send(new DescribeInstancesCommand({ Filters: [{ Name: "tag:role", Values: ["d*"] }] })))
      .Reservations?.[0]?.Instances?.[0]?.InstanceId,
    id,
  );
  const zones = await client.send(new DescribeAvailabilityZonesCommand({}));
  t.deepEqual(
    zones.AvailabilityZones?.map((z) => [z.ZoneName, z.State, z.RegionName]),
    ["a", "b", "c"].map((z) => [`${region}${z}`, "available", region]),
  );
});

test("without a zone, instances are spread over the zones; MaxResults and NextToken page through them", async (t) => {
  const { client } = await fake(t);
  const out = await client.send(launch({ MinCount: 2, MaxCount: 7 }));
  t.is(out.Instances?.length, 7);
  t.deepEqual(
    out.Instances!.slice(0, 4).map((i) => i.Placement?.AvailabilityZone),
    ["a", "b", "c", "a"].map((z) => `${region}${z}`),
  );
  const first = await client.send(new DescribeInstancesCommand({ MaxResults: 5 }));
  const second = await client.send(new DescribeInstancesCommand({ MaxResults: 5, NextToken: first.NextToken }));
  const ids = [first, second].flatMap((p) => p.Reservations!.flatMap((r) => r.Instances!.map((i) => i.InstanceId)));
  t.deepEqual(
    ids,
    out.Instances!.map((i) => i.InstanceId),
  );
  t.truthy(first.NextToken);
  t.falsy(second.NextToken);
  t.is((await failure(client.send(new DescribeInstancesCommand({ MaxResults: 2 })))).name, "InvalidParameterValue");
  t.is((await failure(client.send(launch({ MinCount: 3, MaxCount: 2 })))).name, "InvalidParameterValue");
});

test("the same ClientToken returns the first reservation without launching again; changed parameters are refused", async (t) => {
  const { ec2, client, booted } = await fake(t);
  const first = await client.send(
    launch({
      ClientToken: "token-1",
      TagSpecifications: [{ ResourceType: "instance", Tags: [{ Key: "k", Value: "v" }] }],
    }),
  );
  const again = await client.send(
    launch({
      ClientToken: "token-1",
      TagSpecifications: [{ ResourceType: "instance", Tags: [{ Key: "k", Value: "v" }] }],
    }),
  );
  t.is(again.ReservationId, first.ReservationId);
  t.deepEqual(
    again.Instances?.map((i) => i.InstanceId),
    first.Instances?.map((i) => i.InstanceId),
  );
  t.is(ec2.instances().length, 1);
  t.is(booted.size, 1);
  const changed = await failure(client.send(launch({ ClientToken: "token-1", InstanceType: "t3.large" })));
  t.is(changed.name, "IdempotentParameterMismatch");
  t.is(changed.status, 400);
  // Without a token of the caller's, the SDK makes up one per call: two calls, two instances.
  await client.send(launch());
  await client.send(launch());
  t.is(ec2.instances().length, 3);
  t.is(new Set(ec2.instances().map((i) => i.clientToken)).size, 3);
});

test("TerminateInstances: shutting-down, then terminated with the boot's stop called; terminating again is harmless", async (t) => {
  const { client, booted, stopped } = await fake(t);
  const id = (await client.send(launch())).Instances![0]!.InstanceId!;
  booted.get(id)!();
  const state = async () =>
    (await client.send(new DescribeInstancesCommand({ InstanceIds: [id] }))).Reservations![0]!.Instances![0]!.State
      ?.Name;
  await eventually("running", async () => (await state()) === "running");
  const out = await client.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
  t.deepEqual(
    out.TerminatingInstances?.map((i) => [
      i.InstanceId,
      i.PreviousState?.Name,
      i.CurrentState?.Name,
      i.CurrentState?.Code,
    ]),
    [[id, "running", "shutting-down", 32]],
  );
  await eventually("terminated", async () => (await state()) === "terminated");
  t.deepEqual(stopped, [id]);
  const again = await client.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
  t.deepEqual(
    again.TerminatingInstances?.map((i) => [i.PreviousState?.Name, i.CurrentState?.Name, i.CurrentState?.Code]),
    [["terminated", "terminated", 48]],
  );
  t.deepEqual(stopped, [id]);
  // Still listed after termination, as EC2 lists recently terminated instances.
  t.is(
    (
      await client.send(
        new DescribeInstancesCommand({ Filters: [{ Name: "instance-state-name", Values: ["terminated"] }] }),
      )
    ).Reservations?.length,
    1,
  );
});

test("user data: 16384 bytes (gzip or not) are taken as sent, one byte more is refused as EC2 documents", async (t) => {
  const { ec2, client } = await fake(t);
  const exact = Buffer.alloc(16384, "x");
  await client.send(launch({ UserData: exact.toString("base64") }));
  t.deepEqual(ec2.instances()[0]!.userData, exact);
  const refused = await failure(client.send(launch({ UserData: Buffer.alloc(16385, "x").toString("base64") })));
  t.deepEqual(
    [refused.name, refused.message, refused.status],
    ["InvalidParameterValue", "User data is limited to 16384 bytes", 400],
  );
  const gz = gzipSync(Buffer.from("#cloud-config\n" + "runcmd: []\n".repeat(3000)));
  await client.send(launch({ UserData: gz.toString("base64") }));
  t.deepEqual(ec2.instances()[1]!.userData, gz);
  t.is((await failure(client.send(launch({ UserData: "not base64!" })))).name, "InvalidParameterValue");
  t.is(ec2.instances().length, 2);
});

test("requests signed with a wrong secret or an unknown key, or altered after signing, are refused", async (t) => {
  const { ec2 } = await fake(t);
  const wrongSecret = ec2ClientFor(ec2, { ...credentials, secretAccessKey: "not-the-secret" });
  const unknownKey = ec2ClientFor(ec2, { ...credentials, accessKeyId: "AKIAUNKNOWNKEY000000" });
  t.teardown(() => {
    wrongSecret.destroy();
    unknownKey.destroy();
  });
  const bad = await failure(wrongSecret.send(new DescribeInstancesCommand({})));
  t.deepEqual([bad.name, bad.status], ["SignatureDoesNotMatch", 403]);
  const unknown = await failure(unknownKey.send(launch()));
  t.deepEqual([unknown.name, unknown.status], ["AuthFailure", 401]);
  t.is(ec2.calls.length, 0);
  t.is(ec2.instances().length, 0);

  // Hand-built requests, signed by the SDK's own SigV4 implementation (not the fake's).
  const url = new URL(ec2.endpoint);
  const sign = async (secretAccessKey: string, method: "GET" | "POST", query: Record<string, string>, body: string) => {
    const signer = new SignatureV4({
      service: "ec2",
      region,
      credentials: { ...credentials, secretAccessKey },
      sha256: Sha256,
    });
    return signer.sign({
      method,
      protocol: "https:",
      hostname: url.hostname,
      port: Number(url.port),
      path: "/",
      query,
      body,
      headers: { host: url.host, ...(body ? { "content-type": "application/x-www-form-urlencoded" } : {}) },
    });
  };
  const query = { Action: "DescribeAvailabilityZones", Version: "2016-11-15", "ZoneName.1": `${region}c` };
  const good = await sign(credentials.secretAccessKey, "GET", query, "");
  const ok = await send(
    ec2.caCert,
    good.method,
    `/?${new URLSearchParams(query).toString().replace(/\+/g, "%20")}`,
    good.headers as Record<string, string>,
    "",
  );
  t.is(ok.status, 200);
  t.regex(ok.body, new RegExp(`<zoneName>${region}c</zoneName>`));
  t.notRegex(ok.body, new RegExp(`<zoneName>${region}a</zoneName>`));

  const wrong = await sign("not-the-secret", "GET", query, "");
  const refused = await send(
    ec2.caCert,
    "GET",
    `/?${new URLSearchParams(query).toString()}`,
    wrong.headers as Record<string, string>,
    "",
  );
  t.is(refused.status, 403);
  t.regex(
    refused.body,
    /^<\?xml version="1.0" encoding="UTF-8"\?>\n<Response><Errors><Error><Code>SignatureDoesNotMatch<\/Code><Message>[^<]+<\/Message><\/Error><\/Errors><RequestID>[0-9a-f-]{36}<\/RequestID><\/Response>$/,
  );

  const form = `Action=RunInstances&Version=2016-11-15&ImageId=${AMI}&MinCount=1&MaxCount=1`;
  const signed = await sign(credentials.secretAccessKey, "POST", {}, form);
  const altered = await send(
    ec2.caCert,
    "POST",
    "/",
    signed.headers as Record<string, string>,
    form.replace("MaxCount=1", "MaxCount=9"),
  );
  t.is(altered.status, 403);
  t.regex(altered.body, /<Code>SignatureDoesNotMatch<\/Code>/);
  t.is(ec2.instances().length, 0);
  const accepted = await send(ec2.caCert, "POST", "/", signed.headers as Record<string, string>, form);
  t.is(accepted.status, 200);
  t.is(ec2.instances().length, 1);
  t.deepEqual(
    ec2.calls.map((c) => c.action),
    ["DescribeAvailabilityZones", "RunInstances"],
  );

  // A client whose clock is 20 minutes off gets RequestExpired, as EC2 answers beyond 15 minutes;
  // the SDK then corrects its clock from the answer's Date header, and its next call succeeds.
  const late = new EC2Client({
    region,
    endpoint: ec2.endpoint,
    credentials,
    systemClockOffset: -20 * 60_000,
    maxAttempts: 1,
    requestHandler: { httpsAgent: new Agent({ ca: ec2.caCert }) },
  });
  t.teardown(() => late.destroy());
  t.is((await failure(late.send(new DescribeInstancesCommand({})))).name, "RequestExpired");
  t.is((await late.send(new DescribeInstancesCommand({}))).Reservations?.length, 1);
});

test("unknown or malformed ids and images get EC2's error codes", async (t) => {
  const { client } = await fake(t);
  const missing = await failure(client.send(new DescribeInstancesCommand({ InstanceIds: ["i-0123456789abcdef0"] })));
  t.deepEqual(
    [missing.name, missing.message, missing.status],
    ["InvalidInstanceID.NotFound", "The instance ID 'i-0123456789abcdef0' does not exist", 400],
  );
  t.is(
    (await failure(client.send(new TerminateInstancesCommand({ InstanceIds: ["i-0123456789abcdef0"] })))).name,
    "InvalidInstanceID.NotFound",
  );
  t.is(
    (await failure(client.send(new DescribeInstancesCommand({ InstanceIds: ["web-1"] })))).name,
    "InvalidInstanceID.Malformed",
  );
  t.is((await failure(client.send(launch({ ImageId: "ubuntu-24.04" })))).name, "InvalidAMIID.Malformed");
  t.is(
    (await failure(client.send(launch({ Placement: { AvailabilityZone: "us-east-1a" } })))).name,
    "InvalidParameterValue",
  );
  t.is(
    (await failure(client.send(new DescribeInstancesCommand({ Filters: [{ Name: "flavour", Values: ["x"] }] })))).name,
    "InvalidParameterValue",
  );
});

/** A running instance of `fake` in `zone`. */
async function runningIn(
  f: Awaited<ReturnType<typeof fake>>,
  zone: string,
  over: Partial<RunInstancesCommandInput> = {},
): Promise<string> {
  const id = (await f.client.send(launch({ Placement: { AvailabilityZone: zone }, ...over }))).Instances![0]!
    .InstanceId!;
  f.booted.get(id)!();
  await eventually("running", () => f.ec2.instances().find((i) => i.id === id)?.state === "running");
  return id;
}
const volume = (over: Partial<CreateVolumeCommandInput> = {}): CreateVolumeCommand =>
  new CreateVolumeCommand({ AvailabilityZone: `${region}a`, Size: 1, VolumeType: "gp3", ...over });
async function describeVolume(client: EC2Client, id: string): Promise<Volume> {
  return (await client.send(new DescribeVolumesCommand({ VolumeIds: [id] }))).Volumes![0]!;
}
/** Waits for the volume's state (and its attachment's, if given). */
const volumeIn = (client: EC2Client, id: string, state: string, attachment?: string): Promise<Volume> =>
  eventually(`${id} ${state}${attachment ? `/${attachment}` : ""}`, async () => {
    const v = await describeVolume(client, id);
    return v.State === state && v.Attachments?.[0]?.State === attachment ? v : undefined;
  });

test("CreateVolume: creating, then available, with the type, size, IOPS, throughput, encryption and tags asked; a ClientToken gives the same volume", async (t) => {
  const { ec2, client } = await fake(t);
  const out = await client.send(
    volume({
      Size: 20,
      Iops: 4000,
      Throughput: 250,
      Encrypted: true,
      KmsKeyId: "alias/steward",
      TagSpecifications: [{ ResourceType: "volume", Tags: [{ Key: "steward:storage", Value: "data/0" }] }],
      ClientToken: "vol-token-1",
    }),
  );
  t.regex(out.VolumeId!, /^vol-[0-9a-f]{17}$/);
  t.is(out.State, "creating");
  t.like(out, { Size: 20, VolumeType: "gp3", Iops: 4000, Throughput: 250, Encrypted: true, KmsKeyId: "alias/steward" });
  t.is(out.AvailabilityZone, `${region}a`);
  t.deepEqual(out.Tags, [{ Key: "steward:storage", Value: "data/0" }]);
  const available = await volumeIn(client, out.VolumeId!, "available");
  t.deepEqual(available.Attachments, []);
  t.true(available.CreateTime instanceof Date);
  // The same request with the same token: the same volume, not a second one; changed: refused.
  const again = await client.send(
    volume({
      Size: 20,
      Iops: 4000,
      Throughput: 250,
      Encrypted: true,
      KmsKeyId: "alias/steward",
      TagSpecifications: [{ ResourceType: "volume", Tags: [{ Key: "steward:storage", Value: "data/0" }] }],
      ClientToken: "vol-token-1",
    }),
  );
  t.is(again.VolumeId, out.VolumeId);
  t.is(
    (await failure(client.send(volume({ Size: 21, ClientToken: "vol-token-1" })))).name,
    "IdempotentParameterMismatch",
  );
  // Defaults: gp2 without a type; gp3 gets 3000 IOPS and 125 MiB/s; not encrypted.
  const plain = await client.send(new CreateVolumeCommand({ AvailabilityZone: `${region}b`, Size: 1 }));
  t.like(plain, { VolumeType: "gp2", Encrypted: false });
  t.is(plain.Iops, undefined);
  t.like(await client.send(volume()), { Iops: 3000, Throughput: 125 });
  t.like(await client.send(volume({ VolumeType: "io2", Size: 4, Iops: 4000 })), { Iops: 4000, VolumeType: "io2" });
  const made = ec2.volumes().length;

  // Each misuse with EC2's code, and nothing made.
  const refused: [Partial<CreateVolumeCommandInput>, string, RegExp][] = [
    [{ AvailabilityZone: undefined }, "MissingParameter", /AvailabilityZone/],
    [{ AvailabilityZone: "us-east-1a" }, "InvalidZone.NotFound", /us-east-1a/],
    [{ Size: undefined }, "MissingParameter", /size/],
    [{ SnapshotId: "snap-0123456789abcdef0" }, "InvalidSnapshot.NotFound", /snap-/],
    [{ VolumeType: "gp9" as never }, "InvalidParameterValue", /volumeType is invalid/],
    [{ Size: 16385 }, "InvalidParameterValue", /too large for volume type gp3; maximum is 16384GiB/],
    [{ VolumeType: "st1", Size: 100 }, "InvalidParameterValue", /too small for volume type st1; minimum is 125GiB/],
    [{ VolumeType: "standard", Size: 1025 }, "InvalidParameterValue", /maximum is 1024GiB/],
    [{ VolumeType: "io2", Size: 65537, Iops: 100 }, "InvalidParameterValue", /maximum is 65536GiB/],
    [{ VolumeType: "gp2", Iops: 3000 }, "InvalidParameterCombination", /iops is not supported for gp2/],
    [{ VolumeType: "io1", Size: 10 }, "MissingParameter", /iops must be specified for io1/],
    [
      { VolumeType: "io1", Size: 10, Iops: 1000 },
      "InvalidParameterValue",
      /ratio of 100\.0 is too high; maximum is 50/,
    ],
    [{ Iops: 20000, Size: 100 }, "InvalidParameterValue", /iops of 20000 is out of range for gp3/],
    [{ VolumeType: "st1", Size: 125, Throughput: 200 }, "InvalidParameterCombination", /throughput/],
    [{ Throughput: 2000 }, "InvalidParameterValue", /Throughput of 2000/],
    [{ KmsKeyId: "alias/x" }, "InvalidParameterDependency", /KmsKeyId requires the parameter Encrypted/],
    [
      { TagSpecifications: [{ ResourceType: "instance", Tags: [{ Key: "a", Value: "b" }] }] },
      "InvalidParameterValue",
      /'instance' is not a valid taggable resource type/,
    ],
  ];
  for (const [over, code, message] of refused) {
    const err = await failure(client.send(volume(over)));
    t.is(err.name, code, JSON.stringify(over));
    t.regex(err.message, message);
    t.is(err.status, 400);
  }
  t.is(ec2.volumes().length, made, "no volume made by a refused request");
});

test("AttachVolume and DetachVolume: attaching, attached once the instance sees it, detaching, available once it lets go; each misuse with EC2's code", async (t) => {
  const seen: string[] = [];
  let busy = false;
  const f = await fake(t, {
    onAttach: async (v, i) => {
      seen.push(`attach ${v.id} ${i.id} ${v.attachment!.device}`);
    },
    onDetach: async (v, i, o) => {
      if (busy) throw new Error("target is busy");
      seen.push(`detach ${v.id} ${i.id} force=${o.force} terminated=${o.terminated}`);
    },
  });
  const { client } = f;
  const instance = await runningIn(f, `${region}a`);
  const other = await runningIn(f, `${region}a`);
  const elsewhere = await runningIn(f, `${region}b`);
  const id = (await client.send(volume())).VolumeId!;
  await volumeIn(client, id, "available");
  const zone = await failure(
    client.send(new AttachVolumeCommand({ VolumeId: id, InstanceId: elsewhere, Device: "/dev/sdf" })),
  );
  t.is(zone.name, "InvalidVolume.ZoneMismatch");
  t.regex(zone.message, new RegExp(`${id}.*same availability zone.*${elsewhere}`));
  // The root volume is /dev/xvda: /dev/sda is the same attachment point.
  const root = await failure(
    client.send(new AttachVolumeCommand({ VolumeId: id, InstanceId: instance, Device: "/dev/sda" })),
  );
  t.is(root.name, "InvalidParameterValue");
  t.regex(root.message, /Attachment point \/dev\/sda is already in use/);
  t.regex(
    (await failure(client.send(new AttachVolumeCommand({ VolumeId: id, InstanceId: instance, Device: "floppy" }))))
      .message,
    /Attachment point floppy is not valid/,
  );
  t.is(
    (await failure(client.send(new DetachVolumeCommand({ VolumeId: id })))).name,
    "IncorrectState",
    "not attached: nothing to detach",
  );

  const attaching = await client.send(
    new AttachVolumeCommand({ VolumeId: id, InstanceId: instance, Device: "/dev/sdf" }),
  );
  t.like(attaching, { VolumeId: id, InstanceId: instance, Device: "/dev/sdf", State: "attaching" });
  const attached = await volumeIn(client, id, "in-use", "attached");
  t.like(attached.Attachments![0], { InstanceId: instance, Device: "/dev/sdf", DeleteOnTermination: false });
  t.deepEqual(seen, [`attach ${id} ${instance} /dev/sdf`]);
  const mapping = (await client.send(new DescribeInstancesCommand({ InstanceIds: [instance] }))).Reservations![0]!
    .Instances![0]!.BlockDeviceMappings!;
  t.deepEqual(
    mapping.map((m) => [m.DeviceName, m.Ebs?.Status]),
    [
      ["/dev/xvda", "attached"],
      ["/dev/sdf", "attached"],
    ],
    "the instance lists it beside its root volume",
  );
  t.is(mapping[1]!.Ebs?.VolumeId, id);
  // In use: not attached twice, not deleted; its device name taken (/dev/xvdf is /dev/sdf).
  t.is(
    (await failure(client.send(new AttachVolumeCommand({ VolumeId: id, InstanceId: other, Device: "/dev/sdg" })))).name,
    "VolumeInUse",
  );
  t.is((await failure(client.send(new DeleteVolumeCommand({ VolumeId: id })))).name, "VolumeInUse");
  const second = (await client.send(volume())).VolumeId!;
  await volumeIn(client, second, "available");
  t.regex(
    (
      await failure(
        client.send(new AttachVolumeCommand({ VolumeId: second, InstanceId: instance, Device: "/dev/xvdf" })),
      )
    ).message,
    /Attachment point \/dev\/xvdf is already in use/,
  );
  t.is(
    (await failure(client.send(new DetachVolumeCommand({ VolumeId: id, InstanceId: other })))).name,
    "InvalidAttachment.NotFound",
  );

  // Still in use on the instance (mounted): detaching until it lets go, as on EC2.
  busy = true;
  const detaching = await client.send(new DetachVolumeCommand({ VolumeId: id, InstanceId: instance }));
  t.like(detaching, { VolumeId: id, State: "detaching" });
  await new Promise((r) => setTimeout(r, 300));
  t.like((await describeVolume(client, id)).Attachments![0], { State: "detaching" });
  busy = false;
  await client.send(new DetachVolumeCommand({ VolumeId: id, Force: true }));
  const free = await volumeIn(client, id, "available");
  t.deepEqual(free.Attachments, []);
  t.is(seen.at(-1), `detach ${id} ${instance} force=true terminated=false`);
  // Free again: it attaches elsewhere in its zone.
  await client.send(new AttachVolumeCommand({ VolumeId: id, InstanceId: other, Device: "/dev/sdf" }));
  await volumeIn(client, id, "in-use", "attached");

  // A pending instance takes no volume.
  const pending = (await client.send(launch({ Placement: { AvailabilityZone: `${region}a` } }))).Instances![0]!
    .InstanceId!;
  t.is(
    (await failure(client.send(new AttachVolumeCommand({ VolumeId: second, InstanceId: pending, Device: "/dev/sdh" }))))
      .name,
    "IncorrectInstanceState",
  );
});

test("AttachVolume of a volume still creating is IncorrectState: callers wait for available", async (t) => {
  // Slow enough that the attach right after CreateVolume finds it creating, on a loaded machine too.
  const f = await fake(t, { volumeTransitionMs: 5000 });
  const { client } = f;
  const instance = await runningIn(f, `${region}a`);
  const id = (await client.send(volume())).VolumeId!;
  t.is(
    (await failure(client.send(new AttachVolumeCommand({ VolumeId: id, InstanceId: instance, Device: "/dev/sdf" }))))
      .name,
    "IncorrectState",
  );
});

test("DeleteVolume: deleting, then gone; DescribeVolumes by id, by filters and by pages", async (t) => {
  // Slow enough state changes that "deleting" is seen before the volume is gone.
  const { ec2, client } = await fake(t, { volumeTransitionMs: 1000 });
  const ids: string[] = [];
  for (const [n, zone] of ["a", "b", "a", "c", "a", "b"].entries())
    ids.push(
      (
        await client.send(
          volume({
            AvailabilityZone: `${region}${zone}`,
            Size: n + 1,
            TagSpecifications: [{ ResourceType: "volume", Tags: [{ Key: "steward:storage", Value: `data/${n}` }] }],
          }),
        )
      ).VolumeId!,
    );
  for (const id of ids) await volumeIn(client, id, "available");
  const byFilter = async (Name: string, Values: string[]) =>
    (await client.send(new DescribeVolumesCommand({ Filters: [{ Name, Values }] }))).Volumes!.map((v) => v.VolumeId);
  t.deepEqual(await byFilter("availability-zone", [`${region}a`]), [ids[0], ids[2], ids[4]]);
  t.deepEqual(await byFilter("tag:steward:storage", ["data/1"]), [ids[1]]);
  t.deepEqual(await byFilter("tag:steward:storage", ["data/*"]), ids);
  t.deepEqual(await byFilter("volume-id", [ids[3]!]), [ids[3]]);
  t.deepEqual(await byFilter("status", ["in-use"]), []);
  t.deepEqual(await byFilter("attachment.instance-id", ["i-0123456789abcdef0"]), []);
  t.is((await failure(byFilter("colour", ["red"]))).name, "InvalidParameterValue");
  const first = await client.send(new DescribeVolumesCommand({ MaxResults: 5 }));
  const rest = await client.send(new DescribeVolumesCommand({ MaxResults: 5, NextToken: first.NextToken }));
  t.deepEqual(
    [...first.Volumes!, ...rest.Volumes!].map((v) => v.VolumeId),
    ids,
  );
  t.is(
    (await failure(client.send(new DescribeVolumesCommand({ VolumeIds: [ids[0]!], MaxResults: 5 })))).name,
    "InvalidParameterCombination",
  );
  t.is((await failure(client.send(new DescribeVolumesCommand({ MaxResults: 501 })))).name, "InvalidParameterValue");

  await client.send(new DeleteVolumeCommand({ VolumeId: ids[0] }));
  t.is((await describeVolume(client, ids[0]!)).State, "deleting");
  await client.send(new DeleteVolumeCommand({ VolumeId: ids[0] }));
  const gone = await eventually("deleted", async () => {
    const err = await failure(client.send(new DescribeVolumesCommand({ VolumeIds: [ids[0]!] }))).catch(() => undefined);
    return err;
  });
  t.deepEqual([gone.name, gone.message], ["InvalidVolume.NotFound", `The volume '${ids[0]}' does not exist.`]);
  t.is((await failure(client.send(new DeleteVolumeCommand({ VolumeId: ids[0] })))).name, "InvalidVolume.NotFound");
  t.is((await failure(client.send(new DeleteVolumeCommand({ VolumeId: "disk-1" })))).name, "InvalidVolumeID.Malformed");
  t.is(ec2.volumes().length, 5);
  // CreateTags takes volume ids too.
  await client.send(new CreateTagsCommand({ Resources: [ids[1]!], Tags: [{ Key: "role", Value: "db" }] }));
  t.deepEqual(await byFilter("tag:role", ["db"]), [ids[1]]);
});

test("terminating an instance deletes its DeleteOnTermination volumes and detaches the others, which are kept", async (t) => {
  const detached: string[] = [];
  const f = await fake(t, {
    onDetach: async (v, _i, o) => {
      detached.push(`${v.id} terminated=${o.terminated}`);
    },
  });
  const { ec2, client } = f;
  const instance = await runningIn(f, `${region}c`, {
    BlockDeviceMappings: [{ DeviceName: "/dev/sdb", Ebs: { VolumeSize: 2, DeleteOnTermination: false } }],
    TagSpecifications: [{ ResourceType: "volume", Tags: [{ Key: "launched", Value: "yes" }] }],
  });
  const launched = (
    await client.send(new DescribeVolumesCommand({ Filters: [{ Name: "attachment.instance-id", Values: [instance] }] }))
  ).Volumes!;
  t.deepEqual(
    launched.map((v) => [
      v.Attachments![0]!.Device,
      v.Size,
      v.Attachments![0]!.DeleteOnTermination,
      v.Tags?.[0]?.Value,
    ]),
    [
      ["/dev/xvda", 8, true, "yes"],
      ["/dev/sdb", 2, false, "yes"],
    ],
  );
  const data = (await client.send(volume({ AvailabilityZone: `${region}c` }))).VolumeId!;
  await volumeIn(client, data, "available");
  await client.send(new AttachVolumeCommand({ VolumeId: data, InstanceId: instance, Device: "/dev/sdf" }));
  await volumeIn(client, data, "in-use", "attached");
  await client.send(new TerminateInstancesCommand({ InstanceIds: [instance] }));
  await eventually("terminated", () => ec2.instances().find((i) => i.id === instance)?.state === "terminated");
  const left = new Map(ec2.volumes().map((v) => [v.id, v]));
  t.false(left.has(launched[0]!.VolumeId!), "the root volume went with the instance");
  t.is(
    left.get(launched[1]!.VolumeId!)?.state,
    "available",
    "a volume launched with DeleteOnTermination false is kept",
  );
  t.is(left.get(data)?.state, "available", "an attached volume is kept");
  t.true(detached.includes(`${data} terminated=true`));
});

let lab: TestLab | undefined;
test.after.always(async () => {
  await lab?.close();
});
const theLab = async (): Promise<TestLab> => (lab ??= await TestLab.create(0));

/** A fake EC2 whose instances boot as test hosts, stopped when the test ends. */
async function bootingEc2(
  t: ExecutionContext,
): Promise<{ boot: ReturnType<typeof fakeEc2Boot>; ec2: FakeEc2; client: ReturnType<typeof ec2ClientFor> }> {
  const boot = fakeEc2Boot(await theLab());
  const ec2 = new FakeEc2({ region, credentials, boot });
  await ec2.start();
  const client = ec2ClientFor(ec2);
  t.teardown(async () => {
    client.destroy();
    await ec2.stop();
  });
  return { boot, ec2, client };
}

asRoot(
  "runCloudInit writes files (b64, text, gzip'd user data) and runs runcmd in order on a test host; a failing command throws",
  async (t) => {
    const host = await (await theLab()).addHost();
    const script = '#!/bin/sh\necho "it\'s $1"\n';
    const userData = gzipSync(
      Buffer.from(
        [
          "#cloud-config",
          "write_files:",
          "  - path: /opt/steward/bin/greet",
          "    encoding: b64",
          `    content: ${Buffer.from(script).toString("base64")}`,
          "    permissions: '0755'",
          "    owner: root:root",
          "  - path: /etc/steward/plain.conf",
          "    content: |",
          "      a = 1",
          "runcmd:",
          '  - [ /opt/steward/bin/greet, "a quote \' and $HOME" ]',
          "  - cd /var/lib/steward && /opt/steward/bin/greet done > greet.out",
          '  - test "$(pwd)" = /var/lib/steward && echo same-shell > cwd.out',
          "",
        ].join("\n"),
      ),
    );
    await runCloudInit(host, userData);
    t.is((await host.exec("cat /opt/steward/bin/greet")).stdout, script);
    t.is((await host.exec("stat -c %a /opt/steward/bin/greet /etc/steward/plain.conf")).stdout, "755\n644\n");
    t.is((await host.exec("cat /etc/steward/plain.conf")).stdout, "a = 1\n");
    t.is(
      (await host.exec("cat /var/lib/steward/greet.out /var/lib/steward/cwd.out")).stdout,
      "it's done\nsame-shell\n",
    );
    t.regex((await host.exec(`cat ${CLOUD_INIT_OUTPUT_LOG}`)).stdout, /it's a quote ' and \$HOME\n/);
    // The file is the host's own: another host does not see it.
    const other = await lab!.addHost();
    t.not((await other.exec("test -e /opt/steward/bin/greet")).code, 0);

    const failing = Buffer.from(
      "#cloud-config\nruncmd:\n  - echo before\n  - echo oops >&2; exit 3\n  - touch /var/lib/steward/after\n",
    );
    const err = await t.throwsAsync(runCloudInit(other, failing));
    t.regex(err!.message, /runcmd item 2 .*exit code 3[\s\S]*oops/);
    t.not((await other.exec("test -e /var/lib/steward/after")).code, 0);
    await t.throwsAsync(runCloudInit(other, Buffer.from("#!/bin/sh\necho hi\n")), { message: /unsupported user-data/ });
  },
);

asRoot(
  "the bootstrap user data (cloud-init's SSH module) gives the instance the host key made for it and lets the bootstrap key in as root",
  async (t) => {
    const { boot, client } = await bootingEc2(t);
    const clientKey = ssh.generateSshKeyPair("steward-bootstrap");
    const hostKey = ssh.generateSshKeyPair("steward-host");
    const userData = sshBootstrapUserData({ authorizedKey: clientKey.publicKey, hostKey });
    const id = (await client.send(launch({ UserData: userData.toString("base64") }))).Instances![0]!.InstanceId!;
    const address = await eventually("running with an address", async () => {
      const i = (await client.send(new DescribeInstancesCommand({ InstanceIds: [id] }))).Reservations?.[0]
        ?.Instances?.[0];
      return i?.State?.Name === "running" ? i.PrivateIpAddress : undefined;
    });
    const entry = boot.hosts.get(id)!;
    t.is(entry.error, undefined);
    t.is(entry.host.hostKeyFingerprint, hostKey.fingerprint);
    // The key pinned before the instance existed is the one sshd offers, and the bootstrap key is root's.
    const session = await ssh.SshSession.connect({
      host: address,
      user: "root",
      privateKey: clientKey.privateKey,
      hostKey: hostKey.fingerprint,
    });
    t.is((await session.run("id -u")).stdout.trim(), "0");
    session.close();
    // Any other pin is refused: the host key is verified, not trusted.
    const wrong = ssh.generateSshKeyPair("someone-else");
    const refused = await t.throwsAsync(
      ssh.SshSession.connect(
        { host: address, user: "root", privateKey: clientKey.privateKey, hostKey: wrong.fingerprint },
        { attempts: 1 },
      ),
    );
    t.regex(refused!.message, /host key of .* does not match/);

    // cloud-init's default (disable_root true) gives root none of the keys: the same key only logs in as the default user.
    const plain = Buffer.from(`#cloud-config\nssh_authorized_keys:\n  - ${clientKey.publicKey}\n`);
    const other = (await client.send(launch({ UserData: plain.toString("base64") }))).Instances![0]!.InstanceId!;
    const otherAddress = await eventually("second instance running", async () => {
      const i = (await client.send(new DescribeInstancesCommand({ InstanceIds: [other] }))).Reservations?.[0]
        ?.Instances?.[0];
      return i?.State?.Name === "running" ? i.PrivateIpAddress : undefined;
    });
    const otherHost = boot.hosts.get(other)!.host;
    await t.throwsAsync(
      ssh.SshSession.connect(
        { host: otherAddress, user: "root", privateKey: clientKey.privateKey, hostKey: otherHost.hostKeyFingerprint },
        { attempts: 1 },
      ),
    );
    const asUser = await ssh.SshSession.connect({
      host: otherAddress,
      user: SUDO_USER,
      privateKey: clientKey.privateKey,
      hostKey: otherHost.hostKeyFingerprint,
    });
    asUser.close();
    // Host key types the test hosts cannot make are refused, not ignored.
    t.throws(() => parseCloudConfig(Buffer.from("#cloud-config\nssh_keys:\n  rsa_private: x\n")), {
      message: /rsa_private are not implemented/,
    });
  },
);

asRoot(
  "fakeEc2Boot: an instance is a new test host that runs its user data; terminating it kills the host",
  async (t) => {
    const { boot, ec2, client } = await bootingEc2(t);
    const userData = "#cloud-config\nruncmd:\n  - hostname > /var/lib/steward/booted\n";
    const id = (await client.send(launch({ UserData: Buffer.from(userData).toString("base64") }))).Instances![0]!
      .InstanceId!;
    const running = await eventually(
      "running",
      async () => {
        const i = (await client.send(new DescribeInstancesCommand({ InstanceIds: [id] }))).Reservations?.[0]
          ?.Instances?.[0];
        return i?.State?.Name === "running" ? i : undefined;
      },
      60_000,
    );
    const booted = boot.hosts.get(id)!;
    t.is(running.PrivateIpAddress, booted.host.ip);
    await booted.cloudInit;
    t.is(booted.error, undefined);
    t.is((await booted.host.exec("cat /var/lib/steward/booted")).stdout, `${booted.host.name}\n`);
    await client.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
    await eventually("terminated", async () => ec2.instances()[0]!.state === "terminated");
    t.deepEqual(await booted.host.processes(), []);
  },
);

/** An HTTPS request as given, for requests the SDK would not send. */
function send(
  ca: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const host = headers.host ?? headers.Host!;
    const [hostname, port] = host.split(":");
    const req = request({ hostname, port: Number(port), method, path, headers, ca }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** SHA-256 and HMAC-SHA256 for the SDK's signer (its Checksum interface). */
type SourceData = string | ArrayBuffer | ArrayBufferView;
const bytes = (d: SourceData): BinaryLike =>
  typeof d === "string"
    ? d
    : d instanceof ArrayBuffer
      ? new Uint8Array(d)
      : new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
class Sha256 {
  private h: Hash | Hmac;
  constructor(private readonly secret?: SourceData) {
    this.h = this.fresh();
  }
  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash("sha256") : createHmac("sha256", bytes(this.secret));
  }
  update(data: SourceData): void {
    this.h.update(bytes(data));
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.h.digest()));
  }
  reset(): void {
    this.h = this.fresh();
  }
}
