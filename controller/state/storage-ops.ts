/**
 * Storage instances as store transactions (issue 32): what a new application's units get of each
 * store its operator declares (checked against the operator and the substrate's pools before
 * anything is written), the instances a new unit gets (kept ones given back with `--attach-storage`,
 * new ones up to the count), what a unit's going does to them (detached and kept, or marked for
 * destruction), and the volume broker's reports of what it has done.
 */
import type { ModelSubstrate, OperatorMeta, StorageRequest, StorageType } from "../../api";
import { DEFAULT_SUBSTRATE, StewardError, contractOf, formatSizeMiB, invalidRequest, notFound } from "../../api";
import type { VolumeAttachment } from "../../substrates";
import type { Compare, Op, Store } from "../store";
import { unchanged } from "../store";
import type { ApplicationDoc, StorageDirective } from "./documents";
import { keys } from "./keys";
import type { StorageDoc, StoragePoolDoc } from "./storage-docs";
import { resolvePool } from "./storage-pools";
import { pendingVolumeWork } from "./storage-docs";
import { del, docs, put, putBack, readDoc, readDocs } from "./doc-kinds";
import { StoreTxns } from "./txn";

export const refuse = (
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
  madePools: ReadonlyMap<string, StoragePoolDoc> = new Map(),
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
    const poolName = req.pool ?? pools[0]!.name;
    const resolved = resolvePool(substrate, poolName, madePools.get(poolName));
    if (!resolved)
      throw refuse(
        "storage-pool-unknown",
        `storage "${name}": pool "${req.pool}" is neither one of the ${substrate} substrate's pools (${pools.map((p) => p.name).join(", ")}) nor one made in the model (steward storage-pools)`,
      );
    const pool = { name: poolName, kinds: resolved.type.kinds, problem: resolved.type.problem };
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
    // Mounted read-only, an instance no unit shares would have no writer: refused rather than mounted writable.
    if (spec.readOnly)
      throw refuse(
        "storage-not-supported",
        `storage "${name}" is read-only, and pool "${pool.name}" cannot attach an instance read-only (its pools give each unit storage of its own, to write)`,
      );
    const size = req.size ?? spec.minimumSize;
    if (size < spec.minimumSize)
      throw refuse(
        "storage-out-of-range",
        `storage "${name}": ${formatSizeMiB(size)} is below the operator's minimum-size ${formatSizeMiB(spec.minimumSize)}`,
      );
    // What the pool's volumes cannot be (an EBS volume type's sizes): refused now rather than left waiting.
    const problem = pool.problem?.(size, resolved.attributes);
    if (problem) throw refuse("storage-out-of-range", `storage "${name}": pool "${pool.name}": ${problem}`);
    out[name] = { pool: pool.name, size, count };
  }
  return out;
}

/** What keeps `s` from being attached (destroyed, attached, or still on a machine), or undefined when nothing does. */
function busyWith(s: StorageDoc): string | undefined {
  if (s.life !== "alive") return "being destroyed";
  if (s.status === "attached") return `attached to ${s.unit}`;
  return s.machine !== undefined ? `still being detached from machine ${s.machine}` : undefined;
}

/** Whether `s` may be attached to a unit: detached, moved off its machine, and not being destroyed. */
export const attachable = (s: StorageDoc): boolean => busyWith(s) === undefined;

/** The refusal of attaching `s`, which is not {@link attachable}, saying what it is doing. */
export function notAttachable(s: StorageDoc, field: string): StewardError {
  return new StewardError("conflict", `storage ${s.id} is ${busyWith(s)}: only detached storage can be attached`, {
    reason: "storage-attached",
    details: { field, id: s.id },
  });
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
  for (const id of new Set(attach)) {
    const s = await readDoc(store, docs.storage, uuid, id);
    if (!s) throw notFound("storage", id);
    if (s.doc.app !== app.name)
      throw refuse(
        "storage-of-another-application",
        `storage ${id} belongs to application ${s.doc.app}; it can be attached only to units of ${s.doc.app}`,
        "attachStorage",
      );
    if (!attachable(s.doc)) throw notAttachable(s.doc, "attachStorage");
    const bound = s.doc.boundTo;
    if (bound !== undefined && placed[0]!.machine !== bound)
      throw new StewardError(
        "invalid-request",
        `storage ${id} lives on machine ${bound} (${s.doc.pool} storage stays on its host): add the unit there (--to ${bound}, or leave --to out)`,
        { reason: "storage-on-another-machine", details: { field: "to", machine: bound } },
      );
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
      const now = busyWith(s.doc);
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
  const substrate = (await readDoc(store, docs.model, uuid))?.doc.placement.substrate ?? DEFAULT_SUBSTRATE;
  // Each pool (built-in, or made by a user) by name, as its type: whether its instances are devices or machine-bound.
  const made = await readDocs(store, docs.storagePool, uuid);
  const typeOf = (name: string) => resolvePool(substrate, name, made.find((p) => p.doc.name === name)?.doc)?.type;
  const devicePools = [...(contractOf(substrate).storagePools ?? []), ...made.map((p) => p.doc)]
    .filter((p) => typeOf(p.name)?.declaredDevices)
    .map((p) => p.name);
  const devices = new DeviceCount(store, uuid, new Set(devicePools));
  const seq = await store.get(keys.storageSeq(uuid));
  let next = Number(seq?.value ?? "0");
  compare.push(unchanged(keys.storageSeq(uuid), seq?.modRevision ?? 0));
  const wanted = Object.values(directives).some((d) => d.count > 0) || attach.length > 0;
  for (const { unit, machine } of placed) {
    // The model's substrate's broker makes its storage: it cannot reach a machine of another kind.
    const other = wanted ? (await readDoc(store, docs.machine, uuid, machine))?.doc.substrate : undefined;
    if (other !== undefined && other !== substrate)
      throw refuse(
        "storage-not-supported",
        `${unit} would have storage on machine ${machine}, a ${other} machine, and this model's storage comes from the ${substrate} substrate's pools, which cannot reach it: place the unit on a ${substrate} machine, or deploy it in a model of substrate ${other}`,
        "to",
      );
    for (const [name, directive] of Object.entries(directives)) {
      const kept = given.get(unit)?.get(name) ?? [];
      for (const s of kept) {
        const { location: _, message: __, ...rest } = s;
        ops.push(put(docs.storage, uuid, s.id, { ...rest, status: "attached", unit, machine }));
      }
      const pool = typeOf(directive.pool);
      if (pool?.declaredDevices) await devices.take(machine, unit, name, directive.count - kept.length, compare);
      for (let i = kept.length; i < directive.count; i++) {
        const doc = newStorageDoc(
          `${name}/${next++}`,
          app.name,
          declared[name]?.type,
          directive,
          { unit, machine },
          createdAt,
        );
        ops.push(put(docs.storage, uuid, doc.id, pool?.machineBound ? { ...doc, boundTo: machine } : doc));
      }
    }
  }
  ops.push({ type: "put", key: keys.storageSeq(uuid), value: String(next) });
}

/** A new instance `id` of `app`'s store, as `directive` says, attached to `at`. */
export function newStorageDoc(
  id: string,
  app: string,
  kind: StorageType | undefined,
  directive: StorageDirective,
  at: { unit: string; machine: string },
  createdAt: string,
): StorageDoc {
  return {
    id,
    name: id.slice(0, id.indexOf("/")),
    app,
    kind: kind ?? "filesystem",
    pool: directive.pool,
    size: directive.size,
    status: "attached",
    unit: at.unit,
    machine: at.machine,
    life: "alive",
    createdAt,
  };
}

/** The machine the first of the kept instances `ids` lives on, when one is machine-bound. */
export async function boundMachineOf(store: Store, uuid: string, ids: readonly string[]): Promise<string | undefined> {
  for (const id of ids) {
    const bound = (await readDoc(store, docs.storage, uuid, id))?.doc.boundTo;
    if (bound !== undefined) return bound;
  }
  return undefined;
}

/**
 * The storage devices declared for machines (the `device` pool) that new instances take, one each:
 * refused, naming the machine's devices, when it has too few free. An instance holds its device
 * from its making until it is destroyed (kept, it stays on its machine).
 */
class DeviceCount {
  private readonly taken = new Map<string, number>();
  private held?: StorageDoc[];
  constructor(
    private readonly store: Store,
    private readonly uuid: string,
    /** The pools whose instances are declared devices. */
    private readonly devicePools: ReadonlySet<string>,
  ) {}

  async take(machine: string, unit: string, name: string, n: number, compare: Compare[]): Promise<void> {
    if (n <= 0) return;
    const md = await readDoc(this.store, docs.machine, this.uuid, machine);
    const declared = md?.doc.storageDevices ?? [];
    this.held ??= (await readDocs(this.store, docs.storage, this.uuid)).map((s) => s.doc);
    const inUse =
      this.held.filter((s) => s.boundTo === machine && this.devicePools.has(s.pool)).length +
      (this.taken.get(machine) ?? 0);
    const free = declared.length - inUse;
    if (free < n)
      throw new StewardError(
        "invalid-request",
        declared.length === 0
          ? `${unit} needs ${n} device${n === 1 ? "" : "s"} for storage "${name}", and no storage device is declared for machine ${machine}: declare one (add-machine ssh:… --storage-device /dev/…) or choose another pool or machine`
          : `${unit} needs ${n} device${n === 1 ? "" : "s"} for storage "${name}", and machine ${machine} has ${Math.max(free, 0)} free of its ${declared.length} declared (${declared.join(", ")}): declare more (add-machine ssh:… --storage-device) or choose another machine`,
        { reason: "storage-device-unavailable", details: { field: "storage", machine } },
      );
    this.taken.set(machine, (this.taken.get(machine) ?? 0) + n);
    if (md) compare.push(unchanged(keys.machine(this.uuid, machine), md.rev));
  }
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
    const { unit: _, location: __, detaching: ___, ...rest } = s.doc;
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

/**
 * The volume broker's reports, and the machine agents' reports of their halves: each write checks the
 * instance is as it was when the work was decided (a stale report changes nothing).
 */
export class StorageOps extends StoreTxns {
  /**
   * The broker attached `id` to its machine: the unit's hooks find it at `location`, or the machine's
   * agent does the rest (`onMachine`) and reports the location ({@link machineAttached}).
   */
  attached(uuid: string, id: string, machine: string, done: VolumeAttachment) {
    return this.report(uuid, id, (s) => {
      if (s.status !== "attached" || s.machine !== machine) return undefined;
      const { message: _, onMachine: __, location: ___, ...rest } = s;
      if ("location" in done) return { ...rest, location: done.location, handle: done.handle };
      return { ...rest, handle: done.handle, machineWork: done.onMachine };
    });
  }

  /** The broker moved `id` off `machine` (kept, aside): it can be attached to another unit. */
  detached(uuid: string, id: string, machine: string, handle: Record<string, string>) {
    return this.report(uuid, id, (s) => {
      if (s.status !== "detached" || s.machine !== machine || s.onMachine) return undefined;
      const { machine: _, machineWork: __, message: ___, ...rest } = s;
      return { ...rest, handle };
    });
  }

  /**
   * The broker could not do `work` for `id` (it tries again): why, for `steward storage`. Written only
   * while that is still the work due, and only when the reason changed.
   */
  failed(uuid: string, id: string, work: string, message: string) {
    const text = message.length > 2000 ? `${message.slice(0, 1997)}...` : message;
    return this.report(uuid, id, (s) =>
      pendingVolumeWork(s) === work && s.message !== text ? { ...s, message: text } : undefined,
    );
  }

  /** The agent of `machine` did its half of attaching `id` (agent method storageOnMachine): its unit finds it at `location`. */
  machineAttached(uuid: string, machine: string, id: string, location: string) {
    return this.report(uuid, id, (s) => {
      if (s.status !== "attached" || s.machine !== machine || s.machineWork === undefined) return undefined;
      if (s.onMachine?.location === location && s.location === location) return undefined;
      return { ...s, onMachine: { location }, location };
    });
  }

  /** The agent of `machine` undid its half for `id` (unmounted; deleted, when destroyed): the broker detaches it next. */
  machineReleased(uuid: string, machine: string, id: string) {
    return this.report(uuid, id, (s) => {
      if (s.status !== "detached" || s.machine !== machine || !s.onMachine) return undefined;
      const { onMachine: _, ...rest } = s;
      return rest;
    });
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
