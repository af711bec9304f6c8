/**
 * Storage on an SSH test host (issue 32; the ssh case of `storage-attach`): how long from `add-unit
 * --attach-storage` until the new unit's storage-attached hook has read what the previous unit wrote,
 * for a `rootfs` directory and for a `device` (a loop disk declared for the host, mounted by its
 * agent), each instance handed from unit to unit `size` times. Needs root (test hosts, loop devices).
 */
import { join } from "node:path";
import type { ModelStatus } from "../api";
import { readOperatorDir } from "../api";
import { startTestController } from "../test/harness/controller";
import { TestLab } from "../test/harness/hosts";
import type { BenchOptions } from "./util";
import { median, report, until, unlessStorageAttached } from "./util";

const message = (s: ModelStatus, app: string, unit: string): string | undefined =>
  s.applications[app]?.units[unit]?.workload.message;

/** `size`: hand-overs of each instance (default 5). */
export async function benchStorageAttachSsh(o: BenchOptions = {}): Promise<void> {
  if (process.getuid?.() !== 0) {
    process.stdout.write("\nstorage-attach (ssh): skipped (needs root for test hosts)\n");
    return;
  }
  const RUNS = o.size ?? 5;
  const lab = await TestLab.create(1);
  const tc = await startTestController({ listenHost: `${lab.subnet}.1` });
  const client = tc.admin;
  const times: Record<string, number[]> = { rootfs: [], device: [] };
  try {
    const host = lab.hosts[0]!;
    await host.plugDisk(64, ["bench-disk"]);
    await client.createModel("storage", undefined, "ssh");
    await client.addSshMachine(
      "storage",
      { host: host.ip, user: "root", privateKey: lab.clientKey, hostKey: host.hostKeyFingerprint },
      { storageDevices: ["/dev/disk/by-id/bench-disk"] },
    );
    const machine = await until("the host's agent", async () => {
      const [m] = await client.listMachines("storage");
      if (m?.status === "error") throw new Error(m.message);
      return m?.status === "started" ? m.id : undefined;
    });
    const op = await readOperatorDir(join(__dirname, "..", "..", "operators", "notebook"));
    await client.uploadOperator(op.bundle);
    for (const pool of ["rootfs", "device"]) {
      await client.deploy("storage", {
        name: pool,
        operator: op.hash,
        units: 1,
        to: [machine],
        storage: { data: { pool } },
      });
      let unit = `${pool}/0`;
      await until(`${unit}'s note`, async () =>
        message(await client.status("storage"), pool, unit)?.includes("new") ? true : undefined,
      );
      const [id] = (await client.listStorage("storage")).storage.filter((s) => s.app === pool).map((s) => s.id);
      for (let i = 0; i < RUNS; i++) {
        await client.removeUnit("storage", unit);
        // Kept once its host's agent has released it (unmounted) and it is off the machine.
        const t0 = await until(`${id} kept`, async () => {
          const added = await unlessStorageAttached(() => client.addUnits("storage", pool, 1, undefined, [id!]));
          return added && { at: Date.now(), unit: added.units[0]! };
        });
        unit = t0.unit;
        await until(`${unit} to read the note`, async () =>
          message(await client.status("storage"), pool, unit)?.includes("found") ? true : undefined,
        );
        times[pool]!.push(Date.now() - t0.at);
      }
      await client.removeUnit("storage", unit, false, true);
    }
    await until("the storage destroyed", async () =>
      (await client.listStorage("storage")).storage.length === 0 ? true : undefined,
    );
  } finally {
    await tc.close();
    await lab.close();
  }
  report("storage on an SSH test host (one instance handed from unit to unit, notebook operator)", {
    [`rootfs: add-unit --attach-storage → hook reads data, median of ${RUNS} (ms)`]: median(times.rootfs!),
    [`device: add-unit --attach-storage → hook reads data, median of ${RUNS} (ms)`]: median(times.device!),
  });
}
