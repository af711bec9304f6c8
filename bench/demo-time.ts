/** The local demo from command to every unit active, in a fresh STEWARD_HOME (median of 3 runs by default). */
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BenchOptions } from "./util";
import { median, report } from "./util";

/** `size`: runs, each a first and a second (default 3). */
export async function benchDemo(o: BenchOptions = {}): Promise<void> {
  const RUNS = o.size ?? 3;
  const runs: number[] = [];
  const reruns: number[] = [];
  const dist = join(__dirname, "..");
  for (let i = 0; i < RUNS; i++) {
    const home = await mkdtemp(join(tmpdir(), "steward-bench-demo-"));
    const env = { ...process.env, STEWARD_HOME: home };
    try {
      let t = Date.now();
      const r = spawnSync(process.execPath, [join(dist, "examples", "local", "demo.js")], { env, encoding: "utf8" });
      if (r.status !== 0) throw new Error(`demo failed: ${r.stdout}${r.stderr}`);
      runs.push(Date.now() - t);
      t = Date.now();
      spawnSync(process.execPath, [join(dist, "examples", "local", "demo.js")], { env, encoding: "utf8" });
      reruns.push(Date.now() - t);
    } finally {
      spawnSync(
        process.execPath,
        [join(dist, "cli", "main.js"), "destroy-controller", "local", "--yes", "--timeout", "20"],
        { env, encoding: "utf8" },
      );
      await rm(home, { recursive: true, force: true });
    }
  }
  report("local demo (bootstrap + apply examples/local/model.yaml + wait for active + status)", {
    [`first run, fresh STEWARD_HOME, median of ${RUNS} (ms)`]: median(runs),
    [`second run, nothing to change, median of ${RUNS} (ms)`]: median(reruns),
  });
}
