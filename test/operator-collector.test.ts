/**
 * The operator collector on a real embedded store, with its clock moved instead of waiting: what
 * it deletes, what it keeps, and that a deploy racing a deletion wins.
 */
import test from "ava";
import { join } from "node:path";
import { readOperatorDir, silentLogger } from "../api";
import { OperatorCollector, StateOps, keys } from "../controller";
import { operatorsDir } from "./harness/controller";
import { storeWithCache } from "./harness/state";

const HOUR = 3600_000;

async function setup(t: { teardown(fn: () => Promise<void> | void): void }) {
  const { store, cache } = await storeWithCache(t, "collector");
  const ops = new StateOps(store);
  let now = Date.now();
  const collector = new OperatorCollector(cache, ops, silentLogger, { graceMs: HOUR, now: () => now });
  const { bundle } = await readOperatorDir(join(operatorsDir, "motd"));
  return {
    store,
    cache,
    ops,
    collector,
    bundle,
    later: (ms: number) => {
      now += ms;
    },
  };
}

test("an unused operator is kept through the grace period, then deleted with its chunks; a used one stays", async (t) => {
  const { store, cache, ops, collector, bundle, later } = await setup(t);
  const model = await ops.models.create("admin", "m");
  const used = (await ops.operators.upload(bundle, { quotaBytes: 1 << 30 })).doc.hash;
  await ops.applications.deploy(model.uuid, { name: "motd", operator: used, units: 0 });
  const spare = { files: [...bundle.files, { path: "extra", mode: 0o644, content: "eA==" }] };
  const unused = (await ops.operators.upload(spare, { quotaBytes: 1 << 30 })).doc.hash;

  await collector.collect();
  t.truthy(await store.get(keys.operator(unused)), "within the grace period it stays");
  later(2 * HOUR);
  await collector.collect();
  t.is(await store.get(keys.operator(unused)), undefined);
  t.deepEqual((await store.range(keys.operatorChunks(unused))).kvs, [], "its chunks went with it");
  t.truthy(await store.get(keys.operator(used)), "an operator an application uses stays");
  await cache.catchUp();
  t.false(cache.operators.has(unused));
});

test("a deploy that lands after the collector read the operator makes the deletion fail", async (t) => {
  const { store, ops, bundle } = await setup(t);
  const model = await ops.models.create("admin", "m");
  const hash = (await ops.operators.upload(bundle, { quotaBytes: 1 << 30 })).doc.hash;
  const seen = (await ops.operators.find(hash))!;
  await ops.applications.deploy(model.uuid, { name: "motd", operator: hash, units: 0 });
  t.false(await ops.operators.delete(hash, seen.rev));
  t.truthy(await store.get(keys.operator(hash)));
  t.truthy((await ops.operators.find(hash))!.doc.lastUsedAt, "the deploy recorded its use");
});

test("the chunks of an upload that never finished are deleted after the grace period", async (t) => {
  const { store, collector, later } = await setup(t);
  const hash = `v2-${"ab".repeat(32)}`;
  await store.put(keys.operatorUpload(hash), JSON.stringify({ hash, startedAt: new Date().toISOString() }));
  await store.put(keys.operatorChunk(hash, 0), "half an upload");
  await collector.collect();
  t.truthy(await store.get(keys.operatorChunk(hash, 0)), "an upload may still be under way");
  later(2 * HOUR);
  await collector.collect();
  t.is(await store.get(keys.operatorChunk(hash, 0)), undefined);
  t.is(await store.get(keys.operatorUpload(hash)), undefined);
});
