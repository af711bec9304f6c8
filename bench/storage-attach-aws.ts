/**
 * The aws case of the storage bench (storage-attach.ts): one EBS volume handed from unit to unit,
 * each unit on a new instance of the FAKE EC2 of the tests (test/harness/fake-ec2.ts) whose instances
 * are test hosts and whose volumes are loop devices (test/harness/ebs-disks.ts). Measured: from
 * `add-unit --attach-storage data/0` until the new unit's storage-attached hook has read the note
 * the previous unit left (a new instance booted, its agent enrolled, the volume attached, found by
 * its Nitro name, mounted, the hook run), and from `remove-unit` until the volume is detached and
 * kept and the machine gone. EC2's own times (a launch is ~10–60 s, an attach a few seconds) are
 * not in it: what is measured is Steward's side. Needs root.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readOperatorDir } from "../api";
import { fakeEc2Boot } from "../test/harness/cloud-init";
import { startTestController } from "../test/harness/controller";
import { ebsDisks } from "../test/harness/ebs-disks";
import { FakeEc2, createModelOnFake } from "../test/harness/fake-ec2";
import { TestLab } from "../test/harness/hosts";
import type { BenchOptions } from "./util";
import { median, report, until } from "./util";

const region = "eu-west-1";
const credentials = { accessKeyId: "AKIAFAKEBENCH0000002", secretAccessKey: "fake-secret-for-the-storage-bench-0002" };

/** `size`: hand-overs of the volume from one unit to the next (default 5). */
export async function benchStorageAttachAws(o: BenchOptions = {}): Promise<void> {
  const RUNS = o.size ?? 5;
  if (process.getuid?.() !== 0) {
    process.stdout.write("\nstorage-attach (aws): skipped (needs root for test hosts and loop devices)\n");
    return;
  }
  const dir = await mkdtemp(join(tmpdir(), "steward-bench-storage-aws-"));
  const lab = await TestLab.create(0);
  const boot = fakeEc2Boot(lab);
  const disks = ebsDisks(boot, () => dir);
  const fake = new FakeEc2({ region, credentials, boot, onAttach: disks.onAttach, onDetach: disks.onDetach });
  await fake.start();
  const tc = await startTestController({ listenHost: `${lab.subnet}.1`, cloudPollIntervalMs: 500 });
  const client = tc.admin;
  const attach: number[] = [];
  const detach: number[] = [];
  const message = async (unit: string) =>
    (await client.status("storage")).applications.notebook?.units[unit]?.workload.message;
  try {
    await createModelOnFake(fake, client, "storage", "bench");
    // The notebook operator without its location: the volume is mounted in the host's private /var/lib/steward.
    const notebook = join(dir, "notebook");
    await cp(join(__dirname, "..", "..", "operators", "notebook"), notebook, { recursive: true });
    const yaml = await readFile(join(notebook, "operator.yaml"), "utf8");
    await writeFile(join(notebook, "operator.yaml"), yaml.replace(/^ {4}location: .*\n/m, ""));
    const op = await readOperatorDir(notebook);
    await client.uploadOperator(op.bundle);
    await client.deploy("storage", {
      name: "notebook",
      operator: op.hash,
      units: 1,
      storage: { data: { pool: "ebs", size: 1024 } },
    });
    let unit = "notebook/0";
    await until("the first unit's note", async () => ((await message(unit))?.includes("new") ? true : undefined));
    for (let i = 0; i < RUNS; i++) {
      let t0 = Date.now();
      await client.removeUnit("storage", unit);
      await until("the volume detached and kept, the machine gone", async () => {
        const [s] = (await client.listStorage("storage")).storage;
        const machines = await client.listMachines("storage");
        return s?.status === "detached" && s.location === "" && machines.length === 0 ? true : undefined;
      });
      detach.push(Date.now() - t0);
      t0 = Date.now();
      [unit] = (await client.addUnits("storage", "notebook", 1, undefined, ["data/0"])).units as [string];
      await until(`${unit} to read the note`, async () =>
        (await message(unit))?.includes("found") ? true : undefined,
      );
      attach.push(Date.now() - t0);
    }
    await client.removeUnit("storage", unit, false, true);
    await until("the volume deleted", async () =>
      (await client.listStorage("storage")).storage.length === 0 ? true : undefined,
    );
  } finally {
    await tc.close();
    await fake.stop();
    await lab.close();
    await rm(dir, { recursive: true, force: true });
  }
  report("storage on the aws substrate (one EBS volume handed from unit to unit; fake EC2, test hosts, loop devices)", {
    [`add-unit --attach-storage → new instance, hook reads data, median of ${RUNS} (ms)`]: median(attach),
    [`remove-unit → volume detached and kept, machine gone, median of ${RUNS} (ms)`]: median(detach),
  });
}
