/**
 * Machine constraints (Juju's `cores=2 mem=4G` syntax): the parser and its errors, how they merge,
 * which substrates take them, the AWS instance-type choice, and the aws broker turning them into
 * RunInstances' InstanceType and root BlockDeviceMapping against the FAKE EC2 endpoint
 * (test/harness/fake-ec2.ts) through the real @aws-sdk/client-ec2. No root needed: the fake's
 * instances boot nothing here (the enrolment path is aws-substrate.test.ts's).
 */
import test from "ava";
import { randomUUID } from "node:crypto";
import { DescribeInstancesCommand } from "@aws-sdk/client-ec2";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Constraints, MachineStatusView, ModelStatus } from "../api";
import { formatStatusTabular, saveClientConfig } from "../cli";
import { cliRunner } from "./harness/cli";
import {
  DeployRequest,
  OPERATOR_HASH_PREFIX,
  StewardError,
  constraintsProblem,
  formatConstraints,
  mergeConstraints,
  parseConstraints,
  parseRequest,
} from "../api";
import type { MachineSpec } from "../substrates";
import { aws } from "../substrates";
import type { FakeImage } from "./harness/fake-ec2";
import { FakeEc2, ec2ClientFor } from "./harness/fake-ec2";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";

// ---- the parser ----

test("constraints parse as Juju writes them: sizes in MiB, M/G/T suffixes, bare numbers MiB", (t) => {
  t.deepEqual(parseConstraints("cores=2 mem=4G"), { cores: 2, mem: 4096 });
  t.deepEqual(parseConstraints("  mem=512  root-disk=1.5T arch=arm64 "), {
    mem: 512,
    rootDisk: 1.5 * 1024 * 1024,
    arch: "arm64",
  });
  t.deepEqual(parseConstraints("mem=1536M root-disk=20G"), { mem: 1536, rootDisk: 20480 });
  t.deepEqual(parseConstraints("instance-type=m7g.2xlarge arch=arm64"), { instanceType: "m7g.2xlarge", arch: "arm64" });
  t.deepEqual(parseConstraints(""), {});
  t.is(
    formatConstraints(parseConstraints("root-disk=20480 mem=1536 cores=4 arch=amd64")),
    "arch=amd64 cores=4 mem=1536M root-disk=20G",
  );
  for (const text of ["cores=2 mem=4G", "arch=arm64 mem=1T root-disk=100G", "instance-type=t3.large"])
    t.is(formatConstraints(parseConstraints(text)), text, "round trip");
});

test("a bad key or value is refused with a 400 naming it and what is accepted", (t) => {
  const cases: [string, RegExp, string?][] = [
    [
      "cpus=2",
      /^constraints: unknown key "cpus" \(accepted keys: arch, cores, mem, root-disk, instance-type, e\.g\. "cores=2 mem=4G root-disk=20G"\)$/,
      "cpus",
    ],
    [
      "mem=4Q",
      /^constraints: mem "4Q" is not a size such as 512M, 4G or 1\.5T \(a bare number is MiB; at most 64T\)$/,
      "mem",
    ],
    ["root-disk=-1G", /^constraints: root-disk "-1G" is not a size/, "root-disk"],
    ["mem=0", /^constraints: mem "0" is not a size/, "mem"],
    ["cores=1.5", /^constraints: cores "1\.5" is not a whole number of cores from 1 to 1024$/, "cores"],
    ["cores=0", /^constraints: cores "0" is not a whole number/, "cores"],
    ["arch=i386", /^constraints: arch "i386" is not one of amd64, arm64$/, "arch"],
    [
      "instance-type=T3 Large",
      /^constraints: instance-type "T3" is not an instance type such as t3\.medium$/,
      "instance-type",
    ],
    ["cores=2 cores=4", /^constraints: "cores" is given twice$/, "cores"],
    ["cores", /^constraints: "cores" is not key=value \(accepted keys: /],
    ["mem=", /^constraints: "mem" has no value$/, "mem"],
    ["spaces=db", /^constraints: "spaces" is a Juju constraint Steward does not support \(accepted keys: /, "spaces"],
    [
      "instance-type=t3.large cores=4",
      /^constraints: instance-type says the cores and memory itself: give instance-type or cores\/mem, not both$/,
      "instance-type",
    ],
  ];
  for (const [text, message, key] of cases) {
    const err = t.throws(() => parseConstraints(text), undefined, text) as StewardError;
    t.true(StewardError.isInstance(err), text);
    t.is(err.code, "invalid-request", text);
    t.regex(err.message, message, text);
    t.deepEqual(err.details, { field: "constraints", ...(key ? { key } : {}) }, text);
  }
});

test("in a request, bad constraints are named in the request's error", (t) => {
  const err = t.throws(() =>
    parseRequest(
      DeployRequest,
      { name: "web", operator: `${OPERATOR_HASH_PREFIX}${"a".repeat(64)}`, constraints: "cores=two" },
      "deploy",
    ),
  ) as StewardError;
  t.is(err.code, "invalid-request");
  t.is(err.message, `invalid deploy: "constraints" cores "two" is not a whole number of cores from 1 to 1024`);
  t.deepEqual(
    parseRequest(
      DeployRequest,
      { name: "web", operator: `${OPERATOR_HASH_PREFIX}${"a".repeat(64)}`, constraints: "mem=2G" },
      "deploy",
    ).constraints,
    { mem: 2048 },
  );
});

test("merging: the application's keys win, and conflicting keys of the model's go (Juju's rule)", (t) => {
  t.deepEqual(mergeConstraints({ cores: 2, mem: 4096 }, { mem: 8192 }), { cores: 2, mem: 8192 });
  t.deepEqual(mergeConstraints({ cores: 2, mem: 4096, rootDisk: 10240 }, { instanceType: "m6i.large" }), {
    rootDisk: 10240,
    instanceType: "m6i.large",
  });
  t.deepEqual(mergeConstraints({ instanceType: "m6i.large", arch: "amd64" }, { cores: 8 }), {
    arch: "amd64",
    cores: 8,
  });
  t.deepEqual(mergeConstraints(undefined, { cores: 1 }), { cores: 1 });
  t.deepEqual(mergeConstraints({ cores: 1 }, undefined), { cores: 1 });
});

test("which substrates take which constraints", (t) => {
  t.is(constraintsProblem("aws", { cores: 2, rootDisk: 1, arch: "arm64" }), undefined);
  t.is(constraintsProblem("vsphere", { cores: 2, mem: 2048 }), undefined);
  t.is(
    constraintsProblem("vsphere", { cores: 2, rootDisk: 1, instanceType: "t3.large" }),
    "constraints: root-disk, instance-type are not supported on vsphere (a VM is its template's architecture and disk): give cores and mem",
  );
  t.is(
    constraintsProblem("local", { cores: 2 }),
    "constraints: they size the machines a cloud makes (aws and vsphere models); local machines take none",
  );
  t.is(constraintsProblem("ssh", {}), undefined, "none is always fine");
});

// ---- the AWS instance-type table ----

test("aws: the smallest listed instance type that fits, the model's own when it fits, an explicit one as given", (t) => {
  const pick = (c: Constraints, fallback = "t3.small", imageArch?: "amd64" | "arm64"): string =>
    aws.instanceTypeFor(c, fallback, imageArch).name;
  t.is(pick({}), "t3.small", "no constraints: the model's type");
  t.is(pick({ cores: 2, mem: 4096 }), "t3.medium");
  t.is(pick({ mem: 1024 }), "t3.small", "the model's type fits: kept");
  t.is(pick({ mem: 1024 }, "c5.large"), "t3.micro", "the model's type is not listed: the smallest that fits");
  t.is(
    pick({ cores: 2, mem: 4096 }, "t3.small", "arm64"),
    "t4g.medium",
    "the image's architecture when arch is not given",
  );
  t.is(pick({ cores: 1, arch: "arm64" }), "t4g.nano", "least memory first");
  t.is(pick({ cores: 16 }), "m6i.4xlarge");
  t.is(pick({ cores: 3, mem: 10_000 }), "t3.xlarge", "burstable before fixed among equals");
  t.is(pick({ mem: 4096 }, "m6i.large"), "m6i.large", "the model's type fits: kept");
  t.is(
    pick({ mem: 4096 }, "c5.large"),
    "t3.medium",
    "the model's type is not listed: its size is unknown; amd64 unless said",
  );
  t.is(pick({ instanceType: "c7i.metal-24xl" }), "c7i.metal-24xl", "an explicit type, listed or not");
  t.is(pick({ instanceType: "t3.large", rootDisk: 20480 }), "t3.large");
  t.is(pick({ cores: 96, mem: 384 * 1024 }), "m6i.24xlarge");

  const none = t.throws(() => aws.instanceTypeFor({ cores: 200 }, "t3.small")) as StewardError;
  t.is(none.code, "invalid-request");
  t.is(
    none.message,
    `constraints: no instance type Steward knows fits "arch=amd64 cores=200" (the largest amd64 one: m6i.32xlarge, 128 cores, 512G): ask for less, or name a type with instance-type=`,
  );
  const arm = t.throws(() => aws.instanceTypeFor({ cores: 96 }, "t3.small", "arm64")) as StewardError;
  t.regex(arm.message, /fits "arch=arm64 cores=96" \(the largest arm64 one: m7g\.16xlarge, 64 cores, 256G\)/);
  const wrongArch = t.throws(() =>
    aws.instanceTypeFor({ instanceType: "m7g.large", arch: "amd64" }, "t3.small"),
  ) as StewardError;
  t.is(wrongArch.message, "constraints: instance-type m7g.large is arm64, not amd64");

  // The table itself: names unique, figures positive, each family growing with its size.
  const names = aws.INSTANCE_TYPES.map((i) => i.name);
  t.is(new Set(names).size, names.length);
  t.deepEqual(aws.instanceTypeInfo("m7g.medium"), { name: "m7g.medium", arch: "arm64", cores: 1, mem: 4096 });
  t.deepEqual(aws.instanceTypeInfo("t3.nano"), { name: "t3.nano", arch: "amd64", cores: 2, mem: 512 });
});

// ---- the aws broker against the fake EC2 ----

const region = "eu-west-1";
const awsKey = { accessKeyId: "AKIAFAKEEC2TEST00002", secretAccessKey: "fake-secret-for-the-constraints-test-0002" };
const images: FakeImage[] = [
  {
    id: "ami-0aaaaaaaaaaaaaaa1",
    architecture: "x86_64",
    rootDeviceName: "/dev/xvda",
    rootDeviceType: "ebs",
    rootSnapshotGiB: 8,
  },
  {
    id: "ami-0bbbbbbbbbbbbbbb2",
    architecture: "arm64",
    rootDeviceName: "/dev/sda1",
    rootDeviceType: "ebs",
    rootSnapshotGiB: 10,
  },
  {
    id: "ami-0ccccccccccccccc3",
    architecture: "x86_64",
    rootDeviceName: "/dev/sda1",
    rootDeviceType: "instance-store",
  },
];
let fake: FakeEc2;
let tc: TestController;
const broker = new aws.AwsMachines();
const controllerUuid = randomUUID();
const model = randomUUID();

test.before(async () => {
  fake = new FakeEc2({
    region,
    credentials: awsKey,
    images,
    boot: () => Promise.resolve({ privateIp: "127.0.0.2", stop: () => Promise.resolve() }),
  });
  await fake.start();
  tc = await startTestController();
});
test.after.always(async () => {
  broker.close();
  await tc?.close();
  await fake?.stop();
});

const placement = (imageId: string, instanceType = "t3.small"): aws.AwsPlacement => ({
  settings: { region, imageId, instanceType, endpoint: fake.endpoint, endpointCaCert: fake.caCert },
  credentials: awsKey,
  controllerUuid,
});
function specFor(
  machine: string,
  imageId: string,
  constraints?: Constraints,
): MachineSpec<aws.AwsPlacement> & { issued: number } {
  const spec = {
    model,
    machine,
    placement: placement(imageId),
    issued: 0,
    ...(constraints ? { constraints } : {}),
    controller: { addresses: ["127.0.0.1:1"], caCert: "" },
    issueCredential: () => Promise.reject(new Error("cloud machines enrol")),
    issueEnrolment: () => {
      spec.issued++;
      return Promise.resolve(`token-${machine}`);
    },
  };
  return spec;
}
const runCalls = () => fake.calls.filter((c) => c.action === "RunInstances");

test.serial("aws: cores and mem choose the instance type; root-disk resizes the image's own root device", async (t) => {
  const res = await broker.startMachine(specFor("0", images[0]!.id, parseConstraints("cores=2 mem=4G root-disk=20G")));
  t.true(res.changed);
  t.deepEqual(res.hardware, { arch: "amd64", cores: 2, mem: 4096, rootDisk: 20480, instanceType: "t3.medium" });
  const call = runCalls().at(-1)!.params;
  t.is(call.InstanceType, "t3.medium");
  t.is(call["BlockDeviceMapping.1.DeviceName"], "/dev/xvda", "the image's root device, as DescribeImages said");
  t.is(call["BlockDeviceMapping.1.Ebs.VolumeSize"], "20");
  t.is(call["BlockDeviceMapping.1.Ebs.DeleteOnTermination"], "true");
  t.false("BlockDeviceMapping.2.DeviceName" in call, "one mapping: no second volume");
  const i = fake.instances().find((x) => x.id === res.instanceId)!;
  t.is(i.instanceType, "t3.medium");
  t.deepEqual(
    i.volumes.map((v) => [v.deviceName, v.sizeGiB]),
    [["/dev/xvda", 20]],
    "the root volume is 20 GiB, no other volume",
  );

  // EC2 reports it so through the real SDK too.
  const ec2 = ec2ClientFor(fake);
  try {
    const described = (await ec2.send(new DescribeInstancesCommand({ InstanceIds: [res.instanceId] })))
      .Reservations![0]!.Instances![0]!;
    t.is(described.InstanceType, "t3.medium");
    t.is(described.RootDeviceName, "/dev/xvda");
    t.deepEqual(
      described.BlockDeviceMappings?.map((b) => b.DeviceName),
      ["/dev/xvda"],
    );
    t.regex(described.BlockDeviceMappings?.[0]?.Ebs?.VolumeId ?? "", /^vol-[0-9a-f]{17}$/);
  } finally {
    ec2.destroy();
  }
});

test.serial(
  "aws: an arm64 image gets an arm64 type; a round-up to whole GiB; an explicit instance type wins",
  async (t) => {
    const arm = await broker.startMachine(specFor("1", images[1]!.id, parseConstraints("mem=6G root-disk=10241M")));
    t.is(runCalls().at(-1)!.params.InstanceType, "t4g.large");
    t.is(runCalls().at(-1)!.params["BlockDeviceMapping.1.DeviceName"], "/dev/sda1");
    t.is(runCalls().at(-1)!.params["BlockDeviceMapping.1.Ebs.VolumeSize"], "11", "10241 MiB is rounded up to 11 GiB");
    t.deepEqual(arm.hardware, { arch: "arm64", cores: 2, mem: 8192, rootDisk: 11264, instanceType: "t4g.large" });

    const explicit = await broker.startMachine(specFor("2", images[0]!.id, parseConstraints("instance-type=c5.large")));
    const call = runCalls().at(-1)!.params;
    t.is(call.InstanceType, "c5.large");
    t.false("BlockDeviceMapping.1.DeviceName" in call, "no root-disk: the image's size");
    t.deepEqual(explicit.hardware, { arch: "amd64", instanceType: "c5.large" }, "an unlisted type: only what is known");

    const plain = await broker.startMachine(specFor("3", images[0]!.id));
    t.is(runCalls().at(-1)!.params.InstanceType, "t3.small", "no constraints: the model's instance type");
    t.deepEqual(plain.hardware, { arch: "amd64", cores: 2, mem: 2048, instanceType: "t3.small" });
    t.false(
      fake.calls.slice(-2).some((c) => c.action === "DescribeImages"),
      "and no image lookup",
    );
  },
);

test.serial("aws: constraints nothing can honour fail before a token is issued or anything is launched", async (t) => {
  const launchedBefore = fake.instances().length;
  const cases: [string, Constraints, RegExp][] = [
    [images[0]!.id, { cores: 200 }, /^constraints: no instance type Steward knows fits "arch=amd64 cores=200"/],
    [
      images[1]!.id,
      { cores: 96 },
      /^constraints: no instance type Steward knows fits "arch=arm64 cores=96" \(the largest arm64 one: m7g\.16xlarge/,
    ],
    [
      images[0]!.id,
      { instanceType: "m7g.large" },
      /^constraints: instance type m7g\.large is arm64, but image ami-0aaaaaaaaaaaaaaa1 is x86_64: ask for an amd64 type \(or arch=amd64\), or give the model an arm64 image$/,
    ],
    [
      images[1]!.id,
      { arch: "amd64", cores: 2 },
      /^constraints: instance type t3\.small is amd64, but image ami-0bbbbbbbbbbbbbbb2 is arm64: ask for an arm64 type/,
    ],
    [
      images[0]!.id,
      { rootDisk: 4096 },
      /^constraints: root-disk=4G is smaller than image ami-0aaaaaaaaaaaaaaa1's root volume \(8G\): ask for at least root-disk=8G$/,
    ],
    [
      images[2]!.id,
      { rootDisk: 40960 },
      /^constraints: root-disk needs an EBS-backed image; ami-0ccccccccccccccc3's root device is instance-store$/,
    ],
    ["ami-0ddddddddddddddd4", { cores: 2 }, /^image ami-0ddddddddddddddd4 was not found in eu-west-1/],
  ];
  for (const [imageId, c, message] of cases) {
    const spec = specFor("9", imageId, c);
    const err = await t.throwsAsync(broker.startMachine(spec));
    t.regex(err?.message ?? "", message, JSON.stringify(c));
    t.true(StewardError.isInstance(err) && err.code === "invalid-request", "a 400, as the request's fault");
    t.is(spec.issued, 0, "no enrolment token issued");
  }
  t.is(fake.instances().length, launchedBefore, "nothing launched");
});

test.serial("the fake EC2 refuses a root volume smaller than the image's snapshot, as EC2 does", async (t) => {
  const ec2 = ec2ClientFor(fake);
  try {
    const { RunInstancesCommand } = await import("@aws-sdk/client-ec2");
    const err = await t.throwsAsync(
      ec2.send(
        new RunInstancesCommand({
          ImageId: images[0]!.id,
          MinCount: 1,
          MaxCount: 1,
          BlockDeviceMappings: [{ DeviceName: "/dev/xvda", Ebs: { VolumeSize: 4 } }],
        }),
      ),
    );
    t.is(err?.name, "InvalidBlockDeviceMapping");
    t.regex(err?.message ?? "", /smaller than snapshot .* expect size >= 8GB/);
    const big = await t.throwsAsync(
      ec2.send(
        new RunInstancesCommand({
          ImageId: images[0]!.id,
          MinCount: 1,
          MaxCount: 1,
          BlockDeviceMappings: [{ DeviceName: "/dev/xvda", Ebs: { VolumeSize: 20000 } }],
        }),
      ),
    );
    t.is(big?.name, "InvalidParameterValue");
    const unknown = await t.throwsAsync(
      ec2.send(new RunInstancesCommand({ ImageId: "ami-0eeeeeeeeeeeeeee5", MinCount: 1, MaxCount: 1 })),
    );
    t.is(unknown?.name, "InvalidAMIID.NotFound");
  } finally {
    ec2.destroy();
  }
});

// ---- the controller's API: refused before anything is made ----

test.serial(
  "the API refuses constraints where no machine could have them, naming the key, and changes nothing",
  async (t) => {
    const admin = tc.admin;
    await admin.createModel("plain");
    const op = await tc.upload(join(operatorsDir, "motd"));
    const refusals: [() => Promise<unknown>, RegExp][] = [
      [
        () => admin.createModel("plain-sized", undefined, "local", { constraints: "cores=2" }),
        /^constraints: they size the machines a cloud makes \(aws and vsphere models\); local machines take none$/,
      ],
      [
        () => admin.deploy("plain", { name: "motd", operator: op, units: 1, constraints: "mem=2G" }),
        /^constraints: they size the machines a cloud makes .*; local machines take none$/,
      ],
      [() => admin.addMachines("plain", "manual", 1, "cores=2"), /^constraints: .* manual machines take none$/],
      [
        () => admin.deploy("plain", { name: "motd", operator: op, units: 1, constraints: "cores=2 spaces=db" }),
        /^invalid deploy: "constraints" "spaces" is a Juju constraint Steward does not support/,
      ],
      [
        () =>
          admin.createModel("huge", undefined, "aws", {
            credential: "prod",
            settings: { region, imageId: "ami-0aaaaaaaaaaaaaaa1" },
            constraints: "mem=1T",
          }),
        /^constraints: no instance type Steward knows fits "arch=amd64 mem=1T" \(the largest amd64 one: m6i\.32xlarge, 128 cores, 512G\): ask for less, or name a type with instance-type=$/,
      ],
    ];
    for (const [call, message] of refusals) {
      const err = await t.throwsAsync(call());
      t.true(StewardError.isInstance(err) && err.code === "invalid-request", err?.message);
      t.regex(err?.message ?? "", message);
    }
    t.deepEqual(
      (await admin.listModels()).map((m) => m.name),
      ["plain"],
      "no model made",
    );
    t.deepEqual(await admin.listMachines("plain"), [], "no machine made");
    t.false("motd" in (await admin.status("plain")).applications, "no application made");
  },
);

test("status shows a Hardware column when a machine has hardware or constraints, and not otherwise", (t) => {
  const machine = (id: string, extra: Partial<MachineStatusView> = {}): MachineStatusView => ({
    id,
    substrate: "aws",
    status: { current: "started", message: "", since: "" },
    address: "10.0.0.1",
    hostname: "",
    life: "alive",
    units: [],
    ...extra,
  });
  const status = (machines: MachineStatusView[]): ModelStatus => ({
    model: {
      name: "m",
      uuid: "u",
      controller: "c",
      status: { current: "available", message: "", since: "" },
      revision: 1,
    },
    applications: {},
    machines: Object.fromEntries(machines.map((m) => [m.id, m])),
    integrations: [],
    timestamp: "",
  });
  const sized = formatStatusTabular(
    status([
      machine("0", { hardware: "arch=amd64 cores=2 mem=4G instance-type=t3.medium" }),
      machine("1", { constraints: "cores=8" }),
      machine("2"),
    ]),
  );
  t.regex(sized, /^Machine\s+State\s+Address\s+Substrate\s+Hardware\s+Message$/m);
  t.regex(sized, /^0\s+started\s+10\.0\.0\.1\s+aws\s+arch=amd64 cores=2 mem=4G instance-type=t3\.medium\s*$/m);
  t.regex(sized, /^1\s+started\s+10\.0\.0\.1\s+aws\s+asked: cores=8\s*$/m);
  const plain = formatStatusTabular(status([machine("0", { substrate: "local" })]));
  t.regex(plain, /^Machine\s+State\s+Address\s+Substrate\s+Message$/m);
  t.notRegex(plain, /Hardware/);
});

test.serial(
  "add-model --constraints through the CLI: checked first, stored normalized; commands that do not take them refuse the flag",
  async (t) => {
    await tc.admin.putCredential("prod", "aws", {
      "access-key-id": awsKey.accessKeyId,
      "secret-access-key": awsKey.secretAccessKey,
    });
    const home = join(tc.dir, "cli-home");
    await saveClientConfig(home, {
      current: "t",
      controllers: { t: { addresses: tc.addresses, caCert: tc.caCert, user: "admin", password: tc.adminPassword } },
    });
    const steward = cliRunner(home, tc.dir);
    // The fake EC2's endpoint: the controller lists an aws model's instances even before it has machines.
    await writeFile(join(tc.dir, "fake-ec2-ca.pem"), fake.caCert);
    const awsFlags = [
      "--substrate",
      "aws",
      "--credential",
      "prod",
      "--region",
      region,
      "--image",
      "ami-0aaaaaaaaaaaaaaa1",
      "--endpoint",
      fake.endpoint,
      "--endpoint-ca-file",
      "fake-ec2-ca.pem",
    ];
    const typo = await steward("add-model", "big", ...awsFlags, "--constraints", "cores=2 ram=4G");
    t.is(typo.code, 1);
    t.regex(
      typo.stdout + typo.stderr,
      /--constraints: unknown key "ram" \(accepted keys: arch, cores, mem, root-disk, instance-type/,
    );
    const made = await steward("add-model", "big", ...awsFlags, "--constraints", "mem=4096 cores=2");
    t.is(made.code, 0, made.stdout + made.stderr);
    t.regex(
      made.stdout,
      /^Added model "big" \([0-9a-f-]{36}, aws substrate, credential prod, constraints cores=2 mem=4G\) and made it current\.$/m,
    );
    t.is((await tc.admin.listModels()).find((m) => m.name === "big")?.constraints, "cores=2 mem=4G");
    // Changed later, for machines made from now on; shown back normalized; cleared.
    t.deepEqual(await steward("model-constraints"), { code: 0, stdout: "cores=2 mem=4G\n", stderr: "" });
    t.is((await steward("model-constraints", "mem=8G", "arch=arm64")).stdout, "arch=arm64 mem=8G\n");
    t.is((await tc.admin.listModels()).find((m) => m.name === "big")?.constraints, "arch=arm64 mem=8G");
    const tooBig = await steward("model-constraints", "cores=100", "arch=arm64");
    t.is(tooBig.code, 1);
    t.regex(
      tooBig.stdout + tooBig.stderr,
      /no instance type Steward knows fits "arch=arm64 cores=100" \(the largest arm64 one: m7g\.16xlarge/,
    );
    t.is(
      (await tc.admin.listModels()).find((m) => m.name === "big")?.constraints,
      "arch=arm64 mem=8G",
      "unchanged by the refusal",
    );
    t.is((await steward("model-constraints", "--clear")).stdout, "(none)\n");
    t.is((await tc.admin.listModels()).find((m) => m.name === "big")?.constraints, undefined);

    const op = await tc.upload(join(operatorsDir, "motd"));
    await tc.admin.deploy("big", { name: "web", operator: op, units: 0, constraints: "cores=2" });
    t.is((await steward("constraints", "web")).stdout, "cores=2\n");
    t.is((await steward("constraints", "web", "instance-type=m6i.large")).stdout, "instance-type=m6i.large\n");
    t.is((await tc.admin.getApplication("big", "web")).constraints, "instance-type=m6i.large");
    const badKey = await steward("constraints", "web", "ram=2G");
    t.is(badKey.code, 1);
    t.regex(badKey.stdout + badKey.stderr, /constraints: unknown key "ram"/);
    t.is((await steward("constraints", "web", "--clear")).stdout, "(none: the model's apply)\n");
    t.is((await tc.admin.getApplication("big", "web")).constraints, undefined);

    const replicas = await steward("set-replica-cloud", "aws", "--constraints", "cores=2");
    t.not(replicas.code, 0, "set-replica-cloud takes no constraints");
    t.regex(replicas.stderr, /^ERROR unknown option --constraints\.$/m);
    t.regex(replicas.stderr, /^See "steward help set-replica-cloud"/m);
    await tc.admin.destroyModel("big", true);
  },
);
