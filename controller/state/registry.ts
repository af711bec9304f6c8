/**
 * The registry of document kinds: for every kind of key in the store, its path, which model it
 * belongs to, whether the state cache keeps it and whether a model export carries it (or why not).
 * keys.ts builds its keys and CACHED_PREFIXES from it; the cache classifies keys through
 * {@link classifyKey}; export and import walk {@link EXPORTED_KINDS}, and an import checks each
 * document against the schema registered with its kind (document-schemas.ts). A new kind of
 * document is added here once (test/state-registry.test.ts pins the layout).
 */
import type { z } from "zod";
import { DOCUMENT_SCHEMAS as S } from "./document-schemas";
import { modelDocOf, storedModelDocOf } from "./model-placement";
import { replicaCloudDocOf, storedReplicaCloudOf } from "./replica-placement";
import { storeFormatInUse } from "./store-format-in-use";

/** A path segment: a literal, the model's uuid, or the document's id (the rest of the key, slashes included). */
type Segment = string | typeof MODEL | typeof ID;
const MODEL = Symbol("model");
const ID = Symbol("id");

export type KindName =
  // controller-wide
  | "controller-info"
  | "token-key"
  | "user"
  | "revoked-token"
  | "registration"
  | "model-name"
  | "operator"
  | "operator-chunk"
  | "operator-upload"
  | "operator-quota-seq"
  | "credential"
  | "enrolment"
  | "request-record"
  | "restore-epoch"
  | "backup"
  | "backup-chunk"
  | "release"
  | "release-chunk"
  | "release-source"
  | "release-keys"
  | "cluster-leader"
  | "cluster-replica"
  | "cluster-member"
  | "cluster-spare"
  | "cluster-config"
  | "cluster-keeper"
  | "cluster-replica-cloud"
  | "cluster-upgrade"
  | "store-migration"
  | "migration"
  | "migration-report"
  | "migration-stage"
  | "migration-stage-chunk"
  | "migration-arrival"
  // one model's
  | "model"
  | "app"
  | "unit"
  | "unit-status"
  | "unit-failure"
  | "machine"
  | "machine-info"
  | "machine-install"
  | "machine-seq"
  | "relation-seq"
  | "task-seq"
  | "storage-seq"
  | "operator-seq"
  | "relation"
  | "scope"
  | "relation-data"
  | "leader"
  | "leader-data"
  | "leader-handover"
  | "ports"
  | "app-status"
  | "access"
  | "task-queue"
  | "task"
  | "operation"
  | "status-history"
  | "presence"
  | "imported-revisions"
  | "storage"
  | "storage-pool"
  | "unit-hook-state"
  | "secret"
  | "secret-revision"
  | "secret-seq";

export interface KindSpec {
  name: KindName;
  path: readonly Segment[];
  /** Whether the state cache keeps it in memory (some keys under cached prefixes pass through it unkept: sequences, failures). */
  cached: boolean;
  /**
   * Whether a model export carries it: true for one model's documents that must survive a move;
   * otherwise the reason it is left out.
   */
  exported: true | string;
  /** The shape of an exported kind's documents, checked on import (document-schemas.ts). */
  schema?: z.ZodType;
  /** Model kinds no agent view is built from: status reports and the like, written often and read by no agent. */
  notInAgentViews?: true;
  /**
   * The version of its documents' shape, when it has changed (1 before that); with `upgrade`, which
   * turns a document of any earlier version into the current one (and leaves a current one alone),
   * applied to what older stores, backups and exports hold.
   */
  version?: number;
  upgrade?: (doc: unknown) => unknown;
  /**
   * What is stored for a document of the current shape, when that is more than the document: during a
   * rolling upgrade, replicas of the previous build read the same store, so a changed kind is written
   * in both shapes (the previous build ignores the new field, `upgrade` drops the old ones on read).
   */
  encode?: (doc: never) => unknown;
  /**
   * The store format (api STORE_FORMAT) from which `encode` is no longer applied: once a store is
   * migrated to it, no replica that reads the previous shape can be running, and the migration
   * rewrites the kind's documents in their current shape alone.
   */
  encodeBefore?: number;
}

/** `exported` is the schema of an exported kind's documents, or why the kind is not exported. */
const kind = (
  name: KindName,
  path: Segment[],
  cached: boolean,
  exported: z.ZodType | string,
  notInAgentViews = false,
): KindSpec => ({
  name,
  path,
  cached,
  ...(typeof exported === "string" ? { exported } : { exported: true as const, schema: exported }),
  ...(notInAgentViews ? { notInAgentViews: true as const } : {}),
});
const CONTROLLER_WIDE = "controller-wide, not one model's";

/** Every kind; the order of model kinds is the order an export lists them (documents before what refers to them). */
export const KINDS: readonly KindSpec[] = [
  kind("controller-info", ["controller", "info"], true, CONTROLLER_WIDE),
  kind(
    "token-key",
    ["controller", "token-key"],
    true,
    "the controller's token signing key: secret, and the target has its own",
  ),
  kind("user", ["users", ID], true, CONTROLLER_WIDE + " (access names users; the target's admin grants them)"),
  kind("revoked-token", ["revoked-tokens", ID], true, CONTROLLER_WIDE),
  // Pending user registrations (user-ops.ts): in backups with the users they belong to, never in a model's export.
  kind("registration", ["registrations", ID], false, CONTROLLER_WIDE + " (belongs with the users)"),
  kind("model-name", ["model-names", ID], true, "rewritten by the import under the (possibly new) name"),
  kind("operator", ["operators", ID], true, "exported as the bundles the model's applications use, not as store keys"),
  kind("operator-chunk", ["blobs", "operators", ID], false, "exported as the bundles the model's applications use"),
  kind("operator-upload", ["blobs", "operator-uploads", ID], false, CONTROLLER_WIDE),
  // Every upload that counts against a quota writes it: two checked at once (on two replicas) cannot both pass.
  kind("operator-quota-seq", ["controller", "operator-quota-seq"], false, CONTROLLER_WIDE),
  kind(
    "credential",
    ["credentials", ID],
    false,
    "sealed with the source controller's key: named by reference only, never exported",
  ),
  kind(
    "enrolment",
    ["enrolments", ID],
    false,
    "one-time tokens for machines not yet enrolled, bound to the source controller",
  ),
  kind("request-record", ["requests", ID], false, "idempotency records of the source's requests"),
  // Written by a restore (controller/backup/): agents and caches resynchronise when it changes.
  kind("restore-epoch", ["controller", "restore"], true, CONTROLLER_WIDE),
  kind("backup", ["backups", ID], false, CONTROLLER_WIDE),
  kind("backup-chunk", ["blobs", "backups", ID], false, CONTROLLER_WIDE),
  // Signed releases the controller verified (controller/releases/), held for every replica; their files under /blobs/.
  kind("release", ["releases", ID], true, CONTROLLER_WIDE),
  kind("release-chunk", ["blobs", "releases", ID], false, CONTROLLER_WIDE),
  kind("release-source", ["controller", "release-source"], true, CONTROLLER_WIDE),
  // The keys trusted to sign releases, once a superuser changed them (controller.json holds the first set).
  kind("release-keys", ["controller", "release-keys"], true, CONTROLLER_WIDE),
  kind("cluster-leader", ["cluster", "leader"], true, CONTROLLER_WIDE),
  kind("cluster-replica", ["cluster", "replicas", ID], true, CONTROLLER_WIDE),
  kind("cluster-member", ["cluster", "members", ID], true, CONTROLLER_WIDE),
  kind("cluster-spare", ["cluster", "spares", ID], true, CONTROLLER_WIDE),
  kind("cluster-config", ["cluster", "config"], true, CONTROLLER_WIDE),
  kind("cluster-keeper", ["cluster", "keeper"], true, CONTROLLER_WIDE),
  // Version 2: a placement {substrate, credential, settings} instead of the kind's settings under its name.
  {
    ...kind("cluster-replica-cloud", ["cluster", "replica-cloud"], true, CONTROLLER_WIDE),
    version: 2,
    upgrade: replicaCloudDocOf,
    encode: storedReplicaCloudOf,
    encodeBefore: 2,
  },
  kind("cluster-upgrade", ["cluster", "upgrade"], true, CONTROLLER_WIDE),
  // The leader's migration of the store to a newer format (store-format.ts), kept once done for show-controller.
  kind("store-migration", ["controller", "store-migration"], true, CONTROLLER_WIDE),
  // Model migration (controller/migration/): by model uuid, so the record outlives the model it moved (redirects).
  kind("migration", ["migrations", ID], true, "the source's record of moving the model; the target keeps none"),
  kind("migration-report", ["migration-reports", ID], false, "agents' answers to one migration of the source"),
  kind("migration-stage", ["migration-stages", ID], false, "an import staged on the target, not yet a model"),
  kind(
    "migration-stage-chunk",
    ["blobs", "migration-stages", ID],
    false,
    "an import staged on the target, not yet a model",
  ),
  kind(
    "migration-arrival",
    ["migration-arrivals", ID],
    false,
    "the target's record that a migration brought the model",
  ),

  // Version 2: one `placement` {substrate, credential, settings} instead of substrate, credential and a bag per kind.
  {
    ...kind("model", ["models", MODEL], true, S["model"]),
    version: 2,
    upgrade: modelDocOf,
    encode: storedModelDocOf,
    encodeBefore: 2,
  },
  kind("access", ["models", MODEL, "access", ID], true, S["access"], true),
  // Sequences travel so that ids are never reused: agents remember relation ids and the last task id they ran.
  kind("machine-seq", ["models", MODEL, "seq", "machine"], false, S["machine-seq"]),
  kind("relation-seq", ["models", MODEL, "seq", "relation"], false, S["relation-seq"]),
  kind("task-seq", ["models", MODEL, "seq", "task"], false, S["task-seq"]),
  kind("storage-seq", ["models", MODEL, "seq", "storage"], false, S["storage-seq"]),
  kind(
    "operator-seq",
    ["models", MODEL, "seq", "operators"],
    false,
    "orders the model's operator quota checks (each writes it), so two deploys cannot both pass one; starts afresh anywhere",
  ),
  kind(
    "secret-seq",
    ["models", MODEL, "seq", "secrets"],
    false,
    "orders the model's secret additions and renames (each writes it), so two cannot both take one name or the last place; starts afresh anywhere",
  ),
  kind("machine", ["models", MODEL, "machines", ID], true, S["machine"]),
  kind("machine-info", ["models", MODEL, "machine-info", ID], true, S["machine-info"], true),
  kind("machine-install", ["models", MODEL, "machine-install", ID], true, S["machine-install"], true),
  kind("app", ["models", MODEL, "apps", ID], true, S["app"]),
  kind("app-status", ["models", MODEL, "app-status", ID], true, S["app-status"], true),
  kind("unit", ["models", MODEL, "units", ID], true, S["unit"]),
  // Storage instances (`data/0`) outlive their units: kept, detached, they travel with the model.
  kind("storage", ["models", MODEL, "storage", ID], true, S["storage"]),
  // Pools users made (create-storage-pool): the storage instances that name them travel with them.
  kind("storage-pool", ["models", MODEL, "storage-pools", ID], true, S["storage-pool"], true),
  kind("unit-status", ["models", MODEL, "unit-status", ID], true, S["unit-status"], true),
  kind("unit-failure", ["models", MODEL, "unit-failure", ID], false, S["unit-failure"]),
  // A copy of a pod's unit's hook state (its agent's, after each commit): a pod made again on an empty claim resumes from it.
  kind("unit-hook-state", ["models", MODEL, "unit-hook-state", ID], false, S["unit-hook-state"], true),
  kind("ports", ["models", MODEL, "unit-ports", ID], true, S["ports"], true),
  kind("relation", ["models", MODEL, "relations", ID], true, S["relation"]),
  kind("scope", ["models", MODEL, "relation-scope", ID], true, S["scope"]),
  kind("relation-data", ["models", MODEL, "relation-data", ID], true, S["relation-data"]),
  kind("leader", ["models", MODEL, "leaders", ID], true, S["leader"]),
  kind("leader-data", ["models", MODEL, "leader-data", ID], true, S["leader-data"]),
  // leader-resign's word on who may claim next, bound to a lease of one lease period (leadership-ops.ts).
  kind(
    "leader-handover",
    ["models", MODEL, "leader-handovers", ID],
    false,
    "lasts one leadership lease: a migrated model's units claim leadership afresh",
    true,
  ),
  kind("task-queue", ["models", MODEL, "task-queue", ID], true, S["task-queue"]),
  // Secrets (issue 33): metadata by id, cached for agent views; each revision's content apart, sealed, never cached.
  kind("secret", ["models", MODEL, "secrets", ID], true, S["secret"]),
  kind(
    "secret-revision",
    ["models", MODEL, "secret-revisions", ID],
    false,
    "sealed with the source controller's key: an export carries each revision's content sealed anew for its reader, not these keys",
    true,
  ),
  // Written by an import (imported-revisions.ts); an export carries the versions it holds in its own form.
  kind(
    "imported-revisions",
    ["models", MODEL, "imported-revisions"],
    true,
    "folded into the export's databag versions",
  ),
  kind("task", ["tasks", MODEL, ID], false, S["task"]),
  kind("operation", ["operations", MODEL, ID], false, S["operation"]),
  kind("status-history", ["status-history", MODEL, ID], false, S["status-history"]),
  // Presence is bound to a lease of the source replica that held the agent's connection: on the
  // target, the agent's own connection makes it anew.
  kind(
    "presence",
    ["presence", MODEL, ID],
    true,
    "bound to the lease of the source replica holding the agent's connection; made anew when the agent connects",
    true,
  ),
];

export const KIND: Readonly<Record<KindName, KindSpec>> = Object.fromEntries(KINDS.map((k) => [k.name, k])) as Record<
  KindName,
  KindSpec
>;

/** The kinds that belong to one model (their path names the model). */
export const MODEL_KINDS: readonly KindSpec[] = KINDS.filter((k) => k.path.includes(MODEL));
/** The model kinds an export carries. */
export const EXPORTED_KINDS: readonly KindSpec[] = MODEL_KINDS.filter((k) => k.exported === true);

export interface ClassifiedKey {
  kind: KindSpec;
  /** The model's uuid, for model kinds. */
  model?: string;
  /** The document's id: the rest of the key after the kind's fixed segments ("" for singletons). */
  id: string;
}

/** The key of a document of `spec` in model `model` (ignored by controller kinds) with id `id`. */
export function keyOf(spec: KindSpec, model: string, id = ""): string {
  return "/" + spec.path.map((s) => (s === MODEL ? model : s === ID ? id : s)).join("/");
}

/**
 * What the store holds for `doc` of kind `spec`: its JSON, in both shapes when the kind has an
 * `encode` and the store's `format` (by default the one this process's store is at) still wants both.
 */
export function storedValue(spec: KindSpec, doc: unknown, format = storeFormatInUse()): string {
  const both = spec.encode && format < (spec.encodeBefore ?? Infinity);
  return JSON.stringify(both ? spec.encode!(doc as never) : doc);
}

/** The prefix under which every document of `spec` in `model` lives (for a range read). */
export function prefixOf(spec: KindSpec, model: string): string {
  const i = spec.path.indexOf(ID);
  if (i < 0) return keyOf(spec, model);
  return (
    "/" +
    spec.path
      .slice(0, i)
      .map((s) => (s === MODEL ? model : s))
      .join("/") +
    "/"
  );
}

/**
 * What `key` is, or undefined for a key no kind describes. Matched segment by segment, literals
 * before the model or id wildcard, so `/models/<m>/seq/task` is a sequence, not some id.
 */
export function classifyKey(key: string): ClassifiedKey | undefined {
  if (!key.startsWith("/")) return undefined;
  const parts = key.slice(1).split("/");
  const candidates = BY_ROOT.get(parts[0]!);
  if (!candidates) return undefined;
  for (const spec of candidates) {
    const m = match(spec.path, parts);
    if (m) return { kind: spec, ...m };
  }
  return undefined;
}

function match(path: readonly Segment[], parts: string[]): { model?: string; id: string } | undefined {
  let model: string | undefined;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i]!;
    if (seg === ID) {
      const id = parts.slice(i).join("/");
      return id === "" ? undefined : { ...(model !== undefined ? { model } : {}), id };
    }
    const part = parts[i];
    if (part === undefined || part === "") return undefined;
    if (seg === MODEL) model = part;
    else if (seg !== part) return undefined;
  }
  return parts.length === path.length ? { ...(model !== undefined ? { model } : {}), id: "" } : undefined;
}

/** Kinds by their first segment, those with more literal segments first (they are more specific). */
const BY_ROOT = new Map<string, KindSpec[]>();
for (const spec of KINDS) {
  const root = spec.path[0] as string;
  const list = BY_ROOT.get(root) ?? [];
  list.push(spec);
  BY_ROOT.set(root, list);
}
for (const list of BY_ROOT.values()) list.sort((a, b) => literals(b) - literals(a));
function literals(spec: KindSpec): number {
  return spec.path.filter((s) => typeof s === "string").length;
}

/** A relation-scope id `<relation>/<unit>` split. */
export function scopeId(id: string): { relation: number; unit: string } {
  const slash = id.indexOf("/");
  return { relation: Number(id.slice(0, slash)), unit: id.slice(slash + 1) };
}

/** A task-queue id `<app>/<n>/<task>` split. */
export function queueId(id: string): { unit: string; task: number } {
  const slash = id.lastIndexOf("/");
  return { unit: id.slice(0, slash), task: Number(id.slice(slash + 1)) };
}
