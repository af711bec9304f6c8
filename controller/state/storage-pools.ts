/**
 * Storage pools (issue 32, Juju's `create-storage-pool`): a model's substrate has built-in pools (its
 * contract's `storagePools`); users make more of them per model, each a built-in pool (its TYPE) with
 * attributes that type takes (a local pool's `location`). What a pool name resolves to, the pools a
 * model shows, and making and removing them as store transactions. A pool cannot go while instances
 * or an application's new units would use it.
 */
import type { ModelSubstrate, StoragePoolContract, StoragePoolInfo, StorageRequest } from "../../api";
import { StewardError, alreadyExists, contractOf, notFound } from "../../api";
import type { Compare, Op, Store } from "../store";
import { absent, unchanged } from "../store";
import { docs, put, readDoc, readDocs } from "./doc-kinds";
import { keys } from "./keys";
import { aliveModel } from "./model-ops";
import type { StoragePoolDoc } from "./storage-docs";
import { StoreTxns } from "./txn";

/** What a pool name means on a model: the built-in pool it is (or is made from), and a made pool's attributes. */
export interface ResolvedPool {
  name: string;
  type: StoragePoolContract;
  attributes: Record<string, string>;
}

/** The model's substrate's built-in pools. */
export const builtInPools = (substrate: ModelSubstrate): readonly StoragePoolContract[] =>
  contractOf(substrate).storagePools ?? [];

/** Pool `name` of a model on `substrate` that made `made`; undefined when it has none of that name. */
export function resolvePool(
  substrate: ModelSubstrate,
  name: string,
  made: StoragePoolDoc | undefined,
): ResolvedPool | undefined {
  const pools = builtInPools(substrate);
  const builtIn = pools.find((p) => p.name === name);
  if (builtIn) return { name, type: builtIn, attributes: {} };
  const type = made && pools.find((p) => p.name === made.type);
  return type ? { name, type, attributes: made.attributes } : undefined;
}

/** The model's pools as `storage-pools` lists them: built-in first, then made ones by name. */
export function poolInfos(substrate: ModelSubstrate, made: Iterable<StoragePoolDoc>): StoragePoolInfo[] {
  const out: StoragePoolInfo[] = builtInPools(substrate).map((p) => ({
    name: p.name,
    type: p.name,
    kinds: [...p.kinds],
    attributes: {},
    builtIn: true,
  }));
  for (const d of [...made].sort((a, b) => a.name.localeCompare(b.name))) {
    const type = builtInPools(substrate).find((p) => p.name === d.type);
    out.push({ name: d.name, type: d.type, kinds: [...(type?.kinds ?? [])], attributes: d.attributes, builtIn: false });
  }
  return out;
}

/**
 * The made pools deploy's `requests` name, read for its transaction (each compared, so a pool removed
 * meanwhile makes the deploy decide again).
 */
export async function requestedPools(
  store: Store,
  uuid: string,
  substrate: ModelSubstrate,
  requests: Record<string, StorageRequest>,
  compare: Compare[],
): Promise<Map<string, StoragePoolDoc>> {
  const out = new Map<string, StoragePoolDoc>();
  for (const { pool } of Object.values(requests)) {
    if (pool === undefined || out.has(pool) || builtInPools(substrate).some((p) => p.name === pool)) continue;
    const read = await readDoc(store, docs.storagePool, uuid, pool);
    compare.push(read ? unchanged(keys.storagePool(uuid, pool), read.rev) : absent(keys.storagePool(uuid, pool)));
    if (read) out.set(pool, read.doc);
  }
  return out;
}

const attributeRefusal = (message: string, attribute: string): StewardError =>
  new StewardError("invalid-request", message, {
    reason: "storage-pool-attribute",
    details: { field: "attributes", attribute },
  });

/** Refuses an attribute `type` does not take, or a value it does not accept, naming what it takes. */
export function checkPoolAttributes(type: StoragePoolContract, attributes: Record<string, string>): void {
  const takes = type.attributes ?? [];
  for (const [key, value] of Object.entries(attributes)) {
    const spec = takes.find((a) => a.name === key);
    if (!spec)
      throw attributeRefusal(
        `pool type "${type.name}" takes no attribute "${key}" (it takes: ${takes.map((a) => a.name).join(", ") || "none"})`,
        key,
      );
    const problem = spec.problem(value);
    if (problem) throw attributeRefusal(`attribute ${key} of pool type "${type.name}" ${problem}`, key);
  }
}

export class StoragePoolOps extends StoreTxns {
  /**
   * Makes pool `name` of type `type` (one of the substrate's built-in pools) with `attributes`.
   * Making the same pool again changes nothing (`created` false); another of that name is refused.
   */
  async create(
    uuid: string,
    req: { name: string; type: string; attributes: Record<string, string> },
  ): Promise<{ pool: StoragePoolDoc; created: boolean; revision: number }> {
    return this.retry(
      `create storage pool ${req.name}`,
      async (): Promise<{
        compare: Compare[];
        ops: Op[];
        result: { pool: StoragePoolDoc; created: boolean };
      }> => {
        const m = await aliveModel(this.store, uuid);
        const substrate = m.doc.placement.substrate;
        const pools = builtInPools(substrate);
        if (pools.some((p) => p.name === req.name)) throw alreadyExists("storage pool", req.name);
        const type = pools.find((p) => p.name === req.type);
        if (!type)
          throw new StewardError(
            "invalid-request",
            `"${req.type}" is not a pool type of the ${substrate} substrate (its types: ${pools.map((p) => p.name).join(", ") || "none: it has no storage yet"})`,
            { reason: "storage-pool-unknown", details: { field: "type" } },
          );
        checkPoolAttributes(type, req.attributes);
        const existing = await this.get(docs.storagePool, uuid, req.name);
        if (existing) {
          const same =
            existing.doc.type === req.type &&
            JSON.stringify(sorted(existing.doc.attributes)) === JSON.stringify(sorted(req.attributes));
          if (!same) throw alreadyExists("storage pool", req.name);
          return { compare: [], ops: [], result: { pool: existing.doc, created: false } };
        }
        const pool: StoragePoolDoc = {
          name: req.name,
          type: req.type,
          attributes: req.attributes,
          createdAt: this.stamp(),
        };
        const compare: Compare[] = [unchanged(keys.model(uuid), m.rev), absent(keys.storagePool(uuid, req.name))];
        return { compare, ops: [put(docs.storagePool, uuid, req.name, pool)], result: { pool, created: true } };
      },
    );
  }

  /** Removes made pool `name`; refused while a storage instance, or an application's new units, would use it. */
  async remove(uuid: string, name: string): Promise<{ revision: number }> {
    return this.retry(`remove storage pool ${name}`, async () => {
      const m = await aliveModel(this.store, uuid);
      if (builtInPools(m.doc.placement.substrate).some((p) => p.name === name))
        throw new StewardError(
          "invalid-request",
          `pool "${name}" is built into the ${m.doc.placement.substrate} substrate and cannot be removed`,
          {
            details: { field: "pool" },
          },
        );
      const pool = await this.get(docs.storagePool, uuid, name);
      if (!pool) throw notFound("storage pool", name);
      const users = (await readDocs(this.store, docs.storage, uuid))
        .filter((s) => s.doc.pool === name)
        .map((s) => s.doc.id);
      const apps = (await readDocs(this.store, docs.app, uuid))
        .filter((a) => Object.values(a.doc.storage ?? {}).some((d) => d.pool === name))
        .map((a) => a.doc.name);
      if (users.length > 0 || apps.length > 0)
        throw new StewardError(
          "conflict",
          `pool "${name}" is in use${users.length ? ` by storage ${users.slice(0, 5).join(", ")}${users.length > 5 ? ", …" : ""}` : ""}${users.length && apps.length ? " and" : ""}${apps.length ? ` by the new units of ${apps.join(", ")}` : ""}: remove those first`,
          { reason: "storage-pool-in-use", details: { field: "pool", storage: users, applications: apps } },
        );
      // Every deploy or add-unit that makes storage writes the sequence: one made meanwhile makes this decide again.
      const seq = await this.store.get(keys.storageSeq(uuid));
      const compare: Compare[] = [
        unchanged(keys.storagePool(uuid, name), pool.rev),
        unchanged(keys.storageSeq(uuid), seq?.modRevision ?? 0),
      ];
      const ops: Op[] = [{ type: "delete", key: keys.storagePool(uuid, name) }];
      return { compare, ops, result: {} };
    });
  }
}

const sorted = (r: Record<string, string>): [string, string][] =>
  Object.entries(r).sort(([a], [b]) => a.localeCompare(b));
