/**
 * Machines added to an aws model until all their agents are up (the issue's target: 20 machines),
 * against the FAKE EC2 endpoint of the tests (test/harness/fake-ec2.ts), whose instances are
 * namespaced test hosts running their user data: what is measured is the controller's side (EC2
 * calls, enrolment, agent logins) plus a host's boot here, not EC2's own launch time (~10–60 s).
 * Needs root.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControllerClient, silentLogger } from "../api";
import { Controller, initControllerDir } from "../controller";
import { fakeEc2Boot } from "../test/harness/cloud-init";
import { FakeEc2 } from "../test/harness/fake-ec2";
import { TestLab } from "../test/harness/hosts";
import type { BenchOptions } from "./util";
import { median, report, sleep } from "./util";

const credentials = { accessKeyId: "AKIAFAKEBENCH0000001", secretAccessKey: "fake-secret-for-the-bench-only-0000001" };

/** `size`: machines added at once (default 20); `runs`: rounds (default 3). */
export async function benchAwsMachines(o: BenchOptions & { runs?: number } = {}): Promise<void> {
  const n = o.size ?? 20;
  if (process.getuid?.() !== 0) {
    process.stdout.write("\naws-machines: skipped (needs root for test hosts)\n");
    return;
  }
  const allUp: number[] = [],
    allRunning: number[] = [];
  for (let round = 0; round < (o.runs ?? 3); round++) {
    const lab = await TestLab.create(0);
    const fake = new FakeEc2({ region: "eu-west-1", credentials, boot: fakeEc2Boot(lab) });
    const ec2 = await fake.start();
    const dir = await mkdtemp(join(tmpdir(), "steward-bench-aws-"));
    const init = await initControllerDir({ dataDir: dir, name: "bench", listen: { host: `${lab.subnet}.1`, port: 0 } });
    const c = await Controller.start({ dataDir: dir, log: silentLogger, cloudPollIntervalMs: 500 });
    const client = new ControllerClient({
      addresses: c.apiAddresses,
      caCert: init.caCert,
      user: "admin",
      password: init.adminPassword!,
    });
    try {
      await client.putCredential("bench", "aws", {
        "access-key-id": credentials.accessKeyId,
        "secret-access-key": credentials.secretAccessKey,
      });
      await client.createModel("bench", undefined, "aws", {
        credential: "bench",
        settings: {
          region: "eu-west-1",
          imageId: "ami-0123456789abcdef0",
          endpoint: ec2.endpoint,
          endpointCaCert: ec2.caCert,
        },
      });
      const t0 = performance.now();
      await client.addMachines("bench", "aws", n);
      let running: number | undefined;
      for (;;) {
        if (
          running === undefined &&
          fake.instances().length === n &&
          fake.instances().every((i) => i.state === "running")
        )
          running = (performance.now() - t0) / 1000;
        const ms = await client.listMachines("bench");
        const failed = ms.find((m) => m.install?.state === "failed");
        if (failed) throw new Error(`machine ${failed.id}: ${failed.install!.step}`);
        if (ms.length === n && ms.every((m) => m.status === "started")) break;
        await sleep(100);
      }
      allUp.push((performance.now() - t0) / 1000);
      allRunning.push(running ?? allUp.at(-1)!);
    } finally {
      client.close();
      await c.stop();
      await fake.stop();
      await lab.close();
      await rm(dir, { recursive: true, force: true });
    }
  }
  report(`${n} machines added to an aws model (fake EC2, instances are test hosts; ${allUp.length} rounds)`, {
    "until every instance running: median (s)": median(allRunning),
    "until every agent enrolled and connected: median (s)": median(allUp),
    "rounds (s)": allUp.map((r) => r.toFixed(2)).join(", "),
  });
}
