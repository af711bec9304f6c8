/**
 * The state cache after its watch fails: it reads the store again, keeps trying until a read
 * succeeds (a cache whose one re-read failed followed nothing for good: its replica pushed agents
 * stale controller addresses from then on), and tells its listeners the cluster changed, so agent
 * hubs push the addresses that moved while the watch was down.
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Store, WatchOptions } from "../controller";
import { CLUSTER_CHANGED, EmbeddedStore, StateCache } from "../controller";
import { eventually } from "./harness/eventually";

/**
 * A real embedded store whose watches can be broken on demand and whose next `failReads` reads
 * are refused, as a store without a leader refuses them.
 */
function faultyStore(store: Store): { store: Store; breakWatches: () => void; failReads: (n: number) => void } {
  const onErrors: ((err: Error) => void)[] = [];
  let failing = 0;
  const faulty = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === "watch") {
        return (prefix: string, listener: Parameters<Store["watch"]>[1], opts: WatchOptions = {}) => {
          if (opts.onError) onErrors.push(opts.onError);
          return target.watch(prefix, listener, opts);
        };
      }
      if (prop === "txn") {
        return (txn: Parameters<Store["txn"]>[0]) => {
          if (failing > 0) {
            failing--;
            return Promise.reject(new Error("etcdserver: no leader"));
          }
          return target.txn(txn);
        };
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    store: faulty,
    breakWatches: () => {
      for (const e of onErrors.splice(0)) e(new Error("watch stream broken"));
    },
    failReads: (n) => {
      failing = n;
    },
  };
}

const replica = (addresses: string[]): string =>
  JSON.stringify({ id: "r3", addresses, since: new Date().toISOString() });

test("a cache whose re-read fails tries again, and tells listeners the cluster changed", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-cache-"));
  const real = await EmbeddedStore.open({ dir });
  t.teardown(async () => {
    await real.close();
    await rm(dir, { recursive: true, force: true });
  });
  const { store, breakWatches, failReads } = faultyStore(real);
  const errors: string[] = [];
  const cache = await StateCache.start(store, (err) => errors.push(err.message));
  t.teardown(() => cache.stop());
  const clusterChanges: string[][] = [];
  cache.subscribe((changed) => {
    if (changed.has(CLUSTER_CHANGED)) clusterChanges.push(cache.replicas.get("r3")?.addresses ?? []);
  });

  await real.put("/cluster/replicas/r3", replica(["10.0.0.13:17070"]));
  await eventually("the cache follows the store", () => cache.replicas.get("r3")?.addresses[0] === "10.0.0.13:17070");

  // The watch breaks and the first two re-reads are refused; meanwhile the replica moves.
  failReads(2);
  breakWatches();
  await real.put("/cluster/replicas/r3", replica(["10.0.0.113:17070"]));
  await eventually(
    "the cache read the store again",
    () => cache.replicas.get("r3")?.addresses[0] === "10.0.0.113:17070",
    10_000,
  ).catch(() => undefined);
  t.deepEqual(cache.replicas.get("r3")?.addresses, ["10.0.0.113:17070"]);
  t.true(
    errors.some((e) => /could not resync .*no leader; trying again/.test(e)),
    errors.join("\n"),
  );
  t.deepEqual(clusterChanges.at(-1), ["10.0.0.113:17070"], "listeners heard the cluster changed with the re-read");

  // And it follows the store again.
  await real.put("/cluster/replicas/r3", replica(["10.0.0.213:17070"]));
  await eventually(
    "the cache follows the store after the resync",
    () => cache.replicas.get("r3")?.addresses[0] === "10.0.0.213:17070",
  );
});

test("a cache reads the store again when it was restored under it (a new restore epoch), and follows it after", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-cache-"));
  const store = await EmbeddedStore.open({ dir });
  t.teardown(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  const cache = await StateCache.start(store, () => undefined);
  t.teardown(() => cache.stop());
  const loads: number[] = [];
  // A re-read tells listeners the cluster changed along with every model; a plain event does not.
  cache.subscribe((changed, rev) => {
    if (changed.has(CLUSTER_CHANGED) && changed.has("m1")) loads.push(rev);
  });
  await store.put("/models/m1", JSON.stringify({ uuid: "m1", name: "one" }));
  await eventually("the cache follows the store", () => cache.models.has("m1"));
  // A watcher cannot tell a restored store from its revisions alone: the epoch document says so.
  await store.put(
    "/controller/restore",
    JSON.stringify({ clusterId: "c1", epoch: 1, revision: 1, backupId: "b", restoredAt: "", taskSeqs: {} }),
  );
  await eventually("the cache read the store again", () => loads.length === 1 && cache.restore?.clusterId === "c1");
  await store.put("/models/m2", JSON.stringify({ uuid: "m2", name: "two" }));
  await eventually("the cache follows the store after it", () => cache.models.has("m2"));
  t.is(loads.length, 1, "only a new epoch makes it read everything again");
});
