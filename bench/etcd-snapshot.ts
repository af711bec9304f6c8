/**
 * The etcd store's large reads: 100,000 keys (about 40 MiB, unit-status sized values) read as one
 * snapshot in pages at a pinned revision (what a replica's state cache does on start), for two page
 * sizes, against the same read in one response: time and the client's heap growth.
 */
import { EtcdStore } from "../controller";
import { startEtcd } from "../test/harness/etcd";
import type { BenchOptions } from "./util";
import { median, report } from "./util";

/** `size`: keys in the snapshot, a multiple of 100 (default 100,000). */
export async function benchEtcdSnapshot(o: BenchOptions = {}): Promise<void> {
  const KEYS = Math.max(100, Math.round((o.size ?? 100_000) / 100) * 100);
  const etcd = await startEtcd();
  const store = await EtcdStore.connect({ endpoints: [etcd.endpoint], prefix: "/bench" });
  try {
    const value = JSON.stringify({
      workload: { current: "active", message: "x".repeat(300), since: new Date().toISOString() },
    });
    for (let i = 0; i < KEYS; i += 100) {
      await store.txn({
        success: Array.from({ length: 100 }, (_, j) => ({
          type: "put" as const,
          key: `/models/m/units/u${String(i + j).padStart(6, "0")}`,
          value,
        })),
      });
    }
    const read = async (s: EtcdStore): Promise<{ ms: number; heapMiB: number; keys: number }> => {
      global.gc?.();
      const heap0 = process.memoryUsage().heapUsed;
      const t0 = performance.now();
      const res = await s.txn({ success: [{ type: "range", prefix: "/models/" }] });
      return {
        ms: performance.now() - t0,
        heapMiB: (process.memoryUsage().heapUsed - heap0) / 2 ** 20,
        keys: res.responses[0]!.length,
      };
    };
    const figures: Record<string, string | number> = {};
    for (const pageKeys of [2000, 10_000, 1e9]) {
      const s = await EtcdStore.connect({ endpoints: [etcd.endpoint], prefix: "/bench", readPageKeys: pageKeys });
      const runs = [];
      for (let round = 0; round < 5; round++) runs.push(await read(s));
      await s.close();
      if (runs.some((r) => r.keys !== KEYS))
        throw new Error(`a read returned ${runs.find((r) => r.keys !== KEYS)!.keys} keys, not ${KEYS}`);
      const label = pageKeys === 1e9 ? "one response" : `pages of ${pageKeys.toLocaleString("en")}`;
      figures[`${label}: median of 5 (ms)`] = median(runs.map((r) => r.ms));
      figures[`${label}: heap growth, median (MiB)`] = median(runs.map((r) => r.heapMiB));
    }
    report(
      `etcd store: snapshot read of ${KEYS.toLocaleString("en")} keys (~${Math.round((KEYS * value.length) / 2 ** 20)} MiB of values)`,
      figures,
    );
  } finally {
    await store.close();
    await etcd.stop();
  }
}
