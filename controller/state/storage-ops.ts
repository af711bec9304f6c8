/**
 * Storage instances as store transactions (issue 32): what a new application's units get of each
 * store its operator declares (checked against the operator and the substrate's pools before
 * anything is written), the instances a new unit gets (kept ones given back with `--attach-storage`,
 * new ones up to the count), what a unit's going does to them (detached and kept, or marked for
 * destruction), and the volume broker's reports of what it has done.
 */
import type { ModelSubstrate, OperatorMeta, StorageRequest } from "../../api";
import { DEFAULT_SUBSTRATE, StewardError, contractOf, formatSizeMiB, invalidRequest, notFound } from "../../api";
import type { VolumeAttachment } from "../../substrates";
import type { Compare, Op, Store } from "../store";
import { unchanged } from "../store";
import type { ApplicationDoc, StorageDirective } from "./documents";
import { keys } from "./keys";
import type { StorageDoc } from "./storage-docs";
import { pendingVolumeWork } from "./storage-docs";
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
 * Adds to a transaction being built the storage of new units `placed` of `app`: the kept instances
 * `attach` names (checked: this application's, detached and moved off their machine, within the
 * count), then new instances up to each store's count. Nothing is written when a check fails.
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
  const given = new Map<string, StorageDoc[]>();
  for (const id of new Set(attach)) {
    const s = await readDoc(store, docs.storage, uuid, id);
    if (!s) throw notFound("storage", id);
    if (s.doc.app !== app.name)
      throw refuse(
        "storage-of-another-application",
        `storage ${id} belongs to application ${s.doc.app}; it can be attached only to units of ${s.doc.app}`,
        "attachStorage",
      );
    if (s.doc.status !== "detached" || s.doc.machine !== undefined || s.doc.life !== "alive") {
      const now =
        s.doc.life !== "alive"
          ? "being destroyed"
          : s.doc.status === "attached"
            ? `attached to ${s.doc.unit}`
            : `still being detached from machine ${s.doc.machine}`;
      throw new StewardError("conflict", `storage ${id} is ${now}: only detached storage can be attached`, {
        reason: "storage-attached",
        details: { field: "attachStorage", id },
      });
    }
    const bound = s.doc.boundTo;
    if (bound !== undefined && placed[0]!.machine !== bound)
      throw new StewardError(
        "invalid-request",
        `storage ${id} lives on machine ${bound} (${s.doc.pool} storage stays on its host): add the unit there (--to ${bound}, or leave --to out)`,
        { reason: "storage-on-another-machine", details: { field: "to", machine: bound } },
      );
    const directive = directives[s.doc.name];
    if (!directive)
      throw refuse(
        "storage-out-of-range",
        `storage ${id} is "${s.doc.name}" storage, which the units of ${app.name} no longer have (its operator does not declare it)`,
        "attachStorage",
      );
    const list = given.get(s.doc.name) ?? [];
    list.push(s.doc);
    given.set(s.doc.name, list);
    const max = Math.max(directive.count, 1);
    if (list.length > max)
      throw refuse(
        "storage-out-of-range",
        `${list.length} instances of storage "${s.doc.name}" for one unit, above the ${max} each unit of ${app.name} has`,
        "attachStorage",
      );
    compare.push(unchanged(keys.storage(uuid, id), s.rev));
  }
  const declared = (await readDoc(store, docs.operator, app.operator.hash))?.doc.meta.storage ?? {};
  const substrate = (await readDoc(store, docs.model, uuid))?.doc.placement.substrate ?? DEFAULT_SUBSTRATE;
  const pools = contractOf(substrate).storagePools ?? [];
  const devices = new DeviceCount(store, uuid, new Set(pools.filter((p) => p.declaredDevices).map((p) => p.name)));
  const seq = await store.get(keys.storageSeq(uuid));
  let next = Number(seq?.value ?? "0");
  compare.push(unchanged(keys.storageSeq(uuid), seq?.modRevision ?? 0));
  for (const { unit, machine } of placed) {
    for (const [name, directive] of Object.entries(directives)) {
      const kept = given.get(name) ?? [];
      for (const s of kept) {
        const { location: _, error: __, ...rest } = s;
        ops.push(put(docs.storage, uuid, s.id, { ...rest, status: "attached", unit, machine }));
      }
      const pool = pools.find((p) => p.name === directive.pool);
      if (pool?.declaredDevices) await devices.take(machine, unit, name, directive.count - kept.length, compare);
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
          ...(pool?.machineBound ? { boundTo: machine } : {}),
          life: "alive",
          createdAt,
        };
        ops.push(put(docs.storage, uuid, id, doc));
      }
    }
  }
  ops.push({ type: "put", key: keys.storageSeq(uuid), value: String(next) });
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
    const { unit: _, location: __, error: ___, ...rest } = s.doc;
    compare.push(unchanged(s.key, s.rev));
    ops.push(putBack(s, { ...rest, status: "detached", ...(destroy ? { life: "dying" as const } : {}) }));
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
      if ("location" in done) return { ...withoutError(s), location: done.location, handle: done.handle };
      const { onMachine: _, location: __, ...rest } = withoutError(s);
      return { ...rest, handle: done.handle, machineWork: done.onMachine };
    });
  }

  /** The broker moved `id` off `machine` (kept, aside): it can be attached to another unit. */
  detached(uuid: string, id: string, machine: string, handle: Record<string, string>) {
    return this.report(uuid, id, (s) => {
      if (s.status !== "detached" || s.machine !== machine || s.onMachine) return undefined;
      const { machine: _, machineWork: __, ...rest } = withoutError(s);
      return { ...rest, handle };
    });
  }

  /**
   * The broker could not do `work` for `id` (it tries again): why, for `steward storage`. Written only
   * while that is still the work due, and only when the reason changed.
   */
  failed(uuid: string, id: string, work: string, error: string) {
    const why = error.slice(0, 4096);
    return this.report(uuid, id, (s) =>
      pendingVolumeWork(s) === work && s.error !== why ? { ...s, error: why } : undefined,
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

/** The instance without a broker's error: its work is done. */
function withoutError(s: StorageDoc): StorageDoc {
  const { error: _, ...rest } = s;
  return rest;
}
