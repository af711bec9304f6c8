/**
 * Runs the benchmarks and prints their figures: `npm run bench` (all) or
 * `npm run bench -- controller-scale agent-memory demo store` (some).
 */
import { benchAgentMemory } from "./agent-memory";
import { benchConfigFanout } from "./config-fanout";
import { benchLeadership } from "./leadership";
import { benchLeaderFailover } from "./leader-failover";
import { benchSshInstall } from "./ssh-install";
import { benchControllerScale } from "./controller-scale";
import { benchDemo } from "./demo-time";
import { benchStore } from "./store-throughput";
import { benchHaHostFailover } from "./ha-host-failover";
import { benchProviderRefresh } from "./provider-refresh";
import { benchProviderUp } from "./provider-up";
import { benchEtcdSnapshot } from "./etcd-snapshot";
import { benchCliStartup } from "./cli-startup";

const all: Record<string, () => Promise<void>> = {
  store: benchStore, "controller-scale": benchControllerScale, "agent-memory": benchAgentMemory, demo: benchDemo,
  "config-fanout": benchConfigFanout, leadership: benchLeadership, "ssh-install": benchSshInstall, "leader-failover": benchLeaderFailover,
  "ha-host-failover": benchHaHostFailover, "provider-refresh": benchProviderRefresh, "provider-up": benchProviderUp, "etcd-snapshot": benchEtcdSnapshot,
  "cli-startup": () => benchCliStartup(),
};

async function main(): Promise<void> {
  const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(all);
  for (const name of chosen) {
    const fn = all[name];
    if (!fn) throw new Error(`unknown benchmark "${name}" (known: ${Object.keys(all).join(", ")})`);
    await fn();
  }
}

main().catch((err: unknown) => { process.stderr.write(`benchmark failed: ${(err as Error).stack}\n`); process.exitCode = 1; });
