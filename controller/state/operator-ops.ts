/**
 * Operator bundles in the store: uploads stored once by content hash in chunks and counted against
 * quotas, their collection once unused, and what a deploy or refresh does to the operator it uses.
 */
import type { Bundle } from "../../api";
import { StewardError, bundleHash, notFound, validateBundle } from "../../api";
import type { Compare, Op } from "../store";
import { absent, unchanged } from "../store";
import type { OperatorDoc, OperatorUploadDoc } from "./documents";
import type { OperatorCharge, OperatorQuotas, OperatorUser } from "./operator-quotas";
import { modelOperatorBytes, modelUseRefusal, operatorUsage, uploadRefusal } from "./operator-quotas";
import { CHUNK_BYTES, keys } from "./keys";
import type { Read } from "./txn";
import { docs, put } from "./doc-kinds";
import { StoreTxns } from "./txn";

export class OperatorOps extends StoreTxns {
  /**
   * Stores an operator bundle under its content hash (idempotent: the same content is stored once)
   * and counts it against `by`'s operator quota while it is stored. Refuses it when it would take
   * `by`, or the operators stored, over their quota (see operator-quotas.ts). Each upload writes
   * the controller's operator quota sequence, so two checked at once (on two replicas) cannot both pass.
   */
  async upload(
    bundle: Bundle,
    quotas: OperatorQuotas,
    by?: OperatorUser,
  ): Promise<{ doc: OperatorDoc; created: boolean }> {
    const meta = validateBundle(bundle);
    const hash = bundleHash(bundle);
    const existing = await this.get(docs.operator, hash);
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
          put(docs.operator, hash, doc),
          { type: "delete", key: keys.operatorUpload(hash) },
          nextSeq(keys.operatorQuotaSeq, seq?.value),
        ],
      });
      if (res.succeeded) return { doc, created: true };
      const stored = await this.get(docs.operator, hash);
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
      const current = await this.get(docs.operator, hash);
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
        ops: [put(docs.operator, hash, doc), nextSeq(keys.operatorQuotaSeq, seq?.value)],
        result: { doc },
      };
    });
    return res.doc;
  }
  private async storedOperators(): Promise<OperatorDoc[]> {
    return (await this.getAll(docs.operator)).map((r) => r.doc);
  }
  /** The stored operator `hash`, with the revision a collector compares against. */
  async find(hash: string): Promise<Read<OperatorDoc> | undefined> {
    return this.get(docs.operator, hash);
  }
  /**
   * Deletes operator `hash` and its chunks if it is still as the collector saw it at `rev` (a
   * deploy or upgrade touches the document, so one that raced the collector keeps it).
   */
  async delete(hash: string, rev: number): Promise<boolean> {
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
  async uploads(): Promise<(Read<OperatorUploadDoc> & { key: string })[]> {
    return this.getAll(docs.operatorUpload);
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
  use(op: Read<OperatorDoc>, compare: Compare[], ops: Op[]): void {
    compare.push(unchanged(keys.operator(op.doc.hash), op.rev));
    ops.push(put(docs.operator, op.doc.hash, { ...op.doc, lastUsedAt: this.stamp() }));
  }
  /**
   * Refuses a deploy (`replacing` undefined) or a refresh of application `replacing` to `adding`
   * that would take the model's distinct operators over `charge`'s model quota. A check writes the
   * model's operator sequence in the same transaction: of two checked at once, one retries and
   * sees the other's application.
   */
  async checkModelQuota(
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
    const apps = (await this.getAll(docs.app, uuid)).map((r) => r.doc);
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
  async bundle(hash: string): Promise<Bundle> {
    const meta = await this.get(docs.operator, hash);
    if (!meta) throw notFound("operator", hash);
    const parts: Buffer[] = [];
    for (let i = 0; i < meta.doc.chunks; i++) {
      const kv = await this.store.get(keys.operatorChunk(hash, i));
      if (!kv) throw new StewardError("internal", `operator ${hash} is missing chunk ${i}`);
      parts.push(Buffer.from(kv.value, "base64"));
    }
    return JSON.parse(Buffer.concat(parts).toString("utf8")) as Bundle;
  }
}

/** The write that moves a sequence key (an absent one is 0) one on. */
function nextSeq(key: string, value: string | undefined): Op {
  return { type: "put", key, value: String(Number(value ?? "0") + 1) };
}
