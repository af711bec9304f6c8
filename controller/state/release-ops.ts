/**
 * Signed releases held in the store, so that every replica serves the same verified bytes whether
 * or not its own host can reach the release source (controller/releases/). A release is written
 * once per version: its bundle in chunks keyed by version and content hash, then the document that
 * makes it visible (a reader never finds half a release); a version once held is never replaced.
 */
import type { Bundle } from "../../api";
import { StewardError, bundleHash, invalidRequest } from "../../api";
import { absent, unchanged } from "../store";
import type { ReleaseDoc, ReleaseKeysDoc, ReleaseSourceDoc } from "./documents";
import { docs, put } from "./doc-kinds";
import { CHUNK_BYTES, keys } from "./keys";
import { StoreTxns } from "./txn";

export class ReleaseOps extends StoreTxns {
  /**
   * Holds `bundle` as release `version` unless a release of that version is held already: answers
   * the one held, which may differ from `bundle` (the caller says so: a version is never replaced).
   */
  async hold(
    version: string,
    bundle: Bundle,
    signed: { at: string; by: string; manifest: string },
  ): Promise<ReleaseDoc> {
    const held = await this.get(docs.release, version);
    if (held) return held.doc;
    const hash = bundleHash(bundle);
    const data = Buffer.from(JSON.stringify(bundle));
    const chunks = Math.max(1, Math.ceil(data.length / CHUNK_BYTES));
    // Each chunk its own write (one transaction could pass etcd's request limit); keyed by the
    // content's hash too, so a replica holding other bytes for the same version at once cannot
    // overwrite the chunks of the release that wins.
    for (let i = 0; i < chunks; i++)
      await this.store.put(
        keys.releaseChunk(version, hash, i),
        data.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES).toString("base64"),
      );
    const doc: ReleaseDoc = {
      version,
      hash,
      bytes: data.length,
      chunks,
      signedAt: signed.at,
      signedBy: signed.by,
      manifest: signed.manifest,
      heldAt: this.stamp(),
    };
    const res = await this.store.txn({
      compare: [absent(keys.release(version))],
      success: [put(docs.release, version, doc)],
    });
    if (res.succeeded) return doc;
    const winner = await this.get(docs.release, version);
    if (winner && winner.doc.hash !== hash)
      await this.store.txn({
        compare: [],
        success: [{ type: "deletePrefix", prefix: keys.releaseChunks(version, hash) }],
      });
    if (!winner) throw new StewardError("conflict", `release ${version} changed while it was held; try again`);
    return winner.doc;
  }

  /** Every release held, by version order. */
  async all(): Promise<ReleaseDoc[]> {
    return (await this.getAll(docs.release)).map((r) => r.doc).sort((a, b) => a.version.localeCompare(b.version));
  }

  async versions(): Promise<string[]> {
    return (await this.all()).map((d) => d.version);
  }

  async find(version: string): Promise<ReleaseDoc | undefined> {
    return (await this.get(docs.release, version))?.doc;
  }

  /** The bundle of release `version`, checked against the hash it was held under. */
  async bundle(doc: ReleaseDoc): Promise<Bundle> {
    const parts: Buffer[] = [];
    for (let i = 0; i < doc.chunks; i++) {
      const kv = await this.store.get(keys.releaseChunk(doc.version, doc.hash, i));
      if (!kv) throw new StewardError("internal", `release ${doc.version} is missing chunk ${i} in the store`);
      parts.push(Buffer.from(kv.value, "base64"));
    }
    const bundle = JSON.parse(Buffer.concat(parts).toString("utf8")) as Bundle;
    if (bundleHash(bundle) !== doc.hash)
      throw new StewardError(
        "internal",
        `release ${doc.version}'s stored files do not match the hash it was held under`,
      );
    return bundle;
  }

  async keys(): Promise<ReleaseKeysDoc | undefined> {
    return (await this.get(docs.releaseKeys))?.doc;
  }

  /**
   * Trusts the keys in `trust` and no longer those in `distrust`, starting from the set last stored
   * (`bootstrap`, controller.json's, before any change). Refuses a change that leaves no key.
   */
  async changeKeys(
    bootstrap: readonly string[],
    change: { trust: readonly string[]; distrust: readonly string[] },
    by: string,
  ): Promise<ReleaseKeysDoc> {
    const { revision: _, ...doc } = await this.retry("change release keys", async () => {
      const stored = await this.get(docs.releaseKeys);
      const now = stored?.doc.keys ?? bootstrap;
      const trusted = [...new Set([...now, ...change.trust])].filter((k) => !change.distrust.includes(k));
      if (trusted.length === 0)
        throw invalidRequest("that would leave no key trusted: trust the new key before distrusting the last one", {
          field: "distrust",
        });
      const doc: ReleaseKeysDoc = { keys: trusted, changedBy: by, changedAt: this.stamp() };
      return {
        compare: [stored ? unchanged(keys.releaseKeys, stored.rev) : absent(keys.releaseKeys)],
        ops: [put(docs.releaseKeys, doc)],
        result: doc,
      };
    });
    return doc;
  }

  /** Records what a look at the source found wrong, when it differs from what is recorded. */
  async recordSource(now: ReleaseSourceDoc): Promise<void> {
    const recorded = (await this.get(docs.releaseSource))?.doc;
    if (JSON.stringify(now) === JSON.stringify(recorded)) return;
    await this.store.put(keys.releaseSource, JSON.stringify(now));
  }
}
