/**
 * The target's staging of a migration (controller/migration/staging.ts) on a real embedded store:
 * a crash half-way through staging blocks nothing, activation is one transaction answered the same
 * when asked again, an abort after activation is refused (the model has moved), an abort before
 * leaves nothing, an activation that finds the name taken keeps the staged copy, and a staging
 * nobody heartbeats is purged.
 */
import test from "ava";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StewardError } from "../api";
import type { ModelExport } from "../controller";
import {
  EmbeddedStore,
  MODEL_EXPORT_FORMAT,
  MODEL_EXPORT_VERSION,
  MigrationStaging,
  keys,
  migrationKeyPair,
} from "../controller";

let dir: string;
let store: EmbeddedStore;
let staging: MigrationStaging;

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), "steward-staging-"));
  store = await EmbeddedStore.open({ dir });
  staging = new MigrationStaging({
    store,
    importDeps: { store, leaseSeconds: 60, putOperator: async () => undefined, checkLocalDir: async () => undefined },
    migrationKeys: (id) => migrationKeyPair("a test CA key", id),
  });
});
test.after.always(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

/** An export of a model with one manual machine (padded past one chunk by a leader databag, so staging takes several). */
function exportOf(name: string): ModelExport {
  const uuid = randomUUID();
  return {
    format: MODEL_EXPORT_FORMAT,
    version: MODEL_EXPORT_VERSION,
    exportedAt: new Date().toISOString(),
    source: { controller: "src", controllerName: "src", revision: 10 },
    documents: {
      model: {
        "": {
          uuid,
          name,
          owner: "admin",
          life: "alive",
          createdAt: new Date().toISOString(),
          config: { updateStatusInterval: 300 },
          substrate: "manual",
        },
      },
      machine: {
        "0": {
          id: "0",
          substrate: "manual",
          life: "alive",
          credentialHash: "ab".repeat(32),
          createdAt: new Date().toISOString(),
        },
      },
      // Padding where a document may hold it (an unknown field would be refused).
      "leader-data": { pad: { padding: "x".repeat(700_000) } },
    },
    versions: { revision: 10, bags: {} },
    operators: {},
    references: {},
  } as unknown as ModelExport;
}
const uuidOf = (e: ModelExport): string => (e.documents.model![""] as { uuid: string }).uuid;
const chunkCount = async (id: string): Promise<number> => (await store.range(keys.migrationStageChunks(id))).kvs.length;

test.serial(
  "a staging cut off before its meta blocks nothing: staged again it activates, once, in one transaction",
  async (t) => {
    const doc = exportOf("shop");
    const id = randomUUID();
    // A crash after the chunks and before the meta (of a longer attempt): no staging, as far as anyone can tell.
    for (let i = 0; i < 6; i++)
      await store.put(keys.migrationStageChunk(id, i), Buffer.from('{"partial').toString("base64"));
    t.is(await staging.state(id, uuidOf(doc)), "unknown");
    const meta = await staging.stage(id, "src", JSON.stringify(doc));
    t.true(meta.chunks >= 2, `${meta.chunks} chunks`);
    t.is(await staging.state(id, uuidOf(doc)), "staged");
    t.is(await store.get(keys.model(uuidOf(doc))), undefined, "nothing of the model is live while staged");
    t.deepEqual(await staging.stagedMachine(id, uuidOf(doc), "0"), { credentialHash: "ab".repeat(32), units: [] });
    t.is(
      await staging.stagedMachine(id, randomUUID(), "0"),
      undefined,
      "another model's machine is not this staging's",
    );

    const first = await staging.activate(id, uuidOf(doc));
    t.true(first.activated);
    t.truthy(await store.get(keys.model(uuidOf(doc))));
    t.is(await store.get(keys.migrationStage(id)), undefined);
    t.is(await chunkCount(id), 0, "the staged copy went in the same transaction");
    t.is(await staging.state(id, uuidOf(doc)), "active");
    // The source lost the answer and asks again: the same answer, nothing done twice.
    t.false((await staging.activate(id, uuidOf(doc))).activated);
    // An abort now is refused: the model lives here.
    const refused = await staging.abort(id, uuidOf(doc)).catch((e: unknown) => e);
    t.true(StewardError.isInstance(refused) && refused.details.reason === "activated", String(refused));
  },
);

test.serial("an abort before activation leaves nothing; a second staging of a model replaces the first", async (t) => {
  const doc = exportOf("cafe");
  const [a, b] = [randomUUID(), randomUUID()];
  await staging.stage(a, "src", JSON.stringify(doc));
  await staging.stage(b, "src", JSON.stringify(doc));
  t.is(await staging.state(a), "unknown", "the earlier attempt's staging is gone");
  t.is(await chunkCount(a), 0);
  await staging.abort(b, uuidOf(doc));
  t.is(await staging.state(b), "unknown");
  t.is(await chunkCount(b), 0);
  t.is(await store.get(keys.model(uuidOf(doc))), undefined);
  const missing = await staging.activate(b, uuidOf(doc)).catch((e: unknown) => e);
  t.true(StewardError.isInstance(missing) && missing.code === "not-found", String(missing));
});

test.serial(
  "an activation that finds the name taken is refused whole and keeps the staged copy; an idle staging is purged",
  async (t) => {
    const doc = exportOf("deli");
    const id = randomUUID();
    await staging.stage(id, "src", JSON.stringify(doc));
    await store.put(keys.modelName("deli"), JSON.stringify(randomUUID()));
    const refused = await staging.activate(id, uuidOf(doc)).catch((e: unknown) => e);
    t.true(StewardError.isInstance(refused) && refused.code === "already-exists", String(refused));
    t.is(await staging.state(id), "staged", "still staged: the source decides to abort");
    t.is(await store.get(keys.model(uuidOf(doc))), undefined);
    t.deepEqual(await staging.purgeIdle(60_000), [], "heartbeated just now");
    t.deepEqual(await staging.purgeIdle(60_000, Date.now() + 120_000), [id]);
    t.is(await chunkCount(id), 0);
  },
);

test("a staged export that is not JSON, or holds no model, is refused before anything is written", async (t) => {
  const id = randomUUID();
  for (const bad of [
    "{not json",
    JSON.stringify({ format: MODEL_EXPORT_FORMAT, version: MODEL_EXPORT_VERSION, documents: {} }),
  ]) {
    const e = await staging.stage(id, "src", bad).catch((x: unknown) => x);
    t.true(StewardError.isInstance(e) && e.code === "invalid-request", String(e));
  }
  t.is(await chunkCount(id), 0);
});
