/**
 * The aws substrate end to end, against a FAKE EC2 endpoint (test/harness/fake-ec2.ts: EC2's Query
 * API with SigV4, driven by the real @aws-sdk/client-ec2) whose instances are real test hosts (network
 * namespaces) that apply their user data with a cloud-init subset. A model's machines become
 * instances spread over zones, their agents enrol without SSH (one-time token, controller CA
 * pinned), run units, and their instances are terminated when the machines go.
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import type { MachineInfo } from "../api";
import { ControllerClient, ENROLMENT_HEADER, readOperatorDir, silentLogger } from "../api";
import { Controller, initControllerDir } from "../controller";
import { fakeEc2Boot } from "./harness/cloud-init";
import type { FakeEc2Boot } from "./harness/cloud-init";
import { operatorsDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { migrateAndWait } from "./harness/migration";
import { FakeEc2, createModelOnFake } from "./harness/fake-ec2";
import { TestLab } from "./harness/hosts";
import { rawRequest } from "./harness/http";
import { saveClientConfig } from "../cli";
import { cliRunner } from "./harness/cli";

const root = process.getuid?.() === 0;
const aws = root ? test.serial : test.skip; // namespaces need root

const region = "eu-west-1";
const awsKey = { accessKeyId: "AKIAFAKEEC2TEST00001", secretAccessKey: "fake-secret-for-the-fake-ec2-endpoint-0001" };
let lab: TestLab;
let fake: FakeEc2;
let boot: FakeEc2Boot;
let controller: Controller;
let client: ControllerClient;
let caCert: string;
let dir: string;
let adminPassword: string;

test.before(async () => {
  if (!root) return;
  lab = await TestLab.create(0);
  boot = fakeEc2Boot(lab);
  fake = new FakeEc2({ region, credentials: awsKey, boot });
  await fake.start();
  dir = await mkdtemp(join(tmpdir(), "steward-aws-"));
  const init = await initControllerDir({ dataDir: dir, name: "aws", listen: { host: `${lab.subnet}.1`, port: 0 } });
  caCert = init.caCert;
  controller = await Controller.start({ dataDir: dir, log: silentLogger, cloudPollIntervalMs: 500 });
  adminPassword = init.adminPassword!;
  client = new ControllerClient({ addresses: controller.apiAddresses, caCert, user: "admin", password: adminPassword });
  await createModelOnFake(fake, client, "shop");
});
test.after.always(async () => {
  client?.close();
  await controller?.stop().catch(() => undefined);
  await fake?.stop().catch(() => undefined);
  await lab?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const machines = (): Promise<MachineInfo[]> => client.listMachines("shop");

aws("units placed without --to get EC2 instances whose agents enrol themselves, spread over the zones", async (t) => {
  t.timeout(300_000);
  const op = await client.uploadOperator((await readOperatorDir(join(operatorsDir, "motd"))).bundle);
  await client.deploy("shop", { name: "motd", operator: op.hash, units: 3 });
  const up = await eventually(
    "three cloud machines started with their agents",
    async () => {
      const ms = await machines();
      const failed = ms.find((m) => m.install?.state === "failed");
      if (failed) throw new Error(`machine ${failed.id}: ${failed.install!.step}`);
      for (const h of boot.hosts.values()) if (h.error) throw h.error;
      return ms.length === 3 && ms.every((m) => m.status === "started" && m.instance?.state === "running")
        ? ms
        : undefined;
    },
    180_000,
    250,
  );
  const instances = fake.instances();
  t.is(instances.length, 3, "one instance per machine, launched once");
  t.deepEqual(up.map((m) => m.instance!.id).sort(), instances.map((i) => i.id).sort());
  t.deepEqual(
    new Set(up.map((m) => m.instance!.zone)),
    new Set([`${region}a`, `${region}b`, `${region}c`]),
    "one machine per zone",
  );
  const controllerUuid = (await client.controllerInfo()).uuid;
  for (const m of up) {
    const i = instances.find((x) => x.id === m.instance!.id)!;
    t.is(i.tags["steward:machine"], m.id);
    t.is(i.tags["steward:controller"], controllerUuid, "tagged with the controller");
    t.is(m.address, i.privateIp ?? "(none)", "the machine's address is its instance's");
  }
  await eventually(
    "the units active",
    async () => {
      const s = await client.status("shop");
      const units = Object.values(s.applications.motd?.units ?? {});
      return units.length === 3 && units.every((u) => u.workload.current === "active") ? s : undefined;
    },
    120_000,
    250,
  );

  // The user data is gzipped cloud-config under EC2's 16 KiB, and carries no agent credential: only
  // a one-time token, spent by the enrolment.
  const userData = instances[0]!.userData!;
  t.true(userData.length <= 16 * 1024);
  const text = gunzipSync(userData).toString();
  t.true(text.startsWith("#cloud-config\n"));
  const token =
    /\.token\n\s+permissions: "0600"\n\s+content: (\S+)/.exec(text)?.[1] ??
    /content: ([A-Za-z0-9_-]{43})\n/.exec(text)?.[1];
  t.truthy(token, "the token is in the user data");
  const replay = await rawRequest(controller.apiAddresses[0]!, caCert, "POST", "/v1/enrol", undefined, {
    [ENROLMENT_HEADER]: token!,
  });
  t.is(replay.status, 401, "a spent enrolment token enrols nothing");
  t.false(JSON.stringify(replay.body).includes("credential"));
});

aws("enrolment refuses bad tokens and unknown files, and serves nothing without a token", async (t) => {
  const address = controller.apiAddresses[0]!;
  const tokens: Record<string, string>[] = [
    {},
    { [ENROLMENT_HEADER]: "x".repeat(43) },
    { [ENROLMENT_HEADER]: "bad token with spaces" },
  ];
  for (const headers of tokens) {
    t.is((await rawRequest(address, caCert, "POST", "/v1/enrol", undefined, headers)).status, 401);
    t.is((await rawRequest(address, caCert, "GET", "/v1/enrol/files/main.js", undefined, headers)).status, 401);
  }
  t.is(
    (
      await rawRequest(address, caCert, "GET", "/v1/enrol/files/..%2F..%2Fca.key", undefined, {
        [ENROLMENT_HEADER]: "x".repeat(43),
      })
    ).status,
    401,
  );
});

aws("removing a unit's machine terminates its instance; destroying the model terminates the rest", async (t) => {
  t.timeout(180_000);
  const before = await machines();
  const victim = before[0]!;
  await client.removeMachine("shop", victim.id, true);
  await eventually(
    "the machine gone and its instance terminated",
    async () => {
      const gone = !(await machines()).some((m) => m.id === victim.id);
      const inst = fake.instances().find((i) => i.id === victim.instance!.id);
      return gone && inst?.state === "terminated";
    },
    60_000,
    250,
  );
  t.is(fake.instances().filter((i) => i.state === "running").length, 2, "the others still run");

  await client.destroyModel("shop", true);
  await eventually(
    "every instance terminated",
    () => fake.instances().every((i) => i.state === "terminated"),
    60_000,
    250,
  );
  t.is(fake.instances().length, 3, "nothing was launched again");
  t.is(fake.calls.filter((c) => c.action === "RunInstances").length, 3);
});

aws("an aws model is refused without its settings or credential, with what to give", async (t) => {
  const noCred = await t.throwsAsync(
    client.createModel("bare", undefined, "aws", { settings: { region, imageId: "ami-0123456789abcdef0" } }),
  );
  t.regex(noCred?.message ?? "", /"credential" is required for an aws model: store one with steward add-credential/);
  const badAmi = await t.throwsAsync(
    client.createModel("bare", undefined, "aws", { credential: "prod", settings: { region, imageId: "ubuntu" } }),
  );
  t.regex(badAmi?.message ?? "", /"settings\.imageId" must be an id such as ami-/);
  const notAws = await t.throwsAsync(
    client.createModel("bare", undefined, "local", { settings: { region, imageId: "ami-0123456789abcdef0" } }),
  );
  t.regex(notAws?.message ?? "", /"settings" are not for a local model: it takes none/);
  t.false((await client.listModels()).some((m) => m.name === "bare"));
});

aws(
  "constraints through the CLI: the model's default, an application's and a machine's own size the instances EC2 is asked for",
  async (t) => {
    t.timeout(300_000);
    await client.createModel("sized", undefined, "aws", {
      credential: "prod",
      settings: {
        region,
        imageId: "ami-0123456789abcdef0",
        instanceType: "t3.small",
        endpoint: fake.endpoint,
        endpointCaCert: fake.caCert,
      },
      constraints: "mem=8G",
    });
    t.is((await client.listModels()).find((m) => m.name === "sized")?.constraints, "mem=8G");
    const home = join(dir, "cli-home");
    await saveClientConfig(home, {
      current: "t",
      controllers: {
        t: {
          addresses: controller.apiAddresses,
          caCert,
          user: "admin",
          password: adminPassword,
          currentModel: "sized",
        },
      },
    });
    const steward = cliRunner(home, join(__dirname, "..", ".."));
    const launchedBefore = fake.instances().length;

    // Refused before anything is made: a key the CLI does not know, and a size no listed type has.
    const typo = await steward("deploy", join(operatorsDir, "motd"), "web", "--constraints", "cpus=4");
    t.is(typo.code, 1);
    t.regex(
      typo.stdout + typo.stderr,
      /--constraints: unknown key "cpus" \(accepted keys: arch, cores, mem, root-disk, instance-type/,
    );
    const huge = await steward("add-machine", "aws", "--constraints", "cores=999");
    t.is(huge.code, 1);
    t.regex(
      huge.stdout + huge.stderr,
      /no instance type Steward knows fits "arch=amd64 cores=999 mem=8G" \(the largest amd64 one: m6i\.32xlarge, 128 cores, 512G\)/,
    );
    const local = await steward("add-machine", "local", "--constraints", "cores=2");
    t.is(local.code, 1);
    t.regex(local.stdout + local.stderr, /--constraints are for aws and vsphere machines/);
    t.deepEqual(await client.listMachines("sized"), [], "no machine added");

    const deploy = await steward("deploy", join(operatorsDir, "motd"), "web", "--constraints", "cores=4");
    t.is(deploy.code, 0, deploy.stdout + deploy.stderr);
    t.regex(deploy.stdout, /Deployed "web" \(motd 1\.0\.0\) with 1 unit: web\/0 \(constraints cores=4\)\./);
    t.is((await client.getApplication("sized", "web")).constraints, "cores=4");
    const own = await steward("add-machine", "aws", "--constraints", "instance-type=m6i.large root-disk=16G");
    t.is(own.code, 0, own.stdout + own.stderr);

    const up = await eventually(
      "both machines started",
      async () => {
        const ms = await client.listMachines("sized");
        const failed = ms.find((m) => m.install?.state === "failed");
        if (failed) throw new Error(`machine ${failed.id}: ${failed.install!.step}`);
        // Installed: the provisioner has recorded what it launched (the agent may log in a moment before).
        return ms.length === 2 && ms.every((m) => m.status === "started" && m.install?.state === "installed")
          ? ms
          : undefined;
      },
      180_000,
      250,
    );
    const [forUnit, added] = [up.find((m) => m.units.length === 1)!, up.find((m) => m.units.length === 0)!];
    t.is(forUnit.constraints, "cores=4 mem=8G", "the application's merged over the model's");
    t.is(forUnit.hardware, "arch=amd64 cores=4 mem=16G instance-type=t3.xlarge");
    t.is(added.constraints, "root-disk=16G instance-type=m6i.large", "an instance type replaces the model's mem");
    t.is(added.hardware, "arch=amd64 cores=2 mem=8G root-disk=16G instance-type=m6i.large");
    const instance = (id: string) => fake.instances().find((i) => i.id === id)!;
    t.is(instance(forUnit.instance!.id).instanceType, "t3.xlarge");
    t.deepEqual(
      instance(forUnit.instance!.id).volumes.map((v) => [v.deviceName, v.sizeGiB]),
      [["/dev/xvda", 8]],
      "the image's root volume as it is",
    );
    t.is(instance(added.instance!.id).instanceType, "m6i.large");
    t.deepEqual(
      instance(added.instance!.id).volumes.map((v) => [v.deviceName, v.sizeGiB]),
      [["/dev/xvda", 16]],
    );
    t.is(fake.instances().length, launchedBefore + 2, "one instance each, nothing for the refused requests");

    const listed = await steward("machines");
    t.is(listed.code, 0);
    t.regex(listed.stdout, /^Machine\s+State\s+Address\s+Hostname\s+Substrate\s+Instance\s+Hardware\s+Units$/m);
    t.regex(
      listed.stdout,
      new RegExp(`^${forUnit.id}\\s+started\\s+.*arch=amd64 cores=4 mem=16G instance-type=t3\\.xlarge\\s+web/0$`, "m"),
    );
    const status = await client.status("sized");
    t.is(status.machines[added.id]?.hardware, added.hardware, "status carries it too");
    t.is(status.machines[added.id]?.constraints, added.constraints);

    // Changed later: machines made from then on get the new constraints; the one that exists keeps its own.
    const set = await steward("constraints", "web", "cores=8");
    t.deepEqual([set.code, set.stdout], [0, "cores=8\n"], set.stderr);
    const {
      units: [unit],
    } = await client.addUnits("sized", "web", 1);
    const next = await eventually(
      "the new unit's machine launched",
      async () => {
        const ms = await client.listMachines("sized");
        const m = ms.find((x) => x.units.includes(unit!));
        return m?.instance ? m : undefined;
      },
      60_000,
      250,
    );
    t.is(next.constraints, "cores=8 mem=8G");
    t.is(instance(next.instance!.id).instanceType, "t3.2xlarge");
    t.is(
      (await client.listMachines("sized")).find((m) => m.id === forUnit.id)?.constraints,
      "cores=4 mem=8G",
      "the first machine keeps its own",
    );

    // What only the image can tell (its root volume is 8 GiB) fails the machine before launch, saying why.
    const launchedNow = fake.instances().length;
    const small = await steward("add-machine", "aws", "--constraints", "root-disk=4G");
    t.is(small.code, 0, "accepted: the image is looked at when the machine is launched");
    const failed = await eventually(
      "the machine's provisioning failed",
      async () => (await client.listMachines("sized")).find((m) => m.install?.state === "failed"),
      30_000,
      250,
    );
    t.is(failed.status, "error");
    t.regex(
      failed.message,
      /^provisioning failed: constraints: root-disk=4G is smaller than image ami-0123456789abcdef0's root volume \(8G\): ask for at least root-disk=8G$/,
    );
    t.is(failed.instance, undefined);
    t.is(fake.instances().length, launchedNow, "nothing launched for it");

    await client.destroyModel("sized", true);
    await eventually(
      "its instances terminated",
      () => [forUnit, added, next].every((m) => instance(m.instance!.id).state === "terminated"),
      60_000,
      250,
    );
  },
);

aws(
  "an aws model migrates to another controller: its instance and agent go on, the target owns the instance, the source leaves it alone",
  async (t) => {
    t.timeout(300_000);
    const targetDir = await mkdtemp(join(tmpdir(), "steward-aws-tgt-"));
    const init = await initControllerDir({
      dataDir: targetDir,
      name: "aws-2",
      listen: { host: `${lab.subnet}.1`, port: 0 },
    });
    const target = await Controller.start({ dataDir: targetDir, log: silentLogger, cloudPollIntervalMs: 500 });
    const tgt = new ControllerClient({
      addresses: target.apiAddresses,
      caCert: init.caCert,
      user: "admin",
      password: init.adminPassword!,
    });
    try {
      await tgt.putCredential("prod", "aws", {
        "access-key-id": awsKey.accessKeyId,
        "secret-access-key": awsKey.secretAccessKey,
      });
      const op = await client.uploadOperator((await readOperatorDir(join(operatorsDir, "motd"))).bundle);
      await client.createModel("moving", undefined, "aws", {
        credential: "prod",
        settings: {
          region,
          imageId: "ami-0123456789abcdef0",
          instanceType: "t3.small",
          endpoint: fake.endpoint,
          endpointCaCert: fake.caCert,
        },
      });
      await client.deploy("moving", { name: "motd", operator: op.hash, units: 1 });
      const [m] = await eventually(
        "the machine's instance running with its agent",
        async () => {
          const ms = await client.listMachines("moving");
          return ms.length === 1 && ms[0]!.status === "started" && ms[0]!.instance?.state === "running"
            ? ms
            : undefined;
        },
        180_000,
        250,
      );
      const launched = fake.instances().length;

      const done = await migrateAndWait(client, "moving", {
        name: "aws-2",
        addresses: target.apiAddresses,
        caCert: init.caCert,
        user: "admin",
        password: init.adminPassword!,
      });
      t.is(done.phase, "DONE", done.failure);

      // On the target: the same machine and instance, its agent connected, the unit taking changes.
      const there = await eventually(
        "the machine started on the target",
        async () => {
          const ms = await tgt.listMachines("moving");
          return ms.length === 1 && ms[0]!.status === "started" && ms[0]!.instance?.state === "running"
            ? ms[0]
            : undefined;
        },
        60_000,
        250,
      ).catch(async (err: unknown) => {
        t.log(JSON.stringify(await tgt.listMachines("moving")));
        const host = boot.hosts.get(m!.instance!.id)?.host;
        if (host)
          t.log(
            (
              await host.exec(
                "cat /var/lib/steward/agents/*/agent.json | head -5; tail -n 20 /var/lib/steward/agents/*/*.log",
              )
            ).stdout,
          );
        throw err;
      });
      t.is(there.instance!.id, m!.instance!.id);
      await tgt.updateApplication("moving", "motd", { config: { message: "on the target" } });
      await eventually(
        "the change reached the unit",
        async () =>
          (await tgt.status("moving")).applications.motd?.units["motd/0"]?.workload.message.includes("on the target") ||
          undefined,
        60_000,
        250,
      );
      t.is(fake.instances().length, launched, "nothing launched again");
      t.is(
        fake.instances().find((i) => i.id === m!.instance!.id)?.state,
        "running",
        "the source left the instance alone",
      );

      // The target owns it now: removing the machine there terminates the instance.
      await tgt.destroyModel("moving");
      await eventually(
        "the instance terminated by the target",
        () => fake.instances().find((i) => i.id === m!.instance!.id)?.state === "terminated",
        120_000,
        250,
      );
    } finally {
      tgt.close();
      await target.stop().catch(() => undefined);
      await rm(targetDir, { recursive: true, force: true });
    }
  },
);
