/**
 * Domain operations as store transactions. Each one reads what it depends on, checks it, and writes
 * with compares on every revision it read, so a concurrent change makes it retry instead of being
 * overwritten; a refused operation writes nothing.
 */
import { randomUUID } from "node:crypto";
import type { Bundle, Constraints, ModelPlacement, OperatorMeta, StatusLogEntry, UnitStatusReport } from "../../api";
import {
  PROVISIONED_SUBSTRATES,
  STATUS_HISTORY_ENTRIES,
  STATUS_HISTORY_MESSAGE_CHARS,
  StewardError,
  alreadyExists,
  bundleHash,
  contractOf,
  formatConstraints,
  hasConstraints,
  invalidRequest,
  mergeConstraints,
  notFound,
  settingsWithDefaults,
  validateBundle,
} from "../../api";
import type { Compare, Op } from "../store";
import { absent, unchanged } from "../store";
import { hashCredential, hashPassword, newSecret } from "../security/credentials";
import type {
  ApplicationDoc,
  ConfigValues,
  ControllerDoc,
  CredentialDoc,
  LeaderDoc,
  MachineDoc,
  MachineInstallDoc,
  ModelDoc,
  OperatorDoc,
  OperatorUploadDoc,
  PlacementRequest,
  RelationDoc,
  StatusHistoryDoc,
  Substrate,
  UnitDoc,
  UnitFailureDoc,
  UnitStatusDoc,
  UserDoc,
} from "./documents";
import { SCHEMA_VERSION, modelSettings } from "./documents";
import { unitNumber } from "./agent-views";
import { checkConfigTotal, configError, validateConfig } from "./config";
import { checkMachineConstraints } from "./constraints";
import type { OperatorCharge, OperatorQuotas, OperatorUser } from "./operator-quotas";
import { modelOperatorBytes, modelUseRefusal, operatorUsage, uploadRefusal } from "./operator-quotas";
import { CHUNK_BYTES, keys } from "./keys";
import type { Read } from "./txn";
import { StoreTxns } from "./txn";

export class StateOps extends StoreTxns {
  // --- the controller (users and their access: user-ops.ts) ---

  /** Creates the controller's identity, token key and admin user; a second call changes nothing. */
  async initController(
    name: string,
    adminPassword: string,
    presetUuid?: string,
  ): Promise<{ created: boolean; uuid: string }> {
    const existing = await this.read<ControllerDoc>(keys.controller);
    if (existing) return { created: false, uuid: existing.doc.uuid };
    const uuid = presetUuid ?? randomUUID();
    const admin: UserDoc = {
      name: "admin",
      passwordHash: await hashPassword(adminPassword),
      superuser: true,
      createdAt: this.stamp(),
    };
    const res = await this.store.txn({
      compare: [absent(keys.controller)],
      success: [
        {
          type: "put",
          key: keys.controller,
          value: JSON.stringify({
            uuid,
            name,
            createdAt: this.stamp(),
            schemaVersion: SCHEMA_VERSION,
          } satisfies ControllerDoc),
        },
        { type: "put", key: keys.tokenKey, value: JSON.stringify(newSecret(32)) },
        { type: "put", key: keys.user("admin"), value: JSON.stringify(admin) },
      ],
    });
    return { created: res.succeeded, uuid };
  }

  // --- models ---

  /**
   * A new model. `placement` is where its machines come from: a kind (settings-less kinds may be
   * named alone), with the stored credential they are made with and the kind's settings (checked
   * by the request's schema; a kind's defaults fill what is not given).
   */
  async createModel(
    owner: string,
    name: string,
    config: { updateStatusInterval?: number; automaticallyRetryHooks?: boolean } = {},
    placement: Substrate | PlacementRequest = "local",
    constraints?: Constraints,
  ): Promise<ModelDoc & { revision: number }> {
    const uuid = randomUUID();
    const { substrate, credential, settings } =
      typeof placement === "string" ? ({ substrate: placement } as PlacementRequest) : placement;
    const doc: ModelDoc = {
      uuid,
      name,
      owner,
      life: "alive",
      createdAt: this.stamp(),
      config: modelSettings(config),
      placement: {
        substrate,
        ...(credential ? { credential } : {}),
        settings: settingsWithDefaults(substrate, { name }, settings),
      } as ModelPlacement,
      ...(hasConstraints(constraints) ? { constraints } : {}),
    };
    checkMachineConstraints(doc, constraints);
    return this.retry(`create model ${name}`, async () => {
      if (await this.store.get(keys.modelName(name))) throw alreadyExists("model", name);
      const uses = credential ? await this.useCredential(credential, substrate, uuid) : undefined;
      return {
        compare: [absent(keys.modelName(name)), ...(uses ? [uses.compare] : [])],
        ops: [
          ...(uses ? [uses.op] : []),
          { type: "put", key: keys.modelName(name), value: JSON.stringify(uuid) },
          { type: "put", key: keys.model(uuid), value: JSON.stringify(doc) },
          { type: "put", key: keys.access(uuid, owner), value: JSON.stringify({ access: "admin" }) },
          { type: "put", key: keys.machineSeq(uuid), value: "0" },
        ],
        result: doc,
      };
    });
  }

  /** Records that model `uuid` uses the credential, refusing one that is missing or for another substrate. */
  private async useCredential(name: string, substrate: Substrate, uuid: string): Promise<{ compare: Compare; op: Op }> {
    const c = await this.read<CredentialDoc>(keys.credential(name));
    if (!c)
      throw invalidRequest(
        `credential "${name}" does not exist: add it with steward add-credential ${name} --substrate ${substrate} --file F`,
        { field: "credential" },
      );
    if (c.doc.substrate !== substrate)
      throw invalidRequest(
        `credential "${name}" is for ${c.doc.substrate}, but the model's substrate is ${substrate}`,
        { field: "credential" },
      );
    const doc: CredentialDoc = { ...c.doc, models: [...c.doc.models, uuid] };
    return {
      compare: unchanged(keys.credential(name), c.rev),
      op: { type: "put", key: keys.credential(name), value: JSON.stringify(doc) },
    };
  }

  /**
   * Starts destroying a model: it and everything in it become dying; the cleaner removes each piece
   * as its agent reports it gone. With `force`, everything is deleted at once without waiting.
   */
  async destroyModel(uuid: string, force: boolean): Promise<{ revision: number }> {
    return this.retry(`destroy model ${uuid}`, async () => {
      const m = await this.readModel(uuid);
      if (!m) throw notFound("model", uuid);
      if (force) {
        return {
          compare: [unchanged(keys.model(uuid), m.rev)],
          ops: modelDeletes(uuid, m.doc.name),
          result: {},
        };
      }
      const { compare, ops } = await this.dyingEverything(uuid);
      compare.push(unchanged(keys.model(uuid), m.rev));
      if (m.doc.life === "alive")
        ops.push({ type: "put", key: keys.model(uuid), value: JSON.stringify({ ...m.doc, life: "dying" }) });
      return { compare, ops, result: {} };
    });
  }

  /** Marks every alive application and unit of a model dying. */
  private async dyingEverything(uuid: string): Promise<{ compare: Compare[]; ops: Op[] }> {
    const compare: Compare[] = [];
    const ops: Op[] = [];
    for (const kind of ["apps", "units", "relations"] as const) {
      for (const r of await this.readAll<ApplicationDoc | UnitDoc | RelationDoc>(`${keys.modelPrefix(uuid)}${kind}/`)) {
        if (r.doc.life !== "alive") continue;
        compare.push(unchanged(r.key, r.rev));
        ops.push({ type: "put", key: r.key, value: JSON.stringify({ ...r.doc, life: "dying" }) });
      }
    }
    return { compare, ops };
  }

  /** Deletes a dying model once nothing is left in it. Returns whether it was deleted. */
  async finishModel(uuid: string): Promise<boolean> {
    const m = await this.readModel(uuid);
    if (!m || m.doc.life !== "dying") return false;
    const left = (await this.store.range(keys.modelPrefix(uuid))).kvs.filter((kv) =>
      /\/(apps|units|machines)\//.test(kv.key),
    );
    if (left.length > 0) return false;
    const res = await this.store.txn({
      compare: [unchanged(keys.model(uuid), m.rev), ...left.map((kv) => unchanged(kv.key, kv.modRevision))],
      success: modelDeletes(uuid, m.doc.name),
    });
    return res.succeeded;
  }

  // --- operators ---

  /**
   * Stores an operator bundle under its content hash (idempotent: the same content is stored once)
   * and counts it against `by`'s operator quota while it is stored. Refuses it when it would take
   * `by`, or the operators stored, over their quota (see operator-quotas.ts). Each upload writes
   * the controller's operator quota sequence, so two checked at once (on two replicas) cannot both pass.
   */
  async putOperator(
    bundle: Bundle,
    quotas: OperatorQuotas,
    by?: OperatorUser,
  ): Promise<{ doc: OperatorDoc; created: boolean }> {
    const meta = validateBundle(bundle);
    const hash = bundleHash(bundle);
    const existing = await this.read<OperatorDoc>(keys.operator(hash));
    if (existing) return { doc: await this.addUploader(existing, quotas, by), created: false };
    const data = Buffer.from(JSON.stringify(bundle));
    const chunks = Math.max(1, Math.ceil(data.length / CHUNK_BYTES));
    const doc: OperatorDoc = {
      hash,
      name: meta.name,
      version: meta.version,
      meta,
      bytes: data.length,
      chunks,
      uploadedAt: this.stamp(),
      ...(by ? { uploadedBy: [by.user] } : {}),
    };
    // The metadata is stored whole: refuse it before writing any chunk, so nothing is left half-written.
    this.checkStorable("operator.yaml", "shorten its description, summary or config descriptions", JSON.stringify(doc));
    let written = false;
    for (let attempt = 0; attempt < 20; attempt++) {
      // Checked before the chunks are written, and again whenever another upload committed meanwhile.
      const seq = await this.store.get(keys.operatorQuotaSeq);
      const refused = uploadRefusal({
        bytes: data.length,
        adds: true,
        usage: operatorUsage(await this.storedOperators(), by?.user),
        quotas,
        by,
      });
      if (refused) {
        if (written)
          await this.deleteAbandonedUpload(hash, (await this.store.get(keys.operatorUpload(hash)))?.modRevision ?? 0);
        throw refused;
      }
      if (!written) {
        // Chunks first, each its own write (one transaction could exceed etcd's request limit); the
        // document that makes the operator visible goes last, so a reader never finds half an operator.
        // The upload marker lets the collector delete the chunks of an upload that never finished.
        const upload: OperatorUploadDoc = { hash, startedAt: this.stamp() };
        await this.store.put(keys.operatorUpload(hash), JSON.stringify(upload));
        for (let i = 0; i < chunks; i++)
          await this.store.put(
            keys.operatorChunk(hash, i),
            data.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES).toString("base64"),
          );
        written = true;
      }
      const res = await this.store.txn({
        compare: [absent(keys.operator(hash)), unchanged(keys.operatorQuotaSeq, seq?.modRevision ?? 0)],
        success: [
          { type: "put", key: keys.operator(hash), value: JSON.stringify(doc) },
          { type: "delete", key: keys.operatorUpload(hash) },
          nextSeq(keys.operatorQuotaSeq, seq?.value),
        ],
      });
      if (res.succeeded) return { doc, created: true };
      const stored = await this.read<OperatorDoc>(keys.operator(hash));
      if (stored) return { doc: await this.addUploader(stored, quotas, by), created: false };
    }
    throw new StewardError("conflict", `upload operator ${hash}: too many uploads at once, try again`, {
      retryable: true,
    });
  }

  /** Content already stored that `by` uploads again becomes theirs too (counted against their quota). */
  private async addUploader(
    existing: Read<OperatorDoc>,
    quotas: OperatorQuotas,
    by: OperatorUser | undefined,
  ): Promise<OperatorDoc> {
    if (!by || existing.doc.uploadedBy?.includes(by.user)) return existing.doc;
    const hash = existing.doc.hash;
    const res = await this.retry(`upload operator ${hash}`, async () => {
      const current = await this.read<OperatorDoc>(keys.operator(hash));
      if (!current)
        throw new StewardError(
          "conflict",
          `operator ${hash} was deleted (unused) while it was uploaded again: upload it once more`,
          { retryable: true },
        );
      const seq = await this.store.get(keys.operatorQuotaSeq);
      const refused = uploadRefusal({
        bytes: current.doc.bytes,
        adds: false,
        usage: operatorUsage(await this.storedOperators(), by.user),
        quotas,
        by,
      });
      if (refused) throw refused;
      const doc: OperatorDoc = { ...current.doc, uploadedBy: [...(current.doc.uploadedBy ?? []), by.user] };
      return {
        compare: [unchanged(keys.operator(hash), current.rev), unchanged(keys.operatorQuotaSeq, seq?.modRevision ?? 0)],
        ops: [
          { type: "put", key: keys.operator(hash), value: JSON.stringify(doc) },
          nextSeq(keys.operatorQuotaSeq, seq?.value),
        ],
        result: { doc },
      };
    });
    return res.doc;
  }

  private async storedOperators(): Promise<OperatorDoc[]> {
    return (await this.readAll<OperatorDoc>("/operators/")).map((r) => r.doc);
  }

  async readOperator(hash: string): Promise<Read<OperatorDoc> | undefined> {
    return this.read<OperatorDoc>(keys.operator(hash));
  }

  /**
   * Deletes operator `hash` and its chunks if it is still as the collector saw it at `rev` (a
   * deploy or upgrade touches the document, so one that raced the collector keeps it).
   */
  async deleteOperator(hash: string, rev: number): Promise<boolean> {
    const res = await this.store.txn({
      compare: [unchanged(keys.operator(hash), rev)],
      success: [
        { type: "delete", key: keys.operator(hash) },
        { type: "deletePrefix", prefix: keys.operatorChunks(hash) },
      ],
    });
    return res.succeeded;
  }

  /** Upload markers (chunks being written or abandoned) with the revision they were read at. */
  async operatorUploads(): Promise<(Read<OperatorUploadDoc> & { key: string })[]> {
    return this.readAll<OperatorUploadDoc>(keys.operatorUploads);
  }

  /** Deletes the chunks of an upload that never finished, unless its operator was stored meanwhile. */
  async deleteAbandonedUpload(hash: string, rev: number): Promise<boolean> {
    const res = await this.store.txn({
      compare: [unchanged(keys.operatorUpload(hash), rev), absent(keys.operator(hash))],
      success: [
        { type: "delete", key: keys.operatorUpload(hash) },
        { type: "deletePrefix", prefix: keys.operatorChunks(hash) },
      ],
    });
    return res.succeeded;
  }

  /** A deploy or upgrade to `op` fails if the collector deleted it meanwhile, and makes a racing collector back off. */
  private useOperator(op: Read<OperatorDoc>, compare: Compare[], ops: Op[]): void {
    compare.push(unchanged(keys.operator(op.doc.hash), op.rev));
    ops.push({
      type: "put",
      key: keys.operator(op.doc.hash),
      value: JSON.stringify({ ...op.doc, lastUsedAt: this.stamp() } satisfies OperatorDoc),
    });
  }

  /**
   * Refuses a deploy (`replacing` undefined) or a refresh of application `replacing` to `adding`
   * that would take the model's distinct operators over `charge`'s model quota. A check writes the
   * model's operator sequence in the same transaction: of two checked at once, one retries and
   * sees the other's application.
   */
  private async checkModelOperatorQuota(
    uuid: string,
    modelName: string,
    replacing: string | undefined,
    adding: OperatorDoc,
    charge: OperatorCharge | undefined,
    compare: Compare[],
    ops: Op[],
  ): Promise<void> {
    if (!charge || charge.by.superuser || charge.quotas.modelQuotaBytes === undefined) return;
    const seq = await this.store.get(keys.operatorSeq(uuid));
    compare.push(unchanged(keys.operatorSeq(uuid), seq?.modRevision ?? 0));
    ops.push(nextSeq(keys.operatorSeq(uuid), seq?.value));
    const apps = (await this.readAll<ApplicationDoc>(keys.appsOf(uuid))).map((r) => r.doc);
    const sizes = new Map((await this.storedOperators()).map((o) => [o.hash, o.bytes]));
    sizes.set(adding.hash, adding.bytes);
    const beforeBytes = modelOperatorBytes(apps, sizes);
    const afterBytes = modelOperatorBytes(
      [...apps.filter((a) => a.name !== replacing), { operator: { hash: adding.hash } }],
      sizes,
    );
    const refused = modelUseRefusal({
      model: modelName,
      beforeBytes,
      afterBytes,
      bytes: adding.bytes,
      quotas: charge.quotas,
      by: charge.by,
    });
    if (refused) throw refused;
  }

  async getOperatorBundle(hash: string): Promise<Bundle> {
    const meta = await this.read<OperatorDoc>(keys.operator(hash));
    if (!meta) throw notFound("operator", hash);
    const parts: Buffer[] = [];
    for (let i = 0; i < meta.doc.chunks; i++) {
      const kv = await this.store.get(keys.operatorChunk(hash, i));
      if (!kv) throw new StewardError("internal", `operator ${hash} is missing chunk ${i}`);
      parts.push(Buffer.from(kv.value, "base64"));
    }
    return JSON.parse(Buffer.concat(parts).toString("utf8")) as Bundle;
  }

  // --- applications and units ---

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
    },
    charge?: OperatorCharge,
  ): Promise<{ units: string[]; revision: number }> {
    const op = await this.read<OperatorDoc>(keys.operator(req.operator));
    if (!op)
      throw invalidRequest(
        `operator ${req.operator} has not been uploaded: upload it first (steward deploy does this for you)`,
        { field: "operator" },
      );
    const config = checkConfigTotal(validateConfig(op.doc.meta, req.config ?? {}, req.name), req.name);
    if (req.to && req.to.length > req.units)
      throw invalidRequest(
        `"to" names ${req.to.length} machines for ${req.units} units; give at most one machine per unit`,
        { field: "to" },
      );
    return this.sized("config", "set fewer or shorter values", () =>
      this.retry(`deploy ${req.name}`, async () => {
        const m = await this.aliveModel(uuid);
        if (await this.store.get(keys.app(uuid, req.name))) {
          throw new StewardError(
            "already-exists",
            `application "${req.name}" already exists in model ${m.doc.name}: use add-unit or config to change it, or pick another name`,
            { details: { kind: "application", name: req.name } },
          );
        }
        const current = await this.read<OperatorDoc>(keys.operator(req.operator));
        if (!current)
          throw invalidRequest(
            `operator ${req.operator} has not been uploaded (or was deleted unused): upload it again`,
            { field: "operator" },
          );
        const compare: Compare[] = [unchanged(keys.model(uuid), m.rev), absent(keys.app(uuid, req.name))];
        const app: ApplicationDoc = {
          name: req.name,
          operator: { hash: op.doc.hash, name: op.doc.name, version: op.doc.version },
          operatorRevision: 1,
          config,
          life: "alive",
          nextUnit: 0,
          createdAt: this.stamp(),
          ...(hasConstraints(req.constraints) ? { constraints: req.constraints } : {}),
        };
        // Checked whether or not this deploy makes machines: later add-units will.
        checkMachineConstraints(m.doc, mergeConstraints(m.doc.constraints, app.constraints));
        const ops: Op[] = [];
        await this.checkModelOperatorQuota(uuid, m.doc.name, undefined, current.doc, charge, compare, ops);
        const units = await this.placeUnits(uuid, app, req.units, req.to ?? [], compare, ops);
        ops.unshift({ type: "put", key: keys.app(uuid, req.name), value: JSON.stringify(app) });
        await this.peerRelations(uuid, req.name, op.doc.meta, compare, ops);
        this.useOperator(current, compare, ops);
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
      ops.push({ type: "put", key: keys.relation(uuid, id), value: JSON.stringify(doc) });
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
  ): Promise<string[]> {
    const names: string[] = [];
    const model = (await this.readModel(uuid))?.doc;
    const substrate = model?.placement.substrate ?? "local";
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
        const md = await this.read<MachineDoc>(keys.machine(uuid, machine));
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
        ops.push({ type: "put", key: keys.machine(uuid, machine), value: JSON.stringify(md) });
      }
      const u: UnitDoc = { name: unit, app: app.name, machine, life: "alive", createdAt: this.stamp() };
      ops.push({ type: "put", key: keys.unit(uuid, unit), value: JSON.stringify(u) });
      names.push(unit);
    }
    ops.push({ type: "put", key: keys.machineSeq(uuid), value: String(nextMachine) });
    return names;
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
    const units = (await this.readAll<UnitDoc>(keys.unitsOf(uuid, app))).map((u) => u.doc);
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

  async addUnits(
    uuid: string,
    appName: string,
    count: number,
    to: string[] = [],
  ): Promise<{ units: string[]; revision: number }> {
    if (to.length > count) throw invalidRequest(`"to" names ${to.length} machines for ${count} units`, { field: "to" });
    return this.retry(`add units to ${appName}`, async () => {
      const m = await this.aliveModel(uuid);
      const a = await this.read<ApplicationDoc>(keys.app(uuid, appName));
      if (!a) throw notFound("application", appName);
      if (a.doc.life !== "alive") throw invalidRequest(`application ${appName} is being removed`);
      const compare: Compare[] = [unchanged(keys.model(uuid), m.rev), unchanged(keys.app(uuid, appName), a.rev)];
      const ops: Op[] = [];
      const units = await this.placeUnits(uuid, a.doc, count, to, compare, ops);
      ops.push({ type: "put", key: keys.app(uuid, appName), value: JSON.stringify(a.doc) });
      return { compare, ops, result: { units } };
    });
  }

  /**
   * Sets or resets (null) config keys and/or moves the application to another operator version;
   * with `charge`, a move is refused when `charge.by` would take the model over its operator quota.
   */
  async updateApplication(
    uuid: string,
    appName: string,
    patch: {
      config?: Record<string, string | number | boolean | null>;
      operator?: string;
      constraints?: Constraints | undefined;
    },
    charge?: OperatorCharge,
  ): Promise<{ revision: number; changed: boolean }> {
    return this.sized("config", "set fewer or shorter values", () =>
      this.retry<{ changed: boolean }>(`update ${appName}`, async () => {
        const a = await this.read<ApplicationDoc>(keys.app(uuid, appName));
        if (!a) throw notFound("application", appName);
        let operator = a.doc.operator;
        let meta = (await this.read<OperatorDoc>(keys.operator(operator.hash)))?.doc.meta;
        let upgradeTo: Read<OperatorDoc> | undefined;
        const quotaGuard = { compare: [] as Compare[], ops: [] as Op[] };
        if (patch.operator && patch.operator !== operator.hash) {
          const op = (upgradeTo = await this.read<OperatorDoc>(keys.operator(patch.operator)));
          if (!op) throw invalidRequest(`operator ${patch.operator} has not been uploaded`, { field: "operator" });
          if (op.doc.name !== operator.name)
            throw invalidRequest(
              `application ${appName} runs operator "${operator.name}"; it cannot switch to "${op.doc.name}" (deploy a new application instead)`,
              { field: "operator" },
            );
          await this.checkModelOperatorQuota(
            uuid,
            (await this.readModel(uuid))?.doc.name ?? uuid,
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
        // Values the new operator no longer declares are dropped rather than refused, so upgrades that rename options work.
        for (const k of Object.keys(next)) if (!(k in meta.config)) delete next[k];
        checkConfigTotal(next, appName);
        let constraints = a.doc.constraints;
        let model: Read<ModelDoc> | undefined;
        if (patch.constraints !== undefined) {
          model = await this.aliveModel(uuid);
          checkMachineConstraints(model.doc, mergeConstraints(model.doc.constraints, patch.constraints));
          constraints = hasConstraints(patch.constraints) ? patch.constraints : undefined;
        }
        const changed =
          operator.hash !== a.doc.operator.hash ||
          JSON.stringify(sortKeys(next)) !== JSON.stringify(sortKeys(a.doc.config)) ||
          formatConstraints(constraints ?? {}) !== formatConstraints(a.doc.constraints ?? {});
        if (!changed) return { compare: [], ops: [], result: { changed } };
        const { constraints: _, ...rest } = a.doc;
        const doc: ApplicationDoc = { ...rest, operator, config: next, ...(constraints ? { constraints } : {}) };
        if (operator.hash !== a.doc.operator.hash) doc.operatorRevision = (a.doc.operatorRevision ?? 1) + 1;
        // Checked against the model's constraints as they are: a change of those meanwhile retries.
        const compare: Compare[] = [
          unchanged(keys.app(uuid, appName), a.rev),
          ...(model ? [unchanged(keys.model(uuid), model.rev)] : []),
        ];
        const ops: Op[] = [{ type: "put", key: keys.app(uuid, appName), value: JSON.stringify(doc) }];
        if (upgradeTo) this.useOperator(upgradeTo, compare, ops);
        compare.push(...quotaGuard.compare);
        ops.push(...quotaGuard.ops);
        return { compare, ops, result: { changed } };
      }),
    );
  }

  async removeApplication(uuid: string, appName: string, force: boolean): Promise<{ revision: number }> {
    return this.retry(`remove ${appName}`, async () => {
      const a = await this.read<ApplicationDoc>(keys.app(uuid, appName));
      if (!a) throw notFound("application", appName);
      const units = await this.readAll<UnitDoc>(keys.unitsOf(uuid, appName));
      const compare: Compare[] = [
        unchanged(keys.app(uuid, appName), a.rev),
        ...units.map((u) => unchanged(u.key, u.rev)),
      ];
      const ops: Op[] = [];
      const relations = (await this.readAll<RelationDoc>(keys.relationsPrefix(uuid))).filter((r) =>
        r.doc.endpoints.some((e) => e.app === appName),
      );
      compare.push(...relations.map((r) => unchanged(r.key, r.rev)));
      // Its integrations end with it: the other side departs and breaks them, then they are deleted.
      for (const r of relations)
        if (r.doc.life === "alive")
          ops.push({ type: "put", key: r.key, value: JSON.stringify({ ...r.doc, life: "dying" }) });
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
        ops.push({ type: "put", key: keys.app(uuid, appName), value: JSON.stringify({ ...a.doc, life: "dying" }) });
        for (const u of units)
          if (u.doc.life === "alive")
            ops.push({ type: "put", key: u.key, value: JSON.stringify({ ...u.doc, life: "dying" }) });
      }
      return { compare, ops, result: {} };
    });
  }

  async removeUnit(uuid: string, unit: string, force: boolean): Promise<{ revision: number }> {
    return this.retry(`remove ${unit}`, async () => {
      const u = await this.read<UnitDoc>(keys.unit(uuid, unit));
      if (!u) throw notFound("unit", unit);
      const compare: Compare[] = [unchanged(keys.unit(uuid, unit), u.rev)];
      if (force) return { compare, ops: await this.unitGoneOps(uuid, u.doc, compare), result: {} };
      if (u.doc.life === "dying") return { compare: [], ops: [], result: {} };
      if (contractOf((await this.readModel(uuid))?.doc.placement.substrate).provisions === "pods")
        await this.checkHighestOrdinal(uuid, u.doc, compare);
      return {
        compare,
        ops: [{ type: "put", key: keys.unit(uuid, unit), value: JSON.stringify({ ...u.doc, life: "dying" }) }],
        result: {},
      };
    });
  }

  /** A StatefulSet scales down from its highest ordinal: a unit goes only when every unit above it goes too. */
  private async checkHighestOrdinal(uuid: string, unit: UnitDoc, compare: Compare[]): Promise<void> {
    const above = (await this.readAll<UnitDoc>(keys.unitsOf(uuid, unit.app))).filter(
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
  private async unitGoneOps(uuid: string, unit: UnitDoc, compare: Compare[]): Promise<Op[]> {
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
    for (const r of await this.readAll<RelationDoc>(keys.relationsPrefix(uuid))) {
      if (!r.doc.endpoints.some((e) => e.app === unit.app)) continue;
      ops.push(
        { type: "delete", key: keys.scope(uuid, r.doc.id, unit.name) },
        { type: "delete", key: keys.unitBag(uuid, r.doc.id, unit.name) },
      );
    }
    // A leader that goes hands leadership on at once instead of holding it until its lease runs out.
    const leader = await this.read<LeaderDoc>(keys.leader(uuid, unit.app));
    if (leader?.doc.unit === unit.name) {
      compare.push(unchanged(keys.leader(uuid, unit.app), leader.rev));
      ops.push({ type: "delete", key: keys.leader(uuid, unit.app) });
    }
    const app = await this.read<ApplicationDoc>(keys.app(uuid, unit.app));
    const siblings = await this.readAll<UnitDoc>(keys.unitsOf(uuid, unit.app));
    if (app && app.doc.life === "dying" && siblings.every((s) => s.doc.name === unit.name)) {
      compare.push(unchanged(keys.app(uuid, unit.app), app.rev), ...siblings.map((s) => unchanged(s.key, s.rev)));
      ops.push(
        { type: "delete", key: keys.app(uuid, unit.app) },
        { type: "delete", key: keys.leaderData(uuid, unit.app) },
        { type: "delete", key: keys.appStatus(uuid, unit.app) },
      );
    }
    const machine = await this.read<MachineDoc>(keys.machine(uuid, unit.machine));
    if (machine && machine.doc.createdFor === unit.name && machine.doc.life === "alive") {
      const onMachine = (await this.readAll<UnitDoc>(`${keys.modelPrefix(uuid)}units/`)).filter(
        (o) => o.doc.machine === unit.machine && o.doc.name !== unit.name,
      );
      if (onMachine.length === 0) {
        compare.push(unchanged(keys.machine(uuid, unit.machine), machine.rev));
        ops.push({
          type: "put",
          key: keys.machine(uuid, unit.machine),
          value: JSON.stringify({ ...machine.doc, life: "dying" }),
        });
      }
    }
    return ops;
  }

  /** Records a `steward resolve` for a unit in error; its agent retries (or skips) the failed hook. */
  async resolve(uuid: string, unit: string, mode: "retry" | "no-retry"): Promise<{ revision: number }> {
    return this.retry(`resolve ${unit}`, async () => {
      const u = await this.read<UnitDoc>(keys.unit(uuid, unit));
      if (!u) throw notFound("unit", unit);
      const st = await this.read<UnitStatusDoc>(keys.unitStatus(uuid, unit));
      if (st?.doc.workload.current !== "error")
        throw invalidRequest(
          `unit ${unit} is not in error (it is ${st?.doc.workload.current ?? "not started"}): nothing to resolve`,
        );
      return {
        compare: [unchanged(keys.unit(uuid, unit), u.rev)],
        ops: [{ type: "put", key: keys.unit(uuid, unit), value: JSON.stringify({ ...u.doc, resolve: mode }) }],
        result: {},
      };
    });
  }

  /** The agent took the resolve request: clear it. */
  async unitResolved(uuid: string, machine: string, unit: string): Promise<number> {
    const res = await this.retry(`resolved ${unit}`, async () => {
      const u = await this.read<UnitDoc>(keys.unit(uuid, unit));
      if (!u || u.doc.machine !== machine)
        throw new StewardError("forbidden", `unit ${unit} is not on machine ${machine}`);
      if (!u.doc.resolve) return { compare: [], ops: [], result: {} };
      const { resolve: _done, ...rest } = u.doc;
      return {
        compare: [unchanged(keys.unit(uuid, unit), u.rev)],
        ops: [{ type: "put", key: keys.unit(uuid, unit), value: JSON.stringify(rest) }],
        result: {},
      };
    });
    return res.revision;
  }

  /** Settings, and (given) the constraints of machines it makes from now on: `{}` clears them; machines that exist keep theirs. */
  async updateModelConfig(
    uuid: string,
    config: { updateStatusInterval?: number; automaticallyRetryHooks?: boolean } = {},
    constraints?: Constraints,
  ): Promise<{ revision: number }> {
    return this.retry("update model config", async () => {
      const m = await this.aliveModel(uuid);
      const { constraints: old, ...rest } = m.doc;
      const next = constraints === undefined ? old : hasConstraints(constraints) ? constraints : undefined;
      if (constraints !== undefined) checkMachineConstraints(m.doc, constraints);
      const doc: ModelDoc = { ...rest, config: { ...m.doc.config, ...config }, ...(next ? { constraints: next } : {}) };
      return {
        compare: [unchanged(keys.model(uuid), m.rev)],
        ops: [{ type: "put", key: keys.model(uuid), value: JSON.stringify(doc) }],
        result: {},
      };
    });
  }

  // --- machines ---

  /** Creates machines; for `manual` ones returns each agent's credential (shown once, stored hashed). */
  async addMachines(
    uuid: string,
    substrate: Exclude<Substrate, "ssh">,
    count: number,
    own?: Constraints,
  ): Promise<{ machines: { id: string; credential?: string }[]; revision: number }> {
    return this.retry(
      "add machines",
      async () => {
        const m = await this.aliveModel(uuid);
        const modelSubstrate = m.doc.placement.substrate;
        if (contractOf(substrate).instances && modelSubstrate !== substrate)
          throw invalidRequest(
            `${substrate} machines go only in ${substrate} models; this model's substrate is ${modelSubstrate}`,
            { field: "substrate" },
          );
        // The model's constraints are for the machines it makes, not for local or manual ones added to it.
        const constraints = substrate === modelSubstrate ? mergeConstraints(m.doc.constraints, own) : (own ?? {});
        if (hasConstraints(constraints))
          checkMachineConstraints(
            {
              placement:
                substrate === modelSubstrate ? m.doc.placement : ({ substrate, settings: {} } as ModelPlacement),
            },
            constraints,
          );
        const seq = await this.store.get(keys.machineSeq(uuid));
        let next = Number(seq?.value ?? "0");
        const ops: Op[] = [];
        const machines: { id: string; credential?: string }[] = [];
        for (let i = 0; i < count; i++) {
          const id = String(next++);
          const doc: MachineDoc = {
            id,
            substrate,
            life: "alive",
            createdAt: this.stamp(),
            ...(hasConstraints(constraints) ? { constraints } : {}),
          };
          let credential: string | undefined;
          if (contractOf(substrate).agentsStartedByHand) {
            credential = newSecret();
            doc.credentialHash = hashCredential(credential);
          }
          ops.push({ type: "put", key: keys.machine(uuid, id), value: JSON.stringify(doc) });
          machines.push(credential ? { id, credential } : { id });
        }
        ops.push({ type: "put", key: keys.machineSeq(uuid), value: String(next) });
        return {
          compare: [unchanged(keys.model(uuid), m.rev), unchanged(keys.machineSeq(uuid), seq?.modRevision ?? 0)],
          ops,
          result: { machines },
        };
      },
      { secretResult: !!contractOf(substrate).agentsStartedByHand },
    );
  }

  /**
   * Registers an SSH machine, or returns the one already registered for the same host and port
   * (so running add-machine again resumes an install instead of adding a second machine).
   */
  async addSshMachine(
    uuid: string,
    ssh: { host: string; port: number; user: string; hostKey: string },
  ): Promise<{ id: string; created: boolean; revision: number }> {
    return this.retry<{ id: string; created: boolean }>(`add machine ${ssh.host}`, async () => {
      const m = await this.aliveModel(uuid);
      const machines = await this.readAll<MachineDoc>(`${keys.modelPrefix(uuid)}machines/`);
      const same = machines.find((x) => x.doc.ssh?.host === ssh.host && x.doc.ssh.port === ssh.port);
      if (same) {
        if (same.doc.life !== "alive")
          throw invalidRequest(
            `machine ${same.doc.id} (${ssh.host}) is being removed; wait until it is gone, then add it again`,
          );
        if (same.doc.ssh!.hostKey !== ssh.hostKey)
          throw new StewardError(
            "forbidden",
            `${ssh.host} is machine ${same.doc.id} with host key ${same.doc.ssh!.hostKey}, but it now offers ${ssh.hostKey}; if the host was reinstalled, remove the machine and add it again`,
          );
        return { compare: [], ops: [], result: { id: same.doc.id, created: false } };
      }
      const seq = await this.store.get(keys.machineSeq(uuid));
      const id = seq?.value ?? "0";
      const doc: MachineDoc = { id, substrate: "ssh", life: "alive", createdAt: this.stamp(), ssh };
      return {
        compare: [
          unchanged(keys.model(uuid), m.rev),
          unchanged(keys.machineSeq(uuid), seq?.modRevision ?? 0),
          ...machines.map((x) => unchanged(x.key, x.rev)),
        ],
        ops: [
          { type: "put", key: keys.machine(uuid, id), value: JSON.stringify(doc) },
          { type: "put", key: keys.machineSeq(uuid), value: String(Number(id) + 1) },
        ],
        result: { id, created: true },
      };
    });
  }

  async setMachineInstall(uuid: string, id: string, doc: Omit<MachineInstallDoc, "at">): Promise<void> {
    await this.store.txn({
      compare: [{ key: keys.machine(uuid, id), target: "createRevision", op: ">", value: 0 }],
      success: [
        { type: "put", key: keys.machineInstall(uuid, id), value: JSON.stringify({ ...doc, at: this.stamp() }) },
      ],
    });
  }

  /** Issues a fresh credential for a machine's agent (used by substrates that install agents). */
  async issueMachineCredential(uuid: string, id: string): Promise<string> {
    const credential = newSecret();
    await this.retry(
      `credential for machine ${id}`,
      async () => {
        const md = await this.read<MachineDoc>(keys.machine(uuid, id));
        if (!md) throw notFound("machine", id);
        return {
          compare: [unchanged(keys.machine(uuid, id), md.rev)],
          ops: [
            {
              type: "put",
              key: keys.machine(uuid, id),
              value: JSON.stringify({ ...md.doc, credentialHash: hashCredential(credential) }),
            },
          ],
          result: {},
        };
        // Never replayed: a retried install hands the agent this new credential, so its hash must be written.
      },
      { secretResult: true },
    );
    return credential;
  }

  async removeMachine(uuid: string, id: string, force: boolean): Promise<{ revision: number }> {
    return this.retry(`remove machine ${id}`, async () => {
      const md = await this.read<MachineDoc>(keys.machine(uuid, id));
      if (!md) throw notFound("machine", id);
      const units = (await this.readAll<UnitDoc>(`${keys.modelPrefix(uuid)}units/`)).filter(
        (u) => u.doc.machine === id,
      );
      if (units.length > 0 && !force) {
        throw new StewardError(
          "invalid-request",
          `machine ${id} still runs ${units.map((u) => u.doc.name).join(", ")}: remove those units first, or use --force to remove them with it`,
          { details: { units: units.map((u) => u.doc.name) } },
        );
      }
      const compare: Compare[] = [
        unchanged(keys.machine(uuid, id), md.rev),
        ...units.map((u) => unchanged(u.key, u.rev)),
      ];
      const ops: Op[] = [];
      for (const u of units) {
        ops.push(
          { type: "delete", key: u.key },
          { type: "delete", key: keys.unitStatus(uuid, u.doc.name) },
          { type: "delete", key: keys.unitFailure(uuid, u.doc.name) },
        );
      }
      if (md.doc.life === "alive")
        ops.push({ type: "put", key: keys.machine(uuid, id), value: JSON.stringify({ ...md.doc, life: "dying" }) });
      return { compare, ops, result: {} };
    });
  }

  /** Deletes a dying machine's documents once its agent is stopped (called by the substrate). */
  async finishMachine(uuid: string, id: string): Promise<void> {
    const md = await this.read<MachineDoc>(keys.machine(uuid, id));
    if (!md || md.doc.life !== "dying") return;
    await this.store.txn({
      compare: [unchanged(keys.machine(uuid, id), md.rev)],
      success: [
        { type: "delete", key: keys.machine(uuid, id) },
        { type: "delete", key: keys.machineInfo(uuid, id) },
        { type: "delete", key: keys.machineInstall(uuid, id) },
        { type: "delete", key: keys.presence(uuid, id) },
      ],
    });
  }

  /** Marks every machine of a dying model dying once no units remain in it. */
  async retireMachines(uuid: string): Promise<void> {
    const machines = await this.readAll<MachineDoc>(`${keys.modelPrefix(uuid)}machines/`);
    const units = await this.store.range(`${keys.modelPrefix(uuid)}units/`);
    if (units.kvs.length > 0) return;
    const alive = machines.filter((m) => m.doc.life === "alive");
    if (alive.length === 0) return;
    await this.store.txn({
      compare: alive.map((m) => unchanged(m.key, m.rev)),
      success: alive.map((m) => ({
        type: "put" as const,
        key: m.key,
        value: JSON.stringify({ ...m.doc, life: "dying" }),
      })),
    });
  }

  // --- what agents report ---

  /** Records a unit's status from its machine's agent; refuses units on other machines. */
  async setUnitStatus(uuid: string, machine: string, report: UnitStatusReport): Promise<number> {
    const res = await this.retry(`status of ${report.unit}`, async () => {
      const u = await this.read<UnitDoc>(keys.unit(uuid, report.unit));
      if (!u || u.doc.machine !== machine)
        throw new StewardError("forbidden", `unit ${report.unit} is not on machine ${machine}`);
      const old = await this.read<UnitStatusDoc>(keys.unitStatus(uuid, report.unit));
      const now = this.stamp();
      const prev: UnitStatusDoc = old?.doc ?? {
        workload: { current: "waiting", message: "agent initialising", since: now },
        agent: { current: "allocating", message: "", since: now },
        version: "",
      };
      const next: UnitStatusDoc = { ...prev };
      if (
        report.workload &&
        (report.workload.current !== prev.workload.current || report.workload.message !== prev.workload.message)
      )
        next.workload = { ...report.workload, since: now };
      if (report.agent && (report.agent.current !== prev.agent.current || report.agent.message !== prev.agent.message))
        next.agent = { ...report.agent, since: now };
      if (report.version !== undefined) next.version = report.version;
      if (report.applied) next.applied = report.applied;
      // A failed hook's output goes with the status that shows the failure, in the same write.
      const failure: Op[] = report.failure
        ? [
            {
              type: "put",
              key: keys.unitFailure(uuid, report.unit),
              value: JSON.stringify({ ...report.failure, since: now } satisfies UnitFailureDoc),
            },
          ]
        : [];
      if (old && failure.length === 0 && JSON.stringify(next) === JSON.stringify(old.doc))
        return { compare: [], ops: [], result: {} };
      const put: Op = { type: "put", key: keys.unitStatus(uuid, report.unit), value: JSON.stringify(next) };
      const compare = [
        unchanged(keys.unitStatus(uuid, report.unit), old?.rev ?? 0),
        unchanged(keys.unit(uuid, report.unit), u.rev),
      ];
      return {
        compare,
        ops: [
          put,
          ...failure,
          ...(await this.statusHistoryOps(uuid, report.unit, old ? prev : undefined, next, compare)),
        ],
        result: {},
      };
    });
    return res.revision;
  }

  /** Appends what changed between `prev` (none: the first report) and `next` to the unit's status history. */
  private async statusHistoryOps(
    uuid: string,
    unit: string,
    prev: UnitStatusDoc | undefined,
    next: UnitStatusDoc,
    compare: Compare[],
  ): Promise<Op[]> {
    const added: StatusLogEntry[] = [];
    for (const type of ["agent", "workload"] as const) {
      const s = next[type];
      if (prev && s.current === prev[type].current && s.message === prev[type].message) continue;
      added.push({
        since: s.since,
        type,
        status: s.current,
        message: s.message.slice(0, STATUS_HISTORY_MESSAGE_CHARS),
      });
    }
    if (added.length === 0) return [];
    const history = await this.read<StatusHistoryDoc>(keys.statusHistory(uuid, unit));
    compare.push(unchanged(keys.statusHistory(uuid, unit), history?.rev ?? 0));
    const entries = [...(history?.doc ?? []), ...added].slice(-STATUS_HISTORY_ENTRIES);
    return [{ type: "put", key: keys.statusHistory(uuid, unit), value: JSON.stringify(entries) }];
  }

  /** The unit's recent status changes, oldest first. */
  async statusHistory(uuid: string, unit: string): Promise<StatusLogEntry[]> {
    return (await this.read<StatusHistoryDoc>(keys.statusHistory(uuid, unit)))?.doc ?? [];
  }

  /** The unit's last failed hook, if its agent reported one. */
  async unitFailure(uuid: string, unit: string): Promise<UnitFailureDoc | undefined> {
    return (await this.read<UnitFailureDoc>(keys.unitFailure(uuid, unit)))?.doc;
  }

  /** The agent ran a dying unit's `remove` hook: remove the unit (and what goes with it). */
  async unitDead(uuid: string, machine: string, unit: string): Promise<number> {
    const res = await this.retry(`remove ${unit}`, async () => {
      const u = await this.read<UnitDoc>(keys.unit(uuid, unit));
      if (!u) return { compare: [], ops: [], result: {} };
      if (u.doc.machine !== machine) throw new StewardError("forbidden", `unit ${unit} is not on machine ${machine}`);
      if (u.doc.life !== "dying") throw invalidRequest(`unit ${unit} is not being removed`);
      const compare: Compare[] = [unchanged(keys.unit(uuid, unit), u.rev)];
      return { compare, ops: await this.unitGoneOps(uuid, u.doc, compare), result: {} };
    });
    return res.revision;
  }

  async setMachineInfo(
    uuid: string,
    machine: string,
    info: { hostname: string; address: string; os: string; agentVersion: string },
  ): Promise<void> {
    const old = await this.read<{ firstSeen: string }>(keys.machineInfo(uuid, machine));
    await this.store.txn({
      compare: [{ key: keys.machine(uuid, machine), target: "createRevision", op: ">", value: 0 }],
      success: [
        {
          type: "put",
          key: keys.machineInfo(uuid, machine),
          value: JSON.stringify({ ...info, firstSeen: old?.doc.firstSeen ?? this.stamp() }),
        },
      ],
    });
  }

  private async aliveModel(uuid: string): Promise<Read<ModelDoc>> {
    const m = await this.readModel(uuid);
    if (!m) throw notFound("model", uuid);
    if (m.doc.life !== "alive") throw invalidRequest(`model ${m.doc.name} is being destroyed`);
    return m;
  }
}

/** Every record of model `uuid` (named `name`), for a transaction that removes the model at once. */
export function modelDeletes(uuid: string, name: string): Op[] {
  return [
    { type: "deletePrefix", prefix: keys.modelPrefix(uuid) },
    { type: "deletePrefix", prefix: keys.presencePrefix(uuid) },
    ...modelTaskDeletes(uuid),
    { type: "delete", key: keys.model(uuid) },
    { type: "delete", key: keys.modelName(name) },
  ];
}

/** A model's records kept outside its prefix, which the cache does not load: tasks, operations, status history. */
function modelTaskDeletes(uuid: string): Op[] {
  return [
    { type: "deletePrefix", prefix: keys.tasksOf(uuid) },
    { type: "deletePrefix", prefix: keys.operationsOf(uuid) },
    { type: "deletePrefix", prefix: keys.statusHistoryOf(uuid) },
  ];
}

function sortKeys(o: ConfigValues): ConfigValues {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
}

/** The write that moves a sequence key (an absent one is 0) one on. */
function nextSeq(key: string, value: string | undefined): Op {
  return { type: "put", key, value: String(Number(value ?? "0") + 1) };
}
