/**
 * The store's migration to this build's format on etcd (controller/state/store-migration.ts): a store
 * of `size` models written as the previous format leaves them (both shapes), each with ten more keys
 * under it (units, statuses: what the scan reads past), migrated by the leader's StoreMigrator: its
 * time, and documents rewritten per second.
 */
import { STORE_FORMAT } from "../api";
import { EtcdStore, KIND, StoreMigrator, keys, modelDocOf, storedValue } from "../controller";
import { startEtcd } from "../test/harness/etcd";
import type { BenchOptions } from "./util";
import { report } from "./util";

/** `size`: models in the store (default 5,000). */
export async function benchStoreMigration(o: BenchOptions = {}): Promise<void> {
  const MODELS = o.size ?? 5000;
  const etcd = await startEtcd();
  const store = await EtcdStore.connect({ endpoints: [etcd.endpoint], prefix: "/bench" });
  try {
    await store.put(
      keys.controller,
      JSON.stringify({
        uuid: "c",
        name: "bench",
        createdAt: new Date().toISOString(),
        schemaVersion: STORE_FORMAT - 1,
      }),
    );
    for (let i = 0; i < MODELS; i += 10) {
      const ops = [];
      for (let j = i; j < Math.min(MODELS, i + 10); j++) {
        const uuid = `00000000-0000-4000-8000-${String(j).padStart(12, "0")}`;
        const model = modelDocOf({
          uuid,
          name: `m${j}`,
          owner: "admin",
          life: "alive",
          createdAt: "2026-11-28T00:00:00.000Z",
          config: { updateStatusInterval: 300 },
          substrate: "aws",
          credential: "prod",
          aws: { region: "eu-west-1", instanceType: "t3.small" },
        });
        ops.push({
          type: "put" as const,
          key: keys.model(uuid),
          value: storedValue(KIND.model, model, STORE_FORMAT - 1),
        });
        for (let u = 0; u < 10; u++)
          ops.push({
            type: "put" as const,
            key: keys.unit(uuid, `app/${u}`),
            value: JSON.stringify({ name: `app/${u}` }),
          });
      }
      await store.txn({ success: ops });
    }
    const t0 = performance.now();
    const pass = await new StoreMigrator(store, "bench").run();
    const s = (performance.now() - t0) / 1000;
    if (pass.rewritten !== MODELS) throw new Error(`${pass.rewritten} documents rewritten, not ${MODELS}`);
    report(`store migration to format ${STORE_FORMAT} on etcd (single member)`, {
      models: MODELS,
      "keys scanned": MODELS * 11 + 1,
      "migration (s)": s,
      "documents rewritten per second": MODELS / s,
    });
  } finally {
    await store.close();
    await etcd.stop();
  }
}
