/**
 * Applications and their units as store transactions: deploy (with peer relations and the machines
 * its units need), adding units, config, constraints and operator changes, removal of applications
 * and units (and what goes with a unit for good), and `resolve` with its agent's answer.
 */
import type { Constraints, OperatorMeta, StorageRequest } from "../../api";
import {
  DEFAULT_SUBSTRATE,
  PROVISIONED_SUBSTRATES,
  StewardError,
  alreadyExists,
  contractOf,
  formatConstraints,
  hasConstraints,
  invalidRequest,
  mergeConstraints,
  notFound,
} from "../../api";
import type { Compare, Op, Store } from "../store";
import { absent, unchanged } from "../store";
import type {
  ApplicationDoc,
  ConfigValues,
  MachineDoc,
  ModelDoc,
  OperatorDoc,
  RelationDoc,
  UnitDoc,
} from "./documents";
import { unitNumber } from "./agent-views";
import { checkConfigTotal, configError, validateConfig } from "./config";
import { checkConfigSecrets } from "./config-secrets";
import { checkMachineConstraints } from "./constraints";
import type { OperatorCharge } from "./operator-quotas";
import { keys } from "./keys";
import type { Read } from "./txn";
import { docs, put, putBack } from "./doc-kinds";
import { aliveModel } from "./model-ops";
import { StoreTxns } from "./txn";
import type { OperatorOps } from "./operator-ops";
import {
  boundMachineOf,
  changedStorageDirectives,
  destroyUnitStorageOps,
  newUnitStorage,
  storageDirectives,
  unitGoneStorageOps,
} from "./storage-ops";
import { requestedPools } from "./storage-pools";

export class ApplicationOps extends StoreTxns {
  constructor(
    store: Store,
    now: (() => Date) | undefined,
    /** The operators deploys and refreshes use (and count against the model's operator quota). */
    private readonly operators: OperatorOps,
  ) {
    super(store, now);
  }

  /** Deploys an application; with `charge`, refused when `charge.by` would take the model over its operator quota. */
  async deploy(
    uuid: string,
    req: {
      name: string;
      operator: string;
      units: number;
      config?: ConfigValues;
      to?: string[];
      constraints?: Constraints | undefined;
      /** Deploy's `--storage`: pool, size and count per store the operator declares. */
      storage?: Record<string, StorageRequest>;
      /** Its units' leadership lease in seconds (checked by the request schema); absent: the controller's. */
      leadershipLease?: number;
    },
    charge?: OperatorCharge,
  ): Promise<{ units: string[]; revision: number }> {
    const op = await this.get(docs.operator, req.operator);
    if (!op)
      throw invalidRequest(
        `operator ${req.operator} has not been uploaded: upload it first (steward deploy does this for you)`,
        { field: "operator" },
      );
    const config = checkConfigTotal(validateConfig(op.doc.meta, req.config ?? {}, req.name), req.name);
    await checkConfigSecrets(this.store, uuid, op.doc.meta, config, req.name);
    if (req.to && req.to.length > req.units)
      throw invalidRequest(
        `"to" names ${req.to.length} machines for ${req.units} units; give at most one machine per unit`,
        { field: "to" },
      );
    return this.sized("config", "set fewer or shorter values", () =>
      this.retry(`deploy ${req.name}`, async () => {
        const m = await aliveModel(this.store, uuid);
        if (await this.store.get(keys.app(uuid, req.name))) {
          throw new StewardError(
            "already-exists",
            `application "${req.name}" already exists in model ${m.doc.name}: use add-unit or config to change it, or pick another name`,
            { details: { kind: "application", name: req.name } },
          );
        }
        const current = await this.get(docs.operator, req.operator);
        if (!current)
          throw invalidRequest(
            `operator ${req.operator} has not been uploaded (or was deleted unused): upload it again`,
            { field: "operator" },
          );
        const compare: Compare[] = [unchanged(keys.model(uuid), m.rev), absent(keys.app(uuid, req.name))];
        const substrate = m.doc.placement.substrate;
        const made = await requestedPools(this.store, uuid, substrate, req.storage ?? {}, compare);
        const storage = storageDirectives(current.doc.meta, substrate, req.storage, made);
        const app: ApplicationDoc = {
          name: req.name,
          operator: { hash: op.doc.hash, name: op.doc.name, version: op.doc.version },
          operatorRevision: 1,
          config,
          life: "alive",
          nextUnit: 0,
          createdAt: this.stamp(),
          ...(hasConstraints(req.constraints) ? { constraints: req.constraints } : {}),
          ...(storage ? { storage } : {}),
          ...(req.leadershipLease !== undefined ? { leadershipLeaseSeconds: req.leadershipLease } : {}),
        };
        // Checked whether or not this deploy makes machines: later add-units will.
        checkMachineConstraints(m.doc, mergeConstraints(m.doc.constraints, app.constraints));
        const ops: Op[] = [];
        await this.operators.checkModelQuota(uuid, m.doc.name, undefined, current.doc, charge, compare, ops);
        const placed = await this.placeUnits(uuid, app, req.units, req.to ?? [], compare, ops);
        await newUnitStorage(this.store, uuid, app, placed, [], compare, ops, this.stamp());
        const units = placed.map((p) => p.unit);
        ops.unshift(put(docs.app, uuid, req.name, app));
        await this.peerRelations(uuid, req.name, op.doc.meta, compare, ops);
        this.operators.use(current, compare, ops);
        return { compare, ops, result: { units } };
      }),
    ).catch(async (err: unknown) => {
      if (StewardError.isInstance(err) && err.code === "conflict" && (await this.store.get(keys.app(uuid, req.name))))
        throw alreadyExists("application", req.name);
      throw err;
    });
  }
  /** Peer relations form by themselves, one per `peers` endpoint, when the application is created. */
  private async peerRelations(
    uuid: string,
    app: string,
    meta: OperatorMeta,
    compare: Compare[],
    ops: Op[],
  ): Promise<void> {
    const peers = Object.entries(meta.peers);
    if (peers.length === 0) return;
    const seq = await this.store.get(keys.relationSeq(uuid));
    let next = Number(seq?.value ?? "0");
    compare.push(unchanged(keys.relationSeq(uuid), seq?.modRevision ?? 0));
    for (const [endpoint, def] of peers) {
      const id = next++;
      const doc: RelationDoc = {
        id,
        key: `${app}:${endpoint}`,
        endpoints: [{ app, endpoint, role: "peer", interface: def.interface }],
        life: "alive",
        createdAt: this.stamp(),
      };
      ops.push(put(docs.relation, uuid, id, doc));
    }
    ops.push({ type: "put", key: keys.relationSeq(uuid), value: String(next) });
  }
  /**
   * Adds `count` units of `app` (mutating `app.nextUnit`) to the transaction being built: on the
   * machines named in `to`, then on new machines created for them.
   */
  private async placeUnits(
    uuid: string,
    app: ApplicationDoc,
    count: number,
    to: string[],
    compare: Compare[],
    ops: Op[],
  ): Promise<{ unit: string; machine: string }[]> {
    const placed: { unit: string; machine: string }[] = [];
    const model = (await this.get(docs.model, uuid))?.doc;
    const substrate = model?.placement.substrate ?? DEFAULT_SUBSTRATE;
    const constraints = mergeConstraints(model?.constraints, app.constraints);
    if (to.length < count && !PROVISIONED_SUBSTRATES.includes(substrate)) {
      throw invalidRequest(
        `this model's machines come from the ${substrate} substrate, where Steward does not create machines: add them (steward add-machine${contractOf(substrate).addMachines === "address" ? ` ${substrate}:user@host` : ""}) and place units on them with --to`,
        { field: "to" },
      );
    }
    const ordinals =
      contractOf(substrate).provisions === "pods" ? await this.podOrdinals(uuid, app.name, to) : undefined;
    const seq = await this.store.get(keys.machineSeq(uuid));
    let nextMachine = Number(seq?.value ?? "0");
    compare.push(unchanged(keys.machineSeq(uuid), seq?.modRevision ?? 0));
    for (let i = 0; i < count; i++) {
      const unit = `${app.name}/${ordinals ? ordinals.next() : app.nextUnit++}`;
      let machine = to[i];
      if (machine !== undefined) {
        const md = await this.get(docs.machine, uuid, machine);
        if (!md) throw notFound("machine", machine);
        if (md.doc.life !== "alive")
          throw invalidRequest(`machine ${machine} is being removed; choose another`, { field: "to" });
        compare.push(unchanged(keys.machine(uuid, machine), md.rev));
      } else {
        machine = String(nextMachine++);
        const md: MachineDoc = {
          id: machine,
          substrate,
          life: "alive",
          createdFor: unit,
          createdAt: this.stamp(),
          ...(hasConstraints(constraints) ? { constraints } : {}),
        };
        ops.push(put(docs.machine, uuid, machine, md));
      }
      const u: UnitDoc = { name: unit, app: app.name, machine, life: "alive", createdAt: this.stamp() };
      ops.push(put(docs.unit, uuid, unit, u));
      placed.push({ unit, machine });
    }
    ops.push({ type: "put", key: keys.machineSeq(uuid), value: String(nextMachine) });
    return placed;
  }
  /**
   * Unit numbers for new units of `app` in a kubernetes model: unit N is pod N of the application's
   * StatefulSet, so numbers are its ordinals, the lowest free first (a StatefulSet has no holes).
   * Refused while units are being removed: their pods still hold the ordinals above.
   */
  private async podOrdinals(uuid: string, app: string, to: string[]): Promise<{ next(): number }> {
    if (to.length > 0)
      throw invalidRequest(
        "units of a kubernetes model run in pods of their application's StatefulSet: --to does not apply there",
        { field: "to" },
      );
    const units = (await this.getAll(docs.unit, uuid, app)).map((u) => u.doc);
    const dying = units.filter((u) => u.life !== "alive").map((u) => u.name);
    if (dying.length > 0)
      throw new StewardError(
        "conflict",
        `${dying.join(", ")} ${dying.length === 1 ? "is" : "are"} being removed and still hold ${dying.length === 1 ? "its pod" : "their pods"}: add units once ${dying.length === 1 ? "it is" : "they are"} gone`,
      );
    const taken = new Set(units.map((u) => unitNumber(u.name)));
    let n = 0;
    return {
      next: () => {
        while (taken.has(n)) n++;
        taken.add(n);
        return n;
      },
    };
  }
  /** Adds units; `attachStorage` gives kept storage instances (`data/0`) of the application to the new unit. */
  async addUnits(
    uuid: string,
    appName: string,
    count: number,
    to: string[] = [],
    attachStorage: string[] = [],
  ): Promise<{ units: string[]; revision: number }> {
    if (to.length > count) throw invalidRequest(`"to" names ${to.length} machines for ${count} units`, { field: "to" });
    return this.retry(`add units to ${appName}`, async () => {
      const m = await aliveModel(this.store, uuid);
      const a = await this.get(docs.app, uuid, appName);
      if (!a) throw notFound("application", appName);
      if (a.doc.life !== "alive") throw invalidRequest(`application ${appName} is being removed`);
      const compare: Compare[] = [unchanged(keys.model(uuid), m.rev), unchanged(keys.app(uuid, appName), a.rev)];
      const ops: Op[] = [];
      // Storage that lives on one machine brings its new unit there.
      const bound = to.length === 0 && count === 1 ? await boundMachineOf(this.store, uuid, attachStorage) : undefined;
      const placed = await this.placeUnits(uuid, a.doc, count, bound !== undefined ? [bound] : to, compare, ops);
      await newUnitStorage(this.store, uuid, a.doc, placed, attachStorage, compare, ops, this.stamp());
      ops.push(put(docs.app, uuid, appName, a.doc));
      return { compare, ops, result: { units: placed.map((p) => p.unit) } };
    });
  }
  /**
   * Sets or resets (null) config keys and/or moves the application to another operator version;
   * with `charge`, a move is refused when `charge.by` would take the model over its operator quota.
   */
  async update(
    uuid: string,
    appName: string,
    patch: {
      config?: Record<string, string | number | boolean | null>;
      operator?: string;
      constraints?: Constraints | undefined;
      /** For units added from now on: the parts given replace the application's (as deploy's `--storage`). */
      storage?: Record<string, StorageRequest>;
      /** Its units' leadership lease in seconds from the next claim or renewal on; null: the controller's again. */
      leadershipLease?: number | null;
    },
    charge?: OperatorCharge,
  ): Promise<{ revision: number; changed: boolean }> {
    return this.sized("config", "set fewer or shorter values", () =>
      this.retry<{ changed: boolean }>(`update ${appName}`, async () => {
        const a = await this.get(docs.app, uuid, appName);
        if (!a) throw notFound("application", appName);
        let operator = a.doc.operator;
        let meta = (await this.get(docs.operator, operator.hash))?.doc.meta;
        let upgradeTo: Read<OperatorDoc> | undefined;
        const quotaGuard = { compare: [] as Compare[], ops: [] as Op[] };
        if (patch.operator && patch.operator !== operator.hash) {
          const op = (upgradeTo = await this.get(docs.operator, patch.operator));
          if (!op) throw invalidRequest(`operator ${patch.operator} has not been uploaded`, { field: "operator" });
          if (op.doc.name !== operator.name)
            throw invalidRequest(
              `application ${appName} runs operator "${operator.name}"; it cannot switch to "${op.doc.name}" (deploy a new application instead)`,
              { field: "operator" },
            );
          await this.operators.checkModelQuota(
            uuid,
            (await this.get(docs.model, uuid))?.doc.name ?? uuid,
            appName,
            op.doc,
            charge,
            quotaGuard.compare,
            quotaGuard.ops,
          );
          operator = { hash: op.doc.hash, name: op.doc.name, version: op.doc.version };
          meta = op.doc.meta;
        }
        if (!meta) throw new StewardError("internal", `operator ${operator.hash} of ${appName} is missing`);
        const next: ConfigValues = { ...a.doc.config };
        const sets: ConfigValues = {};
        for (const [k, v] of Object.entries(patch.config ?? {})) {
          if (v === null) {
            if (!(k in meta.config)) throw configError(appName, meta, k);
            delete next[k];
          } else sets[k] = v;
        }
        Object.assign(next, validateConfig(meta, sets, appName));
        await checkConfigSecrets(this.store, uuid, meta, sets, appName);
        // Values the new operator no longer declares are dropped rather than refused, so upgrades that rename options work.
        for (const k of Object.keys(next)) if (!(k in meta.config)) delete next[k];
        checkConfigTotal(next, appName);
        let constraints = a.doc.constraints;
        let model: Read<ModelDoc> | undefined;
        if (patch.constraints !== undefined) {
          model = await aliveModel(this.store, uuid);
          checkMachineConstraints(model.doc, mergeConstraints(model.doc.constraints, patch.constraints));
          constraints = hasConstraints(patch.constraints) ? patch.constraints : undefined;
        }
        let storage = a.doc.storage;
        if (patch.storage !== undefined) {
          model ??= await aliveModel(this.store, uuid);
          storage = changedStorageDirectives(meta, model.doc.placement.substrate, a.doc.storage, patch.storage);
        }
        const lease =
          patch.leadershipLease === undefined ? a.doc.leadershipLeaseSeconds : (patch.leadershipLease ?? undefined);
        const changed =
          lease !== a.doc.leadershipLeaseSeconds ||
          operator.hash !== a.doc.operator.hash ||
          JSON.stringify(sortKeys(next)) !== JSON.stringify(sortKeys(a.doc.config)) ||
          formatConstraints(constraints ?? {}) !== formatConstraints(a.doc.constraints ?? {}) ||
          JSON.stringify(storage ?? {}) !== JSON.stringify(a.doc.storage ?? {});
        if (!changed) return { compare: [], ops: [], result: { changed } };
        const { constraints: _, storage: __, leadershipLeaseSeconds: ___, ...rest } = a.doc;
        const doc: ApplicationDoc = {
          ...rest,
          operator,
          config: next,
          ...(constraints ? { constraints } : {}),
          ...(storage ? { storage } : {}),
          ...(lease !== undefined ? { leadershipLeaseSeconds: lease } : {}),
        };
        if (operator.hash !== a.doc.operator.hash) doc.operatorRevision = (a.doc.operatorRevision ?? 1) + 1;
        // Checked against the model's constraints as they are: a change of those meanwhile retries.
        const compare: Compare[] = [
          unchanged(keys.app(uuid, appName), a.rev),
          ...(model ? [unchanged(keys.model(uuid), model.rev)] : []),
        ];
        const ops: Op[] = [put(docs.app, uuid, appName, doc)];
        if (upgradeTo) this.operators.use(upgradeTo, compare, ops);
        compare.push(...quotaGuard.compare);
        ops.push(...quotaGuard.ops);
        return { compare, ops, result: { changed } };
      }),
    );
  }
  async remove(uuid: string, appName: string, force: boolean): Promise<{ revision: number }> {
    return this.retry(`remove ${appName}`, async () => {
      const a = await this.get(docs.app, uuid, appName);
      if (!a) throw notFound("application", appName);
      const units = await this.getAll(docs.unit, uuid, appName);
      const compare: Compare[] = [
        unchanged(keys.app(uuid, appName), a.rev),
        ...units.map((u) => unchanged(u.key, u.rev)),
      ];
      const ops: Op[] = [];
      const relations = (await this.getAll(docs.relation, uuid)).filter((r) =>
        r.doc.endpoints.some((e) => e.app === appName),
      );
      compare.push(...relations.map((r) => unchanged(r.key, r.rev)));
      // Its integrations end with it: the other side departs and breaks them, then they are deleted.
      for (const r of relations) if (r.doc.life === "alive") ops.push(putBack(r, { ...r.doc, life: "dying" }));
      if (force || units.length === 0) {
        for (const u of units) ops.push(...(await this.unitGoneOps(uuid, u.doc, compare)));
        ops.push(
          { type: "delete", key: keys.app(uuid, appName) },
          { type: "delete", key: keys.leaderData(uuid, appName) },
          { type: "delete", key: keys.appStatus(uuid, appName) },
        );
        // The last unit's removal also deletes the application: keep one write per key.
        return { compare, ops: [...new Map(ops.map((o) => ["key" in o ? o.key : o.prefix, o])).values()], result: {} };
      } else {
        ops.push(put(docs.app, uuid, appName, { ...a.doc, life: "dying" }));
        for (const u of units) if (u.doc.life === "alive") ops.push(putBack(u, { ...u.doc, life: "dying" }));
      }
      return { compare, ops, result: {} };
    });
  }
  /**
   * Removes a unit (its agent tears it down first, unless `force`). Its storage is kept, detached,
   * unless `destroyStorage`: then it is destroyed once detached.
   */
  async removeUnit(uuid: string, unit: string, force: boolean, destroyStorage = false): Promise<{ revision: number }> {
    return this.retry(`remove ${unit}`, async () => {
      const u = await this.get(docs.unit, uuid, unit);
      if (!u) throw notFound("unit", unit);
      const compare: Compare[] = [unchanged(keys.unit(uuid, unit), u.rev)];
      if (force) return { compare, ops: await this.unitGoneOps(uuid, u.doc, compare, destroyStorage), result: {} };
      const destroy = destroyStorage ? await destroyUnitStorageOps(this.store, uuid, unit, compare) : [];
      if (u.doc.life === "dying" && destroy.length === 0) return { compare: [], ops: [], result: {} };
      if (contractOf((await this.get(docs.model, uuid))?.doc.placement.substrate).provisions === "pods")
        await this.checkHighestOrdinal(uuid, u.doc, compare);
      return {
        compare,
        ops: [...destroy, put(docs.unit, uuid, unit, { ...u.doc, life: "dying" })],
        result: {},
      };
    });
  }
  /** A StatefulSet scales down from its highest ordinal: a unit goes only when every unit above it goes too. */
  private async checkHighestOrdinal(uuid: string, unit: UnitDoc, compare: Compare[]): Promise<void> {
    const above = (await this.getAll(docs.unit, uuid, unit.app)).filter(
      (s) => unitNumber(s.doc.name) > unitNumber(unit.name),
    );
    const staying = above.filter((s) => s.doc.life === "alive").map((s) => s.doc.name);
    if (staying.length > 0) {
      throw invalidRequest(
        `units of a kubernetes model are pods of a StatefulSet, which removes its highest ordinal first: remove ${staying.sort((a, b) => unitNumber(b) - unitNumber(a)).join(", ")} before ${unit.name}, or with it`,
        { field: "unit" },
      );
    }
    compare.push(...above.map((s) => unchanged(s.key, s.rev)));
  }
  /**
   * The writes that remove a unit for good: its documents; its application when that was dying and
   * this was its last unit; the machine made for it when nothing else runs there.
   */
  private async unitGoneOps(uuid: string, unit: UnitDoc, compare: Compare[], destroyStorage = false): Promise<Op[]> {
    const ops: Op[] = [
      { type: "delete", key: keys.unit(uuid, unit.name) },
      { type: "delete", key: keys.unitStatus(uuid, unit.name) },
      { type: "delete", key: keys.ports(uuid, unit.name) },
    ];
    ops.push(
      { type: "delete", key: keys.unitFailure(uuid, unit.name) },
      { type: "deletePrefix", prefix: keys.taskQueueOf(uuid, unit.name) },
      { type: "delete", key: keys.statusHistory(uuid, unit.name) },
    );
    ops.push({ type: "delete", key: keys.unitHookState(uuid, unit.name) });
    // Its storage stays: detached, kept (or destroyed, when asked), once its broker has moved it off the machine.
    ops.push(...(await unitGoneStorageOps(this.store, uuid, unit.name, compare, destroyStorage)));
    for (const r of await this.getAll(docs.relation, uuid)) {
      if (!r.doc.endpoints.some((e) => e.app === unit.app)) continue;
      ops.push(
        { type: "delete", key: keys.scope(uuid, r.doc.id, unit.name) },
        { type: "delete", key: keys.unitBag(uuid, r.doc.id, unit.name) },
      );
    }
    // A leader that goes hands leadership on at once instead of holding it until its lease runs out.
    const leader = await this.get(docs.leader, uuid, unit.app);
    if (leader?.doc.unit === unit.name) {
      compare.push(unchanged(keys.leader(uuid, unit.app), leader.rev));
      ops.push({ type: "delete", key: keys.leader(uuid, unit.app) });
    }
    const app = await this.get(docs.app, uuid, unit.app);
    const siblings = await this.getAll(docs.unit, uuid, unit.app);
    if (app && app.doc.life === "dying" && siblings.every((s) => s.doc.name === unit.name)) {
      compare.push(unchanged(keys.app(uuid, unit.app), app.rev), ...siblings.map((s) => unchanged(s.key, s.rev)));
      ops.push(
        { type: "delete", key: keys.app(uuid, unit.app) },
        { type: "delete", key: keys.leaderData(uuid, unit.app) },
        { type: "delete", key: keys.appStatus(uuid, unit.app) },
      );
    }
    const machine = await this.get(docs.machine, uuid, unit.machine);
    if (machine && machine.doc.createdFor === unit.name && machine.doc.life === "alive") {
      const onMachine = (await this.getAll(docs.unit, uuid)).filter(
        (o) => o.doc.machine === unit.machine && o.doc.name !== unit.name,
      );
      if (onMachine.length === 0) {
        compare.push(unchanged(keys.machine(uuid, unit.machine), machine.rev));
        ops.push(put(docs.machine, uuid, unit.machine, { ...machine.doc, life: "dying" }));
      }
    }
    return ops;
  }
  /** Records a `steward resolve` for a unit in error; its agent retries (or skips) the failed hook. */
  async resolve(uuid: string, unit: string, mode: "retry" | "no-retry"): Promise<{ revision: number }> {
    return this.retry(`resolve ${unit}`, async () => {
      const u = await this.get(docs.unit, uuid, unit);
      if (!u) throw notFound("unit", unit);
      const st = await this.get(docs.unitStatus, uuid, unit);
      if (st?.doc.workload.current !== "error")
        throw invalidRequest(
          `unit ${unit} is not in error (it is ${st?.doc.workload.current ?? "not started"}): nothing to resolve`,
        );
      return {
        compare: [unchanged(keys.unit(uuid, unit), u.rev)],
        ops: [put(docs.unit, uuid, unit, { ...u.doc, resolve: mode })],
        result: {},
      };
    });
  }
  /** The agent took the resolve request: clear it. */
  async unitResolved(uuid: string, machine: string, unit: string): Promise<{ revision: number }> {
    return this.retry(`resolved ${unit}`, async () => {
      const u = await this.get(docs.unit, uuid, unit);
      if (!u || u.doc.machine !== machine)
        throw new StewardError("forbidden", `unit ${unit} is not on machine ${machine}`);
      if (!u.doc.resolve) return { compare: [], ops: [], result: {} };
      const { resolve: _done, ...rest } = u.doc;
      return {
        compare: [unchanged(keys.unit(uuid, unit), u.rev)],
        ops: [put(docs.unit, uuid, unit, rest)],
        result: {},
      };
    });
  }
  /** The agent ran a dying unit's `remove` hook: remove the unit (and what goes with it). */
  async unitDead(uuid: string, machine: string, unit: string): Promise<{ revision: number }> {
    return this.retry(`remove ${unit}`, async () => {
      const u = await this.get(docs.unit, uuid, unit);
      if (!u) return { compare: [], ops: [], result: {} };
      if (u.doc.machine !== machine) throw new StewardError("forbidden", `unit ${unit} is not on machine ${machine}`);
      if (u.doc.life !== "dying") throw invalidRequest(`unit ${unit} is not being removed`);
      const compare: Compare[] = [unchanged(keys.unit(uuid, unit), u.rev)];
      return { compare, ops: await this.unitGoneOps(uuid, u.doc, compare), result: {} };
    });
  }
}

function sortKeys(o: ConfigValues): ConfigValues {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
}
