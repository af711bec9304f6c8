/**
 * EBS storage on the aws substrate (issue 32), end to end: a real controller and real agents on
 * instances of the FAKE EC2 (test/harness/fake-ec2.ts, driven by the real @aws-sdk/client-ec2) that
 * boot as test hosts; a volume attached to an instance appears on its host as a loop device under
 * the /dev/disk/by-id name a Nitro instance gives it. A unit's storage-attached hook writes a note
 * into its volume (made ext4 once and mounted by the machine's agent); the unit and its machine go,
 * the volume is detached and kept; `add-unit --attach-storage` brings a new instance, in the volume's
 * zone, the volume is attached to it and the new unit's hook reads the note (the filesystem was not
 * made again); `remove-unit --destroy-storage` deletes the volume. What EC2 would refuse is refused
 * at deploy, naming the rule, with nothing made.
 */
import test from "ava";
import { RunInstancesCommand } from "@aws-sdk/client-ec2";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StorageInfo } from "../api";
import { ControllerClient, EBS_POOL_ATTRIBUTES, contractOf, ebsVolumeOf, silentLogger } from "../api";
import { saveClientConfig } from "../cli";
import { Controller, initControllerDir } from "../controller";
import type { VolumeSpec } from "../substrates";
import { aws as awsKind } from "../substrates";
import { fakeEc2Boot } from "./harness/cloud-init";
import type { FakeEc2Boot } from "./harness/cloud-init";
import { cliRunner } from "./harness/cli";
import { operatorsDir } from "./harness/controller";
import type { EbsDisks } from "./harness/ebs-disks";
import { ebsDisks } from "./harness/ebs-disks";
import { eventually } from "./harness/eventually";
import { FakeEc2, createModelOnFake, ec2ClientFor } from "./harness/fake-ec2";
import { TestLab } from "./harness/hosts";

const root = process.getuid?.() === 0;
const aws = root ? test.serial : test.skip; // namespaces and loop devices need root

const region = "eu-west-2";
const awsKey = { accessKeyId: "AKIAFAKEEC2TEST00002", secretAccessKey: "fake-secret-for-the-fake-ec2-storage-test" };
const MOUNT = "/var/lib/steward/storage/data-0";
let lab: TestLab;
let fake: FakeEc2;
let boot: FakeEc2Boot;
let controller: Controller;
let client: ControllerClient;
let dir: string;
let steward: ReturnType<typeof cliRunner>;
/** The notebook operator without its `location`: its volume is mounted under the host's private /var/lib/steward. */
let notebook: string;
/** Volumes seen by the instances' hosts as loop devices. */
let disks: EbsDisks;

test.before(async () => {
  if (!root) return;
  lab = await TestLab.create(0);
  boot = fakeEc2Boot(lab);
  disks = ebsDisks(boot, () => dir);
  fake = new FakeEc2({ region, credentials: awsKey, boot, onAttach: disks.onAttach, onDetach: disks.onDetach });
  await fake.start();
  dir = await mkdtemp(join(tmpdir(), "steward-storage-aws-"));
  notebook = join(dir, "notebook");
  await cp(join(operatorsDir, "notebook"), notebook, { recursive: true });
  const yaml = await readFile(join(notebook, "operator.yaml"), "utf8");
  await writeFile(join(notebook, "operator.yaml"), yaml.replace(/^ {4}location: .*\n/m, ""));
  const init = await initControllerDir({
    dataDir: join(dir, "c"),
    name: "aws",
    listen: { host: `${lab.subnet}.1`, port: 0 },
  });
  controller = await Controller.start({ dataDir: join(dir, "c"), log: silentLogger, cloudPollIntervalMs: 500 });
  client = new ControllerClient({
    addresses: controller.apiAddresses,
    caCert: init.caCert,
    user: "admin",
    password: init.adminPassword!,
  });
  await createModelOnFake(fake, client, "data");
  const home = join(dir, "cli-home");
  await saveClientConfig(home, {
    current: "t",
    controllers: {
      t: {
        addresses: controller.apiAddresses,
        caCert: init.caCert,
        user: "admin",
        password: init.adminPassword!,
        currentModel: "data",
      },
    },
  });
  steward = cliRunner(home, dir);
});
test.after.always(async () => {
  client?.close();
  await controller?.stop().catch(() => undefined);
  await fake?.stop().catch(() => undefined);
  await lab?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const storage = async (): Promise<StorageInfo[]> => (await client.listStorage("data")).storage;
const calls = (action: string) => fake.calls.filter((c) => c.action === action);
const dataVolumes = () => fake.volumes().filter((v) => v.tags["steward:storage"] !== undefined);
const unitMessage = async (unit: string): Promise<string | undefined> =>
  (await client.status("data")).applications.nb?.units[unit]?.workload.message;
/** Fails fast on what would otherwise only time out: a failed machine or a broken instance boot. */
async function noFailures(): Promise<void> {
  for (const m of await client.listMachines("data"))
    if (m.install?.state === "failed") throw new Error(`machine ${m.id}: ${m.install.step}`);
  for (const h of boot.hosts.values()) if (h.error) throw h.error;
}

test("the ebs pool's rules: sizes, IOPS and throughput by volume type, as EC2 takes them", (t) => {
  t.deepEqual(ebsVolumeOf(64, {}), { volume: { volumeType: "gp3", sizeGiB: 1, encrypted: false } });
  t.deepEqual(ebsVolumeOf(10 * 1024, { "volume-type": "io2", iops: "5000", encrypted: "true", "kms-key-id": "k" }), {
    volume: { volumeType: "io2", sizeGiB: 10, iops: 5000, encrypted: true, kmsKeyId: "k" },
  });
  const problem = (size: number, a: Record<string, string>) => contractOf("aws").storagePools![0]!.problem!(size, a);
  t.is(problem(1024, {}), undefined);
  t.regex(problem(17 * 1024 * 1024, {})!, /17408G is outside what a gp3 EBS volume can be \(1G to 16384G\)/);
  t.regex(problem(1024, { "volume-type": "gp9" })!, /volume-type "gp9" is not an EBS volume type \(gp3, gp2/);
  t.regex(problem(100 * 1024, { "volume-type": "st1" })!, /100G is outside what a st1 EBS volume can be \(125G/);
  t.regex(problem(10 * 1024, { "volume-type": "io1" })!, /io1 EBS volume needs iops/);
  t.regex(problem(10 * 1024, { "volume-type": "io1", iops: "1000" })!, /more than 50 per GiB/);
  t.regex(problem(1024, { "volume-type": "gp2", iops: "3000" })!, /gp2 EBS volume takes no iops/);
  t.regex(problem(1024, { throughput: "2000" })!, /throughput=2000 is outside gp3's 125 to 1000/);
  t.regex(problem(1024, { "kms-key-id": "k" })!, /encrypted is not true/);
  t.regex(problem(1024, { colour: "red" })!, /takes no attribute colour/);
  t.regex(problem(1024, { encrypted: "yes" })!, /encrypted "yes" is neither true nor false/);
  t.regex(problem(1024, { iops: "lots" })!, /iops "lots" is not a whole number of IOPS/);
  // Each attribute's value alone, as a pool made of the ebs type is checked when it is made.
  t.deepEqual(
    EBS_POOL_ATTRIBUTES.map((a) => [a.name, a.problem("gp3") === undefined]),
    [
      ["volume-type", true],
      ["iops", false],
      ["throughput", false],
      ["encrypted", false],
      ["kms-key-id", true],
    ],
  );
});

test("the EBS broker: each step may be repeated after a crash half-way; a volume of another zone is refused, naming both", async (t) => {
  // No test hosts here: instances "boot" at once, and nothing is mounted (the agents' half is not run).
  const ec2 = new FakeEc2({
    region,
    credentials: awsKey,
    volumeTransitionMs: 20,
    boot: async () => ({ privateIp: "10.0.0.9", stop: async () => undefined }),
  });
  const endpoint = await ec2.start();
  const sdk = ec2ClientFor(ec2);
  t.teardown(async () => {
    sdk.destroy();
    broker.close();
    await ec2.stop();
  });
  const controllerUuid = "5e1f0000-0000-4000-8000-000000000001";
  const model = "0dd5eed0-0000-4000-8000-000000000002";
  const placement = {
    settings: {
      region,
      imageId: "ami-0123456789abcdef0",
      instanceType: "t3.small",
      endpoint: endpoint.endpoint,
      endpointCaCert: endpoint.caCert,
    },
    controllerUuid,
    credentials: awsKey,
  };
  for (const [machine, zone] of [
    ["0", "a"],
    ["1", "b"],
  ])
    await sdk.send(
      new RunInstancesCommand({
        ImageId: "ami-0123456789abcdef0",
        MinCount: 1,
        MaxCount: 1,
        Placement: { AvailabilityZone: `${region}${zone}` },
        TagSpecifications: [
          {
            ResourceType: "instance",
            Tags: Object.entries({
              "steward:controller": controllerUuid,
              "steward:model": model,
              "steward:machine": machine!,
            }).map(([Key, Value]) => ({ Key, Value })),
          },
        ],
      }),
    );
  await eventually("running", () => ec2.instances().every((i) => i.state === "running"));
  const broker = new awsKind.EbsVolumes({ machinesDir: "", placement: async () => placement as never });
  const spec = (id: string, over: Partial<VolumeSpec> = {}): VolumeSpec => ({
    model,
    id,
    kind: "block",
    pool: "ebs",
    poolType: "ebs",
    size: 1024,
    attributes: {},
    ...over,
  });
  const on = (machine: string) => ({ model, machine });
  const count = (action: string) => ec2.calls.filter((c) => c.action === action).length;

  const first = await broker.attach(spec("data/0"), on("0"));
  // Its answer lost (a crash before it was recorded): asked again, the same volume, attached once.
  const again = await broker.attach(spec("data/0"), on("0"));
  t.deepEqual(again, first);
  t.is(count("CreateVolume"), 1);
  t.is(count("AttachVolume"), 1);
  const volumeId = first.handle.volumeId!;
  t.deepEqual(first.handle, { volumeId, zone: `${region}a`, device: "/dev/sdf" });
  t.deepEqual("onMachine" in first && first.onMachine, {
    mode: "device",
    device: { byId: [`nvme-Amazon_Elastic_Block_Store_${volumeId.replace("-", "")}`], path: "/dev/xvdf" },
    kind: "block",
  });
  const tags = ec2.volumes().find((v) => v.id === volumeId)!.tags;
  t.like(tags, { "steward:controller": controllerUuid, "steward:model": model, "steward:storage": "data/0" });
  // The next one on the instance takes the next free device name; a pool's attributes make the volume.
  const second = await broker.attach(
    spec("data/1", { kind: "filesystem", size: 4096, attributes: { "volume-type": "io2", iops: "4000" } }),
    on("0"),
  );
  t.is(second.handle.device, "/dev/sdg");
  t.like("onMachine" in second && second.onMachine, { mountPoint: "/var/lib/steward/storage/data-1" });
  t.like(
    ec2.volumes().find((v) => v.id === second.handle.volumeId),
    { volumeType: "io2", iops: 4000, sizeGiB: 4 },
  );
  const located = await broker.attach(spec("data/2", { kind: "filesystem", location: "/srv/db" }), on("0"));
  t.like("onMachine" in located && located.onMachine, { mountPoint: "/srv/db" });
  // What EC2 would refuse is refused before anything is made.
  await t.throwsAsync(broker.attach(spec("data/3", { attributes: { "volume-type": "gp9" } }), on("0")), {
    message: /storage data\/3 cannot be an EBS volume: volume-type "gp9" is not an EBS volume type/,
  });
  t.is(count("CreateVolume"), 3);

  // Detached (twice: the second finds nothing to do), kept, with its zone in its handle.
  const kept = await broker.detach(spec("data/0", { handle: first.handle }), on("0"));
  t.deepEqual(kept, { volumeId, zone: `${region}a` });
  t.deepEqual(await broker.detach(spec("data/0", { handle: kept }), on("0")), kept);
  t.is(count("DetachVolume"), 1);
  t.like(
    ec2.volumes().find((v) => v.id === volumeId),
    { state: "available" },
  );
  // Machine 1's instance is in another zone: refused, naming both.
  await t.throwsAsync(broker.attach(spec("data/0", { handle: kept }), on("1")), {
    message: new RegExp(
      `storage data/0 is EBS volume ${volumeId} in ${region}a, and machine 1's instance i-\\w+ is in ${region}b`,
    ),
  });
  t.is(count("AttachVolume"), 3);

  // Destroyed (twice: the second finds it gone); a handle naming a volume EC2 lost is said, not made again empty.
  await broker.destroy(spec("data/0", { handle: kept }));
  await eventually("deleted", () => !ec2.volumes().some((v) => v.id === volumeId));
  await broker.destroy(spec("data/0", { handle: kept }));
  t.is(count("DeleteVolume"), 1);
  await t.throwsAsync(broker.attach(spec("data/0", { handle: kept }), on("0")), { message: /which EC2 no longer has/ });
  t.is(count("CreateVolume"), 3);

  // A model migrated to another controller: its volumes are taken over with its instances.
  const machines = new awsKind.AwsMachines();
  t.teardown(() => machines.close());
  const adopter = "5e1f0000-0000-4000-8000-00000000000a";
  t.is(await machines.adopt({ ...placement, controllerUuid: adopter }, model, controllerUuid), 2);
  const modelVolumes = ec2.volumes().filter((v) => v.tags["steward:model"] === model);
  t.is(modelVolumes.length, 2);
  t.true(modelVolumes.every((v) => v.tags["steward:controller"] === adopter));
});

aws("an EBS volume a volume type cannot have is refused at deploy, naming the rule, with nothing made", async (t) => {
  const before = fake.calls.length;
  const huge = await steward("deploy", notebook, "nb", "--storage", "data=ebs,17T");
  t.is(huge.code, 1);
  t.regex(huge.stdout + huge.stderr, /storage "data": pool "ebs": 17408G is outside what a gp3 EBS volume can be/);
  t.is(Object.keys((await client.status("data")).applications).length, 0, "no application made");
  t.deepEqual(await storage(), []);
  t.deepEqual(
    fake.calls.slice(before).filter((c) => c.action !== "DescribeInstances"),
    [],
    "nothing asked of EC2",
  );
});

aws(
  "a note written into an EBS volume is read by the unit of a new instance it is attached to; destroyed, the volume is deleted",
  async (t) => {
    t.timeout(600_000);
    const deployed = await steward("deploy", notebook, "nb", "--storage", "data=ebs,1G");
    t.is(deployed.code, 0, deployed.stdout + deployed.stderr);
    await eventually(
      "nb/0 to write its note",
      async () => {
        await noFailures();
        return (await unitMessage("nb/0")) === "data/0 new: written by nb/0";
      },
      240_000,
      250,
    );
    const [first] = await storage();
    t.like(first, { id: "data/0", unit: "nb/0", status: "attached", pool: "ebs", size: 1024, location: MOUNT });
    const [volume] = dataVolumes();
    const machine0 = (await client.listMachines("data"))[0]!;
    const instance0 = fake.instances().find((i) => i.id === machine0.instance!.id)!;
    t.like(volume, { sizeGiB: 1, volumeType: "gp3", zone: instance0.zone, state: "in-use" });
    t.like(volume!.attachment, { instanceId: instance0.id, state: "attached", deleteOnTermination: false });
    t.is(volume!.tags["steward:controller"], (await client.controllerInfo()).uuid);
    t.is(volume!.tags["steward:model"], instance0.tags["steward:model"]);
    t.is(calls("CreateVolume").length, 1);
    // On the instance: its own filesystem, mounted where the hooks were told, with the note in it.
    const host0 = boot.hosts.get(instance0.id)!.host;
    const mounted = (await host0.exec(`findmnt -no FSTYPE,SOURCE ${MOUNT}`)).stdout.trim().split(/\s+/);
    t.deepEqual(mounted, ["ext4", disks.plugged.get(volume!.id)!.loop]);
    t.is((await host0.exec(`cat ${MOUNT}/note`)).stdout, "written by nb/0\n");

    // The unit goes, and its machine: the volume is detached and kept (the instance terminated).
    await client.removeUnit("data", "nb/0");
    await eventually(
      "data/0 detached and kept, the machine gone",
      async () => {
        const [s] = await storage();
        const machines = await client.listMachines("data");
        return s?.status === "detached" && machines.length === 0;
      },
      120_000,
      250,
    );
    await eventually(
      "the instance terminated",
      () => fake.instances().find((i) => i.id === instance0.id)?.state === "terminated",
    );
    t.like(dataVolumes()[0], { id: volume!.id, state: "available" });
    t.is(dataVolumes()[0]!.attachment, undefined);

    // A new unit takes it over: a new instance in the volume's zone, the volume attached, the note found.
    const added = await steward("add-unit", "nb", "--attach-storage", "data/0");
    t.is(added.code, 0, added.stdout + added.stderr);
    await eventually(
      "nb/1 to find the note",
      async () => {
        await noFailures();
        return (await unitMessage("nb/1")) === "data/0 found: written by nb/0";
      },
      240_000,
      250,
    );
    const machine1 = (await client.listMachines("data"))[0]!;
    const instance1 = fake.instances().find((i) => i.id === machine1.instance!.id)!;
    t.not(instance1.id, instance0.id);
    t.is(instance1.zone, volume!.zone, "launched in the volume's zone");
    t.like(dataVolumes()[0]!.attachment, { instanceId: instance1.id, state: "attached" });
    t.is(calls("CreateVolume").length, 1, "no second volume");
    const host1 = boot.hosts.get(instance1.id)!.host;
    t.is((await host1.exec(`cat ${MOUNT}/note`)).stdout, "written by nb/0\n");

    // Destroyed when asked: unmounted, detached, deleted.
    const removed = await steward("remove-unit", "nb/1", "--destroy-storage");
    t.is(removed.code, 0, removed.stdout + removed.stderr);
    await eventually("data/0 destroyed", async () => (await storage()).length === 0, 120_000, 250);
    t.deepEqual(
      calls("DeleteVolume").map((c) => c.params.VolumeId),
      [volume!.id],
    );
    await eventually("the volume gone", () => !fake.volumes().some((v) => v.id === volume!.id));
  },
);
