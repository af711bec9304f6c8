/**
 * The controller replacing a lost replica with a new cloud instance (the FAKE EC2 of the tests,
 * whose instances are namespaced test hosts running their user data): a 3-replica controller
 * bootstrapped over SSH, `set-replica-cloud` pointed at the fake, then in each trial a follower's
 * instance is terminated through EC2 (the first trial kills an SSH host: no replica is on an
 * instance yet) and the time to three healthy voters again, one on a new instance, is measured
 * from the termination and from the keeper's removal (target: ≤ replaceAfter + 30 s from the
 * termination). Needs root.
 */
import { TerminateInstancesCommand } from "@aws-sdk/client-ec2";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClusterInfo } from "../api";
import { ControllerClient } from "../api";
import { loadClientConfig } from "../cli";
import { cliRunner } from "../test/harness/cli";
import { fakeEc2Boot } from "../test/harness/cloud-init";
import { FakeEc2, ec2ClientFor } from "../test/harness/fake-ec2";
import { TestLab } from "../test/harness/hosts";
import type { BenchOptions } from "./util";
import { median, report, sleep } from "./util";

const REPLACE_AFTER_S = 10;
const credentials = { accessKeyId: "AKIAFAKEBENCHREPLICA", secretAccessKey: "fake-secret-for-the-replica-bench-0001" };

/** `size`: trials (default 3). */
export async function benchAwsReplicas(o: BenchOptions = {}): Promise<void> {
  const trials = o.size ?? 3;
  if (process.getuid?.() !== 0) {
    process.stdout.write("\naws-replicas: skipped (needs root for test hosts)\n");
    return;
  }
  const lab = await TestLab.create(3);
  const boot = fakeEc2Boot(lab);
  const fake = new FakeEc2({ region: "eu-west-1", credentials, boot, listen: `${lab.subnet}.1` });
  await fake.start();
  const ec2 = ec2ClientFor(fake);
  const home = await mkdtemp(join(tmpdir(), "steward-bench-aws-ha-"));
  process.env.BENCH_SSH_KEY = lab.clientKey;
  let client: ControllerClient | undefined;
  try {
    const steward = cliRunner(home, home);
    const must = async (...args: string[]): Promise<void> => {
      const r = await steward(...args);
      if (r.code !== 0) throw new Error(`steward ${args[0]} failed: ${r.stderr}`);
    };
    await must(
      "bootstrap",
      lab.hosts.map((h) => `ssh:root@${h.ip}`).join(","),
      "bench",
      "--key-env",
      "BENCH_SSH_KEY",
      ...lab.hosts.flatMap((h) => ["--host-key", h.hostKeyFingerprint]),
      "--replace-after",
      `${REPLACE_AFTER_S}s`,
    );
    await must("enable-ha", "-n", "3", "--max-replacements-per-hour", String(trials * 2 + 2));
    const entry = (await loadClientConfig(home)).controllers.bench!;
    client = new ControllerClient({
      addresses: entry.addresses,
      caCert: entry.caCert,
      user: "admin",
      password: entry.password!,
      timeoutMs: 2000,
    });
    await client.putCredential("bench", "aws", {
      "access-key-id": credentials.accessKeyId,
      "secret-access-key": credentials.secretAccessKey,
    });
    const caFile = join(home, "ec2-ca.pem");
    await writeFile(caFile, fake.caCert);
    await must(
      "set-replica-cloud",
      "aws",
      "--credential",
      "bench",
      "--region",
      "eu-west-1",
      "--image",
      "ami-0123456789abcdef0",
      "--endpoint",
      fake.endpoint,
      "--endpoint-ca-file",
      caFile,
    );

    const cluster = async (): Promise<ClusterInfo | undefined> =>
      (await client!.controllerInfo().catch(() => undefined))?.cluster;
    const healthy = async (onNew: (c: ClusterInfo) => boolean = () => true): Promise<ClusterInfo> => {
      for (;;) {
        const c = await cluster();
        const voters = c?.members.filter((m) => m.hasVote) ?? [];
        if (
          c?.quorum &&
          voters.length === 3 &&
          voters.every((m) => m.present) &&
          !c.members.some((m) => m.learner) &&
          onNew(c)
        )
          return c;
        await sleep(200);
      }
    };
    const lossToVoters: number[] = [],
      removalToVoters: number[] = [];
    for (let trial = 0; trial <= trials; trial++) {
      const before = await healthy();
      const known = new Set(before.members.flatMap((m) => (m.instance ? [m.instance.id] : [])));
      const onInstance = before.members.find((m) => m.hasVote && !m.leader && m.instance);
      const lostAt = Date.now();
      if (onInstance) await ec2.send(new TerminateInstancesCommand({ InstanceIds: [onInstance.instance!.id] }));
      else await lab.hosts.find((h) => h.ip === before.members.find((m) => m.hasVote && !m.leader)!.host)!.kill();
      const after = await healthy((c) => c.members.some((m) => m.hasVote && m.instance && !known.has(m.instance.id)));
      const doneAt = Date.now();
      // Trial 0 only moves a replica onto an instance; the figures are for instances lost.
      if (!onInstance) continue;
      const removal = after.keeper.history
        .filter((e) => e.message.startsWith("removing ") && Date.parse(e.at) >= lostAt)
        .pop();
      lossToVoters.push((doneAt - lostAt) / 1000);
      if (removal) removalToVoters.push((doneAt - Date.parse(removal.at)) / 1000);
    }
    const launches = fake.calls.filter((c) => c.action === "RunInstances").length;
    // More launches than replacements: the keeper's own account of why (a launch given up, a leader deposed).
    if (launches > trials + 1)
      for (const e of (await cluster())?.keeper.history ?? []) process.stdout.write(`  keeper ${e.at} ${e.message}\n`);
    report(
      `HA: a replica's instance terminated, replaced by a new instance (fake EC2; replaceAfter ${REPLACE_AFTER_S} s, ${trials} trials)`,
      {
        "terminated to 3 healthy voters: median (s)": median(lossToVoters).toFixed(1),
        "terminated to 3 healthy voters: max (s)": Math.max(...lossToVoters).toFixed(1),
        "keeper's removal to 3 healthy voters: median (s)": median(removalToVoters).toFixed(1),
        "instances launched": launches,
      },
    );
  } finally {
    client?.close();
    ec2.destroy();
    await fake.stop().catch(() => undefined);
    await lab.close();
    await rm(home, { recursive: true, force: true });
  }
}
