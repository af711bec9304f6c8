/**
 * The Machine resource as a cloud machine (substrate "aws"), through the SDK's dynamic-provider
 * process (test/harness/pulumi-engine.ts), against a real controller and the FAKE EC2 endpoint
 * (test/harness/fake-ec2.ts) whose instances are test hosts applying their user data: up asks the
 * model's substrate for an instance sized by the constraints and waits for its agent; a second up
 * changes nothing; refresh reports the instance terminated by hand, and the next up replaces the
 * machine; other constraints replace it; delete terminates the instance. Bad args are refused by
 * check, naming the property, before anything is made.
 */
import test from "ava";
import { join } from "node:path";
import { TerminateInstancesCommand } from "@aws-sdk/client-ec2";
import type { ControllerClient } from "../api";
import type { ControllerConnection, ModelArgs } from "../provider";
import { Application, Machine, Model, implementations } from "../provider";
import { fakeEc2Boot } from "./harness/cloud-init";
import { operatorsDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { FakeEc2, ec2ClientFor } from "./harness/fake-ec2";
import { TestLab } from "./harness/hosts";
import { providerTestBed } from "./harness/provider-bed";

const root = process.getuid?.() === 0;
const asRoot = root ? test.serial : test.skip; // test hosts need namespaces
const region = "eu-west-1";
const awsKey = { accessKeyId: "AKIAFAKEEC2MACHINES1", secretAccessKey: "fake-secret-for-the-machine-provider-01" };

let lab: TestLab;
let fake: FakeEc2;
let connection: ControllerConnection;
let client: ControllerClient;

// The controller listens on the test hosts' bridge, which the instances' agents reach it on.
const bed = providerTestBed(test, {
  when: root,
  setUp: async () => {
    lab = await TestLab.create(0);
    fake = new FakeEc2({ region, credentials: awsKey, boot: fakeEc2Boot(lab) });
    await fake.start();
  },
  controller: () => ({ listenHost: `${lab.subnet}.1`, cloudPollIntervalMs: 500 }),
  afterStart: async () => {
    connection = bed.connection();
    client = bed.controller.admin;
    await client.putCredential("prod", "aws", {
      "access-key-id": awsKey.accessKeyId,
      "secret-access-key": awsKey.secretAccessKey,
    });
  },
  tearDown: async () => {
    await fake?.stop().catch(() => undefined);
    await lab?.close();
  },
});
const { engine } = bed;

const stack =
  (constraints: string, more: { model?: string; app?: string } = {}) =>
  (): void => {
    // The model reaches the fake EC2 through the endpoint settings the controller's API takes.
    const aws = {
      region,
      imageId: "ami-0123456789abcdef0",
      instanceType: "t3.small",
      endpoint: fake.endpoint,
      endpointCaCert: fake.caCert,
    } as ModelArgs["aws"];
    const model = new Model("shop", {
      connection,
      substrate: "aws",
      credential: "prod",
      aws,
      ...(more.model !== undefined ? { constraints: more.model } : {}),
    });
    new Machine("m0", { model, substrate: "aws", constraints, timeoutSeconds: 120 });
    if (more.app !== undefined)
      new Application("board", {
        model,
        operator: join(operatorsDir, "motd"),
        units: 1,
        constraints: more.app,
        timeoutSeconds: 120,
      });
  };

interface MachineOuts {
  machineId: string;
  instanceId: string;
  instanceState: string;
  zone: string;
  hardware: string;
  status: string;
  constraints: string;
}
const outs = (): MachineOuts => engine.get("m0")!.outputs as unknown as MachineOuts;
const instance = (id: string) => fake.instances().find((i) => i.id === id);

asRoot(
  "a cloud Machine: up launches an instance sized by its constraints and waits for its agent; a second up and a refresh change nothing",
  async (t) => {
    t.timeout(300_000);
    const up = await engine.up(stack("cores=2 mem=4G root-disk=20G"));
    t.deepEqual(up.errors, []);
    t.deepEqual(up.created.sort(), ["m0", "shop"]);
    const o = outs();
    t.is(o.status, "started", "created once its agent has enrolled");
    t.is(o.hardware, "arch=amd64 cores=2 mem=4G root-disk=20G instance-type=t3.medium");
    t.regex(o.instanceId, /^i-[0-9a-f]{17}$/);
    t.is(o.instanceState, "running");
    t.true(fake.zones.includes(o.zone));
    const i = instance(o.instanceId)!;
    t.is(i.instanceType, "t3.medium");
    t.deepEqual(
      i.volumes.map((v) => [v.deviceName, v.sizeGiB]),
      [["/dev/xvda", 20]],
    );
    t.is(i.tags["steward:machine"], o.machineId);
    const m = (await client.listMachines("shop")).find((x) => x.id === o.machineId);
    t.is(m?.constraints, "cores=2 mem=4G root-disk=20G");
    t.is(m?.instance?.id, o.instanceId);
    t.false(
      engine.persistedState().includes(connection.password),
      "the admin password is not in the state in plain text",
    );

    const again = await engine.up(stack("cores=2 mem=4096 root-disk=20480M"));
    t.deepEqual(
      [again.created, again.updated, again.replaced, again.errors],
      [[], [], [], []],
      "the same constraints written otherwise change nothing",
    );
    t.deepEqual(await engine.refresh(), { drifted: [], gone: [] });
  },
);

asRoot(
  "refresh reports the instance terminated by hand; the next up replaces the machine with a new instance",
  async (t) => {
    t.timeout(300_000);
    const before = outs();
    const ec2 = ec2ClientFor(fake);
    try {
      await ec2.send(new TerminateInstancesCommand({ InstanceIds: [before.instanceId] }));
    } finally {
      ec2.destroy();
    }
    // The controller polls its instances and records the state; refresh reads it from the controller.
    await eventually(
      "the controller sees the instance terminated",
      async () =>
        (await client.listMachines("shop")).find((m) => m.id === before.machineId)?.instance?.state === "terminated",
      30_000,
      250,
    );
    // One provider process reuses a model's status for 2 s (a refresh reads it once for all its
    // resources: provider/impl/session.ts); the last refresh here was less than that ago.
    await new Promise((r) => setTimeout(r, 2100));
    const refreshed = await engine.refresh();
    t.deepEqual(refreshed.gone, []);
    t.deepEqual(
      refreshed.drifted.map((d) => d.name),
      ["m0"],
    );
    t.true(refreshed.drifted[0]!.properties.includes("instanceState"));
    t.is(outs().instanceState, "terminated");

    const up = await engine.up(stack("cores=2 mem=4G root-disk=20G"));
    t.deepEqual(up.errors, []);
    t.deepEqual(up.replaced, ["m0"]);
    const after = outs();
    t.not(after.machineId, before.machineId, "a new machine");
    t.not(after.instanceId, before.instanceId, "on a new instance");
    t.is(instance(after.instanceId)?.state, "running");
    t.false(
      (await client.listMachines("shop")).some((m) => m.id === before.machineId),
      "the old machine is removed",
    );
  },
);

asRoot("other constraints replace the machine: the old instance is terminated", async (t) => {
  t.timeout(300_000);
  const before = outs();
  const up = await engine.up(stack("instance-type=m6i.large"));
  t.deepEqual(up.errors, []);
  t.deepEqual(up.replaced, ["m0"]);
  t.is(instance(outs().instanceId)?.instanceType, "m6i.large");
  t.is(outs().hardware, "arch=amd64 cores=2 mem=8G instance-type=m6i.large");
  await eventually(
    "the old instance terminated",
    () => instance(before.instanceId)?.state === "terminated",
    30_000,
    250,
  );
});

asRoot(
  "bad args are refused by check, naming the property; constraints nothing fits by the controller; nothing is made",
  async (t) => {
    // Straight to the provider's implementation (the engine harness leaves a failed step's
    // dependants waiting forever, which the Pulumi runtime reports as leaked promises at exit).
    const check = implementations.machine.check;
    const launched = fake.instances().length;
    const machines = (await client.listMachines("shop")).length;
    const base = { connection, model: "shop", forceDelete: false };
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [
        { substrate: "aws", constraints: "cpus=2" },
        "constraints",
        /^unknown key "cpus" \(accepted keys: arch, cores, mem, root-disk, instance-type/,
      ],
      [
        { substrate: "aws", ssh: { host: "10.0.0.1", hostKey: "SHA256:" + "A".repeat(43) } },
        "ssh",
        /^only for ssh machines: an aws machine is launched by the controller, and its agent enrols itself$/,
      ],
      [{ substrate: "vsphere", privateKey: "k" }, "privateKey", /^only for ssh machines, not vsphere$/],
      [
        { constraints: "cores=2" },
        "constraints",
        /^only for aws and vsphere machines, which the controller provisions; local machines are what they are$/,
      ],
      [{ substrate: "gce" }, "substrate", /^must be "local", "ssh", "aws", "vsphere", not "gce"$/],
      [{ substrate: "aws", timeoutSeconds: 5 }, "timeoutSeconds", /^must be a whole number from 30 to 86400, not 5$/],
    ];
    for (const [args, property, reason] of cases) {
      const res = await check({} as never, { ...base, ...args } as never);
      t.deepEqual(
        (res.failures ?? []).map((f) => f.property),
        [property],
        JSON.stringify(args),
      );
      t.regex(res.failures?.[0]?.reason ?? "", reason, JSON.stringify(args));
    }
    t.deepEqual(
      (await check({} as never, { ...base, substrate: "aws", constraints: "cores=2 mem=4G" } as never)).failures,
      [],
    );

    // Well-formed, but nothing the controller knows fits: its API refuses, the create fails.
    const err = await t.throwsAsync(
      implementations.machine.create({
        ...base,
        substrate: "aws",
        constraints: "cores=512",
        timeoutSeconds: 60,
      } as never),
    );
    t.regex(err?.message ?? "", /no instance type Steward knows fits "arch=amd64 cores=512"/);
    t.is(fake.instances().length, launched, "nothing launched");
    t.is((await client.listMachines("shop")).length, machines, "no machine added");
  },
);

asRoot(
  "a Model's and an Application's constraints: the application's machines get both merged; changing the model's is an update",
  async (t) => {
    t.timeout(300_000);
    const m0 = outs();
    const up = await engine.up(stack("instance-type=m6i.large", { model: "mem=8G", app: "cores=4" }));
    t.deepEqual(up.errors, []);
    t.deepEqual(up.created, ["board"]);
    t.deepEqual(up.updated, ["shop"], "the model's constraints change in place");
    t.deepEqual(up.replaced, [], "m0 keeps the constraints it was made with");
    t.is((await client.listModels()).find((m) => m.name === "shop")?.constraints, "mem=8G");
    t.is((await client.getApplication("shop", "board")).constraints, "cores=4");
    const board = (await client.listMachines("shop")).find((m) => m.units.includes("board/0"))!;
    t.is(board.constraints, "cores=4 mem=8G", "the application's merged over the model's");
    t.is(board.hardware, "arch=amd64 cores=4 mem=16G instance-type=t3.xlarge");
    t.is(instance(board.instance!.id)?.instanceType, "t3.xlarge");
    t.is(outs().machineId, m0.machineId);

    const again = await engine.up(stack("instance-type=m6i.large", { model: "mem=8192M", app: "cores=4" }));
    t.deepEqual(
      [again.created, again.updated, again.replaced, again.errors],
      [[], [], [], []],
      "the same constraints written otherwise",
    );

    // Set by hand on the controller: refresh shows it as drift of the model.
    await client.setModelConstraints("shop", "mem=16G");
    await new Promise((r) => setTimeout(r, 2100)); // past the provider process's status reuse
    const refreshed = await engine.refresh();
    t.deepEqual(
      refreshed.drifted.filter((d) => d.name === "shop").map((d) => d.properties),
      [["constraints"]],
    );
    const back = await engine.up(stack("instance-type=m6i.large", { model: "mem=8G", app: "cores=4" }));
    t.deepEqual(back.updated, ["shop"]);
    t.is((await client.listModels()).find((m) => m.name === "shop")?.constraints, "mem=8G", "the program's again");
  },
);

asRoot("delete removes the machine and terminates its instance", async (t) => {
  t.timeout(120_000);
  const o = outs();
  await engine.destroy();
  t.is(engine.state.size, 0);
  t.is(instance(o.instanceId)?.state, "terminated", "terminated before delete returned");
  t.deepEqual(
    fake.instances().filter((i) => i.state === "running" || i.state === "pending"),
    [],
  );
});
