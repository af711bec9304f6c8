/**
 * A config change on an application with 1,000 units (target p99 ≤ 1 s; ≤ 500 ms at 10,000): from the API call until
 * each unit's agent holds the new config (the moment a real agent starts config-changed). The
 * agents are simulated connections; the controller runs as its own process.
 */
import { readFile } from "node:fs/promises";
import { benchController, deploySimulated } from "./bench-controller";
import type { SimAgent } from "./sim-agent";
import type { BenchOptions } from "./util";
import { median, percentile, report, sleep } from "./util";

const DEFAULT_UNITS = Number(process.env.BENCH_UNITS ?? 1000);
const TRIALS = 10;

/** `size`: units, one per machine and simulated agent (default 1,000, or BENCH_UNITS). */
export async function benchConfigFanout(o: BenchOptions = {}): Promise<void> {
  const UNITS = o.size ?? DEFAULT_UNITS;
  const bc = await benchController("fanout");
  const { client, pid } = bc;
  const agents: SimAgent[] = [];
  try {
    await deploySimulated(bc, "fanout", UNITS, agents);
    await Promise.all(agents.map((a) => a.viewWhere((v) => v.units.length === 1)));
    const all: number[] = [];
    const trialP99: number[] = [];
    const trialMax: number[] = [];
    let firstP99 = 0;
    // Trial -1 is the first change after 10,000 logins: reported apart, as the warm-up it is (the
    // connect phase's garbage and code not yet optimised land in it), not mixed into the figures.
    for (let trial = -1; trial < TRIALS; trial++) {
      const message = `trial-${trial}`;
      const got: number[] = [];
      let t0 = 0;
      const done = new Promise<void>((resolve, reject) => {
        for (const a of agents) {
          let seen = false;
          // A dropped agent would never see the change: fail the benchmark rather than hang it.
          a.listenClose((why) => reject(new Error(`a simulated agent was disconnected during the fan-out (${why})`)));
          a.listen((v, at) => {
            if (!seen && v.units[0]?.config.message === message) {
              seen = true;
              got.push(at - t0);
              if (got.length === agents.length) resolve();
            }
          });
        }
      });
      t0 = performance.now();
      await client.updateApplication("fanout", "app", { config: { message } });
      await done;
      await sleep(300);
      if (trial < 0) {
        firstP99 = percentile(got, 99);
        continue;
      }
      all.push(...got);
      trialP99.push(percentile(got, 99));
      trialMax.push(Math.max(...got));
    }
    report(`config change fanned out to ${UNITS} unit agents (${TRIALS} trials, controller pid ${pid})`, {
      "until a unit has the new config: median (ms)": median(all),
      "p99 over all trials (ms)": percentile(all, 99),
      "p99 of the worst trial (ms)": Math.max(...trialP99),
      "last unit, median over trials (ms)": median(trialMax),
      "p99 of each trial (ms)": trialP99.map((v) => Math.round(v)).join(" "),
      // The controller's own part: its push loop, as it logs rounds of 100 ms or more (so none at small sizes).
      "controller push round, each trial (ms)":
        pushRounds(await readFile(bc.logFile, "utf8").catch(() => ""), TRIALS).join(" ") || "under 100",
      "first change after the logins (warm-up, not above): p99 (ms)": firstP99,
    });
  } finally {
    for (const a of agents) a.close();
    await bc.stop();
  }
}

/** The durations of the last `n` push rounds the controller logged ("pushed agent views … ms=N"). */
function pushRounds(log: string, n: number): number[] {
  return [...log.matchAll(/pushed agent views .*\bms=(\d+)/g)].map((m) => Number(m[1])).slice(-n);
}
