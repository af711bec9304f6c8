/**
 * Installing agents on 20 SSH test hosts in parallel (target ≤ 60 s until all are connected),
 * median of 3 rounds, and the bytes uploaded per host. Needs root (network namespaces, sshd).
 * Every host has Node.js, as most servers will; one round also measures a host without it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControllerClient, silentLogger } from "../api";
import { Controller, initControllerDir } from "../controller";
import { TestLab } from "../test/harness/hosts";
import type { BenchOptions } from "./util";
import { median, report, sleep } from "./util";

const DEFAULT_HOSTS = Number(process.env.BENCH_SSH_HOSTS ?? 20);

/** `size`: hosts installed in parallel (default 20, or BENCH_SSH_HOSTS). */
export async function benchSshInstall(o: BenchOptions = {}): Promise<void> {
  const HOSTS = o.size ?? DEFAULT_HOSTS;
  if (process.getuid?.() !== 0) {
    process.stdout.write("\nssh-install: skipped (needs root for test hosts)\n");
    return;
  }
  const rounds: number[] = [];
  let bytes: number[] = [];
  let noNodeBytes = 0;
  for (let round = 0; round < 3; round++) {
    const lab = await TestLab.create(HOSTS + (round === 0 ? 1 : 0), (i) => ({ noNode: round === 0 && i === HOSTS }));
    const dir = await mkdtemp(join(tmpdir(), "steward-bench-ssh-"));
    const init = await initControllerDir({ dataDir: dir, name: "bench", listen: { host: `${lab.subnet}.1`, port: 0 } });
    const c = await Controller.start({ dataDir: dir, log: silentLogger });
    const client = new ControllerClient({
      addresses: c.apiAddresses,
      caCert: init.caCert,
      user: "admin",
      password: init.adminPassword!,
    });
    try {
      await client.createModel("bench");
      const hosts = lab.hosts.slice(0, HOSTS);
      const t0 = performance.now();
      await Promise.all(
        hosts.map((h) =>
          client.addSshMachine("bench", {
            host: h.ip,
            user: "root",
            privateKey: lab.clientKey,
            hostKey: h.hostKeyFingerprint,
          }),
        ),
      );
      for (;;) {
        const ms = await client.listMachines("bench");
        if (ms.length === HOSTS && ms.every((m) => m.status === "started")) {
          bytes = ms.map((m) => m.install?.bytesUploaded ?? 0);
          break;
        }
        const failed = ms.find((m) => m.status === "error");
        if (failed) throw new Error(`install failed on machine ${failed.id}: ${failed.message}`);
        await sleep(100);
      }
      rounds.push((performance.now() - t0) / 1000);
      if (round === 0) {
        const h = lab.hosts[HOSTS]!;
        await client.addSshMachine("bench", {
          host: h.ip,
          user: "root",
          privateKey: lab.clientKey,
          hostKey: h.hostKeyFingerprint,
        });
        for (;;) {
          const m = (await client.listMachines("bench")).find((x) => x.address === h.ip);
          if (m?.install?.state === "installed") {
            noNodeBytes = m.install.bytesUploaded ?? 0;
            break;
          }
          if (m?.status === "error") throw new Error(m.message);
          await sleep(100);
        }
      }
    } finally {
      client.close();
      await c.stop();
      await lab.close();
      await rm(dir, { recursive: true, force: true });
    }
  }
  report(`agent installs over SSH on ${HOSTS} test hosts in parallel (3 rounds)`, {
    "until all agents connected: median (s)": median(rounds),
    "rounds (s)": rounds.map((r) => r.toFixed(2)).join(", "),
    "bytes uploaded per host with Node.js (KiB)": median(bytes) / 1024,
    "bytes uploaded to a host without Node.js (MiB)": noNodeBytes / 1024 / 1024,
  });
}
