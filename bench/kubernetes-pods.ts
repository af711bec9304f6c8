/**
 * The kubernetes substrate on the FAKE API server and process kubelet (test/harness/kube): how
 * long a deploy of N units takes until every unit is active in its pod (each pod a real agent
 * process), and how long a deleted pod takes to be the same unit, active, again (target ≤ 30 s),
 * over a few deletions.
 */
import { join } from "node:path";
import type { UnitStatusView } from "../api";
import { unitIsReady } from "../api";
import { kubernetes } from "../substrates";
import { fixturesDir } from "../test/harness/controller";
import { eventually } from "../test/harness/eventually";
import { startKubeLab } from "../test/harness/kube/lab";
import { hooksByUnit, recordDir } from "../test/harness/operators";
import type { BenchOptions } from "./util";
import { median, report } from "./util";

const R = kubernetes.KUBE_RESOURCES;

/** `size`: units deployed (default 20); `runs`: pods deleted one after another (default 5). */
export async function benchKubernetesPods(o: BenchOptions & { runs?: number } = {}): Promise<void> {
  const units = o.size ?? 20;
  const runs = o.runs ?? 5;
  const lab = await startKubeLab();
  try {
    const { tc, kube } = lab;
    await tc.admin.createModel("bench", { updateStatusInterval: 300 }, "kubernetes", { credential: "lab" });
    const op = await tc.upload(join(fixturesDir, "operators", "recorder"));
    const active =
      (n: number) =>
      (list: UnitStatusView[]): boolean =>
        list.length === n && list.every(unitIsReady);
    const record = await recordDir();
    const starts = async (unit: string): Promise<number> =>
      ((await hooksByUnit(record)).get(unit) ?? []).filter((h) => h === "start").length;
    let t0 = performance.now();
    await tc.admin.deploy("bench", { name: "app", operator: op, units, config: { "record-dir": record } });
    await tc.waitForUnits("bench", active(units), `${units} units active`, 600_000);
    const deployMs = performance.now() - t0;

    const back: number[] = [];
    for (let i = 0; i < runs; i++) {
      const name = `app-${i % units}`;
      const unit = `app/${i % units}`;
      const before = await starts(unit);
      t0 = performance.now();
      await kube.delete(R.pods, name, { namespace: "bench" });
      // Back: the new pod's agent ran start again (as after a reboot) and the unit is active.
      await eventually(
        `${unit} active again in a new pod`,
        async () => {
          if ((await starts(unit)) <= before) return undefined;
          const s = await tc.admin.status("bench");
          const u = s.applications.app?.units[unit];
          return u && unitIsReady(u) ? true : undefined;
        },
        120_000,
        100,
      );
      back.push(performance.now() - t0);
    }
    report(`kubernetes pods (fake API server and kubelet; ${units} units, ${runs} pod deletions)`, {
      [`deploy → ${units} units active (s)`]: deployMs / 1000,
      "pod deleted → its unit active again, median (s)": median(back) / 1000,
      "pod deleted → its unit active again, worst (s)": Math.max(...back) / 1000,
    });
  } finally {
    await lab.close();
  }
}
