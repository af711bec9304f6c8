/**
 * Secrets as stored (issue 33, Juju 3's model): one metadata document per secret (owner, revisions,
 * grants, consumers, rotation) that the state cache keeps and agent views are made from, and one
 * document per revision holding only its content, sealed with the controller's key, which the cache
 * never keeps. Who may read and who manages a secret is decided here, once, for the agent view, the
 * agent's `secret.get` and the hook commit alike.
 */
import type { RotatePolicy, SecretGrantInfo, SecretInfo, SecretOwner } from "../../api";
import { ROTATE_INTERVAL_SECONDS, ownerText, secretUri } from "../../api";

export interface SecretRevisionMeta {
  revision: number;
  createdAt: string;
  /** RFC 3339: when this revision expires (the owner's secret-expired hook runs then). */
  expireAt?: string;
  /** The expiry worker saw it pass (written so that the owner's agent view is pushed again then). */
  expired?: true;
}

export interface SecretConsumer {
  /** The revision the unit tracks (it moves with `secret-get --refresh`). */
  revision: number;
  /** The label the consumer gave it. */
  label?: string;
}

export interface SecretDoc {
  /** The 20 base32hex characters of `secret:<id>`. */
  id: string;
  owner: SecretOwner;
  /** A user secret's name (unique among the model's user secrets). */
  name?: string;
  /** The owner's label for it (unique among its owner's secrets). */
  label?: string;
  description?: string;
  rotate: RotatePolicy;
  /** When rotation falls due next (absent: `never`). */
  nextRotateAt?: string;
  /** Rotation fell due then and the owner has not set a new revision since (its secret-rotate hook runs). */
  rotateDueAt?: string;
  /** The newest revision. */
  latest: number;
  /** The revisions held, oldest first; the latest is always among them. */
  revisions: SecretRevisionMeta[];
  grants: SecretGrantInfo[];
  /** The units that read it, by name, and what they track. */
  consumers: Record<string, SecretConsumer>;
  /** The user who made a user secret (may reveal it). */
  createdBy?: string;
  createdAt: string;
  updatedAt: string;
}

/** A revision's content: the values as JSON, sealed for purpose {@link revisionPurpose}. Never cached, never logged. */
export interface SecretRevisionDoc {
  sealed: string;
}

/** What a revision's content is sealed for: a sealed value copied under another secret or revision does not open. */
export const revisionPurpose = (id: string, revision: number): string => `secret/${id}/${revision}`;

/** A unit as secrets see it. */
export interface SecretUnit {
  name: string;
  app: string;
}

/** Whether relation `id` still exists and is alive (a relation grant ends with its relation). */
export type RelationAlive = (id: number) => boolean;

/** The grant that lets `unit` read `doc`, if one does (and its relation, if any, is still alive). */
export function grantFor(doc: SecretDoc, unit: SecretUnit, relationAlive: RelationAlive): SecretGrantInfo | undefined {
  return doc.grants.find(
    (g) =>
      (g.unit !== undefined ? g.unit === unit.name : g.app === unit.app) &&
      (g.relationId === undefined || relationAlive(g.relationId)),
  );
}

/** The unit is on the owner's side: it is the owning unit, or a unit of the owning application. */
export function ownerSide(doc: SecretDoc, unit: SecretUnit): boolean {
  const o = doc.owner;
  return (o.kind === "unit" && o.unit === unit.name) || (o.kind === "application" && o.app === unit.app);
}

/** Whether `unit` may read `doc`'s values: it owns it, its application does, or it (or its application) was granted it. */
export function mayRead(doc: SecretDoc, unit: SecretUnit, relationAlive: RelationAlive): boolean {
  return ownerSide(doc, unit) || grantFor(doc, unit, relationAlive) !== undefined;
}

/** Whether `unit` manages `doc` (sets, grants, removes it): it owns it, or its application does and it leads. */
export function manages(doc: SecretDoc, unit: SecretUnit, leaderOf: (app: string) => string | undefined): boolean {
  const o = doc.owner;
  return (o.kind === "unit" && o.unit === unit.name) || (o.kind === "application" && leaderOf(o.app) === unit.name);
}

/** Revisions older than the latest that no consumer tracks (the owner's secret-remove hooks; pruned for user secrets). */
export function obsoleteRevisions(doc: SecretDoc): number[] {
  const tracked = new Set(Object.values(doc.consumers).map((c) => c.revision));
  return doc.revisions.filter((r) => r.revision < doc.latest && !tracked.has(r.revision)).map((r) => r.revision);
}

/** Revisions whose expiry has passed at `now` (ms), or that the expiry worker marked. */
export function expiredRevisions(doc: SecretDoc, now: number): number[] {
  return doc.revisions
    .filter((r) => r.expired === true || (r.expireAt !== undefined && Date.parse(r.expireAt) <= now))
    .map((r) => r.revision);
}

/** How long after a rotate hook that set no new revision it is due again. */
export const ROTATE_RETRY_SECONDS = 300;

/**
 * Seconds between rotations under `policy` (undefined: never), or `testSeconds` for every policy
 * (the controller's `secretRotateSeconds`, so tests see a rotation within seconds).
 */
export function rotateIntervalSeconds(policy: RotatePolicy, testSeconds?: number): number | undefined {
  if (policy === "never") return undefined;
  return testSeconds ?? ROTATE_INTERVAL_SECONDS[policy];
}

/** When a secret with `policy` rotates next after `from` (ms), or undefined for `never`. */
export function nextRotation(policy: RotatePolicy, from: number, testSeconds?: number): string | undefined {
  const s = rotateIntervalSeconds(policy, testSeconds);
  return s === undefined ? undefined : new Date(from + s * 1000).toISOString();
}

/** What `steward secrets` and `show-secret` tell of a secret: metadata, never values. */
export function secretInfoOf(doc: SecretDoc): SecretInfo {
  const latest = doc.revisions.find((r) => r.revision === doc.latest);
  const trackedBy = new Map<number, string[]>();
  for (const [unit, c] of Object.entries(doc.consumers)) {
    const list = trackedBy.get(c.revision) ?? [];
    list.push(unit);
    trackedBy.set(c.revision, list);
  }
  return {
    uri: secretUri(doc.id),
    ...(doc.name !== undefined ? { name: doc.name } : {}),
    ...(doc.label !== undefined ? { label: doc.label } : {}),
    ...(doc.description !== undefined ? { description: doc.description } : {}),
    owner: ownerText(doc.owner),
    latestRevision: doc.latest,
    rotate: doc.rotate,
    ...(doc.nextRotateAt !== undefined ? { nextRotateAt: doc.nextRotateAt } : {}),
    ...(latest?.expireAt !== undefined ? { expireAt: latest.expireAt } : {}),
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
    grants: doc.grants.map((g) => ({ ...g })),
    revisions: doc.revisions.map((r) => ({
      revision: r.revision,
      createdAt: r.createdAt,
      ...(r.expireAt !== undefined ? { expireAt: r.expireAt } : {}),
      trackedBy: (trackedBy.get(r.revision) ?? []).sort(),
    })),
  };
}

/** Two grants are the same grant: same application, unit and relation. */
export function sameGrant(a: SecretGrantInfo, b: SecretGrantInfo): boolean {
  return a.app === b.app && a.unit === b.unit && a.relationId === b.relationId;
}
