/**
 * Storage on the kubernetes substrate (issue 32), on the FAKE API server and process kubelet
 * (test/harness/kube): the shelf fixture's unit is removed (the application scaled to 0: its claim
 * kept) and added again (scaled back to 1: the new unit takes its number's kept claim), `size`
 * times; how long from `add-unit` until the new unit's storage-attached hook has read the marker the
 * first unit left (its pod made, the claim mounted, its agent started and the hook run), and from
 * `remove-unit` until the storage is detached and kept.
 */
import { join } from "node:path";
import type { UnitStatusView } from "../api";
import { fixturesDir } from "../test/harness/controller";
import { eventually } from "../test/harness/eventually";
import { startKubeLab } from "../test/harness/kube/lab";
import type { BenchOptions } from "./util";
import { median, report, unlessStorageAttached, until } from "./util";

/** `size`: scale-downs to 0 and back (default 5). */
export async function benchStorageAttachKubernetes(o: BenchOptions = {}): Promise<void> {
  const runs = o.size ?? 5;
  const lab = await startKubeLab();
  const attach: number[] = [];
  const detach: number[] = [];
  try {
    const { tc } = lab;
    await tc.admin.createModel("bench", { updateStatusInterval: 300 }, "kubernetes", { credential: "lab" });
    const op = await tc.upload(join(fixturesDir, "operators", "shelf"));
    const saying =
      (message: RegExp) =>
      (units: UnitStatusView[]): boolean =>
        units.some((u) => u.name === "shelf/0" && message.test(u.workload.message));
    await tc.admin.deploy("bench", { name: "shelf", operator: op, units: 1 });
    await tc.waitForUnits("bench", saying(/attach wrote/), "shelf/0 to write its marker", 120_000);
    for (let i = 0; i < runs; i++) {
      let t0 = performance.now();
      await tc.admin.removeUnit("bench", "shelf/0");
      await eventually(
        "the storage detached and kept",
        async () => {
          const [s] = (await tc.admin.listStorage("bench")).storage;
          const units = Object.keys((await tc.admin.status("bench")).applications.shelf?.units ?? {});
          return s?.status === "detached" && units.length === 0 ? true : undefined;
        },
        120_000,
        100,
      );
      detach.push(performance.now() - t0);
      t0 = performance.now();
      // Refused (storage-attached) while the kept storage's detach is still being reported: asked again.
      await until("add-unit accepted", () => unlessStorageAttached(() => tc.admin.addUnits("bench", "shelf", 1)));
      await tc.waitForUnits("bench", saying(/attach found written by shelf\/0/), "shelf/0 to find the marker", 120_000);
      attach.push(performance.now() - t0);
    }
  } finally {
    await lab.close();
  }
  report(
    `storage on the kubernetes substrate (fake API server and kubelet; scaled 0 → 1 ${runs} times, shelf operator)`,
    {
      [`add-unit (scale 0 → 1) → storage-attached hook reads the data, median of ${runs} (ms)`]: median(attach),
      [`remove-unit (scale 1 → 0) → storage detached and kept, median of ${runs} (ms)`]: median(detach),
    },
  );
}
