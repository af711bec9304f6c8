/**
 * `steward bootstrap aws:REGION` against a FAKE EC2 endpoint (test/harness/fake-ec2.ts, driven by
 * the real AWS SDK) whose instances are new test hosts that apply their user data with the
 * harness's cloud-init subset (its SSH module included). The CLI launches one instance with a host
 * key made for it, installs the controller over SSH with that key pinned, stores the credential,
 * makes EC2 the replica cloud, and the controller grows to three replicas by launching the other two
 * itself. Run with the HA suite (alone: it moves a controller into etcd and boots several hosts).
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControllerClient } from "../api";
import { loadClientConfig } from "../cli";
import type { CliResult } from "./harness/cli";
import { cliRunner } from "./harness/cli";
import { fakeEc2Boot } from "./harness/cloud-init";
import type { FakeEc2Boot } from "./harness/cloud-init";
import { eventually } from "./harness/eventually";
import { FakeEc2 } from "./harness/fake-ec2";
import { TestLab } from "./harness/hosts";

const root = process.getuid?.() === 0;
const ha = root ? test.serial : test.skip;
const REGION = "eu-west-1";
const AMI = "ami-0123456789abcdef0";
const awsKey = { accessKeyId: "AKIAFAKEEC2BOOTSTRAP", secretAccessKey: "fake-secret-for-the-bootstrap-test-0001" };

let lab: TestLab;
let fake: FakeEc2;
let boot: FakeEc2Boot;
let home: string;
let steward: (...args: string[]) => Promise<CliResult>;
let caFile: string;
let credFile: string;
let client: ControllerClient | undefined;

test.before(async () => {
  if (!root) return;
  lab = await TestLab.create(0);
  boot = fakeEc2Boot(lab);
  // Replicas run in the lab's namespaces: they reach the fake on the lab's bridge, as the CLI does.
  fake = new FakeEc2({ region: REGION, credentials: awsKey, boot, listen: `${lab.subnet}.1` });
  await fake.start();
  home = await mkdtemp(join(tmpdir(), "steward-aws-bootstrap-"));
  steward = cliRunner(home, home);
  caFile = join(home, "ec2-ca.pem");
  await writeFile(caFile, fake.caCert);
  credFile = join(home, "aws-credentials");
  await writeFile(
    credFile,
    `[default]\naws_access_key_id = ${awsKey.accessKeyId}\naws_secret_access_key = ${awsKey.secretAccessKey}\n`,
    { mode: 0o600 },
  );
});
test.after.always(async () => {
  client?.close();
  await fake?.stop().catch(() => undefined);
  await lab?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

const ok = (t: ExecutionContext, r: CliResult, what: string): void => {
  if (r.code !== 0) t.log(r.stdout, r.stderr);
  t.is(r.code, 0, what);
};
const awsArgs = (): string[] => ["--image", AMI, "--endpoint", fake.endpoint, "--endpoint-ca-file", caFile];

ha("bootstrap aws: refuses bad input before it launches anything", async (t) => {
  const cases: [string[], RegExp][] = [
    [["bootstrap", "aws:eu-west-1", "x", ...awsArgs()], /give the AWS credential: --credential-file FILE/],
    [
      ["bootstrap", "aws:eu-west-1", "x", ...awsArgs(), "--credential-file", credFile, "--replicas", "2"],
      /--replicas must be 1, 3, 5 or 7, not "2"/,
    ],
    [
      ["bootstrap", "aws:eu-west-1", "x", "--image", "ubuntu", "--credential-file", credFile],
      /"imageId" must be an id such as ami-/,
    ],
    [["bootstrap", "aws:mars", "x", ...awsArgs(), "--credential-file", credFile], /"region" must be an AWS region/],
    [
      ["bootstrap", "aws:eu-west-1", "x", ...awsArgs(), "--region", "us-east-1", "--credential-file", credFile],
      /the region is given twice and differs/,
    ],
    [["bootstrap", "aws:eu-west-1", "x", ...awsArgs(), "--credential-file", join(home, "missing")], /missing/],
    [
      ["bootstrap", "aws:eu-west-1", "x", ...awsArgs(), "--credential-file", credFile, "--host-key", "SHA256:abc"],
      /are for ssh: targets/,
    ],
    [["bootstrap", "ssh:root@192.0.2.1", "x", "--image", AMI], /are for aws:REGION/],
  ];
  for (const [args, message] of cases) {
    const r = await steward(...args);
    t.not(r.code, 0, args.join(" "));
    t.regex(r.stderr + r.stdout, message, args.join(" "));
  }
  t.deepEqual(fake.instances(), [], "nothing was launched");
});

ha(
  "an instance that does not install the host key made for it fails the pin, and the bootstrap terminates it",
  async (t) => {
    t.timeout(300_000);
    // An image without cloud-init: the instance boots with its own host key and ignores the user data.
    const plainBoot = async (): Promise<{ privateIp: string; stop(): Promise<void> }> => {
      const host = await lab.addHost();
      return { privateIp: host.ip, stop: () => host.kill() };
    };
    const plain = new FakeEc2({ region: REGION, credentials: awsKey, boot: plainBoot, listen: `${lab.subnet}.1` });
    await plain.start();
    t.teardown(() => plain.stop());
    const plainCa = join(home, "plain-ca.pem");
    await writeFile(plainCa, plain.caCert);
    const r = await steward(
      "bootstrap",
      "aws:eu-west-1",
      "nokeys",
      "--image",
      AMI,
      "--endpoint",
      plain.endpoint,
      "--endpoint-ca-file",
      plainCa,
      "--credential-file",
      credFile,
    );
    t.is(r.code, 1);
    t.regex(r.stderr, /host key of .* does not match: expected SHA256:/);
    t.regex(r.stderr, /Terminating instance i-/);
    const [instance] = plain.instances();
    t.true(
      instance?.state === "shutting-down" || instance?.state === "terminated",
      `the instance it launched is not left running (${instance?.state})`,
    );
    t.false("nokeys" in (await loadClientConfig(home)).controllers, "no controller entry for a failed bootstrap");
  },
);

ha(
  "bootstrap aws: --replicas 3 installs the first replica over SSH with the host key pinned, and the controller launches the other two itself",
  async (t) => {
    t.timeout(900_000);
    const r = await steward(
      "bootstrap",
      "aws:eu-west-1",
      "ec2",
      "--replicas",
      "3",
      ...awsArgs(),
      "--credential-file",
      credFile,
      "--credential",
      "prod",
      "--timeout",
      "12m",
    );
    ok(t, r, "bootstrap");
    t.regex(r.stderr, /connecting over SSH \(host key SHA256:\S+, made for it\)/);
    t.regex(r.stdout, /Bootstrapped controller "ec2" on EC2 \(eu-west-1\)/);
    t.notRegex(r.stdout + r.stderr, new RegExp(awsKey.secretAccessKey), "the secret key is never printed");

    const entry = (await loadClientConfig(home)).controllers.ec2!;
    t.is(entry.addresses.length, 3, "the client knows all three replicas");
    client = new ControllerClient({
      addresses: entry.addresses,
      caCert: entry.caCert,
      user: "admin",
      password: entry.password!,
      timeoutMs: 4000,
    });
    const info = await client.controllerInfo();
    const voters = info.cluster.members.filter((m) => m.hasVote && m.present);
    t.is(voters.length, 3);
    // Three instances, all tagged as this controller's replicas (so the keeper can retire any of them), all running.
    const live = fake.instances().filter((i) => i.state === "running");
    if (live.length !== 3) {
      t.log(JSON.stringify(fake.instances().map((i) => ({ id: i.id, state: i.state, ip: i.privateIp }))));
      for (const [id, h] of boot.hosts)
        t.log(
          id,
          (await h.host.exec("grep -iE 'keeper|WARN|ERROR' /var/lib/steward/controller/controller.log | tail -n 30"))
            .stdout,
        );
    }
    t.is(live.length, 3);
    for (const i of live) {
      t.is(
        i.tags["steward:controller"],
        info.uuid,
        `${i.id} is tagged with the controller's UUID, chosen before it existed`,
      );
      t.is(i.tags["steward:replica"], "replicas");
    }
    t.deepEqual(
      voters.map((m) => m.host).sort(),
      live.map((i) => i.privateIp!).sort(),
      "the voters are on the instances",
    );
    t.deepEqual(
      voters.map((m) => m.instance?.id).sort(),
      live.map((i) => i.id).sort(),
      "each replica's instance is recorded with it, the bootstrap's first one too",
    );
    // The credential is stored (secret not shown back) and EC2 is the replica cloud.
    const creds = await steward("credentials");
    t.regex(creds.stdout, /prod\s+aws/);
    t.notRegex(creds.stdout, new RegExp(awsKey.secretAccessKey));
    t.regex((await steward("show-controller")).stdout, /Replica cloud: aws eu-west-1, t3\.small, credential prod/);
    ok(t, await steward("add-model", "shop"), "the controller serves");
    await eventually("model listed", async () => (await client!.listModels()).some((m) => m.name === "shop"));

    // Destroying it terminates every instance tagged with it, with the credential given again.
    const noKey = await steward("destroy-controller", "ec2", "--yes");
    t.is(noKey.code, 1);
    t.regex(noKey.stdout + noKey.stderr, /give the AWS credential to remove its EC2 instances with/);
    t.is(
      fake.instances().filter((i) => i.state === "running").length,
      3,
      "nothing was destroyed without the credential",
    );
    client.close();
    client = undefined;
    ok(t, await steward("destroy-controller", "ec2", "--yes", "--credential-file", credFile), "destroy-controller");
    t.deepEqual(
      fake
        .instances()
        .filter((i) => i.tags["steward:controller"] === info.uuid && (i.state === "running" || i.state === "pending"))
        .map((i) => i.id),
      [],
      "no instance of the controller is left running",
    );
    t.false("ec2" in (await loadClientConfig(home)).controllers, "the client forgot it");
  },
);
