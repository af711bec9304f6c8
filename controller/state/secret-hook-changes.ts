/**
 * What a hook's secret-* tools changed (HookCommit.secrets), applied inside the hook's commit with its
 * other writes, or not at all: `add` (an application's secret only by its leader), `set` (a new
 * revision, or new metadata), `grant`/`revoke` over a relation the owner's application is in, `remove`
 * (the secret or one revision) by the unit that manages it, and `track` (a unit that may read it moves
 * to a revision). Leadership and every relation a decision rests on are compared, so a leader deposed
 * or a relation ended meanwhile makes the commit retry against what is true now.
 */
import type { SecretChange } from "../../api";
import { StewardError, invalidRequest, notFound, secretIdOf, secretUri } from "../../api";
import type { Compare, Store } from "../store";
import { unchanged } from "../store";
import type { Read } from "./doc-kinds";
import { docs, readDoc } from "./doc-kinds";
import type { RelationDoc, UnitDoc } from "./documents";
import { keys } from "./keys";
import type { SecretDoc } from "./secret-docs";
import { grantFor, manages, ownerSide, sameGrant } from "./secret-docs";
import type { SecretWrites } from "./secret-writes";
import { expiryText, secretRefusal } from "./secret-writes";

/** Applies `changes`, made by a hook of `unit`, to `w`; every read they rest on is added to `compare`. */
export async function applySecretChanges(
  store: Store,
  uuid: string,
  unit: Read<UnitDoc>,
  changes: readonly SecretChange[],
  w: SecretWrites,
  compare: Compare[],
): Promise<void> {
  const me = { name: unit.doc.name, app: unit.doc.app };
  const leaders = new Map<string, string | undefined>();
  const leaderOf = async (app: string): Promise<string | undefined> => {
    if (!leaders.has(app)) {
      const l = await readDoc(store, docs.leader, uuid, app);
      compare.push(unchanged(keys.leader(uuid, app), l?.rev ?? 0));
      leaders.set(app, l?.doc.unit);
    }
    return leaders.get(app);
  };
  const relations = new Map<number, RelationDoc | undefined>();
  const relationOf = async (id: number): Promise<RelationDoc | undefined> => {
    if (!relations.has(id)) {
      const r = await readDoc(store, docs.relation, uuid, id);
      compare.push(unchanged(keys.relation(uuid, id), r?.rev ?? 0));
      relations.set(id, r?.doc);
    }
    return relations.get(id);
  };
  /** The secret, which `me` must manage (own it, or lead its owning application). */
  const managed = async (uri: string, what: string): Promise<SecretDoc> => {
    const doc = await existing(w, uri);
    const o = doc.owner;
    if (o.kind === "application") await leaderOf(o.app);
    if (!manages(doc, me, (app) => leaders.get(app)))
      throw new StewardError(
        "forbidden",
        o.kind === "application" && o.app === me.app
          ? `${me.name} is not the leader of ${o.app}: only the leader may ${what} ${uri}`
          : `${me.name} does not own ${uri}: only its owner may ${what} it`,
      );
    return doc;
  };
  const labelFree = async (doc: SecretDoc, label: string): Promise<void> => {
    const taken = (await w.all()).find(
      (s) => s.id !== doc.id && s.label === label && JSON.stringify(s.owner) === JSON.stringify(doc.owner),
    );
    if (taken) throw invalidRequest(`label "${label}" is already used by ${secretUri(taken.id)} of the same owner`);
  };

  for (const c of changes) {
    switch (c.op) {
      case "add": {
        const id = idOf(c.uri);
        if (c.owner === "application") {
          if ((await leaderOf(me.app)) !== me.name)
            throw new StewardError(
              "forbidden",
              `${me.name} is not the leader of ${me.app}: only the leader may add a secret owned by the application (or give --owner unit)`,
            );
        }
        const owner =
          c.owner === "application"
            ? { kind: "application" as const, app: me.app }
            : { kind: "unit" as const, unit: me.name };
        const expireAt = c.expireAt ? expiryText(c.expireAt) : undefined;
        const doc = await w.create(id, owner, c.content, {
          label: c.label,
          description: c.description,
          rotate: c.rotate ?? "never",
          createdBy: undefined,
          ...(expireAt ? { expireAt } : {}),
        });
        if (c.label !== undefined) await labelFree(doc, c.label);
        break;
      }
      case "set": {
        const doc = await managed(c.uri, "set");
        const expireAt = c.expireAt === null ? null : c.expireAt !== undefined ? expiryText(c.expireAt) : undefined;
        if (c.label !== undefined) {
          await labelFree(doc, c.label);
          doc.label = c.label;
        }
        if (c.description !== undefined) doc.description = c.description;
        if (c.rotate !== undefined) w.setRotate(doc, c.rotate);
        // The same values again make no revision (and do not count as a rotation).
        const fresh = c.content !== undefined && !(await w.sameAsLatest(doc, c.content));
        if (fresh) w.addRevision(doc, c.content!, expireAt ?? undefined);
        else if (expireAt !== undefined) {
          // No new content: the expiry is the latest revision's.
          const latest = doc.revisions.find((r) => r.revision === doc.latest)!;
          if (expireAt === null) delete latest.expireAt;
          else latest.expireAt = expireAt;
          delete latest.expired;
        }
        w.write(doc);
        break;
      }
      case "grant": {
        const doc = await managed(c.uri, "grant");
        const r = await relationOf(c.relationId);
        if (!r || !r.endpoints.some((e) => e.app === me.app))
          throw notFound("integration", `${c.relationId} of ${me.app}`);
        if (r.life !== "alive")
          throw invalidRequest(`integration ${c.relationId} is being removed: a grant over it would end at once`);
        const remoteApp = r.endpoints.find((e) => e.app !== me.app)?.app ?? me.app;
        if (c.unit !== undefined) {
          const u = await readDoc(store, docs.unit, uuid, c.unit);
          if (!u || u.doc.app !== remoteApp)
            throw invalidRequest(
              `unit ${c.unit} is not a unit of ${remoteApp}, the other side of integration ${c.relationId}`,
            );
        }
        const grant = { app: remoteApp, ...(c.unit !== undefined ? { unit: c.unit } : {}), relationId: c.relationId };
        if (!doc.grants.some((g) => sameGrant(g, grant))) doc.grants.push(grant);
        w.write(doc);
        break;
      }
      case "revoke": {
        const doc = await managed(c.uri, "revoke");
        doc.grants = doc.grants.filter((g) => !(g.relationId === c.relationId && g.unit === c.unit));
        w.write(doc);
        break;
      }
      case "remove": {
        const doc = await managed(c.uri, "remove");
        if (c.revision === undefined) await w.remove(doc.id);
        else w.dropRevision(doc, c.revision);
        break;
      }
      case "track": {
        const doc = await existing(w, c.uri);
        let readable = ownerSide(doc, me);
        if (!readable) {
          // Each relation a grant rests on is read (and compared): an ended relation ends the grant.
          for (const g of doc.grants) if (g.relationId !== undefined) await relationOf(g.relationId);
          readable = grantFor(doc, me, (id) => relations.get(id)?.life === "alive") !== undefined;
        }
        if (!readable) throw secretRefusal.notReadable(me.name, c.uri);
        if (!doc.revisions.some((r) => r.revision === c.revision))
          throw notFound("secret revision", `${c.uri} revision ${c.revision}`);
        const label = c.label ?? doc.consumers[me.name]?.label;
        doc.consumers[me.name] = { revision: c.revision, ...(label !== undefined ? { label } : {}) };
        w.write(doc);
        break;
      }
    }
  }
}

function idOf(uri: string): string {
  const id = secretIdOf(uri);
  if (id === undefined) throw invalidRequest(`"${uri.slice(0, 80)}" is not a secret uri (secret:<id>)`);
  return id;
}

async function existing(w: SecretWrites, uri: string): Promise<SecretDoc> {
  const doc = await w.get(idOf(uri));
  if (!doc) throw notFound("secret", uri);
  return doc;
}
