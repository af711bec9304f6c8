/**
 * The leader's schedule of secrets (run every few seconds by leader-work.ts): a rotation whose time
 * has come is marked due (`rotateDueAt`, the owner's secret-rotate hook runs), and due again after a
 * retry interval while the owner sets no new revision; an expiry that has passed is written down, so
 * the owner's agent view is pushed again and its secret-expired hook runs; and what outlived its
 * subject goes, as in Juju: secrets whose owning application or unit is gone, consumers that are
 * gone (and a user secret's revisions only they tracked), grants to applications that are gone or over
 * relations that ended.
 */
import type { Store } from "../store";
import { unchanged } from "../store";
import type { ModelIndex, StateCache } from "./cache";
import { docs, put } from "./doc-kinds";
import { keys } from "./keys";
import type { SecretDoc } from "./secret-docs";
import { ROTATE_RETRY_SECONDS, obsoleteRevisions, sameGrant } from "./secret-docs";
import { StoreTxns } from "./txn";

/** Whether `doc` has something for the schedule to do at `now` (ms), as the cache shows the model. */
export function secretNeedsTending(idx: ModelIndex, doc: SecretDoc, now: number): boolean {
  if (doc.nextRotateAt !== undefined && Date.parse(doc.nextRotateAt) <= now) return true;
  if (doc.revisions.some((r) => !r.expired && r.expireAt !== undefined && Date.parse(r.expireAt) <= now)) return true;
  // A user secret's revision left untracked by a consumer that went (the others went as they were written).
  if (doc.owner.kind === "model" && obsoleteRevisions(doc).length > 0) return true;
  return stale(idx, doc) !== undefined;
}

/** What in `doc` outlived its subject: the owner (the whole secret goes), or consumers and grants. */
function stale(idx: ModelIndex, doc: SecretDoc): "owner" | "entries" | undefined {
  const o = doc.owner;
  if ((o.kind === "application" && !idx.apps.has(o.app)) || (o.kind === "unit" && !idx.units.has(o.unit)))
    return "owner";
  if (Object.keys(doc.consumers).some((u) => !idx.units.has(u))) return "entries";
  if (doc.grants.some((g) => !idx.apps.has(g.app) || (g.relationId !== undefined && !idx.relations.has(g.relationId))))
    return "entries";
  return undefined;
}

export class SecretSchedule extends StoreTxns {
  constructor(
    store: Store,
    /** The controller's `secretRotateSeconds` (tests): the retry interval too. */
    private readonly rotateSeconds?: number,
    now?: () => Date,
  ) {
    super(store, now);
  }

  /** One pass over every model the cache holds; answers how many secrets it changed. */
  async pass(cache: StateCache, signal?: AbortSignal): Promise<number> {
    const now = this.now().getTime();
    let changed = 0;
    for (const idx of cache.models.values()) {
      if (idx.secrets.size === 0 || idx.model?.life !== "alive") continue;
      for (const id of [...idx.secrets.keys()]) {
        if (signal?.aborted) return changed;
        // As the cache holds it now (earlier writes of this pass may have moved it on).
        const doc = idx.secrets.get(id);
        if (!doc || !secretNeedsTending(idx, doc, now)) continue;
        if (await this.tend(idx, doc)) changed++;
      }
    }
    return changed;
  }

  /**
   * Applies what is due to one secret (read again from the store, and written under a compare). What
   * outlived its subject is judged on `cached`, the document as the cache holds it beside the units,
   * applications and relations it shows: the fresh read may name a unit the cache has not seen yet.
   */
  private async tend(idx: ModelIndex, cached: SecretDoc): Promise<boolean> {
    const uuid = idx.uuid;
    const id = cached.id;
    const goneConsumers = new Set(Object.keys(cached.consumers).filter((u) => !idx.units.has(u)));
    const goneGrants = cached.grants.filter(
      (g) => !idx.apps.has(g.app) || (g.relationId !== undefined && !idx.relations.has(g.relationId)),
    );
    const res = await this.retry(`tend secret ${id}`, async () => {
      const read = await this.get(docs.secret, uuid, id);
      if (!read) return { compare: [], ops: [], result: { changed: false } };
      const doc: SecretDoc = structuredClone(read.doc);
      const compare = [unchanged(keys.secret(uuid, id), read.rev)];
      const nowMs = this.now().getTime();
      const stamp = new Date(nowMs).toISOString();
      if (stale(idx, cached) === "owner") {
        // Confirmed in the store, under a compare: the owner is really gone.
        const o = doc.owner;
        const ownerKey =
          o.kind === "application" ? keys.app(uuid, o.app) : o.kind === "unit" ? keys.unit(uuid, o.unit) : "";
        if (ownerKey !== "" && (await this.store.get(ownerKey)) === undefined) {
          return {
            compare: [...compare, unchanged(ownerKey, 0)],
            ops: [
              { type: "delete" as const, key: keys.secret(uuid, id) },
              { type: "deletePrefix" as const, prefix: keys.secretRevisionsOf(uuid, id) },
            ],
            result: { changed: true },
          };
        }
      }
      let dirty = false;
      if (doc.nextRotateAt !== undefined && Date.parse(doc.nextRotateAt) <= nowMs) {
        // Due (again, if the last rotate hook set no new revision): a later rotateDueAt runs the hook again.
        doc.rotateDueAt = stamp;
        doc.nextRotateAt = new Date(nowMs + (this.rotateSeconds ?? ROTATE_RETRY_SECONDS) * 1000).toISOString();
        dirty = true;
      }
      for (const r of doc.revisions) {
        if (!r.expired && r.expireAt !== undefined && Date.parse(r.expireAt) <= nowMs) {
          r.expired = true;
          dirty = true;
        }
      }
      for (const unit of Object.keys(doc.consumers)) {
        if (goneConsumers.has(unit)) {
          delete doc.consumers[unit];
          dirty = true;
        }
      }
      const grants = doc.grants.filter((g) => !goneGrants.some((x) => sameGrant(x, g)));
      if (grants.length !== doc.grants.length) {
        doc.grants = grants;
        dirty = true;
      }
      // A user secret's revisions nobody tracks any more go (Juju's auto-prune), their content with them.
      const pruned = doc.owner.kind === "model" ? obsoleteRevisions(doc) : [];
      if (pruned.length > 0) {
        doc.revisions = doc.revisions.filter((r) => !pruned.includes(r.revision));
        dirty = true;
      }
      if (!dirty) return { compare: [], ops: [], result: { changed: false } };
      doc.updatedAt = stamp;
      return {
        compare,
        ops: [
          put(docs.secret, uuid, id, doc),
          ...pruned.map((r) => ({ type: "delete" as const, key: keys.secretRevision(uuid, id, r) })),
        ],
        result: { changed: true },
      };
    });
    return res.changed;
  }
}
