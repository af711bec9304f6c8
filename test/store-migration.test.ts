/**
 * The store's migration to this build's format (controller/state/store-migration.ts) on a real
 * embedded store written as the previous format leaves it: models in both shapes, and one from before
 * placements in the old shape alone. The migration bumps the format, rewrites every model and the
 * replica cloud in the current shape alone, does nothing when run again, resumes a migration its
 * leader left unfinished, and never overwrites a document changed while it worked.
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { STORE_FORMAT } from "../api";
import type { Store, Txn } from "../controller";
import {
  EmbeddedStore,
  KIND,
  StoreMigrator,
  keys,
  migrationWaitsFor,
  modelDocOf,
  restoreControllerDir,
  sealBackup,
  storedValue,
  takeSnapshot,
} from "../controller";
import { existsSync } from "node:fs";

const OLD_MODEL = {
  uuid: "0b0e9a52-3c1a-4c53-9d1e-7d1a2f3b4c5d",
  name: "shop",
  owner: "admin",
  life: "alive",
  createdAt: "2026-11-01T00:00:00.000Z",
  config: { updateStatusInterval: 300 },
  substrate: "aws",
  credential: "prod",
  aws: { region: "eu-west-1", imageId: "ami-0123456789abcdef0", instanceType: "t3.small" },
};
const BOTH_SHAPES = modelDocOf({ ...OLD_MODEL, uuid: "5f0c1d2e-0000-4000-8000-000000000002", name: "web" });
const CLOUD = { substrate: "aws", credential: "prod", settings: { region: "eu-west-1" } };

/** A store as a controller of format 1 leaves it. */
async function formatOneStore(t: { teardown(f: () => Promise<void>): void }): Promise<EmbeddedStore> {
  const dir = await mkdtemp(join(tmpdir(), "steward-store-migration-"));
  const store = await EmbeddedStore.open({ dir });
  t.teardown(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  await store.put(
    keys.controller,
    JSON.stringify({ uuid: "c", name: "prod", createdAt: "2026-11-01T00:00:00.000Z", schemaVersion: 1 }),
  );
  await store.put(keys.model(OLD_MODEL.uuid), JSON.stringify(OLD_MODEL));
  await store.put(keys.model(BOTH_SHAPES.uuid), storedValue(KIND.model, BOTH_SHAPES, 1));
  await store.put(keys.clusterReplicaCloud, storedValue(KIND["cluster-replica-cloud"], CLOUD, 1));
  // Not a kind whose shape changed: left alone.
  await store.put(keys.app(OLD_MODEL.uuid, "db"), JSON.stringify({ name: "db", substrate: "kept as written" }));
  return store;
}

const raw = async (store: Store, key: string): Promise<Record<string, unknown>> =>
  JSON.parse((await store.get(key))!.value) as Record<string, unknown>;

test("it waits for every replica to read the new format, every member to be up and the upgrade to end, naming why", (t) => {
  const r1 = { id: "r1", addresses: [], since: "", version: "0.1.0", storeFormat: STORE_FORMAT };
  const r2 = { id: "r2", addresses: [], since: "", version: "0.0.9" };
  const member = (name: string) => ({ name, host: "10.0.0.1", apiPort: 17070, state: "member" as const, addedAt: "" });
  const cluster = (replicas: (typeof r1 | typeof r2)[], members: string[], upgrade?: "running" | "done") => ({
    replicas: new Map(replicas.map((r) => [r.id, r])),
    clusterMembers: new Map(members.map((m) => [m, member(m)])),
    upgrade: upgrade ? { state: upgrade, to: "0.1.0" } : undefined,
  });
  t.regex(
    migrationWaitsFor(cluster([r1, r2], [])) ?? "",
    new RegExp(`replica r2 \\(0\\.0\\.9\\) runs a release that does not read store format ${STORE_FORMAT}`),
  );
  t.is(migrationWaitsFor(cluster([r1], [])), undefined);
  t.is(migrationWaitsFor(cluster([r1], ["r1", "r3"])), "replica r3 is down");
  t.is(migrationWaitsFor(cluster([r1], ["r1"], "running")), "the upgrade to 0.1.0 is still running");
  t.is(migrationWaitsFor(cluster([r1], ["r1"], "done")), undefined);
});

test("models and the replica cloud are rewritten in the current shape alone; the format is bumped; a second run does nothing", async (t) => {
  const store = await formatOneStore(t);
  const first = await new StoreMigrator(store, "r1").run();
  t.is(first.rewritten, 3);
  t.is(first.migration?.from, 1);
  t.is(first.migration?.to, STORE_FORMAT);
  t.truthy(first.migration?.doneAt);
  t.is((await raw(store, keys.controller)).schemaVersion, STORE_FORMAT);
  const old = await raw(store, keys.model(OLD_MODEL.uuid));
  t.deepEqual(old, modelDocOf(OLD_MODEL) as unknown as Record<string, unknown>);
  t.false("substrate" in old || "aws" in old || "credential" in old);
  t.deepEqual(await raw(store, keys.model(BOTH_SHAPES.uuid)), BOTH_SHAPES as unknown as Record<string, unknown>);
  const cloud = await raw(store, keys.clusterReplicaCloud);
  t.deepEqual(cloud, CLOUD);
  t.is((await raw(store, keys.app(OLD_MODEL.uuid, "db"))).substrate, "kept as written");
  const again = await new StoreMigrator(store, "r2").run();
  t.is(again.rewritten, 0);
  t.is(again.migration?.doneAt, first.migration?.doneAt, "the record of the migration that ran is kept");
});

test("a migration its leader left unfinished is resumed by the next", async (t) => {
  const store = await formatOneStore(t);
  // The first leader bumped the format, rewrote nothing and died.
  const info = await raw(store, keys.controller);
  await store.put(keys.controller, JSON.stringify({ ...info, schemaVersion: STORE_FORMAT }));
  const started = {
    from: 1,
    to: STORE_FORMAT,
    startedAt: "2026-11-28T00:00:00.000Z",
    rewritten: 0,
    replica: "r1",
    updatedAt: "2026-11-28T00:00:00.000Z",
  };
  await store.put(keys.storeMigration, JSON.stringify(started));
  const pass = await new StoreMigrator(store, "r2").run();
  t.is(pass.rewritten, 3);
  t.is(pass.migration?.startedAt, started.startedAt, "the same migration, resumed");
  t.is(pass.migration?.replica, "r2");
  t.truthy(pass.migration?.doneAt);
  t.false("substrate" in (await raw(store, keys.model(OLD_MODEL.uuid))));
});

test("a document written while the migration works is read again, never overwritten", async (t) => {
  const store = await formatOneStore(t);
  const key = keys.model(OLD_MODEL.uuid);
  let raced = false;
  // Another replica renames the model between the migration's read and its write.
  const txn = async (t: Txn): ReturnType<Store["txn"]> => {
    if (!raced && t.success.some((op) => op.type === "put" && op.key === key)) {
      raced = true;
      await store.put(key, JSON.stringify({ ...OLD_MODEL, name: "renamed" }));
    }
    return store.txn(t);
  };
  const racing = new Proxy(store, {
    get: (target, p) => (p === "txn" ? txn : (Reflect.get(target, p) as unknown)),
  }) as Store;
  const pass = await new StoreMigrator(racing, "r1").run();
  t.true(raced);
  const doc = await raw(store, key);
  t.is(doc.name, "renamed", "the concurrent write is kept");
  t.false("substrate" in doc, "and migrated");
  t.is(pass.rewritten, 3);
});

test("a backup of a store in a newer format is refused by this release before anything is written", async (t) => {
  const store = await formatOneStore(t);
  const info = await raw(store, keys.controller);
  await store.put(keys.controller, JSON.stringify({ ...info, schemaVersion: STORE_FORMAT + 1 }));
  const { archive, manifest } = await takeSnapshot(store, { caCert: "ca", caKey: "key" });
  const file = await sealBackup(archive, "passphrase", {
    id: "20261128T000000Z-aaaaa1",
    controller: manifest.controller,
    revision: manifest.revision,
    createdAt: manifest.createdAt,
    stewardVersion: "9.9.9",
  });
  const dir = await mkdtemp(join(tmpdir(), "steward-restore-newer-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const dataDir = join(dir, "c");
  await t.throwsAsync(
    restoreControllerDir({ dataDir, file, passphrase: "passphrase", listen: { host: "127.0.0.1", port: 0 } }),
    {
      message: new RegExp(
        `the backup's store is at format ${STORE_FORMAT + 1} \\(taken by 9\\.9\\.9\\), and this release .* reads store formats 1 to ${STORE_FORMAT}: restore it with the steward of the release that took it`,
      ),
    },
  );
  t.false(existsSync(join(dataDir, "controller.json")), "nothing was restored");
});
