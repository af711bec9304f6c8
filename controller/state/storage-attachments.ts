/**
 * Storage on live units (issue 32, Juju's `detach-storage`, `attach-storage`, `remove-storage` and the
 * `storage-add` hook tool) as store transactions. Detaching marks an attached instance `detaching`:
 * its unit runs its `-storage-detaching` hook and then releases it, and the volume broker moves it
 * off the machine, kept. Attaching gives a kept instance to a live unit of its application (its
 * `-storage-attached` hook runs once the broker has attached it). Each request is all or nothing and
 * may be repeated: what is already as asked is left alone.
 */
import type { OperatorMeta, StorageSpec } from "../../api";
import { StewardError, invalidRequest, notFound } from "../../api";
import type { Compare, Op, Store } from "../store";
import { unchanged } from "../store";
import type { ApplicationDoc, UnitDoc } from "./documents";
import type { Read } from "./doc-kinds";
import { docs, put, readDoc, readDocs } from "./doc-kinds";
import { keys } from "./keys";
import { aliveModel } from "./model-ops";
import type { StorageDoc } from "./storage-docs";
import { attachable, newStorageDoc, notAttachable, refuse } from "./storage-ops";
import { StoreTxns } from "./txn";

/** What operator `app` runs declares of store `name`, or a refusal naming what it declares. */
async function declaredSpec(store: Store, app: ApplicationDoc, name: string, field: string): Promise<StorageSpec> {
  const meta: OperatorMeta | undefined = (await readDoc(store, docs.operator, app.operator.hash))?.doc.meta;
  const spec = meta?.storage?.[name];
  if (!spec)
    throw refuse(
      "storage-out-of-range",
      `the operator of ${app.name} declares no storage "${name}" (it declares: ${Object.keys(meta?.storage ?? {}).join(", ") || "none"})`,
      field,
    );
  return spec;
}

/** How many instances of store `name` unit `unit` has (being detached ones included: they are still its). */
const countOf = (storage: readonly Read<StorageDoc>[], unit: string, name: string): number =>
  storage.filter((s) => s.doc.unit === unit && s.doc.status === "attached" && s.doc.name === name).length;

/**
 * Adds to a hook's commit the instances its `storage-add name=count` asked for: each store declared,
 * within its count range with what the unit has, made as the application's new units get them.
 */
export async function addedStorageOps(
  store: Store,
  uuid: string,
  unit: Read<UnitDoc>,
  adds: Record<string, number>,
  compare: Compare[],
  ops: Op[],
  createdAt: string,
): Promise<void> {
  // A unit being removed gets none, and its teardown hooks must not fail for asking (as in Juju).
  if (unit.doc.life !== "alive") return;
  const app = await readDoc(store, docs.app, uuid, unit.doc.app);
  if (!app) throw notFound("application", unit.doc.app);
  compare.push(unchanged(keys.app(uuid, unit.doc.app), app.rev));
  const storage = await readDocs(store, docs.storage, uuid);
  const seq = await store.get(keys.storageSeq(uuid));
  compare.push(unchanged(keys.storageSeq(uuid), seq?.modRevision ?? 0));
  let next = Number(seq?.value ?? "0");
  for (const [name, count] of Object.entries(adds)) {
    const spec = await declaredSpec(store, app.doc, name, "storage");
    const has = countOf(storage, unit.doc.name, name);
    if (has + count > spec.count.max)
      throw refuse(
        "storage-out-of-range",
        `storage-add ${name}=${count}: ${unit.doc.name} has ${has}, and the operator allows at most ${spec.count.max} (multiple.range ${spec.count.min}-${spec.count.max})`,
      );
    const directive = app.doc.storage?.[name];
    if (!directive)
      throw refuse("storage-not-supported", `storage-add ${name}: units of ${app.doc.name} have no pool for "${name}"`);
    for (let i = 0; i < count; i++) {
      const doc = newStorageDoc(
        `${name}/${next++}`,
        app.doc.name,
        spec.type,
        directive,
        { unit: unit.doc.name, machine: unit.doc.machine },
        createdAt,
      );
      ops.push(put(docs.storage, uuid, doc.id, doc));
    }
  }
  ops.push({ type: "put", key: keys.storageSeq(uuid), value: String(next) });
}

/**
 * Writes unit `unit`'s document back unchanged (once per transaction): a unit's count of a store is
 * checked over several instances' documents, so two requests that change one unit's storage at once
 * (an attach and a storage-add, two detaches) must not both pass on what each read; this makes the
 * second one read again.
 */
function touchUnit(uuid: string, unit: Read<UnitDoc>, touched: Set<string>, compare: Compare[], ops: Op[]): void {
  if (touched.has(unit.doc.name)) return;
  touched.add(unit.doc.name);
  compare.push(unchanged(keys.unit(uuid, unit.doc.name), unit.rev));
  ops.push(put(docs.unit, uuid, unit.doc.name, unit.doc));
}

export class StorageAttachmentOps extends StoreTxns {
  /** Reads instances `ids` (refusing an unknown one) with a compare on each. */
  private async instances(uuid: string, ids: readonly string[], compare: Compare[]): Promise<Read<StorageDoc>[]> {
    const out: Read<StorageDoc>[] = [];
    for (const id of new Set(ids)) {
      const s = await this.get(docs.storage, uuid, id);
      if (!s) throw notFound("storage", id);
      compare.push(unchanged(keys.storage(uuid, id), s.rev));
      out.push(s);
    }
    return out;
  }

  /**
   * Detaches instances `ids` from their live units: each unit's `-storage-detaching` hook runs, then
   * the instance is kept. Refused when a unit would be left fewer instances of a store than its
   * operator needs (`force`: even then).
   */
  async detach(uuid: string, ids: readonly string[], force: boolean): Promise<{ ids: string[]; revision: number }> {
    return this.retry(`detach storage ${ids.join(" ")}`, async () => {
      const m = await aliveModel(this.store, uuid);
      const compare: Compare[] = [unchanged(keys.model(uuid), m.rev)];
      const ops: Op[] = [];
      const asked = await this.instances(uuid, ids, compare);
      const all = await readDocs(this.store, docs.storage, uuid);
      const leaving = new Set(asked.map((s) => s.doc.id));
      const touched = new Set<string>();
      for (const s of asked) {
        // Detached already, or on its way: as asked.
        if (s.doc.status !== "attached" || s.doc.detaching) continue;
        const unit = await this.get(docs.unit, uuid, s.doc.unit!);
        // Its unit is going: it is detached (and kept) with it.
        if (!unit || unit.doc.life !== "alive") continue;
        touchUnit(uuid, unit, touched, compare, ops);
        if (!force) {
          const app = await this.get(docs.app, uuid, s.doc.app);
          const spec = app && (await declaredSpec(this.store, app.doc, s.doc.name, "ids"));
          const left = all.filter(
            (o) =>
              o.doc.unit === s.doc.unit &&
              o.doc.name === s.doc.name &&
              o.doc.status === "attached" &&
              !o.doc.detaching &&
              !leaving.has(o.doc.id),
          ).length;
          if (spec && left < spec.count.min)
            throw new StewardError(
              "conflict",
              `detaching ${s.doc.id} would leave ${s.doc.unit} ${left} "${s.doc.name}" storage, and its operator needs at least ${spec.count.min} (multiple.range): attach another first, or --force`,
              { reason: "storage-below-minimum", details: { field: "ids", id: s.doc.id, minimum: spec.count.min } },
            );
        }
        ops.push(put(docs.storage, uuid, s.doc.id, { ...s.doc, detaching: true }));
      }
      return { compare, ops, result: { ids: asked.map((s) => s.doc.id) } };
    });
  }

  /** Attaches kept instances `ids` to live unit `unit` of their application, within its operator's count. */
  async attach(uuid: string, unitName: string, ids: readonly string[]): Promise<{ ids: string[]; revision: number }> {
    return this.retry(`attach storage ${ids.join(" ")} to ${unitName}`, async () => {
      const m = await aliveModel(this.store, uuid);
      const unit = await this.get(docs.unit, uuid, unitName);
      if (!unit) throw notFound("unit", unitName);
      if (unit.doc.life !== "alive")
        throw invalidRequest(`unit ${unitName} is being removed: attach the storage to another unit`, {
          field: "unit",
        });
      const compare: Compare[] = [unchanged(keys.model(uuid), m.rev)];
      const ops: Op[] = [];
      const asked = await this.instances(uuid, ids, compare);
      const all = await readDocs(this.store, docs.storage, uuid);
      const app = await this.get(docs.app, uuid, unit.doc.app);
      if (!app) throw notFound("application", unit.doc.app);
      const adding = new Map<string, number>();
      for (const s of asked) {
        if (s.doc.app !== unit.doc.app)
          throw refuse(
            "storage-of-another-application",
            `storage ${s.doc.id} belongs to application ${s.doc.app}; it can be attached only to units of ${s.doc.app}, not ${unitName}`,
            "ids",
          );
        // Attached to this unit already: as asked.
        if (s.doc.unit === unitName && s.doc.status === "attached" && !s.doc.detaching) continue;
        if (!attachable(s.doc)) throw notAttachable(s.doc, "ids");
        const spec = await declaredSpec(this.store, app.doc, s.doc.name, "ids");
        const n = (adding.get(s.doc.name) ?? countOf(all, unitName, s.doc.name)) + 1;
        adding.set(s.doc.name, n);
        if (n > spec.count.max)
          throw refuse(
            "storage-out-of-range",
            `${unitName} would have ${n} instances of storage "${s.doc.name}", above the ${spec.count.max} its operator allows (multiple.range)`,
            "ids",
          );
        const { location: _, ...rest } = s.doc;
        ops.push(
          put(docs.storage, uuid, s.doc.id, { ...rest, status: "attached", unit: unitName, machine: unit.doc.machine }),
        );
      }
      if (ops.length > 0) touchUnit(uuid, unit, new Set(), compare, ops);
      return { compare, ops, result: { ids: asked.map((s) => s.doc.id) } };
    });
  }

  /**
   * Destroys instances `ids`: a detached one at once (its broker deletes the data); an attached one
   * only with `force`, detached first (its unit's `-storage-detaching` hook runs).
   */
  async remove(uuid: string, ids: readonly string[], force: boolean): Promise<{ ids: string[]; revision: number }> {
    return this.retry(`remove storage ${ids.join(" ")}`, async () => {
      const m = await aliveModel(this.store, uuid);
      const compare: Compare[] = [unchanged(keys.model(uuid), m.rev)];
      const ops: Op[] = [];
      const asked = await this.instances(uuid, ids, compare);
      for (const s of asked) {
        if (s.doc.life === "dying") continue;
        if (s.doc.status === "attached" && !force)
          throw new StewardError(
            "conflict",
            `storage ${s.doc.id} is attached to ${s.doc.unit}: detach it first (detach-storage), or remove it with --force, which detaches it`,
            { reason: "storage-attached", details: { field: "ids", id: s.doc.id } },
          );
        const unit = s.doc.unit !== undefined ? await this.get(docs.unit, uuid, s.doc.unit) : undefined;
        // An attached instance of a live unit is detached first (its hook runs); a going unit detaches it anyway.
        const detaching = s.doc.status === "attached" && unit?.doc.life === "alive" ? { detaching: true as const } : {};
        ops.push(put(docs.storage, uuid, s.doc.id, { ...s.doc, ...detaching, life: "dying" }));
      }
      return { compare, ops, result: { ids: asked.map((s) => s.doc.id) } };
    });
  }

  /**
   * Unit `unit`'s agent (on `machine`) has run the `-storage-detaching` hook of instance `id` (or it
   * never ran its attached one): it is detached, and its broker moves it off the machine.
   */
  async release(uuid: string, machine: string, unitName: string, id: string): Promise<{ revision: number }> {
    return this.retry(`release storage ${id}`, async () => {
      const unit = await this.get(docs.unit, uuid, unitName);
      if (!unit || unit.doc.machine !== machine)
        throw new StewardError("forbidden", `unit ${unitName} is not on machine ${machine}`);
      const s = await this.get(docs.storage, uuid, id);
      // Released already, or not this unit's to release: nothing to do.
      if (!s || s.doc.unit !== unitName || !s.doc.detaching) return { compare: [], ops: [], result: {} };
      const { unit: _, location: __, detaching: ___, ...rest } = s.doc;
      return {
        compare: [unchanged(keys.storage(uuid, id), s.rev)],
        ops: [put(docs.storage, uuid, id, { ...rest, status: "detached" })],
        result: {},
      };
    });
  }
}
