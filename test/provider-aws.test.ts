/**
 * The Controller resource with substrate "aws", through the SDK's dynamic-provider process
 * (test/harness/pulumi-engine.ts), against a FAKE EC2 endpoint (test/harness/fake-ec2.ts) whose
 * instances are test hosts applying their user data (cloud-init's SSH module included): up launches
 * an instance and installs the controller with its host key pinned, stores the key as a credential
 * and makes EC2 the replica cloud; a model on aws uses that credential; a second up changes
 * nothing; refresh sees no drift; destroy terminates every instance tagged with the controller.
 */
import test from "ava";
import * as pulumi from "@pulumi/pulumi";
import { ControllerClient } from "../api";
import { Controller, Model } from "../provider";
import type { ControllerConnection } from "../provider";
import { fakeEc2Boot } from "./harness/cloud-init";
import { FakeEc2 } from "./harness/fake-ec2";
import { TestLab } from "./harness/hosts";
import { providerTestBed } from "./harness/provider-bed";

const root = process.getuid?.() === 0;
const asRoot = root ? test.serial : test.skip; // test hosts need namespaces
const REGION = "eu-west-1";
const AMI = "ami-0123456789abcdef0";
const awsKey = { accessKeyId: "AKIAFAKEEC2PROVIDER1", secretAccessKey: "fake-secret-for-the-provider-test-00001" };

let lab: TestLab;
let fake: FakeEc2;
const { engine } = providerTestBed(test, {
  when: root,
  setUp: async () => {
    lab = await TestLab.create(0);
    fake = new FakeEc2({ region: REGION, credentials: awsKey, boot: fakeEc2Boot(lab), listen: `${lab.subnet}.1` });
    await fake.start();
  },
  tearDown: async () => {
    await fake?.stop().catch(() => undefined);
    await lab?.close();
  },
});

const stack = (instanceType: string) => (): void => {
  const aws = { region: REGION, imageId: AMI, instanceType, endpoint: fake.endpoint, endpointCaCert: fake.caCert };
  const ctl = new Controller("ctl", {
    substrate: "aws",
    aws,
    awsCredential: pulumi.secret(awsKey),
    credentialName: "ec2",
  });
  new Model("shop", {
    connection: ctl.connection,
    substrate: "aws",
    credential: "ec2",
    aws: { region: REGION, imageId: AMI, instanceType },
  });
};

asRoot(
  "a Controller on aws: up launches and installs it with the host key pinned, a model uses its stored key, destroy terminates its instances",
  async (t) => {
    t.timeout(300_000);
    const up = await engine.up(stack("t3.small"));
    t.deepEqual(up.errors, []);
    t.deepEqual(up.created.sort(), ["ctl", "shop"]);
    const outs = engine.get("ctl")!.outputs as { uuid: string; connection: ControllerConnection; replicas: number };
    t.is(outs.replicas, 1);
    const [instance] = fake.instances();
    t.is(instance?.state, "running");
    t.is(instance?.tags["steward:controller"], outs.uuid, "the instance is tagged with the controller it became");
    t.deepEqual(outs.connection.addresses, [`${instance!.privateIp}:17070`]);

    const c = new ControllerClient({
      addresses: outs.connection.addresses,
      caCert: outs.connection.caCert,
      user: outs.connection.user,
      password: outs.connection.password,
    });
    try {
      t.deepEqual(
        (await c.listCredentials()).credentials.map((k) => [k.name, k.substrate]),
        [["ec2", "aws"]],
      );
      t.is(
        (await c.controllerInfo()).cluster.replicaCloud?.credential,
        "ec2",
        "EC2 is the replica cloud, with the stored key",
      );
      t.is((await c.listModels()).find((m) => m.name === "shop")?.substrate, "aws");
    } finally {
      c.close();
    }
    t.false(
      engine.persistedState().includes(awsKey.secretAccessKey),
      "the secret key is not in the state in plain text",
    );
    t.false(engine.persistedState().includes(outs.connection.password), "nor the admin password");

    const again = await engine.up(stack("t3.small"));
    t.deepEqual(
      [again.created, again.updated, again.replaced, again.errors],
      [[], [], [], []],
      "a second up changes nothing",
    );
    t.deepEqual(await engine.refresh(), { drifted: [], gone: [] });

    // Another instance type for new replicas is an update of the replica cloud, not a new controller.
    const changed = await engine.up(stack("t3.medium"));
    t.deepEqual(changed.errors, []);
    t.true(changed.updated.includes("ctl"));
    t.false(changed.replaced.includes("ctl"));

    await engine.destroy();
    t.is(engine.state.size, 0);
    t.deepEqual(
      fake
        .instances()
        .filter((i) => i.tags["steward:controller"] === outs.uuid && (i.state === "running" || i.state === "pending")),
      [],
      "every instance of the controller is terminated",
    );
  },
);
