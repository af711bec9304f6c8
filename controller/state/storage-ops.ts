/**
 * Storage instances as store transactions (issue 32): what a new application's units get of each
 * store its operator declares (checked against the operator and the substrate's pools before
 * anything is written), the instances a new unit gets (kept ones given back with `--attach-storage`,
 * new ones up to the count), what a unit's going does to them (detached and kept, or marked for
 * destruction), and the volume broker's reports of what it has done.
 */
import type { ModelSubstrate, OperatorMeta, StorageRequest } from "../../api";
import { StewardError, contractOf, formatSizeMiB, invalidRequest, notFound } from "../../api";
import type { Compare, Op, Store } from "../store";
import { unchanged } from "../store";
import type { ApplicationDoc, StorageDirective } from "./documents";
import { keys } from "./keys";
import type { StorageDoc } from "./storage-docs";
import { del, docs, put, putBack, readDoc, readDocs } from "./doc-kinds";
import { StoreTxns } from "./txn";

const refuse = (
  reason: "storage-not-supported" | "storage-pool-unknown" | "storage-out-of-range" | "storage-of-another-application",
  message: string,
  field = "storage",
): StewardError => new StewardError("invalid-request", message, { reason, details: { field } });

/**
 * What each unit of a new application gets of each store `meta` declares: the pool (the substrate's
 * first by default), the size (the operator's minimum by default) and the count (its minimum by
 * default), each as `requests` (deploy's `--storage`) says, checked against the operator and the
 * substrate. Undefined when the operator declares no storage.
 */
export function storageDirectives(
  meta: OperatorMeta,
  substrate: ModelSubstrate,
  requests: Record<string, StorageRequest> = {},
): Record<string, StorageDirective> | undefined {
  const declared = meta.storage ?? {};
  for (const name of Object.keys(requests))
    if (!(name in declared))
      throw refuse(
        "storage-out-of-range",
        `operator ${meta.name} declares no storage "${name}" (it declares: ${Object.keys(declared).join(", ") || "none"})`,
      );
  if (Object.keys(declared).length === 0) return undefined;
  const contract = contractOf(substrate);
  const pools = contract.storagePools ?? [];
  const out: Record<string, StorageDirective> = {};
  for (const [name, spec] of Object.entries(declared)) {
    const req = requests[name] ?? {};
    const count = req.count ?? spec.count.min;
    if (count < spec.count.min || count > spec.count.max)
      throw refuse(
        "storage-out-of-range",
        `storage "${name}": a count of ${count} is outside the operator's range ${spec.count.min}-${spec.count.max} (multiple.range)`,
      );
    if (pools.length === 0) {
      if (count === 0) continue;
      throw refuse(
        "storage-not-supported",
        `operator ${meta.name} declares storage "${name}", and units on the ${substrate} substrate cannot have storage yet`,
      );
    }
    const pool = pools.find((p) => p.name === (req.pool ?? pools[0]!.name));
    if (!pool)
      throw refuse(
        "storage-pool-unknown",
        `storage "${name}": pool "${req.pool}" is not one of the ${substrate} substrate's pools (${pools.map((p) => p.name).join(", ")})`,
      );
    if (!pool.kinds.includes(spec.type))
      throw refuse(
        "storage-not-supported",
        `storage "${name}" is ${spec.type} storage, and pool "${pool.name}" gives ${pool.kinds.join(" and ")} storage only`,
      );
    if (spec.shared)
      throw refuse(
        "storage-not-supported",
        `storage "${name}" is shared, and pool "${pool.name}" cannot share an instance between units`,
      );
    const size = req.size ?? spec.minimumSize;
    if (size < spec.minimumSize)
      throw refuse(
        "storage-out-of-range",
        `storage "${name}": ${formatSizeMiB(size)} is below the operator's minimum-size ${formatSizeMiB(spec.minimumSize)}`,
      );
    out[name] = { pool: pool.name, size, count };
  }
  return out;
}

/**
 * An application's storage directives after a change (`updateApplication`'s `storage`, as Juju's
 * `refresh --storage`): each part a request gives replaces the application's, the rest stays, and the
 * whole is checked as at deploy. It applies to units added from now on; instances keep their pool and size.
 */
export function changedStorageDirectives(
  meta: OperatorMeta,
  substrate: ModelSubstrate,
  current: Record<string, StorageDirective> | undefined,
  change: Record<string, StorageRequest>,
): Record<string, StorageDirective> | undefined {
  const requests: Record<string, StorageRequest> = {};
  for (const [name, d] of Object.entries(current ?? {}))
    if (name in (meta.storage ?? {})) requests[name] = { pool: d.pool, size: d.size, count: d.count };
  for (const [name, r] of Object.entries(change)) requests[name] = { ...requests[name], ...r };
  return storageDirectives(meta, substrate, requests);
}

/**
 * Adds to a transaction being built the storage of new units `placed` of `app`: the kept instances
 * `attach` names (checked: this application's, detached and moved off their machine, within the
 * count), then new instances up to each store's count. Nothing is written when a check fails.
 *
 * On a substrate whose units are pods (kubernetes), a kept instance is a claim of one pod ordinal,
 * which the pod of that ordinal mounts again: a new unit with the number of the unit it was last
 * attached to takes it back by itself (an application scaled to 0 and back keeps its data), and it
 * can be given to no other unit.
 */
export async function newUnitStorage(
  store: Store,
  uuid: string,
  app: ApplicationDoc,
  placed: { unit: string; machine: string }[],
  attach: string[],
  compare: Compare[],
  ops: Op[],
  createdAt: string,
): Promise<void> {
  const directives = app.storage ?? {};
  if (Object.keys(directives).length === 0 && attach.length === 0) return;
  if (attach.length > 0 && placed.length !== 1)
    throw invalidRequest(`--attach-storage gives storage to one new unit; ${placed.length} were asked for`, {
      field: "attachStorage",
    });
  const model = await readDoc(store, docs.model, uuid);
  const onPods = contractOf(model?.doc.placement.substrate).provisions === "pods";
  /** Kept instances each new unit takes, by unit and store name. */
  const given = new Map<string, Map<string, StorageDoc[]>>();
  const give = (unit: string, s: StorageDoc, field: string): void => {
    const directive = directives[s.name];
    if (!directive)
      throw refuse(
        "storage-out-of-range",
        `storage ${s.id} is "${s.name}" storage, which the units of ${app.name} no longer have (its operator does not declare it)`,
        field,
      );
    const byName = given.get(unit) ?? new Map<string, StorageDoc[]>();
    given.set(unit, byName);
    const list = byName.get(s.name) ?? [];
    if (list.some((k) => k.id === s.id)) return;
    list.push(s);
    byName.set(s.name, list);
    const max = Math.max(directive.count, 1);
    if (list.length > max)
      throw refuse(
        "storage-out-of-range",
        `${list.length} instances of storage "${s.name}" for one unit, above the ${max} each unit of ${app.name} has`,
        field,
      );
  };
  const notYet = (s: StorageDoc): string | undefined =>
    s.life !== "alive"
      ? "being destroyed"
      : s.status === "attached"
        ? `attached to ${s.unit}`
        : s.machine !== undefined
          ? `still being detached from machine ${s.machine}`
          : undefined;
  for (const id of new Set(attach)) {
    const s = await readDoc(store, docs.storage, uuid, id);
    if (!s) throw notFound("storage", id);
    if (s.doc.app !== app.name)
      throw refuse(
        "storage-of-another-application",
        `storage ${id} belongs to application ${s.doc.app}; it can be attached only to units of ${s.doc.app}`,
        "attachStorage",
      );
    const now = notYet(s.doc);
    if (now !== undefined)
      throw new StewardError("conflict", `storage ${id} is ${now}: only detached storage can be attached`, {
        reason: "storage-attached",
        details: { field: "attachStorage", id },
      });
    const unit = placed[0]!.unit;
    if (onPods && s.doc.lastUnit !== undefined && s.doc.lastUnit !== unit)
      throw new StewardError(
        "invalid-request",
        `storage ${id} is kept in the claim of ${s.doc.lastUnit}'s pod, which only the pod with that number mounts; the new unit would be ${unit}: remove units down to ${s.doc.lastUnit}'s number first, or attach it when a new ${s.doc.lastUnit} is added`,
        { reason: "storage-kept-for-unit-number", details: { field: "attachStorage", id } },
      );
    give(unit, s.doc, "attachStorage");
    compare.push(unchanged(keys.storage(uuid, id), s.rev));
  }
  if (onPods) {
    const newUnits = new Set(placed.map((p) => p.unit));
    for (const s of await readDocs(store, docs.storage, uuid)) {
      if (s.doc.app !== app.name || s.doc.lastUnit === undefined || !newUnits.has(s.doc.lastUnit)) continue;
      if (s.doc.status === "attached") continue;
      const now = notYet(s.doc);
      // Its claim is still there and would be mounted by the new unit's pod: wait until it is settled.
      if (now !== undefined)
        throw new StewardError(
          "conflict",
          `storage ${s.doc.id} of the previous ${s.doc.lastUnit} is ${now}: add the unit once it is done`,
          { reason: "storage-attached", details: { field: "attachStorage", id: s.doc.id } },
        );
      // A store the units no longer have, or more than they have: left kept.
      const directive = directives[s.doc.name];
      const taken = given.get(s.doc.lastUnit)?.get(s.doc.name) ?? [];
      if (!directive || (taken.length >= Math.max(directive.count, 1) && !taken.some((k) => k.id === s.doc.id)))
        continue;
      give(s.doc.lastUnit, s.doc, "attachStorage");
      compare.push(unchanged(s.key, s.rev));
    }
  }
  const declared = (await readDoc(store, docs.operator, app.operator.hash))?.doc.meta.storage ?? {};
  const seq = await store.get(keys.storageSeq(uuid));
  let next = Number(seq?.value ?? "0");
  compare.push(unchanged(keys.storageSeq(uuid), seq?.modRevision ?? 0));
  for (const { unit, machine } of placed) {
    for (const [name, directive] of Object.entries(directives)) {
      const kept = given.get(unit)?.get(name) ?? [];
      for (const s of kept) {
        const { location: _, message: __, ...rest } = s;
        ops.push(put(docs.storage, uuid, s.id, { ...rest, status: "attached", unit, machine }));
      }
      for (let i = kept.length; i < directive.count; i++) {
        const id = `${name}/${next++}`;
        const doc: StorageDoc = {
          id,
          name,
          app: app.name,
          kind: declared[name]?.type ?? "filesystem",
          pool: directive.pool,
          size: directive.size,
          status: "attached",
          unit,
          machine,
          life: "alive",
          createdAt,
        };
        ops.push(put(docs.storage, uuid, id, doc));
      }
    }
  }
  ops.push({ type: "put", key: keys.storageSeq(uuid), value: String(next) });
}

/**
 * The writes that go with unit `unit` going for good: its storage is detached (kept), or left marked
 * for destruction; either way its volume broker still moves it off the machine, which waits for it.
 */
export async function unitGoneStorageOps(
  store: Store,
  uuid: string,
  unit: string,
  compare: Compare[],
  destroy = false,
): Promise<Op[]> {
  const ops: Op[] = [];
  for (const s of await readDocs(store, docs.storage, uuid)) {
    if (s.doc.unit !== unit) continue;
    const { unit: _, location: __, ...rest } = s.doc;
    compare.push(unchanged(s.key, s.rev));
    ops.push(
      putBack(s, { ...rest, status: "detached", lastUnit: unit, ...(destroy ? { life: "dying" as const } : {}) }),
    );
  }
  return ops;
}

/** Marks the storage attached to `unit` for destruction once it is detached (`remove-unit --destroy-storage`). */
export async function destroyUnitStorageOps(
  store: Store,
  uuid: string,
  unit: string,
  compare: Compare[],
): Promise<Op[]> {
  const ops: Op[] = [];
  for (const s of await readDocs(store, docs.storage, uuid)) {
    if (s.doc.unit !== unit || s.doc.life === "dying") continue;
    compare.push(unchanged(s.key, s.rev));
    ops.push(putBack(s, { ...s.doc, life: "dying" }));
  }
  return ops;
}

/** The volume broker's reports: each write checks the instance is as it was when the work was decided. */
export class StorageOps extends StoreTxns {
  /** The broker attached `id` to its machine: the unit's hooks find it at `location`. */
  attached(uuid: string, id: string, machine: string, done: { location: string; handle: Record<string, string> }) {
    return this.report(uuid, id, (s) => {
      if (s.status !== "attached" || s.machine !== machine) return undefined;
      const { message: _, ...rest } = s;
      return { ...rest, ...done };
    });
  }

  /** The broker moved `id` off `machine` (kept, aside): it can be attached to another unit. */
  detached(uuid: string, id: string, machine: string, handle: Record<string, string>) {
    return this.report(uuid, id, (s) => {
      if (s.status !== "detached" || s.machine !== machine) return undefined;
      const { machine: _, message: __, ...rest } = s;
      return { ...rest, handle };
    });
  }

  /** The broker's work on `id` failed (it tries again): the instance says why, where users look. */
  failed(uuid: string, id: string, message: string) {
    const text = message.length > 2000 ? `${message.slice(0, 1997)}...` : message;
    return this.report(uuid, id, (s) => (s.message === text ? undefined : { ...s, message: text }));
  }

  /** The broker destroyed `id`: its record goes. */
  async destroyed(uuid: string, id: string): Promise<{ revision: number }> {
    return this.retry(`storage ${id} destroyed`, async () => {
      const s = await this.get(docs.storage, uuid, id);
      if (!s || s.doc.life !== "dying") return { compare: [], ops: [], result: {} };
      return { compare: [unchanged(keys.storage(uuid, id), s.rev)], ops: [del(docs.storage, uuid, id)], result: {} };
    });
  }

  private report(
    uuid: string,
    id: string,
    change: (s: StorageDoc) => StorageDoc | undefined,
  ): Promise<{ revision: number }> {
    return this.retry(`storage ${id}`, async () => {
      const s = await this.get(docs.storage, uuid, id);
      const next = s && change(s.doc);
      // Changed meanwhile (its unit went, it was given to another): the broker's next pass decides again.
      if (!s || !next) return { compare: [], ops: [], result: {} };
      return {
        compare: [unchanged(keys.storage(uuid, id), s.rev)],
        ops: [put(docs.storage, uuid, id, next)],
        result: {},
      };
    });
  }
}
