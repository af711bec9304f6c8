/**
 * The controller with 1,000 units: status latency from a client process of its own, as the API client reads it (compact form; target median ≤ 100 ms, ≤ 50 ms at 10,000) and memory with 1,000
 * connected agents (target ≤ 60 MB RSS above idle). The controller runs as its own process; the
 * agents are lightweight simulated connections (real TLS WebSockets speaking the agent protocol)
 * from this process.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { readOperatorDir } from "../api";
import { benchController } from "./bench-controller";
import { AgentDisconnected, SimAgent } from "./sim-agent";
import type { StatusProbeResult, StatusProbeSettings } from "./status-probe";
import type { BenchOptions } from "./util";
import { median, percentile, report, rssMiB, sleep } from "./util";

const DEFAULT_UNITS = Number(process.env.BENCH_UNITS ?? 1000);

/** `size`: units, one per machine and simulated agent (default 1,000, or BENCH_UNITS). */
export async function benchControllerScale(o: BenchOptions = {}): Promise<void> {
  const UNITS = o.size ?? DEFAULT_UNITS;
  // Pauses that let memory settle before it is sampled: shorter for a small (smoke) run, whose memory figures mean little.
  const settle = (ms: number): Promise<void> => sleep(ms * Math.min(1, UNITS / 1000));
  const bc = await benchController("scale");
  const { addresses, client, pid, uuid } = bc;
  const sockets: SimAgent[] = [];
  try {
    const machines = (await client.addMachines("scale", "manual", UNITS)).machines;
    const op = await readOperatorDir(join(__dirname, "..", "..", "operators", "motd"));
    await client.uploadOperator(op.bundle);
    const t0 = Date.now();
    await client.deploy("scale", { name: "app", operator: op.hash, units: UNITS, to: machines.map((m) => m.id) });
    const deployMs = Date.now() - t0;
    await settle(1500);
    const idleRss = await rssMiB(pid);

    // Connect one simulated agent per machine; each reports its unit active/idle once it has its view.
    const t1 = Date.now();
    let reported = 0;
    let refused = 0;
    let dropped = 0;
    await Promise.all(
      machines.map(async (m, i) => {
        // A connection dropped before the report went through is redialled, as a real agent would.
        for (;;) {
          const a = await SimAgent.connect(addresses[0]!, bc.caCert, uuid, m.id, m.credential!);
          sockets.push(a);
          refused += a.refusals;
          try {
            const view = await a.viewWhere((v) => v.units.length > 0);
            await a.call("unit.status", {
              unit: view.units[0]!.name,
              workload: { current: "active", message: `unit ${i}` },
              agent: { current: "idle", message: "" },
            });
            reported++;
            return;
          } catch (err) {
            if (!(err instanceof AgentDisconnected)) throw err;
            dropped++;
          }
        }
      }),
    );
    const connectMs = Date.now() - t1;
    await settle(3000);
    const samples: number[] = [];
    for (let i = 0; i < 5; i++) {
      samples.push(await rssMiB(pid));
      await settle(500);
    }
    const connectedRss = median(samples);

    const status = await client.status("scale");
    const settings: StatusProbeSettings = {
      addresses,
      caCert: bc.caCert,
      password: bc.password,
      model: "scale",
      runs: 60,
      units: Array.from({ length: 60 }, (_, i) => `app/${i % UNITS}`),
    };
    // Async, so the simulated agents keep answering while the probe runs.
    const probe = await promisify(execFile)(
      process.execPath,
      [join(__dirname, "status-probe.js"), JSON.stringify(settings)],
      { encoding: "utf8" },
    );
    const {
      full: latencies,
      received,
      plain,
      filtered,
      bytes,
      plainBytes,
    } = JSON.parse(probe.stdout) as StatusProbeResult;
    const active = Object.values(status.applications.app!.units).filter(
      (u) => u.workload.current === "active" && u.agent.current === "idle",
    ).length;
    report(`controller with ${UNITS} units (controller pid ${pid})`, {
      "deploy of all units (ms)": deployMs,
      "connect + first status report, all agents (ms)": connectMs,
      "units active/idle in status": `${active}/${UNITS} (${reported} reports acknowledged)`,
      "logins refused (503) or failed, then retried": refused,
      "connections dropped before reporting, redialled": dropped,
      "status latency median (ms)": median(latencies),
      "status latency p95 (ms)": percentile(latencies, 95),
      "status received, not parsed, median (ms)": median(received),
      "status response size (KiB)": bytes / 1024,
      "plain JSON status (no ?format=columns) received + parsed, median (ms)": median(plain),
      "plain JSON status size (KiB)": plainBytes / 1024,
      "status of one unit (filtered) median (ms)": median(filtered),
      "controller RSS idle, units but no agents (MiB)": idleRss,
      "controller RSS with all agents connected (MiB)": connectedRss,
      "RSS above idle (MiB)": connectedRss - idleRss,
      "RSS per connected agent (KiB)": ((connectedRss - idleRss) * 1024) / UNITS,
    });
  } finally {
    for (const a of sockets) a.close();
    await bc.stop();
  }
}
