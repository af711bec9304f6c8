/**
 * The controller provisions its own replacement replicas on a cloud: a three-replica cluster on
 * test hosts (bootstrapped and grown over SSH) is given a FAKE EC2 endpoint (test/harness/fake-ec2.ts;
 * its instances are new test hosts running their user data) with `steward set-replica-cloud`. A
 * replica lost past replaceAfter is replaced by a new instance that installs itself without SSH and
 * joins with a vote; a replaced replica's instance is terminated once it is out of the cluster; no
 * acknowledged write is lost. Then the same on vSphere: VMware's simulator vcsim, whose guest bridge
 * boots a test host per powered-on VM. Run with the HA suite (alone: it kills and cuts hosts).
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClusterInfo } from "../api";
import { ControllerClient } from "../api";
import { loadClientConfig } from "../cli";
import type { CliResult } from "./harness/cli";
import { cliRunner } from "./harness/cli";
import { fakeEc2Boot } from "./harness/cloud-init";
import type { FakeEc2Boot } from "./harness/cloud-init";
import { eventually } from "./harness/eventually";
import { FakeEc2 } from "./harness/fake-ec2";
import type { TestHost } from "./harness/hosts";
import { TestLab } from "./harness/hosts";
import type { Vcsim } from "./harness/vcsim";
import { startVcsim } from "./harness/vcsim";

const root = process.getuid?.() === 0;
const ha = root ? test.serial : test.skip;
const REPLACE_AFTER_S = 5;
const awsKey = { accessKeyId: "AKIAFAKEEC2REPLICAS1", secretAccessKey: "fake-secret-for-the-replica-cloud-test-01" };

let lab: TestLab;
let fake: FakeEc2;
let boot: FakeEc2Boot;
let home: string;
let steward: (...args: string[]) => Promise<CliResult>;
let client: ControllerClient;
let vc: Vcsim | undefined;
const acked: string[] = [];

test.before(async () => {
  if (!root) return;
  lab = await TestLab.create(3);
  boot = fakeEc2Boot(lab);
  // The replicas run in the lab's namespaces: they reach the fake on the lab's bridge.
  fake = new FakeEc2({ region: "eu-west-1", credentials: awsKey, boot, listen: `${lab.subnet}.1` });
  await fake.start();
  home = await mkdtemp(join(tmpdir(), "steward-aws-ha-"));
  steward = cliRunner(home, home);
  process.env.AWS_HA_TEST_SSH_KEY = lab.clientKey;
});
test.after.always(async () => {
  client?.close();
  await fake?.stop().catch(() => undefined);
  await vc?.stop().catch(() => undefined);
  await lab?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

const hostKeyArgs = (hosts: TestHost[]): string[] => hosts.flatMap((h) => ["--host-key", h.hostKeyFingerprint]);
const ok = (t: ExecutionContext, r: CliResult, what: string): void => {
  if (r.code !== 0) t.log(r.stdout, r.stderr);
  t.is(r.code, 0, what);
};

async function cluster(): Promise<ClusterInfo | undefined> {
  return (await client.controllerInfo().catch(() => undefined))?.cluster;
}

/** Three present voters, one of them on `instance` when given, and no learner. */
async function healthy(
  t: ExecutionContext,
  what: string,
  instance?: (c: ClusterInfo) => boolean,
): Promise<ClusterInfo> {
  return eventually(
    what,
    async () => {
      const c = await cluster();
      const voters = c?.members.filter((m) => m.hasVote) ?? [];
      return c?.quorum &&
        voters.length === 3 &&
        voters.every((m) => m.present) &&
        !c.members.some((m) => m.learner) &&
        (!instance || instance(c))
        ? c
        : undefined;
    },
    240_000,
    500,
  ).catch(async (err: unknown) => {
    t.log(JSON.stringify(await cluster(), null, 1));
    for (const [id, h] of boot.hosts)
      t.log(
        id,
        h.error?.message ?? "",
        (
          await h.host.exec(
            "tail -n 20 /var/lib/steward/enrol-replica.log; tail -n 10 /var/lib/steward/controller/controller.log",
          )
        ).stdout,
      );
    throw err;
  });
}

/** Creates models until stopped; each acknowledged one must survive. */
function startWriter(tag: string): { stop(): Promise<void> } {
  let stopped = false;
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      try {
        await client.createModel(`${tag}-${i}`);
        acked.push(`${tag}-${i}`);
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  })();
  const writer = {
    async stop() {
      stopped = true;
      await loop;
    },
  };
  writers.push(writer);
  return writer;
}
const writers: { stop(): Promise<void> }[] = [];
// A failed test must not leave its writer running (the worker would never exit).
test.afterEach.always(async () => {
  await Promise.all(writers.splice(0).map((w) => w.stop()));
});

/**
 * Every instance launched runs a voter or is terminated. One launch per replacement is the rule, but
 * not a promise: a leader deposed while its instance boots (a 1 s lease whose renewals stalled on a
 * loaded machine) terminates it, since the next leader cannot know of it, and that leader launches
 * another. What must never happen is an instance left running for nothing.
 */
async function noInstanceLeft(t: ExecutionContext, when: string): Promise<void> {
  const voting = async (): Promise<Set<string>> =>
    new Set((await cluster())?.members.flatMap((m) => (m.hasVote && m.instance ? [m.instance.id] : [])) ?? []);
  const stray = async (): Promise<string[]> => {
    const used = await voting();
    return fake
      .instances()
      .filter((i) => i.state !== "terminated" && !used.has(i.id))
      .map((i) => i.id);
  };
  await eventually(
    `no stray instance ${when}`,
    async () => ((await stray()).length === 0 ? true : undefined),
    60_000,
    500,
  ).catch(() => undefined);
  const launched = fake.calls.filter((c) => c.action === "RunInstances").length;
  t.log(`${when}: ${launched} instance(s) launched in all`);
  t.deepEqual(await stray(), [], `every instance runs a voter or is terminated ${when}`);
}

async function assertNothingLost(t: ExecutionContext): Promise<void> {
  const present = new Set((await client.listModels()).map((m) => m.name));
  t.deepEqual(
    acked.filter((m) => !present.has(m)),
    [],
    "every acknowledged write is present",
  );
}

ha("a lost replica is replaced by a new cloud instance that installs itself and votes; writes go on", async (t) => {
  t.timeout(600_000);
  const [h1, h2, h3] = lab.hosts as [TestHost, TestHost, TestHost];
  ok(
    t,
    await steward(
      "bootstrap",
      `ssh:root@${h1.ip}`,
      "cloudha",
      "--key-env",
      "AWS_HA_TEST_SSH_KEY",
      ...hostKeyArgs([h1]),
    ),
    "bootstrap",
  );
  ok(
    t,
    await steward(
      "enable-ha",
      "-n",
      "3",
      "--to",
      `ssh:root@${h2.ip},ssh:root@${h3.ip}`,
      "--key-env",
      "AWS_HA_TEST_SSH_KEY",
      ...hostKeyArgs([h2, h3]),
      "--replace-after",
      `${REPLACE_AFTER_S}s`,
      "--max-replacements-per-hour",
      "10",
    ),
    "enable-ha",
  );
  const entry = (await loadClientConfig(home)).controllers.cloudha!;
  client = new ControllerClient({
    addresses: entry.addresses,
    caCert: entry.caCert,
    user: "admin",
    password: entry.password!,
    timeoutMs: 4000,
  });
  await healthy(t, "three voters on the SSH hosts");

  // The cloud the keeper may launch replicas on, with a stored credential.
  await client.putCredential("prod", "aws", {
    "access-key-id": awsKey.accessKeyId,
    "secret-access-key": awsKey.secretAccessKey,
  });
  const caFile = join(home, "ec2-ca.pem");
  await writeFile(caFile, fake.caCert);
  const wrongCred = await steward(
    "set-replica-cloud",
    "aws",
    "--credential",
    "nope",
    "--region",
    "eu-west-1",
    "--image",
    "ami-0123456789abcdef0",
  );
  t.regex(wrongCred.stderr, /credential "nope" not found/, "a credential that does not exist is refused at once");
  ok(
    t,
    await steward(
      "set-replica-cloud",
      "aws",
      "--credential",
      "prod",
      "--region",
      "eu-west-1",
      "--image",
      "ami-0123456789abcdef0",
      "--endpoint",
      fake.endpoint,
      "--endpoint-ca-file",
      caFile,
    ),
    "set-replica-cloud",
  );
  t.regex((await steward("show-controller")).stdout, /Replica cloud: aws eu-west-1, t3\.small, credential prod/);

  const writer = startWriter("cloud");
  await h3.kill();
  const first = await healthy(t, "three voters, one on a new instance", (c) =>
    c.members.some((m) => m.hasVote && m.instance),
  );
  const onCloud = first.members.find((m) => m.hasVote && m.instance)!;
  const instance = fake.instances().find((i) => i.id === onCloud.instance!.id)!;
  t.is(instance.state, "running");
  t.is(onCloud.host, instance.privateIp ?? "(none)", "the replica runs on the instance's address");
  t.is(instance.tags["steward:replica"], "replicas");
  t.true(
    first.members.some((m) => m.host === h3.ip && m.state === "removed"),
    "the lost replica was removed from etcd",
  );
  await noInstanceLeft(t, "after the first replacement");
  const show = await steward("show-controller");
  t.regex(show.stdout, new RegExp(instance.id), "show-controller names the replica's instance");

  // A replica on an instance, cut off for good: replaced by another instance, and its own
  // instance terminated once it is out of the cluster.
  const cloudHost = boot.hosts.get(instance.id)!.host;
  await cloudHost.cut();
  await healthy(t, "three voters again, on another instance", (c) =>
    c.members.some((m) => m.hasVote && m.instance && m.instance.id !== instance.id),
  );
  await eventually(
    "the cut-off replica's instance terminated",
    () => fake.instances().find((i) => i.id === instance.id)?.state === "terminated",
    60_000,
    500,
  ).catch(async (err: unknown) => {
    t.log(
      "instance states:",
      fake.instances().map((i) => `${i.id} ${i.privateIp ?? ""} ${i.state}`),
    );
    t.log("EC2 calls:", fake.calls.map((c) => c.action).join(" "));
    t.log(JSON.stringify(await cluster(), null, 1));
    throw err;
  });
  await writer.stop();
  await assertNothingLost(t);
  t.true(acked.length > 0, "writes went on");
  await noInstanceLeft(t, "after the second replacement");
});

ha(
  "on vSphere: a lost replica is replaced by a VM cloned from the template, which installs itself and votes",
  async (t) => {
    t.timeout(300_000);
    if (!client) return t.fail("the cluster of the test before is needed");
    // The replicas run in the lab's namespaces: vcsim listens on the lab's bridge for them.
    vc = await startVcsim(lab, { listen: `${lab.subnet}.1` });
    await client.putCredential("lab", "vsphere", { user: vc.user, password: vc.password });
    const caFile = join(home, "vcenter-ca.pem");
    await writeFile(caFile, vc.caCert);
    ok(
      t,
      await steward(
        "set-replica-cloud",
        "vsphere",
        "--credential",
        "lab",
        "--vcenter",
        vc.url,
        "--datacenter",
        vc.datacenter,
        "--template",
        vc.template,
        "--vcenter-ca-file",
        caFile,
      ),
      "set-replica-cloud vsphere",
    );
    t.regex(
      (await steward("show-controller")).stdout,
      /Replica cloud: vsphere DC0, template debian-12-template, credential lab/,
    );

    const before = await healthy(t, "a healthy cluster");
    const writer = startWriter("vsphere");
    const victim = before.members.find((m) => m.hasVote && !m.leader)!;
    const victimHost = [...lab.hosts, ...[...boot.hosts.values()].map((h) => h.host)].find(
      (h) => h.ip === victim.host,
    )!;
    await victimHost.cut();
    const after = await healthy(t, "three voters again, one on a VM", (c) =>
      c.members.some((m) => m.hasVote && /^vm-\d+$/.test(m.instance?.id ?? "")),
    );
    const onVm = after.members.find((m) => m.hasVote && /^vm-\d+$/.test(m.instance?.id ?? ""))!;
    const bridged = vc.bridge!.vms.get(onVm.instance!.id);
    t.truthy(bridged, "the VM was booted by the guest bridge");
    t.is(onVm.host, bridged!.host.ip, "the replica runs at the VM's guest address");
    await writer.stop();
    await assertNothingLost(t);
  },
);
