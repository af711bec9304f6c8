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
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StorageInfo } from "../api";
import { ControllerClient, contractOf, ebsVolumeOf, silentLogger } from "../api";
import { saveClientConfig } from "../cli";
import { Controller, initControllerDir } from "../controller";
import { aws as awsKind } from "../substrates";
import { fakeEc2Boot } from "./harness/cloud-init";
import type { FakeEc2Boot } from "./harness/cloud-init";
import { cliRunner } from "./harness/cli";
import { operatorsDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { FakeEc2 } from "./harness/fake-ec2";
import type { TestHost } from "./harness/hosts";
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
/** The loop device of each attached volume, and the host it is plugged into. */
const plugged = new Map<string, { host: TestHost; loop: string }>();

test.before(async () => {
  if (!root) return;
  lab = await TestLab.create(0);
  boot = fakeEc2Boot(lab);
  fake = new FakeEc2({
    region,
    credentials: awsKey,
    boot,
    // The volume appears on the instance as EC2 shows it to a Nitro instance's Linux.
    onAttach: async (v, i) => {
      const host = boot.hosts.get(i.id)!.host;
      // One file per volume: what was written on it is there wherever it is attached next.
      const { loop } = await host.plugDisk(v.sizeGiB * 1024, [awsKind.nitroDeviceName(v.id)], {
        file: join(dir, "ebs", `${v.id}.img`),
      });
      plugged.set(v.id, { host, loop });
    },
    onDetach: async (v) => {
      const p = plugged.get(v.id);
      if (!p) return;
      await p.host.unplugDisk(p.loop);
      plugged.delete(v.id);
    },
  });
  const ec2 = await fake.start();
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
  await client.putCredential("prod", "aws", {
    "access-key-id": awsKey.accessKeyId,
    "secret-access-key": awsKey.secretAccessKey,
  });
  await client.createModel("data", undefined, "aws", {
    credential: "prod",
    settings: {
      region,
      imageId: "ami-0123456789abcdef0",
      instanceType: "t3.small",
      endpoint: ec2.endpoint,
      endpointCaCert: ec2.caCert,
    },
  });
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
    t.deepEqual(mounted, ["ext4", plugged.get(volume!.id)!.loop]);
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
