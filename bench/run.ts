/**
 * Runs the benchmarks and prints their figures: `npm run bench` (all) or
 * `npm run bench -- controller-scale agent-memory demo store` (some).
 *
 * `--smoke` runs each chosen benchmark once at a small size (`npm run bench:smoke`): not figures to
 * quote, but proof that every benchmark still runs, cheap enough for the test suite.
 */
import { spawn } from "node:child_process";
import { benchAgentMemory } from "./agent-memory";
import { benchConfigFanout } from "./config-fanout";
import { benchLeadership } from "./leadership";
import { benchAwsMachines } from "./aws-machines";
import { benchAwsReplicas } from "./aws-replicas";
import { benchLeaderFailover } from "./leader-failover";
import { benchSshInstall } from "./ssh-install";
import { benchControllerScale } from "./controller-scale";
import { benchDemo } from "./demo-time";
import { benchStore } from "./store-throughput";
import { benchOperatorMemory } from "./operator-memory";
import { benchHaHostFailover } from "./ha-host-failover";
import { benchProviderRefresh } from "./provider-refresh";
import { benchProviderUp } from "./provider-up";
import { benchEtcdSnapshot } from "./etcd-snapshot";
import { benchCliStartup } from "./cli-startup";
import { benchDashboardLive } from "./dashboard-live";
import { benchProviderLoad } from "./provider-load";
import { benchPackage } from "./package";
import { benchBackup } from "./backup";
import { benchMigration } from "./migration";
import { benchKubernetesPods } from "./kubernetes-pods";
import { benchKubernetesController } from "./kubernetes-controller";
import { benchUpgradeController } from "./upgrade-controller";
import { benchUpgradeModel } from "./upgrade-model";
import { benchStoreMigration } from "./store-migration";
import { benchStorageAttach } from "./storage-attach";
import { benchStorageAttachKubernetes } from "./storage-attach-kubernetes";
import { benchSecrets } from "./secrets";
import { benchPostgresqlFailover } from "./postgresql-failover";
import { benchHookTools } from "./hook-tools";

interface Benchmark {
  /** At the size its figures are quoted for. */
  full: () => Promise<void>;
  /** Once, small. */
  smoke: () => Promise<void>;
}

const all: Record<string, Benchmark> = {
  store: { full: () => benchStore(), smoke: () => benchStore({ size: 1000 }) },
  "operator-memory": { full: () => benchOperatorMemory(), smoke: () => benchOperatorMemory({ size: 4 }) },
  "controller-scale": { full: () => benchControllerScale(), smoke: () => benchControllerScale({ size: 50 }) },
  "agent-memory": { full: () => benchAgentMemory(), smoke: () => benchAgentMemory({ size: 1 }) },
  demo: { full: () => benchDemo(), smoke: () => benchDemo({ size: 1 }) },
  "config-fanout": { full: () => benchConfigFanout(), smoke: () => benchConfigFanout({ size: 50 }) },
  leadership: { full: () => benchLeadership(), smoke: () => benchLeadership({ size: 2, leaseSeconds: 4 }) },
  "aws-machines": { full: () => benchAwsMachines(), smoke: () => benchAwsMachines({ size: 3, runs: 1 }) },
  "aws-replicas": { full: () => benchAwsReplicas(), smoke: () => benchAwsReplicas({ size: 1 }) },
  "ssh-install": { full: () => benchSshInstall(), smoke: () => benchSshInstall({ size: 2 }) },
  "leader-failover": { full: () => benchLeaderFailover(), smoke: () => benchLeaderFailover({ size: 1 }) },
  "ha-host-failover": {
    full: () => benchHaHostFailover(),
    smoke: () => benchHaHostFailover({ size: 1, agents: 50, cutSeconds: 5 }),
  },
  "provider-refresh": { full: () => benchProviderRefresh(), smoke: () => benchProviderRefresh({ size: 5 }) },
  "provider-up": { full: () => benchProviderUp(), smoke: () => benchProviderUp({ size: 1 }) },
  "etcd-snapshot": { full: () => benchEtcdSnapshot(), smoke: () => benchEtcdSnapshot({ size: 2000 }) },
  "cli-startup": { full: () => benchCliStartup(), smoke: () => benchCliStartup({ runs: 3 }) },
  "hook-tools": { full: () => benchHookTools(), smoke: () => benchHookTools({ size: 5 }) },
  "dashboard-live": { full: () => benchDashboardLive(), smoke: () => benchDashboardLive({ size: 20, trials: 3 }) },
  migration: { full: () => benchMigration(), smoke: () => benchMigration({ size: 20 }) },
  "provider-load": { full: () => benchProviderLoad(), smoke: () => benchProviderLoad({ size: 1 }) },
  package: { full: () => benchPackage(), smoke: () => benchPackage({ size: 1 }) },
  backup: { full: () => benchBackup(), smoke: () => benchBackup({ size: 20 }) },
  "kubernetes-pods": { full: () => benchKubernetesPods(), smoke: () => benchKubernetesPods({ size: 2, runs: 1 }) },
  "kubernetes-controller": {
    full: () => benchKubernetesController(),
    smoke: () => benchKubernetesController({ runs: 1 }),
  },
  "upgrade-controller": { full: () => benchUpgradeController(), smoke: () => benchUpgradeController({ size: 1 }) },
  "upgrade-model": { full: () => benchUpgradeModel(), smoke: () => benchUpgradeModel({ size: 2, batch: 1 }) },
  "store-migration": { full: () => benchStoreMigration(), smoke: () => benchStoreMigration({ size: 50 }) },
  secrets: { full: () => benchSecrets(), smoke: () => benchSecrets({ size: 50, calls: 20, userCalls: 5 }) },
  "postgresql-failover": {
    full: () => benchPostgresqlFailover(),
    smoke: () => benchPostgresqlFailover({ size: 1 }),
  },
  "storage-attach": {
    full: async () => {
      await benchStorageAttach();
      await benchStorageAttachKubernetes();
    },
    smoke: async () => {
      await benchStorageAttach({ size: 1 });
      await benchStorageAttachKubernetes({ size: 1 });
    },
  },
};

/**
 * Seconds each smoke run took on this machine, loaded (longest first in the lanes below); a
 * benchmark not listed counts as short.
 */
const SMOKE_SECONDS: Record<string, number> = {
  "postgresql-failover": 80,
  "ha-host-failover": 150,
  "aws-replicas": 130,
  "upgrade-controller": 120,
  "provider-up": 100,
  "ssh-install": 32,
  "kubernetes-controller": 28,
  package: 26,
  "cli-startup": 15,
};

/**
 * Smoke runs go three at a time, each benchmark in a process of its own whose output is printed whole
 * when it ends: most of their time is spent waiting (leases, SSH, replacements), not computing,
 * and one after another they took nine minutes of the suite (two lanes: seven, with two CPU
 * burners beside them). `BENCH_SMOKE_LANES=1` runs them one by one.
 */
async function smokeInLanes(names: string[], lanes: number): Promise<boolean> {
  const queue = [...names].sort((a, b) => (SMOKE_SECONDS[b] ?? 5) - (SMOKE_SECONDS[a] ?? 5));
  let ok = true;
  const lane = async (): Promise<void> => {
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
      const t0 = performance.now();
      const child = spawn(process.execPath, [__filename, "--smoke", name], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
      });
      child.stderr.on("data", (d: Buffer) => {
        out += d.toString();
      });
      const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
      process.stdout.write(out);
      if (code !== 0) {
        ok = false;
        process.stdout.write(
          `  (smoke: ${name} FAILED with exit code ${code} after ${((performance.now() - t0) / 1000).toFixed(1)} s)\n`,
        );
      }
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  return ok;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(
      `usage: node dist/bench/run.js [--smoke] [NAME...]\n\n` +
        `Runs the benchmarks and prints their figures (all of them without NAME). --smoke runs each once,\n` +
        `small, as npm test does (BENCH_SMOKE_LANES=N at a time, default 3).\n\n` +
        `Benchmarks: ${Object.keys(all).join(", ")}\n`,
    );
    return;
  }
  const smoke = args.includes("--smoke");
  const names = args.filter((a) => a !== "--smoke");
  const chosen = names.length > 0 ? names : Object.keys(all);
  for (const name of chosen)
    if (!all[name]) {
      process.stderr.write(`unknown benchmark "${name}" (known: ${Object.keys(all).join(", ")}); --help says more\n`);
      process.exitCode = 2;
      return;
    }
  const lanes = Number(process.env.BENCH_SMOKE_LANES ?? 3);
  if (smoke && chosen.length > 1 && lanes > 1) {
    const t0 = performance.now();
    const ok = await smokeInLanes(chosen, lanes);
    process.stdout.write(
      `\n${chosen.length} benchmark smoke runs in ${lanes} lanes: ${((performance.now() - t0) / 1000).toFixed(1)} s${ok ? "" : ", SOME FAILED"}\n`,
    );
    if (!ok) process.exitCode = 1;
    return;
  }
  for (const name of chosen) {
    const t0 = performance.now();
    await (smoke ? all[name]!.smoke : all[name]!.full)();
    if (smoke) process.stdout.write(`  (smoke: ${name} took ${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
  }
}

// Exits when the benchmarks are done: a timer a test double left running (seen once after the
// aws-machines smoke: one 100 ms timer, not yet traced) must not hold CI until its time limit.
const exitSoon = (): void => {
  setTimeout(() => process.exit(), 2000).unref();
};
main().then(exitSoon, (err: unknown) => {
  process.stderr.write(`benchmark failed: ${(err as Error).stack}\n`);
  process.exitCode = 1;
  exitSoon();
});
