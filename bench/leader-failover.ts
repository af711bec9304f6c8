/**
 * Controller leader failover: three replica processes on one etcd; kill -9 the leader's process
 * and time until another replica leads (it then runs the singleton work). 10 trials; the killed
 * replica is started again between trials. (The etcd member is not killed here: losing a whole
 * host, etcd member included, is measured by the HA work.)
 */
import { copyFile, mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControllerClient } from "../api";
import { startLocalController } from "../cli";
import { initControllerDir, removeLocalController } from "../controller";
import { startEtcd } from "../test/harness/etcd";
import type { BenchOptions } from "./util";
import { median, report, sleep } from "./util";

interface Info {
  replicas: { id: string; addresses: string[]; leader: boolean }[];
}

/** `size`: trials (default 10). */
export async function benchLeaderFailover(o: BenchOptions = {}): Promise<void> {
  const TRIALS = o.size ?? 10;
  const dir = await mkdtemp(join(tmpdir(), "steward-bench-ha-"));
  const etcd = await startEtcd();
  const dirs = ["r0", "r1", "r2"].map((r) => join(dir, r));
  try {
    const init = await initControllerDir({
      dataDir: dirs[0]!,
      name: "ha",
      listen: { host: "127.0.0.1", port: 0 },
      store: { backend: "etcd", endpoints: [etcd.endpoint], prefix: `/b-${randomBytes(3).toString("hex")}` },
    });
    for (const d of dirs.slice(1)) {
      await mkdir(d, { recursive: true, mode: 0o700 });
      for (const f of ["ca.crt", "ca.key", "server.crt", "server.key", "controller.json"])
        await copyFile(join(dirs[0]!, f), join(d, f));
    }
    const byDir = new Map<string, string[]>();
    for (const d of dirs) byDir.set(d, await startLocalController(d, init.caCert));
    const times: number[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const all = [...byDir.values()].flat();
      const client = new ControllerClient({
        addresses: all,
        caCert: init.caCert,
        user: "admin",
        password: init.adminPassword!,
        timeoutMs: 2000,
      });
      let info: Info;
      for (;;) {
        info = await client.call<Info>("GET", "/v1/controller");
        if (info.replicas.length === 3 && info.replicas.some((r) => r.leader)) break;
        await sleep(100);
      }
      const leader = info.replicas.find((r) => r.leader)!;
      const leaderDir = [...byDir].find(([, a]) => a.includes(leader.addresses[0]!))![0];
      await sleep(Math.random() * 1000); // anywhere in the renewal cycle
      const pid = Number(await readFile(join(leaderDir, "controller.pid"), "utf8"));
      const survivors = new ControllerClient({
        addresses: all.filter((a) => !leader.addresses.includes(a)),
        caCert: init.caCert,
        user: "admin",
        password: init.adminPassword!,
        timeoutMs: 2000,
      });
      const t0 = performance.now();
      process.kill(pid, "SIGKILL");
      for (;;) {
        const i = await survivors.call<Info>("GET", "/v1/controller").catch(() => undefined);
        if (i?.replicas.some((r) => r.leader && r.id !== leader.id)) break;
        await sleep(20);
      }
      times.push((performance.now() - t0) / 1000);
      client.close();
      survivors.close();
      byDir.set(leaderDir, await startLocalController(leaderDir, init.caCert));
    }
    report(
      `controller leader failover after kill -9 of the leader's process (3 replicas, campaign lease 3 s, ${TRIALS} trials)`,
      {
        "until another replica leads: median (s)": median(times),
        "min (s)": Math.min(...times),
        "max (s)": Math.max(...times),
      },
    );
    // Supervisors first (removeLocalController): a controller stopped alone would be started again.
    for (const d of dirs) await removeLocalController(d);
  } finally {
    await etcd.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
