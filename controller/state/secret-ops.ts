/**
 * Secrets (issue 33) as store transactions. Users' secrets (`steward add-secret`, owned by the model):
 * added, given new values (a new revision) or a new name or description, granted to and revoked
 * from applications, removed whole or by revision. Operators' secrets change through their hooks'
 * commits ({@link SecretOps.hookChanges}, applied inside RelationOps.commitHook). A revision's values
 * are opened only here, for a reader the caller has checked ({@link SecretOps.values}). The leader's
 * schedule (secret-schedule.ts) marks rotations due and expiries passed.
 */
import { randomBytes } from "node:crypto";
import type { SecretChange } from "../../api";
import { StewardError, invalidRequest, newSecretId, notFound, secretIdOf, secretUri } from "../../api";
import type { Sealer } from "../security/sealing";
import type { Compare, Op, Store } from "../store";
import { unchanged } from "../store";
import type { Read } from "./doc-kinds";
import { docs } from "./doc-kinds";
import type { UnitDoc } from "./documents";
import { aliveModel } from "./model-ops";
import type { SecretDoc } from "./secret-docs";
import { revisionPurpose, sameGrant } from "./secret-docs";
import { applySecretChanges } from "./secret-hook-changes";
import { SecretWrites } from "./secret-writes";
import { StoreTxns } from "./txn";
import { keys } from "./keys";

export interface SecretOpsOptions {
  /** Every rotate policy's interval and the rotate retry, in seconds (tests: rotation within seconds). */
  rotateSeconds?: number;
}

export interface AddUserSecret {
  name: string;
  values: Record<string, string>;
  description?: string;
}

export interface UpdateUserSecret {
  values?: Record<string, string>;
  name?: string;
  description?: string;
}

export class SecretOps extends StoreTxns {
  constructor(
    store: Store,
    private readonly sealer: Sealer,
    readonly options: SecretOpsOptions = {},
    now?: () => Date,
  ) {
    super(store, now);
  }

  /** A working set for one transaction of model `uuid`. */
  writes(uuid: string): SecretWrites {
    return new SecretWrites(this.store, uuid, this.sealer, this.now(), this.options.rotateSeconds);
  }

  /** Adds to a hook's commit what its secret-* tools changed (see secret-hook-changes.ts). */
  async hookChanges(
    uuid: string,
    unit: Read<UnitDoc>,
    changes: readonly SecretChange[],
    compare: Compare[],
    ops: Op[],
  ): Promise<void> {
    const w = this.writes(uuid);
    await applySecretChanges(this.store, uuid, unit, changes, w, compare);
    w.emit(compare, ops);
  }

  /** The values of revision `revision` of secret `id`. The caller has checked who asks may read them. */
  async values(uuid: string, id: string, revision: number): Promise<Record<string, string>> {
    const r = await this.get(docs.secretRevision, uuid, id, revision);
    if (!r) throw notFound("secret revision", `${secretUri(id)} revision ${revision}`);
    return this.sealer.openJson<Record<string, string>>(revisionPurpose(id, revision), r.doc.sealed);
  }

  /**
   * `steward add-secret`: a user secret, owned by the model. The same name again with the same values
   * changes nothing (`created: false`); with other values it is refused (update-secret changes them).
   */
  async addUserSecret(
    uuid: string,
    user: string,
    req: AddUserSecret,
  ): Promise<{ uri: string; secretRevision: number; created: boolean; revision: number }> {
    return this.retry<{ uri: string; secretRevision: number; created: boolean }>(`add secret ${req.name}`, async () => {
      const m = await aliveModel(this.store, uuid);
      const w = this.writes(uuid);
      const same = (await w.all()).find((s) => s.owner.kind === "model" && s.name === req.name);
      if (same) {
        const current = await this.values(uuid, same.id, same.latest);
        if (sameValues(current, req.values))
          return {
            compare: [],
            ops: [],
            result: { uri: secretUri(same.id), secretRevision: same.latest, created: false },
          };
        throw new StewardError(
          "already-exists",
          `secret "${req.name}" already exists with other values: update-secret gives it new ones`,
          { details: { kind: "secret", name: req.name } },
        );
      }
      const id = newSecretId((n) => randomBytes(n));
      await w.create(id, { kind: "model" }, req.values, {
        name: req.name,
        description: req.description,
        rotate: "never",
        createdBy: user,
      });
      const compare: Compare[] = [unchanged(keys.model(uuid), m.rev)];
      const ops: Op[] = [];
      w.emit(compare, ops);
      return { compare, ops, result: { uri: secretUri(id), secretRevision: 1, created: true } };
    });
  }

  /** `steward update-secret`: new values make a new revision (the same values do not); a name or description alone does not. */
  async updateUserSecret(
    uuid: string,
    ref: string,
    req: UpdateUserSecret,
  ): Promise<{ uri: string; secretRevision: number; revision: number }> {
    return this.retry(`update secret ${ref}`, async () => {
      const w = this.writes(uuid);
      const doc = await userSecret(w, ref);
      if (req.name !== undefined && req.name !== doc.name) {
        if ((await w.all()).some((s) => s.owner.kind === "model" && s.name === req.name))
          throw new StewardError("already-exists", `secret "${req.name}" already exists`, {
            details: { kind: "secret", name: req.name },
          });
        doc.name = req.name;
      }
      if (req.description !== undefined) doc.description = req.description;
      if (req.values !== undefined && !sameValues(await this.values(uuid, doc.id, doc.latest), req.values))
        w.addRevision(doc, req.values);
      w.write(doc);
      const compare: Compare[] = [];
      const ops: Op[] = [];
      w.emit(compare, ops);
      return { compare, ops, result: { uri: secretUri(doc.id), secretRevision: doc.latest } };
    });
  }

  /** `steward remove-secret`: the whole user secret, or one revision of it (not the latest). */
  async removeUserSecret(uuid: string, ref: string, revision?: number): Promise<{ revision: number }> {
    return this.retry(`remove secret ${ref}`, async () => {
      const w = this.writes(uuid);
      const doc = await userSecret(w, ref);
      if (revision === undefined) await w.remove(doc.id);
      else w.dropRevision(doc, revision);
      const compare: Compare[] = [];
      const ops: Op[] = [];
      w.emit(compare, ops);
      return { compare, ops, result: {} };
    });
  }

  /** `steward grant-secret` / `revoke-secret`: the model's applications may read the user secret, or no longer. */
  async grantApps(
    uuid: string,
    ref: string,
    apps: readonly string[],
    grant: boolean,
  ): Promise<{ doc: SecretDoc; revision: number }> {
    return this.retry(`${grant ? "grant" : "revoke"} secret ${ref}`, async () => {
      const w = this.writes(uuid);
      const doc = await userSecret(w, ref);
      const compare: Compare[] = [];
      for (const app of apps) {
        const a = await this.get(docs.app, uuid, app);
        if (!a && grant) throw notFound("application", app);
        compare.push(unchanged(keys.app(uuid, app), a?.rev ?? 0));
        const g = { app };
        if (grant) {
          if (!doc.grants.some((x) => sameGrant(x, g))) doc.grants.push(g);
        } else doc.grants = doc.grants.filter((x) => !sameGrant(x, g));
      }
      w.write(doc);
      const ops: Op[] = [];
      w.emit(compare, ops);
      return { compare, ops, result: { doc } };
    });
  }
}

/** The id a route's `:secret` names: a uri's, or a user secret's name looked up among `secrets`. */
export function secretByRef<T extends SecretDoc>(secrets: Iterable<T>, ref: string): T | undefined {
  const id = ref.startsWith("secret:") ? secretIdOf(ref) : undefined;
  for (const s of secrets) {
    if (id !== undefined ? s.id === id : s.owner.kind === "model" && s.name === ref) return s;
  }
  return undefined;
}

/** The user secret `ref` names (refused for an operator's secret: it changes through its owner's hooks). */
async function userSecret(w: SecretWrites, ref: string): Promise<SecretDoc> {
  const found = secretByRef(await w.all(), ref);
  if (!found) throw notFound("secret", ref);
  if (found.owner.kind !== "model")
    throw invalidRequest(
      `${secretUri(found.id)} is an operator's secret (owned by ${found.owner.kind === "application" ? `application ${found.owner.app}` : `unit ${found.owner.unit}`}): only its owner changes it, through its hooks`,
    );
  // Read through the working set, so the write compares the revision read.
  return (await w.get(found.id))!;
}

function sameValues(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a[k] === b[k]);
}
