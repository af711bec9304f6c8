/**
 * Storage that outlives its units (issue 32), on the local substrate with real agent processes: how
 * long from `add-unit --attach-storage data/0` until the new unit's storage-attached hook has read
 * what the previous unit wrote (the notebook operator's status says so), and from `remove-unit`
 * until the storage is detached and kept. One instance is passed from unit to unit `size` times. The
 * aws case (an EBS volume, each unit on a new instance) is in storage-attach-aws.ts.
 */
import { join } from "node:path";
import type { ModelStatus } from "../api";
import { readOperatorDir } from "../api";
import { startTestController } from "../test/harness/controller";
import { benchStorageAttachSsh } from "./storage-attach-ssh";
import { benchStorageAttachAws } from "./storage-attach-aws";
import { benchStorageAttachVsphere } from "./storage-attach-vsphere";
import type { BenchOptions } from "./util";
import { median, report, until, unlessStorageAttached } from "./util";

const unitMessage = (s: ModelStatus, unit: string): string | undefined =>
  s.applications.notebook?.units[unit]?.workload.message;

/** `size`: hand-overs of the instance from one unit to the next (default 5). */
export async function benchStorageAttach(o: BenchOptions = {}): Promise<void> {
  const RUNS = o.size ?? 5;
  const tc = await startTestController();
  const client = tc.admin;
  const attach: number[] = [];
  const detach: number[] = [];
  try {
    await client.createModel("storage");
    const op = await readOperatorDir(join(__dirname, "..", "..", "operators", "notebook"));
    await client.uploadOperator(op.bundle);
    await client.deploy("storage", { name: "notebook", operator: op.hash, units: 1 });
    let unit = "notebook/0";
    await until("the first unit's note", async () =>
      unitMessage(await client.status("storage"), unit)?.includes("new") ? true : undefined,
    );
    for (let i = 0; i < RUNS; i++) {
      let t0 = Date.now();
      await client.removeUnit("storage", unit);
      // Kept once it is off its machine: until then (listed detached already) it cannot be attached.
      [unit] = (
        await until("the storage detached and kept", () =>
          unlessStorageAttached(() => client.addUnits("storage", "notebook", 1, undefined, ["data/0"])),
        )
      ).units as [string];
      detach.push(Date.now() - t0);
      t0 = Date.now();
      await until(`${unit} to read the note`, async () =>
        unitMessage(await client.status("storage"), unit)?.includes("found") ? true : undefined,
      );
      attach.push(Date.now() - t0);
    }
    // Torn down through the controller, so that no agent outlives the benchmark.
    await client.removeApplication("storage", "notebook", true);
    await until("the machines to go", async () =>
      Object.keys((await client.status("storage")).machines).length === 0 ? true : undefined,
    );
  } finally {
    // Stops the controller and any agent a failed run left behind.
    await tc.close();
  }
  report("storage on the local substrate (one instance handed from unit to unit, notebook operator)", {
    [`add-unit --attach-storage → hook reads data, median of ${RUNS} (ms)`]: median(attach),
    [`remove-unit → storage detached and kept, median of ${RUNS} (ms)`]: median(detach),
  });
  // The other substrates' cases, each in a file of its own.
  await benchStorageAttachSsh(o);
  await benchStorageAttachAws(o);
  await benchStorageAttachVsphere({ size: o.size === undefined ? 3 : Math.min(o.size, 3) });
}
