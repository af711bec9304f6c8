/**
 * Import against a real embedded store, below the API: a model too large for one transaction is
 * refused with nothing of it written (no document, no operator, no leader lease left behind); a
 * model naming a sealed credential needs a credential of that name here and is recorded as using
 * it; the databag versions an export names are what the cache serves after the import, and a write
 * after it is served past every source version. An export written for a controller of the build
 * before placements (format v2) reads as that build's model document, and back unchanged.
 */
import test from "ava";
import { join } from "node:path";
import { z } from "zod";
import { MODEL_SUBSTRATES, Name, UserName, readOperatorDir, settingsSchemaOf } from "../api";
import {
  EtcdStore,
  StateCache,
  StateOps,
  exportForReader,
  exportModel,
  exportVersionFor,
  importModel,
  keys,
  upgradeModelExport,
} from "../controller";
import { operatorsDir } from "./harness/controller";
import { haveEtcd, startEtcd } from "./harness/etcd";
import { storeWithCache } from "./harness/state";

async function setup(t: { teardown(fn: () => Promise<void> | void): void }) {
  const { store, cache } = await storeWithCache(t, "imp-store");
  const ops = new StateOps(store);
  const deps = {
    store,
    leaseSeconds: 60,
    putOperator: (b: Parameters<StateOps["operators"]["upload"]>[0]) =>
      ops.operators.upload(b, { quotaBytes: 1 << 30 }),
    checkLocalDir: async () => undefined,
  };
  return { store, cache, ops, deps };
}

/** A model with one application of two units, a leader, leader data and a peer databag, exported. */
async function sourceExport(t: Parameters<typeof setup>[0]) {
  const { store, ops } = await setup(t);
  const m = await ops.models.create("admin", "m");
  const { bundle } = await readOperatorDir(join(operatorsDir, "motd"));
  const hash = (await ops.operators.upload(bundle, { quotaBytes: 1 << 30 })).doc.hash;
  await ops.applications.deploy(m.uuid, { name: "motd", operator: hash, units: 2 });
  await store.put(
    keys.leader(m.uuid, "motd"),
    JSON.stringify({ unit: "motd/0", since: "2026-01-01T00:00:00Z", lease: "x" }),
  );
  await store.put(keys.leaderData(m.uuid, "motd"), JSON.stringify({ token: "a" }));
  for (let i = 0; i < 5; i++) await store.put("/models/unrelated-churn", String(i)); // revisions move on
  await store.put(keys.unitBag(m.uuid, 0, "motd/1"), JSON.stringify({ k: "v" }));
  return exportModel(store, m.uuid);
}

test("a model too large for one transaction is refused, and nothing of it is written", async (t) => {
  const doc = await sourceExport(t);
  const { store, deps } = await setup(t);
  doc.documents["unit-status"] = Object.fromEntries(
    Array.from({ length: 20_001 }, (_, i) => [
      `motd/${i}`,
      {
        workload: { current: "active", message: "", since: "2026-01-01T00:00:00Z" },
        agent: { current: "idle", message: "", since: "2026-01-01T00:00:00Z" },
        version: "",
      },
    ]),
  );
  // Count the leader leases granted and given back.
  const leases = { granted: 0, revoked: 0 };
  const counting = new Proxy(store, {
    get(target, prop) {
      if (prop === "grantLease")
        return (s: number) => {
          leases.granted++;
          return target.grantLease(s);
        };
      if (prop === "revokeLease")
        return (id: string) => {
          leases.revoked++;
          return target.revokeLease(id);
        };
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  await t.throwsAsync(importModel({ ...deps, store: counting }, doc), {
    message: /too large to import in one transaction \(20\d{3} documents/,
  });
  const everything = (await store.range("/")).kvs.map((kv) => kv.key);
  t.deepEqual(
    everything.filter(
      (k) =>
        k.startsWith("/models/") ||
        k.startsWith("/model-names/") ||
        k.startsWith("/operators/") ||
        k.startsWith("/blobs/"),
    ),
    [],
  );
  t.deepEqual(leases, { granted: 1, revoked: 1 }, "the leader's lease was given back");
});

test("a model naming a credential needs one of that name here, and is recorded as using it", async (t) => {
  const doc = await sourceExport(t);
  const { store, deps } = await setup(t);
  const model = doc.documents.model![""] as { placement: unknown };
  model.placement = {
    substrate: "aws",
    credential: "prod",
    settings: { region: "eu-west-1", imageId: "ami-0123456789abcdef0", instanceType: "t3.small" },
  };
  await t.throwsAsync(importModel(deps, doc), {
    message: /uses credential "prod", which this controller does not have/,
  });
  await store.put(
    keys.credential("prod"),
    JSON.stringify({
      name: "prod",
      substrate: "vsphere",
      owner: "admin",
      createdAt: "",
      shown: {},
      sealed: "s",
      models: [],
    }),
  );
  await t.throwsAsync(importModel(deps, doc), { message: /credential "prod" here is for vsphere/ });
  await store.put(
    keys.credential("prod"),
    JSON.stringify({
      name: "prod",
      substrate: "aws",
      owner: "admin",
      createdAt: "",
      shown: {},
      sealed: "s",
      models: [],
    }),
  );
  const res = await importModel(deps, doc);
  const cred = JSON.parse((await store.get(keys.credential("prod")))!.value) as { models: string[]; sealed: string };
  t.deepEqual(cred.models, [res.uuid]);
  t.is(cred.sealed, "s", "the target's sealed credential is its own");
});

test("the cache serves the export's databag versions after an import, and later writes past them", async (t) => {
  const doc = await sourceExport(t);
  const { store, cache, deps } = await setup(t);
  const res = await importModel(deps, doc);
  await cache.waitForRevision(res.revision);
  const idx = cache.models.get(res.uuid)!;
  t.is(idx.relationData.get("0/unit/motd/1")?.rev, doc.versions.bags["0/unit/motd/1"]);
  t.is(idx.leaderData.get("motd")?.rev, doc.versions.bags["leader/motd"]);
  t.true(
    res.revision < doc.versions.bags["0/unit/motd/1"]!,
    "this store's revision is behind the source's: without the mapping versions would go back",
  );
  // The leader holds a lease of this store, not the source's.
  const leader = JSON.parse((await store.get(keys.leader(res.uuid, "motd")))!.value) as { lease: string };
  t.not(leader.lease, "x");
  const w = await store.put(keys.unitBag(res.uuid, 0, "motd/1"), JSON.stringify({ k: "w" }));
  await cache.waitForRevision(w);
  t.true(
    idx.relationData.get("0/unit/motd/1")!.rev > doc.versions.revision,
    "a later write is a newer version than anything the source served",
  );
  // Exported again, the versions are kept (a second move changes nothing for agents).
  const again = await exportModel(store, res.uuid);
  t.is(again.versions.bags["leader/motd"], doc.versions.bags["leader/motd"]);
  t.is(again.versions.bags["0/unit/motd/1"], idx.relationData.get("0/unit/motd/1")!.rev);
});

(haveEtcd ? test : test.skip)(
  "into an etcd store: one transaction with the leader's lease, served at the source's versions",
  async (t) => {
    const doc = await sourceExport(t);
    const etcd = await startEtcd();
    t.teardown(() => etcd.stop());
    const store = await EtcdStore.connect({ endpoints: [etcd.endpoint], prefix: "/imp" });
    const cache = await StateCache.start(store, () => undefined);
    t.teardown(async () => {
      cache.stop();
      await store.close();
    });
    const ops = new StateOps(store);
    const res = await importModel(
      {
        store,
        leaseSeconds: 60,
        putOperator: (b) => ops.operators.upload(b, { quotaBytes: 1 << 30 }),
        checkLocalDir: async () => undefined,
      },
      doc,
    );
    await cache.waitForRevision(res.revision);
    const idx = cache.models.get(res.uuid)!;
    t.is(idx.units.size, 2);
    t.is(idx.leaders.get("motd")?.unit, "motd/0");
    t.is(idx.leaderData.get("motd")?.rev, doc.versions.bags["leader/motd"]);
    t.is(
      (await store.get(keys.leader(res.uuid, "motd")))?.lease !== undefined,
      true,
      "the leader key is bound to an etcd lease",
    );
  },
);

/**
 * The model document as the build before placements checked it (controller/state/document-schemas.ts at
 * 9fd6f7c^, strict): what a v2 export must fit for that controller to import it.
 */
const PreviousModelSchema = z.strictObject({
  uuid: z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
  name: Name,
  owner: UserName,
  life: z.enum(["alive", "dying"]),
  createdAt: z.string().max(40),
  config: z.strictObject({
    updateStatusInterval: z.number().int().min(1).max(3600),
    automaticallyRetryHooks: z.boolean().optional(),
  }),
  substrate: z.enum(MODEL_SUBSTRATES).optional(),
  credential: Name.optional(),
  aws: settingsSchemaOf("aws")!.optional(),
  vsphere: settingsSchemaOf("vsphere")!.optional(),
  kubernetes: settingsSchemaOf("kubernetes")!.optional(),
  constraints: z.record(z.string(), z.unknown()).optional(),
});

test("an export for the build before placements is format 2 in its shape, and reads back unchanged", async (t) => {
  t.is(exportVersionFor(undefined), 2, "a target whose hello names no version is the previous build");
  t.is(exportVersionFor(3), 3);
  t.is(exportVersionFor(4), 4);
  t.is(exportVersionFor(5), 5);
  t.is(exportVersionFor(7), 5, "a newer target gets what this controller writes");
  t.throws(() => exportVersionFor(1), { message: /reads model exports up to version 1/ });

  const local = await sourceExport(t);
  const aws = structuredClone(local);
  (aws.documents.model![""] as { placement: unknown }).placement = {
    substrate: "aws",
    credential: "prod",
    settings: { region: "eu-west-1", imageId: "ami-0123456789abcdef0", instanceType: "t3.small" },
  };
  for (const doc of [local, aws]) {
    const before = JSON.parse(JSON.stringify(doc)) as unknown;
    const v2 = JSON.parse(JSON.stringify(exportForReader(doc, 2))) as {
      version: number;
      documents: { model: Record<string, Record<string, unknown>> };
    };
    t.deepEqual(JSON.parse(JSON.stringify(doc)), before, "the current export is left as it was");
    t.is(v2.version, 2);
    const model = v2.documents.model[""]!;
    const parsed = PreviousModelSchema.safeParse(model);
    t.true(parsed.success, parsed.success ? "" : JSON.stringify(parsed.error.issues));
    t.false("placement" in model);
    // Read back by this build (as an import does): the very export it was made from.
    t.deepEqual(JSON.parse(JSON.stringify(upgradeModelExport(structuredClone(v2)))), before);
  }
  const awsModel = (exportForReader(aws, 2).documents.model as Record<string, Record<string, unknown>>)[""]!;
  t.is(awsModel.substrate, "aws");
  t.is(awsModel.credential, "prod");
  t.deepEqual(awsModel.aws, { region: "eu-west-1", imageId: "ami-0123456789abcdef0", instanceType: "t3.small" });
  const localModel = (exportForReader(local, 2).documents.model as Record<string, Record<string, unknown>>)[""]!;
  t.is(localModel.substrate, "local");
  t.false("local" in localModel, "a kind without settings has no bag");

  // Imported here (a downgrade, then an upgrade on import): the model as it was.
  const { store, deps } = await setup(t);
  const res = await importModel(deps, JSON.parse(JSON.stringify(exportForReader(local, 2))));
  const stored = JSON.parse((await store.get(keys.model(res.uuid)))!.value) as Record<string, unknown>;
  t.deepEqual(stored.placement, (local.documents.model![""] as { placement: unknown }).placement);
  // Stored with the previous build's fields beside it, for its replicas during a rolling upgrade.
  t.is(stored.substrate, "local");
});

test("storage pools users made travel in export v4; a reader of v3 is refused while the model has one; a bad pool is refused", async (t) => {
  const doc = await sourceExport(t);
  const pool = {
    name: "fast",
    type: "local",
    attributes: { location: "/srv/fast" },
    createdAt: "2026-01-01T00:00:00Z",
  };
  doc.documents["storage-pool"] = { fast: pool };
  t.throws(() => exportForReader(doc, 3), { message: /the model has storage \(fast\).*upgrade it first/ });
  t.deepEqual(upgradeModelExport(JSON.parse(JSON.stringify(doc))).documents["storage-pool"], { fast: pool });
  const bad = JSON.parse(JSON.stringify(doc)) as typeof doc;
  bad.documents["storage-pool"] = { fast: { ...pool, attributes: { location: 5 } } };
  t.throws(() => upgradeModelExport(bad), { message: /documents\["storage-pool"\]\["fast"\] does not fit/ });
  const { store, deps } = await setup(t);
  const res = await importModel(deps, JSON.parse(JSON.stringify(doc)));
  t.deepEqual(JSON.parse((await store.get(keys.storagePool(res.uuid, "fast")))!.value), pool);
});

test("storage records travel in export v4; a reader of v3 or v2 is refused while the model has any, and a bad record is refused on import", async (t) => {
  const doc = await sourceExport(t);
  t.is(exportForReader(doc, 3).version, 3, "a model without storage is written for a v3 reader as before");
  const storage = {
    id: "data/0",
    name: "data",
    app: "motd",
    kind: "filesystem",
    pool: "local",
    size: 1024,
    status: "detached",
    handle: { dir: "/var/lib/steward/machines/m/kept-storage/data-0" },
    life: "alive",
    createdAt: "2026-01-01T00:00:00Z",
  };
  doc.documents.storage = { "data/0": storage };
  doc.documents["storage-seq"] = { "": 1 };
  for (const version of [2, 3])
    t.throws(() => exportForReader(doc, version), { message: /the model has storage \(data\/0\).*upgrade it first/ });
  const read = upgradeModelExport(JSON.parse(JSON.stringify(doc)));
  t.deepEqual(read.documents.storage, { "data/0": storage });
  const bad = JSON.parse(JSON.stringify(doc)) as typeof doc;
  bad.documents.storage = { "data/0": { ...storage, status: "lost" } };
  t.throws(() => upgradeModelExport(bad), {
    message: /documents\["storage"\]\["data\/0"\] does not fit a storage document/,
  });
  // Imported: the record is in the store as it was exported.
  const { store, deps } = await setup(t);
  const res = await importModel(deps, JSON.parse(JSON.stringify(doc)));
  t.deepEqual(JSON.parse((await store.get(keys.storage(res.uuid, "data/0")))!.value), storage);
});
