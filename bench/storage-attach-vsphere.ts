/**
 * The vsphere case of the storage-attach benchmark (issue 32): one VMDK handed from unit to unit, each
 * unit on a new VM cloned on vcsim (VMware's own simulator; its guests are the tests' FAKE guest bridge:
 * a namespaced test host per VM, running the VM's cloud-init, with the VM's disks plugged in as loop
 * devices). Measured: from `add-unit --attach-storage data/0` until the new unit's storage-attached hook
 * has read the previous unit's note (the VM's clone, its guest's boot and enrolment, the disk's
 * attach, its mount by the agent, the hook), and from `remove-unit` until the VMDK is off the VM, kept,
 * and the VM destroyed. Needs root (test hosts, loop devices) and vcsim.
 */
import { join } from "node:path";
import type { ModelStatus } from "../api";
import { readOperatorDir } from "../api";
import { startTestController } from "../test/harness/controller";
import { TestLab } from "../test/harness/hosts";
import { startVcsim, vcsimAvailable } from "../test/harness/vcsim";
import type { BenchOptions } from "./util";
import { median, report, until } from "./util";

const unitMessage = (s: ModelStatus, unit: string): string | undefined =>
  s.applications.notebook?.units[unit]?.workload.message;

/** `size`: hand-overs of the VMDK from one unit (and VM) to the next (default 3). */
export async function benchStorageAttachVsphere(o: BenchOptions = {}): Promise<void> {
  if (process.getuid?.() !== 0 || !vcsimAvailable()) {
    process.stdout.write("\nstorage-attach (vsphere): skipped (needs root for test hosts, and vcsim)\n");
    return;
  }
  const RUNS = o.size ?? 3;
  const lab = await TestLab.create(0);
  const vc = await startVcsim(lab);
  const tc = await startTestController({ listenHost: `${lab.subnet}.1`, cloudPollIntervalMs: 500 });
  const client = tc.admin;
  const attach: number[] = [];
  const detach: number[] = [];
  try {
    await client.putCredential("lab", "vsphere", { user: vc.user, password: vc.password });
    await client.createModel("storage", undefined, "vsphere", {
      credential: "lab",
      settings: { url: vc.url, datacenter: vc.datacenter, template: vc.template, caCert: vc.caCert },
    });
    const op = await readOperatorDir(join(__dirname, "..", "..", "operators", "notebook"));
    await client.uploadOperator(op.bundle);
    await client.deploy("storage", {
      name: "notebook",
      operator: op.hash,
      units: 1,
      storage: { data: { pool: "vsphere", size: 64 } },
    });
    let unit = "notebook/0";
    await until("the first unit's note", async () =>
      unitMessage(await client.status("storage"), unit)?.includes("new") ? true : undefined,
    );
    for (let i = 0; i < RUNS; i++) {
      let t0 = Date.now();
      await client.removeUnit("storage", unit);
      // Its VM goes only once the VMDK is off it (unmounted by the agent, removed from the VM, kept).
      await until("the VMDK kept and the VM gone", async () =>
        Object.keys((await client.status("storage")).machines).length === 0 ? true : undefined,
      );
      detach.push(Date.now() - t0);
      t0 = Date.now();
      [unit] = (await client.addUnits("storage", "notebook", 1, undefined, ["data/0"])).units as [string];
      await until(`${unit} to read the note`, async () =>
        unitMessage(await client.status("storage"), unit)?.includes("found") ? true : undefined,
      );
      attach.push(Date.now() - t0);
    }
    await client.removeApplication("storage", "notebook", true);
    await until("the machines to go", async () =>
      Object.keys((await client.status("storage")).machines).length === 0 ? true : undefined,
    );
  } finally {
    await tc.close();
    await vc.stop();
    await lab.close();
  }
  report("storage on vsphere (one VMDK handed from unit to unit, a new VM each, on vcsim with test-host guests)", {
    [`add-unit --attach-storage → hook reads data, median of ${RUNS} (ms)`]: median(attach),
    [`remove-unit → VMDK off the VM, kept, and the VM destroyed, median of ${RUNS} (ms)`]: median(detach),
  });
}
