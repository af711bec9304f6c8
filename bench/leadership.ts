/**
 * How long leadership takes to move when the leader's agent dies, with the real lease (claims last
 * 60 s, renewed every 30 s, so 30–60 s is expected). Trials run side by side, one application each,
 * each leader dying at a random point of its renewal cycle.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControllerClient, readOperatorDir, silentLogger } from "../api";
import { Controller, initControllerDir } from "../controller";
import { SimAgent } from "./sim-agent";
import type { BenchOptions } from "./util";
import { median, report, sleep } from "./util";

const DEFAULT_TRIALS = Number(process.env.BENCH_LEADER_TRIALS ?? 10);

export interface LeadershipBenchOptions extends BenchOptions {
  /**
   * Seconds a leadership claim lasts (a smoke run shortens it).
   * @default 60
   */
  leaseSeconds?: number;
}

/** `size`: trials, side by side (default 10, or BENCH_LEADER_TRIALS). */
export async function benchLeadership(o: LeadershipBenchOptions = {}): Promise<void> {
  const TRIALS = o.size ?? DEFAULT_TRIALS;
  const LEASE_S = o.leaseSeconds ?? 60;
  const dir = await mkdtemp(join(tmpdir(), "steward-bench-leader-"));
  const init = await initControllerDir({ dataDir: dir, name: "bench", listen: { host: "127.0.0.1", port: 0 } });
  const c = await Controller.start({ dataDir: dir, log: silentLogger, leadershipLeaseSeconds: LEASE_S });
  const client = new ControllerClient({
    addresses: c.apiAddresses,
    caCert: init.caCert,
    user: "admin",
    password: init.adminPassword!,
  });
  const agents: SimAgent[] = [];
  try {
    const { uuid } = await client.createModel("leaders");
    const op = await readOperatorDir(join(__dirname, "..", "..", "operators", "motd"));
    await client.uploadOperator(op.bundle);
    const moves = await Promise.all(
      Array.from({ length: TRIALS }, async (_, trial) => {
        const machines = (await client.addMachines("leaders", "manual", 3)).machines;
        await client.deploy("leaders", {
          name: `a${trial}`,
          operator: op.hash,
          units: 3,
          to: machines.map((m) => m.id),
        });
        const sims = await Promise.all(
          machines.map((m) => SimAgent.connect(c.apiAddresses[0]!, init.caCert, uuid, m.id, m.credential!)),
        );
        agents.push(...sims);
        // Each agent behaves as a real one: claims when nobody leads, renews at half the lease while leading.
        const timers: NodeJS.Timeout[] = [];
        const alive = new Set(sims);
        for (const a of sims) {
          // A claim still in flight when the agent is closed (the trial's end) fails; that is expected.
          const claim = (): void => {
            a.call("leader.claim", { unit: a.view!.units[0]!.name }).catch(() => undefined);
          };
          a.listen((v) => {
            if (alive.has(a) && !v.units[0]!.leaderKnown) claim();
          });
          timers.push(
            setInterval(
              () => {
                if (alive.has(a) && a.view?.units[0]?.leader) claim();
              },
              (LEASE_S * 1000) / 2,
            ),
          );
        }
        while (!sims.some((a) => a.view?.units[0]?.leader)) await sleep(50);
        await sleep((Math.random() * (LEASE_S * 1000)) / 2); // die anywhere in the renewal cycle
        const leader = sims.find((a) => a.view?.units[0]?.leader)!;
        alive.delete(leader);
        leader.close();
        const t0 = performance.now();
        while (![...alive].some((a) => a.view?.units[0]?.leader)) await sleep(20);
        for (const t of timers) clearInterval(t);
        return (performance.now() - t0) / 1000;
      }),
    );
    report(`leadership moving after the leader's agent dies (lease ${LEASE_S} s, ${TRIALS} trials)`, {
      "median (s)": median(moves),
      "min (s)": Math.min(...moves),
      "max (s)": Math.max(...moves),
    });
  } finally {
    for (const a of agents) a.close();
    client.close();
    await c.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
