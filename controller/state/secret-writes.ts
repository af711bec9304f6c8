/**
 * The working set of one transaction's secret changes (a user's request, or every secret-* change of
 * one hook): each secret read once, changed in memory as the changes come, and written once, with a
 * compare on every revision read, so that the whole is applied or nothing is. New revisions are sealed
 * here; the limits (content size, revisions per secret, secrets per model, the metadata document's
 * bytes) are refused here with the reason that names them. A user secret's revisions that nobody tracks any more go as it is written
 * (Juju's auto-prune).
 */
import type { SecretOwner } from "../../api";
import { SECRET_LIMITS, StewardError, invalidRequest, secretContentProblem, secretUri } from "../../api";
import type { Sealer } from "../security/sealing";
import type { Compare, Op, Store } from "../store";
import { unchanged } from "../store";
import { docs, put, readDoc, readDocs } from "./doc-kinds";
import { keys } from "./keys";
import type { SecretDoc } from "./secret-docs";
import { nextRotation, obsoleteRevisions, revisionPurpose } from "./secret-docs";

/** Refusals with their reasons (api/error-reasons.ts); none ever carries a value. */
export const secretRefusal = {
  tooLarge: (message: string) => new StewardError("quota-exceeded", message, { reason: "secret-too-large" }),
  revisionsFull: (uri: string) =>
    new StewardError(
      "quota-exceeded",
      `${uri} holds ${SECRET_LIMITS.revisions} revisions, as many as a secret may: remove revisions no consumer tracks first`,
      { reason: "secret-revisions-full" },
    ),
  modelFull: () =>
    new StewardError(
      "quota-exceeded",
      `the model holds ${SECRET_LIMITS.perModel} secrets, as many as a model may: remove secrets it no longer needs first`,
      { reason: "model-secrets-full" },
    ),
  metadataFull: (doc: SecretDoc, bytes: number) =>
    new StewardError(
      "quota-exceeded",
      `${secretUri(doc.id)}'s metadata would be ${bytes} bytes with this change, more than the ${SECRET_LIMITS.metadataBytes} a secret may hold ` +
        `(consumers: ${Object.keys(doc.consumers).length}, grants: ${doc.grants.length}, revisions: ${doc.revisions.length}): ` +
        `consumers' labels count against it, so shorter labels (or none) let more units read it; grants to an application rather than to each of its units, or fewer revisions, make room too`,
      { reason: "secret-metadata-full", details: { bytes, limit: SECRET_LIMITS.metadataBytes } },
    ),
  notReadable: (who: string, uri: string) =>
    new StewardError("forbidden", `${who} may not read ${uri}: it neither owns it nor was granted it`, {
      reason: "secret-not-readable",
    }),
};

/** Refuses content that is not a secret's: over the limits (`secret-too-large`), or keys that are not keys. */
export function checkContent(values: Record<string, string>): void {
  const problem = secretContentProblem(values);
  if (problem === undefined) return;
  const bytes = Object.entries(values).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
  if (Object.keys(values).length > SECRET_LIMITS.keys || bytes > SECRET_LIMITS.contentBytes)
    throw secretRefusal.tooLarge(problem);
  throw invalidRequest(problem);
}

/** An RFC 3339 expiry as stored, or a refusal (agents send what `--expire` made of the user's text). */
export function expiryText(text: string): string {
  const t = Date.parse(text);
  if (!Number.isFinite(t)) throw invalidRequest(`expiry "${text.slice(0, 40)}" is not an RFC 3339 time`);
  return new Date(t).toISOString();
}

interface Entry {
  key: string;
  /** The store revision it was read at (0: absent). */
  rev: number;
  /** The bytes of its document as read (0: absent): one already past the metadata bound may still shrink. */
  bytes: number;
  doc: SecretDoc | undefined;
  changed: boolean;
  /** The store held it, and it is removed: its revisions go too. */
  removed: boolean;
}

export class SecretWrites {
  private readonly entries = new Map<string, Entry>();
  private readonly revisionOps: Op[] = [];
  /** Values sealed in this transaction, by `<id>/<revision>` (a later set in the same hook compares with them). */
  private readonly sealedHere = new Map<string, Record<string, string>>();
  private allRead?: Map<string, SecretDoc>;
  /** The model's secret sequence as read, once something that must be unique or counted was decided. */
  private seq?: { value: number; rev: number };

  constructor(
    private readonly store: Store,
    private readonly uuid: string,
    private readonly sealer: Sealer,
    private readonly now: Date,
    /** The controller's `secretRotateSeconds` (tests): every rotate policy's interval. */
    private readonly rotateSeconds?: number,
  ) {}

  get stamp(): string {
    return this.now.toISOString();
  }

  /** The secret as changed so far in this transaction (undefined: absent or removed). */
  async get(id: string): Promise<SecretDoc | undefined> {
    let e = this.entries.get(id);
    if (!e) {
      const read = await readDoc(this.store, docs.secret, this.uuid, id);
      e = {
        key: keys.secret(this.uuid, id),
        rev: read?.rev ?? 0,
        bytes: read ? Buffer.byteLength(put(docs.secret, this.uuid, id, read.doc).value) : 0,
        doc: read?.doc,
        changed: false,
        removed: false,
      };
      this.entries.set(id, e);
    }
    return e.doc;
  }

  /**
   * Every secret of the model as changed so far (read once; for names, labels and the model's count).
   * What is decided on it (a name or label free, room left) holds at the write: the write bumps the
   * model's secret sequence under a compare, so two such decisions never both pass.
   */
  async all(): Promise<SecretDoc[]> {
    if (!this.seq) {
      const kv = await this.store.get(keys.secretSeq(this.uuid));
      this.seq = { value: Number(kv?.value ?? "0"), rev: kv?.modRevision ?? 0 };
    }
    if (!this.allRead) {
      this.allRead = new Map((await readDocs(this.store, docs.secret, this.uuid)).map((r) => [r.doc.id, r.doc]));
    }
    const out = new Map(this.allRead);
    for (const [id, e] of this.entries) {
      if (e.doc) out.set(id, e.doc);
      else out.delete(id);
    }
    return [...out.values()];
  }

  /** Makes a new secret with its first revision (its id must be new). */
  async create(
    id: string,
    owner: SecretOwner,
    values: Record<string, string>,
    meta: Pick<SecretDoc, "name" | "label" | "description" | "rotate" | "createdBy"> & { expireAt?: string },
  ): Promise<SecretDoc> {
    checkContent(values);
    if ((await this.get(id)) !== undefined) throw new StewardError("already-exists", `${secretUri(id)} already exists`);
    if ((await this.all()).length >= SECRET_LIMITS.perModel) throw secretRefusal.modelFull();
    const { expireAt, ...rest } = meta;
    const nextRotateAt = nextRotation(meta.rotate, this.now.getTime(), this.rotateSeconds);
    const doc: SecretDoc = {
      id,
      owner,
      ...dropUndefined(rest),
      ...(nextRotateAt ? { nextRotateAt } : {}),
      latest: 1,
      revisions: [{ revision: 1, createdAt: this.stamp, ...(expireAt ? { expireAt } : {}) }],
      grants: [],
      consumers: {},
      createdAt: this.stamp,
      updatedAt: this.stamp,
    };
    this.sealRevision(id, 1, values);
    this.write(doc);
    return doc;
  }

  /**
   * Adds a revision with `values` to `doc` (changed in place): the rotation is done (due again a
   * whole interval from now), and the revision count is checked against the limit.
   */
  addRevision(doc: SecretDoc, values: Record<string, string>, expireAt?: string): number {
    checkContent(values);
    if (doc.revisions.length >= SECRET_LIMITS.revisions) throw secretRefusal.revisionsFull(secretUri(doc.id));
    const revision = doc.latest + 1;
    doc.revisions.push({ revision, createdAt: this.stamp, ...(expireAt ? { expireAt } : {}) });
    doc.latest = revision;
    delete doc.rotateDueAt;
    const next = nextRotation(doc.rotate, this.now.getTime(), this.rotateSeconds);
    if (next) doc.nextRotateAt = next;
    else delete doc.nextRotateAt;
    this.sealRevision(doc.id, revision, values);
    this.write(doc);
    return revision;
  }

  /** Sets a new rotate policy: the next rotation is one interval of it from now. */
  setRotate(doc: SecretDoc, policy: SecretDoc["rotate"]): void {
    if (doc.rotate === policy) return;
    doc.rotate = policy;
    const next = nextRotation(policy, this.now.getTime(), this.rotateSeconds);
    if (next) doc.nextRotateAt = next;
    else delete doc.nextRotateAt;
    delete doc.rotateDueAt;
    this.write(doc);
  }

  /** Removes one revision (not the latest) of `doc`, its content with it. */
  dropRevision(doc: SecretDoc, revision: number): void {
    const i = doc.revisions.findIndex((r) => r.revision === revision);
    if (i < 0) throw new StewardError("not-found", `${secretUri(doc.id)} has no revision ${revision}`);
    if (revision === doc.latest)
      throw invalidRequest(
        `revision ${revision} is the latest of ${secretUri(doc.id)}: set a new revision first, or remove the whole secret`,
      );
    doc.revisions.splice(i, 1);
    for (const [unit, c] of Object.entries(doc.consumers)) if (c.revision === revision) delete doc.consumers[unit];
    this.revisionOps.push({ type: "delete", key: keys.secretRevision(this.uuid, doc.id, revision) });
    this.write(doc);
  }

  /** Marks `doc` (changed in place, or a new object) to be written. */
  write(doc: SecretDoc): void {
    const e = this.entries.get(doc.id);
    if (!e) throw new Error(`secret ${doc.id} written before it was read`);
    doc.updatedAt = this.stamp;
    e.doc = doc;
    e.changed = true;
  }

  /** Removes the whole secret, its revisions' content with it. */
  async remove(id: string): Promise<void> {
    await this.get(id);
    const e = this.entries.get(id)!;
    e.removed = e.rev !== 0;
    e.doc = undefined;
    e.changed = true;
  }

  /**
   * The compares and writes of everything changed (a user secret's untracked old revisions pruned).
   * A document that would grow past SECRET_LIMITS.metadataBytes is refused here, before anything is
   * written: thousands of consumers with long labels would otherwise reach the store's value limit,
   * and every later write of the secret (a revision, a grant, the schedule's) would fail on it.
   */
  emit(compare: Compare[], ops: Op[]): void {
    if (this.seq && [...this.entries.values()].some((e) => e.changed)) {
      compare.push(unchanged(keys.secretSeq(this.uuid), this.seq.rev));
      ops.push({ type: "put", key: keys.secretSeq(this.uuid), value: String(this.seq.value + 1) });
    }
    for (const [id, e] of this.entries) {
      compare.push(unchanged(e.key, e.rev));
      if (!e.changed) continue;
      if (e.doc === undefined) {
        if (e.removed) {
          ops.push({ type: "delete", key: e.key });
          ops.push({ type: "deletePrefix", prefix: keys.secretRevisionsOf(this.uuid, id) });
        }
        continue;
      }
      if (e.doc.owner.kind === "model") for (const r of obsoleteRevisions(e.doc)) this.dropRevision(e.doc, r);
      const op = put(docs.secret, this.uuid, id, e.doc);
      const bytes = Buffer.byteLength(op.value);
      if (bytes > SECRET_LIMITS.metadataBytes && bytes > e.bytes) throw secretRefusal.metadataFull(e.doc, bytes);
      ops.push(op);
    }
    // A removed secret's revisions went with its prefix.
    for (const op of this.revisionOps) {
      const id = op.type === "put" || op.type === "delete" ? op.key.split("/").at(-2) : undefined;
      if (id !== undefined && this.entries.get(id)?.doc === undefined) continue;
      ops.push(op);
    }
  }

  /**
   * Whether `values` are what `doc`'s latest revision holds (a hook that sets the same values again,
   * as config-changed hooks do, makes no revision: else revisions would pile up to the limit).
   */
  async sameAsLatest(doc: SecretDoc, values: Record<string, string>): Promise<boolean> {
    let latest = this.sealedHere.get(`${doc.id}/${doc.latest}`);
    if (!latest) {
      const r = await readDoc(this.store, docs.secretRevision, this.uuid, doc.id, doc.latest);
      if (!r) return false;
      latest = this.sealer.openJson<Record<string, string>>(revisionPurpose(doc.id, doc.latest), r.doc.sealed);
    }
    const a = Object.keys(latest).sort();
    const b = Object.keys(values).sort();
    return a.length === b.length && a.every((k, i) => k === b[i] && latest[k] === values[k]);
  }

  private sealRevision(id: string, revision: number, values: Record<string, string>): void {
    this.sealedHere.set(`${id}/${revision}`, values);
    this.revisionOps.push(
      put(docs.secretRevision, this.uuid, id, revision, {
        sealed: this.sealer.sealJson(revisionPurpose(id, revision), values),
      }),
    );
  }
}

/** The same object without its undefined fields (strict schemas and exact optional types want them absent). */
function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
