/**
 * `steward upgrade-controller` on a 3-replica controller installed over SSH on real sshd test hosts,
 * driven by a second release's CLI (this build with a higher patch version) while a writer creates
 * models as fast as it can through a client that knows every replica: the time the whole upgrade
 * takes, each replica's time from its switch to passing its health gate, and the longest time the
 * API committed no write (the gap between two acknowledged writes). Each trial upgrades one patch
 * version further (0.1.0 → 0.1.1 → 0.1.2 …).
 *
 * Needs root (network namespaces).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControllerClient } from "../api";
import { loadClientConfig } from "../cli";
import { cliRunner } from "../test/harness/cli";
import { TestLab } from "../test/harness/hosts";
import type { Release } from "../test/harness/release";
import { makeRelease } from "../test/harness/release";
import type { BenchOptions } from "./util";
import { median, report, sleep } from "./util";

/** Until three voters are present, none joining, and the quorum keeper idle (upgrade-controller refuses otherwise). */
async function settled(entry: { addresses: string[]; caCert: string; password?: string }): Promise<void> {
  const c = new ControllerClient({
    addresses: entry.addresses,
    caCert: entry.caCert,
    user: "admin",
    password: entry.password!,
    timeoutMs: 4000,
  });
  try {
    for (;;) {
      const info = (await c.controllerInfo().catch(() => undefined))?.cluster;
      const voters = info?.members.filter((m) => m.hasVote) ?? [];
      if (
        info?.quorum &&
        voters.length === 3 &&
        voters.every((m) => m.present) &&
        !info.members.some((m) => m.learner) &&
        info.keeper.state === "idle"
      )
        return;
      await sleep(300);
    }
  } finally {
    c.close();
  }
}

/** `size`: trials, each one upgrade of all three replicas (default 3). */
export async function benchUpgradeController(o: BenchOptions = {}): Promise<void> {
  const TRIALS = o.size ?? 3;
  if (process.getuid?.() !== 0) {
    console.log("upgrade-controller: skipped (needs root for network namespaces)");
    return;
  }
  const lab = await TestLab.create(3);
  const home = await mkdtemp(join(tmpdir(), "steward-bench-upgrade-"));
  process.env.BENCH_UPGRADE_SSH_KEY = lab.clientKey;
  const releases: Release[] = [];
  try {
    const boot = await cliRunner(home, home)(
      "bootstrap",
      lab.hosts.map((h) => `ssh:root@${h.ip}`).join(","),
      "bench",
      "--key-env",
      "BENCH_UPGRADE_SSH_KEY",
      ...lab.hosts.flatMap((h) => ["--host-key", h.hostKeyFingerprint]),
    );
    if (boot.code !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
    const entry = (await loadClientConfig(home)).controllers.bench!;
    const args = [
      "upgrade-controller",
      "-c",
      "bench",
      "--key-env",
      "BENCH_UPGRADE_SSH_KEY",
      ...lab.hosts.flatMap((h) => ["--host-key", `${h.ip}=${h.hostKeyFingerprint}`]),
    ];
    const totalS: number[] = [],
      replicaS: number[] = [],
      gapMs: number[] = [];
    let failedCalls = 0,
      writes = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      await settled(entry);
      const release = await makeRelease({ bump: "patch", by: trial + 1 });
      releases.push(release);
      const writer = new ControllerClient({
        addresses: entry.addresses,
        caCert: entry.caCert,
        user: "admin",
        password: entry.password!,
        timeoutMs: 4000,
      });
      let stop = false,
        last = Date.now(),
        gap = 0,
        gapAt = 0;
      const started = Date.now();
      const loop = (async () => {
        for (let i = 0; !stop; i++) {
          try {
            await writer.createModel(`t${trial}-${i}`);
            writes++;
            if (Date.now() - last > gap) {
              gap = Date.now() - last;
              gapAt = (last - started) / 1000;
            }
            last = Date.now();
          } catch {
            failedCalls++;
          }
        }
      })();
      const t0 = performance.now();
      const r = await release.steward(home, ...args);
      totalS.push((performance.now() - t0) / 1000);
      stop = true;
      await loop;
      writer.close();
      if (r.code !== 0) throw new Error(`upgrade to ${release.version} failed: ${r.stderr}`);
      if (process.env.BENCH_UPGRADE_LOG)
        process.stdout.write(`${r.stderr}longest gap ${gap} ms, from ${gapAt.toFixed(1)} s after the start\n`);
      gapMs.push(Math.max(gap, Date.now() - last));
      for (const m of r.stderr.matchAll(/a healthy voter \(([\d.]+) s after its switch\)/g))
        replicaS.push(Number(m[1]));
    }
    report(
      `upgrade-controller: 3 replicas over SSH, replica by replica, a writer running (${TRIALS} trial${TRIALS === 1 ? "" : "s"})`,
      {
        "whole upgrade, median (s)": median(totalS),
        "whole upgrade, worst (s)": Math.max(...totalS),
        "one replica, switch to healthy, median (s)": median(replicaS),
        "longest time with no write committed, median (ms)": median(gapMs),
        "longest time with no write committed, worst (ms)": Math.max(...gapMs),
        "writes acknowledged": writes,
        "write calls that failed": failedCalls,
      },
    );
  } finally {
    for (const r of releases) await r.close();
    await lab.close();
    await rm(home, { recursive: true, force: true });
  }
}
