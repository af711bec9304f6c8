/**
 * The target's side of a migration: the source's export is staged (`/migration-stages/<id>` and its
 * chunks), not imported. Nothing of the model exists until activation, which makes it live and
 * takes the staged copy away in ONE transaction (model-import.ts); an abort deletes the staged copy
 * in another that only holds while the model is not live. So a target that crashes mid-import
 * leaves a staged copy that blocks nothing: a retry replaces it, and one left without heartbeats is
 * purged (Juju #20361 left an "importing" model that blocked every later migration).
 *
 * Secret values arrive sealed to this migration's key ({@link MigrationStaging.sealingKey}), are
 * staged so, and are opened and sealed with this controller's own key only in the activation.
 */
import { createHash } from "node:crypto";
import { StewardError, notFound } from "../../api";
import type {
  ImportDeps,
  ImportResult,
  MachineDoc,
  MigrationArrivalDoc,
  MigrationStageDoc,
  ModelDoc,
  ModelExport,
  UnitDoc,
} from "../state";
import {
  checkLocalDirs,
  decode,
  docs,
  importModel,
  keys,
  migrationActive,
  put,
  readDoc,
  upgradeModelExport,
} from "../state";
import { CHUNK_BYTES } from "../state/keys";
import type { Op, Store } from "../store";
import type { MigrationKeys } from "../security/transfer-sealing";
import { sealerFromPrivateKey } from "../security/transfer-sealing";
import { absent, unchanged } from "../store";

/** Chunks written per transaction while staging (each at most CHUNK_BYTES; etcd takes 10 MiB a request here). */
const CHUNKS_PER_TXN = 8;

/** What an agent checks against the staged model (api: POST /v1/migrations/<id>/validate). */
export interface StagedMachine {
  credentialHash?: string;
  units: string[];
}

export class MigrationStaging {
  /** The last staged export parsed, for agents' validations (a thousand agents must not each parse megabytes). */
  private parsed?: { id: string; rev: number; doc: ModelExport };

  constructor(private readonly o: { store: Store; importDeps: ImportDeps; migrationKeys: MigrationKeys }) {}

  /** The public key the source seals migration `id`'s secret values to (the same on every replica). */
  sealingKey(id: string): string {
    return this.o.migrationKeys(id).publicKey;
  }

  /** Stages `text` (an export's JSON) for migration `id`, replacing any earlier staging of it or of the same model. */
  async stage(id: string, source: string, text: string, now = new Date()): Promise<MigrationStageDoc> {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw new StewardError("invalid-request", "migration: the staged export is not JSON");
    }
    const doc = upgradeModelExport(raw);
    const model = doc.documents.model?.[""] as ModelDoc | undefined;
    if (!model?.uuid || !model.name) throw new StewardError("invalid-request", "migration: the export holds no model");
    await checkLocalDirs(this.o.importDeps.checkLocalDir, doc);
    const { store } = this.o;
    if (await store.get(keys.model(model.uuid)))
      throw new StewardError(
        "already-exists",
        `model ${model.name} (uuid ${model.uuid}) already exists on this controller`,
        { details: { kind: "model", name: model.name } },
      );
    if (await store.get(keys.modelName(model.name)))
      throw new StewardError(
        "already-exists",
        `this controller already has a model named "${model.name}": rename or remove it, then migrate again`,
        { details: { kind: "model", name: model.name } },
      );
    // A model is staged once: an older staging of it (an earlier attempt) goes, and so do chunks
    // of this one that a crash left without their meta (they could outnumber the new ones).
    for (const kv of (await store.range(keys.migrationStages)).kvs) {
      const other = decode(docs.migrationStage, kv.value);
      if (other.model === model.uuid) await this.discard(other.id);
    }
    await this.discard(id);
    const bytes = Buffer.from(text, "utf8");
    const chunks: Op[] = [];
    for (let i = 0, n = 0; i < bytes.length; i += CHUNK_BYTES, n++)
      chunks.push({
        type: "put",
        key: keys.migrationStageChunk(id, n),
        value: bytes.subarray(i, i + CHUNK_BYTES).toString("base64"),
      });
    for (let i = 0; i < chunks.length; i += CHUNKS_PER_TXN)
      await store.txn({ success: chunks.slice(i, i + CHUNKS_PER_TXN) });
    const meta: MigrationStageDoc = {
      id,
      model: model.uuid,
      modelName: model.name,
      source,
      chunks: chunks.length,
      bytes: bytes.length,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      createdAt: now.toISOString(),
      heartbeatAt: now.toISOString(),
    };
    // The meta last: a staging without it is not one, and the purge takes its chunks.
    await store.put(keys.migrationStage(id), JSON.stringify(meta));
    return meta;
  }

  /** Where migration `id` stands here: staged, live (activated), or unknown (never staged, aborted or purged). */
  async state(id: string, model?: string): Promise<"staged" | "active" | "unknown"> {
    if (await this.o.store.get(keys.migrationStage(id))) return "staged";
    if (model !== undefined && (await this.arrival(model))?.id === id) return "active";
    return "unknown";
  }

  /** Makes the staged model live. Asked again after it succeeded (the source lost the answer), it answers the same. */
  async activate(id: string, model: string): Promise<{ model: string; activated: boolean; result?: ImportResult }> {
    if ((await this.arrival(model))?.id === id) return { model, activated: false };
    const meta = await this.o.store.get(keys.migrationStage(id));
    if (!meta) throw notFound("staged migration", id);
    const m = decode(docs.migrationStage, meta.value);
    if (m.model !== model)
      throw new StewardError("invalid-request", `migration ${id} staged model ${m.model}, not ${model}`);
    const doc = await this.read(m);
    const arrival: MigrationArrivalDoc = {
      id,
      source: m.source,
      sourceName: doc.source.controllerName,
      stagedAt: m.createdAt,
      at: new Date().toISOString(),
    };
    // A model coming back: this controller's record of moving it away (which redirects its clients,
    // and keeps provisioners off it) ends as it becomes live here again.
    const left = await this.o.store.get(keys.migration(model));
    if (left && migrationActive(decode(docs.migration, left.value))) {
      throw new StewardError(
        "conflict",
        `model ${model} is being migrated away from this controller; it cannot arrive here at the same time`,
        { reason: "departing" },
      );
    }
    const result = await importModel(this.o.importDeps, doc, {
      alsoCompare: [
        unchanged(keys.migrationStage(id), meta.modRevision),
        absent(keys.migrationArrival(model)),
        ...(left ? [unchanged(left.key, left.modRevision)] : [absent(keys.migration(model))]),
      ],
      alsoDo: [
        { type: "delete", key: keys.migrationStage(id) },
        { type: "deletePrefix", prefix: keys.migrationStageChunks(id) },
        put(docs.migrationArrival, model, arrival),
        ...(left ? [{ type: "delete" as const, key: left.key }] : []),
      ],
      refusedBecause: "the staged import was aborted meanwhile",
      openSecrets: (sealing) => sealerFromPrivateKey(this.o.migrationKeys(id).privateKey, sealing),
    });
    this.parsed = undefined;
    return { model, activated: true, result };
  }

  /** Takes a staged import away; refused once the model is live here (then it has moved, whatever the source thought). */
  async abort(id: string, model: string): Promise<void> {
    if ((await this.arrival(model))?.id === id) {
      throw new StewardError(
        "conflict",
        `migration ${id} was already activated here: the model lives on this controller now`,
        { reason: "activated", details: { reason: "activated" } },
      );
    }
    await this.discard(id);
  }

  async heartbeat(id: string, now = new Date()): Promise<void> {
    const kv = await this.o.store.get(keys.migrationStage(id));
    if (!kv) throw notFound("staged migration", id);
    const m = decode(docs.migrationStage, kv.value);
    await this.o.store.txn({
      compare: [unchanged(kv.key, kv.modRevision)],
      success: [{ type: "put", key: kv.key, value: JSON.stringify({ ...m, heartbeatAt: now.toISOString() }) }],
    });
  }

  /** Purges stagings whose source stopped heartbeating `maxIdleMs` ago (its master gave up or died for good). */
  async purgeIdle(maxIdleMs: number, now = Date.now()): Promise<string[]> {
    const purged: string[] = [];
    for (const kv of (await this.o.store.range(keys.migrationStages)).kvs) {
      const m = decode(docs.migrationStage, kv.value);
      if (now - Date.parse(m.heartbeatAt) > maxIdleMs) {
        await this.discard(m.id);
        purged.push(m.id);
      }
    }
    return purged;
  }

  /** The staged machine `machine` of model `model` in migration `id` (undefined: no such machine staged). */
  async stagedMachine(id: string, model: string, machine: string): Promise<StagedMachine | undefined> {
    const kv = await this.o.store.get(keys.migrationStage(id));
    if (!kv) throw notFound("staged migration", id);
    if (decode(docs.migrationStage, kv.value).model !== model) return undefined;
    if (this.parsed?.id !== id || this.parsed.rev !== kv.modRevision) {
      this.parsed = { id, rev: kv.modRevision, doc: await this.read(decode(docs.migrationStage, kv.value)) };
    }
    const d = this.parsed.doc.documents;
    const m = (d.machine ?? {})[machine] as MachineDoc | undefined;
    if (!m) return undefined;
    const units = Object.values((d.unit ?? {}) as Record<string, UnitDoc>)
      .filter((u) => u.machine === machine)
      .map((u) => u.name)
      .sort();
    return { ...(m.credentialHash ? { credentialHash: m.credentialHash } : {}), units };
  }

  private async arrival(model: string): Promise<MigrationArrivalDoc | undefined> {
    return (await readDoc(this.o.store, docs.migrationArrival, model))?.doc;
  }

  private async discard(id: string): Promise<void> {
    await this.o.store.txn({
      success: [
        { type: "delete", key: keys.migrationStage(id) },
        { type: "deletePrefix", prefix: keys.migrationStageChunks(id) },
      ],
    });
    if (this.parsed?.id === id) this.parsed = undefined;
  }

  /** The staged export, whole and as staged (the meta's hash), checked against the meta. */
  private async read(m: MigrationStageDoc): Promise<ModelExport> {
    const { kvs } = await this.o.store.range(keys.migrationStageChunks(m.id));
    const ordered = kvs
      .map((kv) => ({ i: Number(kv.key.slice(kv.key.lastIndexOf("/") + 1)), kv }))
      .sort((a, b) => a.i - b.i);
    const bytes = Buffer.concat(ordered.map((c) => Buffer.from(c.kv.value, "base64")));
    if (ordered.length !== m.chunks || createHash("sha256").update(bytes).digest("hex") !== m.sha256) {
      throw new StewardError(
        "conflict",
        `the staged copy of migration ${m.id} is incomplete or changed; stage it again`,
        { reason: "staged-copy-changed" },
      );
    }
    return upgradeModelExport(JSON.parse(bytes.toString("utf8")));
  }
}
