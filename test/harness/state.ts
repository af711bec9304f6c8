/**
 * The controller's state below the API, for tests (and benchmarks) of the state ops, the cache and
 * what reads it: an embedded store in its own directory with a state cache on it, gone when the test
 * ends; and documents written straight into the store, as the ops would write them, where making them
 * through the ops is not the point (a relation between applications whose operator, motd say,
 * declares no endpoints `relate` could join).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RelationDoc, Store } from "../../controller";
import { EmbeddedStore, StateCache, docs } from "../../controller";

/** What registers a test's clean-up: ava's `t`. */
export interface Teardowns {
  teardown(fn: () => Promise<void> | void): void;
}

/**
 * An embedded store in a new directory (`steward-<name>-…`) and a state cache following it; when the
 * test ends (after the clean-ups the test registers later) the cache stops, the store closes and the
 * directory goes.
 */
export async function storeWithCache(
  t: Teardowns,
  name: string,
): Promise<{ dir: string; store: EmbeddedStore; cache: StateCache }> {
  const dir = await mkdtemp(join(tmpdir(), `steward-${name}-`));
  const store = await EmbeddedStore.open({ dir });
  const cache = await StateCache.start(store, () => undefined);
  t.teardown(async () => {
    cache.stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return { dir, store, cache };
}

/** Writes relation `id` of model `uuid` between `endpoints` (alive unless `life` says otherwise); resolves with the store's revision. */
export async function putRelation(
  store: Store,
  uuid: string,
  id: number,
  endpoints: RelationDoc["endpoints"],
  life: RelationDoc["life"] = "alive",
): Promise<number> {
  const doc: RelationDoc = {
    id,
    key: endpoints
      .map((e) => `${e.app}:${e.endpoint}`)
      .sort()
      .join(" "),
    endpoints,
    life,
    createdAt: "2026-01-01T00:00:00Z",
  };
  return store.put(docs.relation.key(uuid, id), JSON.stringify(doc));
}

/** The endpoints of a `pg` relation: `provider`'s and `requirer`'s endpoints, both named `db`. */
export const pgRelation = (provider: string, requirer: string): RelationDoc["endpoints"] => [
  { app: provider, endpoint: "db", role: "provider", interface: "pg" },
  { app: requirer, endpoint: "db", role: "requirer", interface: "pg" },
];
