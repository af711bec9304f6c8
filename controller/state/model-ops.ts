/**
 * Models as store transactions: creating one (with the credential it is made with), destroying it
 * (everything in it dying, or all at once with force), finishing it once empty, and its settings.
 */
import { randomUUID } from "node:crypto";
import type { Constraints, ModelPlacement } from "../../api";
import {
  DEFAULT_SUBSTRATE,
  alreadyExists,
  hasConstraints,
  invalidRequest,
  notFound,
  settingsWithDefaults,
} from "../../api";
import type { Compare, Op, Store } from "../store";
import { absent, unchanged } from "../store";
import type { CredentialDoc, ModelDoc, PlacementRequest, Substrate } from "./documents";
import { modelSettings } from "./documents";
import { checkMachineConstraints } from "./constraints";
import { keys } from "./keys";
import type { Read } from "./txn";
import { docs, put, putBack, readDoc } from "./doc-kinds";
import { StoreTxns } from "./txn";

export class ModelOps extends StoreTxns {
  /**
   * A new model. `placement` is where its machines come from: a kind (settings-less kinds may be
   * named alone), with the stored credential they are made with and the kind's settings (checked
   * by the request's schema; a kind's defaults fill what is not given).
   */
  async create(
    owner: string,
    name: string,
    config: { updateStatusInterval?: number; automaticallyRetryHooks?: boolean } = {},
    placement: Substrate | PlacementRequest = DEFAULT_SUBSTRATE,
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
          put(docs.modelName, name, uuid),
          put(docs.model, uuid, doc),
          put(docs.access, uuid, owner, { access: "admin" }),
          { type: "put", key: keys.machineSeq(uuid), value: "0" },
        ],
        result: doc,
      };
    });
  }
  /** Records that model `uuid` uses the credential, refusing one that is missing or for another substrate. */
  private async useCredential(name: string, substrate: Substrate, uuid: string): Promise<{ compare: Compare; op: Op }> {
    const c = await this.get(docs.credential, name);
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
      op: put(docs.credential, name, doc),
    };
  }
  /**
   * Starts destroying a model: it and everything in it become dying; the cleaner removes each piece
   * as its agent reports it gone. With `force`, everything is deleted at once without waiting.
   */
  async destroy(uuid: string, force: boolean): Promise<{ revision: number }> {
    return this.retry(`destroy model ${uuid}`, async () => {
      const m = await this.get(docs.model, uuid);
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
      if (m.doc.life === "alive") ops.push(put(docs.model, uuid, { ...m.doc, life: "dying" }));
      return { compare, ops, result: {} };
    });
  }
  /** Marks every alive application and unit of a model dying. */
  private async dyingEverything(uuid: string): Promise<{ compare: Compare[]; ops: Op[] }> {
    const compare: Compare[] = [];
    const ops: Op[] = [];
    const dying = <T extends { life: string }>(listed: (Read<T> & { key: string })[]): void => {
      for (const r of listed) {
        if (r.doc.life !== "alive") continue;
        compare.push(unchanged(r.key, r.rev));
        ops.push(putBack(r, { ...r.doc, life: "dying" }));
      }
    };
    dying(await this.getAll(docs.app, uuid));
    dying(await this.getAll(docs.unit, uuid));
    dying(await this.getAll(docs.relation, uuid));
    return { compare, ops };
  }
  /** Deletes a dying model once nothing is left in it. Returns whether it was deleted. */
  async finish(uuid: string): Promise<boolean> {
    const m = await this.get(docs.model, uuid);
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
  /** Settings, and (given) the constraints of machines it makes from now on: `{}` clears them; machines that exist keep theirs. */
  async updateConfig(
    uuid: string,
    config: { updateStatusInterval?: number; automaticallyRetryHooks?: boolean } = {},
    constraints?: Constraints,
  ): Promise<{ revision: number }> {
    return this.retry("update model config", async () => {
      const m = await aliveModel(this.store, uuid);
      const { constraints: old, ...rest } = m.doc;
      const next = constraints === undefined ? old : hasConstraints(constraints) ? constraints : undefined;
      if (constraints !== undefined) checkMachineConstraints(m.doc, constraints);
      const doc: ModelDoc = { ...rest, config: { ...m.doc.config, ...config }, ...(next ? { constraints: next } : {}) };
      return {
        compare: [unchanged(keys.model(uuid), m.rev)],
        ops: [put(docs.model, uuid, doc)],
        result: {},
      };
    });
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

/** Model `uuid`'s document, refused when the model is gone or being destroyed. */
export async function aliveModel(store: Pick<Store, "get">, uuid: string): Promise<Read<ModelDoc>> {
  const m = await readDoc(store, docs.model, uuid);
  if (!m) throw notFound("model", uuid);
  if (m.doc.life !== "alive") throw invalidRequest(`model ${m.doc.name} is being destroyed`);
  return m;
}
