/**
 * The model export format: one model as one JSON document, versioned as a whole. Documents are
 * grouped by the registry's kind names (registry.ts), each a map of id → the document as stored,
 * so a new kind of document travels by being marked exported there.
 *
 * Version 2 (current) keeps databags exactly as stored and the versions agents last saw of them in
 * a `versions` section of their own. Version 1 carried each databag as `{data, version}` and named
 * the ports kind `unit-ports` (its store path); {@link upgradeModelExport} turns a v1 document into
 * v2, touching only that model's data. Version 3 is version 2 with the model document's placement
 * (registry.ts: the `model` kind's shape version 2); kinds whose shape changed upgrade their
 * documents from any version (their `upgrade`), so v1, v2 and documents of older shape all import.
 *
 * Version 4 is version 3 that may carry storage instances and the pools users made for them (the
 * `storage`, `storage-seq` and `storage-pool` kinds, issue 32): a v3 reader would refuse them as
 * unknown kinds, and one that dropped them would lose track of volumes that hold users' data. Pools
 * came after instances but before any controller that reads v4 was released, so they are v4 too.
 *
 * Version 5 is version 4 that may carry secrets (issue 33): their documents (kind `secret`), and a
 * `secrets` section with each revision's content sealed for the reader (a migration target's key or
 * a passphrase) and how (secret-transfer.ts). A reader of v4 or before is sent its version only while the model has no
 * secrets; with any, the export is refused before anything moves (the reader could not open them).
 *
 * Written back ({@link exportForReader}): a controller of the previous build reads v1 and v2 only and
 * refuses v3 ("newer than this controller reads"), so a migration to one (its hello names no
 * `modelExport`) sends v2, the model document in its previous shape; nothing else differs. A reader
 * of v2 or v3 is sent that version only while the model has no storage and no made pools; with either,
 * the export is refused before anything moves, naming the reason (the reader has no storage to keep it in).
 *
 * {@link checkModelExport} refuses what a hostile or damaged file could hold before any of it is
 * used: the wrong shape, unknown kinds, ids that are not names, prototype keys, future versions,
 * and any document that does not fit its kind's schema (document-schemas.ts).
 */
import type { Bundle } from "../../api";
import { StewardError, describeIssues } from "../../api";
import type { ModelDoc } from "./documents";
import { previousModelShapeOf } from "./model-placement";
import type { KindName, KindSpec } from "./registry";
import { EXPORTED_KINDS, KIND, classifyKey, keyOf } from "./registry";
import type { ExportSecrets } from "./secret-transfer";

export const MODEL_EXPORT_FORMAT = "steward-model";
export const MODEL_EXPORT_VERSION = 5;
/** The newest version a controller that does not say (the previous build: its hello has no `modelExport`) reads. */
export const PREVIOUS_BUILD_MODEL_EXPORT_VERSION = 2;
/** The oldest version this controller writes. */
export const OLDEST_WRITTEN_MODEL_EXPORT_VERSION = 2;
/** Largest export an import takes (operators included), as JSON. */
export const MAX_MODEL_EXPORT_BYTES = 64 * 1024 * 1024;

export interface ModelExport {
  format: typeof MODEL_EXPORT_FORMAT;
  version: typeof MODEL_EXPORT_VERSION;
  exportedAt: string;
  /** Where it came from: the controller, and the store revision the whole document was read at. */
  source: { controller: string; controllerName: string; revision: number };
  /** Exported documents by kind, then id (as in the store key); the model document under kind `model`, id "". */
  documents: Partial<Record<KindName, Record<string, unknown>>>;
  /**
   * The versions agents were served of each databag (`<rel>/unit/<unit>`, `<rel>/app/<app>`,
   * `leader/<app>`), and of the store as a whole: what their hook state compares against.
   */
  versions: { revision: number; bags: Record<string, number> };
  /** The operator bundles the model's applications use, by content hash. */
  operators: Record<string, Bundle>;
  /** What the document names but does not carry: the sealed credential (add it on the target first). */
  references: { credential?: string };
  /** The secrets' revisions' content, sealed for the reader, and how; absent when the model has none (secret-transfer.ts). */
  secrets?: ExportSecrets;
}

/** An export as written for a reader of an older version (`version` below the current one). */
export type WrittenModelExport = Omit<ModelExport, "version"> & { version: number };

/**
 * The version to write for a reader that reads up to `reads` (undefined: the previous build's). Refuses
 * a reader of nothing this controller writes.
 */
export function exportVersionFor(reads: number | undefined): number {
  const version = Math.min(MODEL_EXPORT_VERSION, reads ?? PREVIOUS_BUILD_MODEL_EXPORT_VERSION);
  if (!Number.isInteger(version) || version < OLDEST_WRITTEN_MODEL_EXPORT_VERSION)
    throw new StewardError(
      "invalid-request",
      `the other controller reads model exports up to version ${String(reads)}; this one writes ${OLDEST_WRITTEN_MODEL_EXPORT_VERSION} to ${MODEL_EXPORT_VERSION}: upgrade it first`,
    );
  return version;
}

/**
 * `doc` (current) written as `version`: v4 is v5 without secrets (refused when the model has any), v3 is v4 without storage (refused when the model has any:
 * the reader could not keep it), v2 is v3 with the model document in its previous shape
 * (model-placement.ts). Reading it back ({@link upgradeModelExport}) gives `doc` again.
 */
export function exportForReader(doc: ModelExport, version: number): WrittenModelExport {
  // Every export leaves through here: values still sealed with this controller's key never do.
  if (doc.secrets?.sealing.kind === "controller")
    throw new Error("an export's secret values must be sealed for its reader before it is written (sealExportSecrets)");
  if (version === MODEL_EXPORT_VERSION) return doc;
  if (version !== 2 && version !== 3 && version !== 4)
    throw new Error(`model export version ${version} is not written by this controller`);
  const secrets = Object.keys(doc.documents.secret ?? {});
  if (secrets.length > 0)
    throw new StewardError(
      "invalid-request",
      `the model has secrets (${secrets.length} documents) and the other controller reads model exports up to version ${version}, which carry none: upgrade it first, so that the secrets move with the model`,
      { details: { field: "export", version, secrets: secrets.length } },
    );
  const { secrets: _none, ...withoutSecrets } = doc;
  if (version === 4) return { ...withoutSecrets, version };
  const storage = [...Object.keys(doc.documents.storage ?? {}), ...Object.keys(doc.documents["storage-pool"] ?? {})];
  if (storage.length > 0)
    throw new StewardError(
      "invalid-request",
      `the model has storage (${storage.slice(0, 3).join(", ")}${storage.length > 3 ? ", …" : ""}) and the other controller reads model exports up to version ${version}, which carry none: upgrade it first, so that the storage records move with the model`,
      { details: { field: "export", version, storage: storage.length } },
    );
  if (version === 3) return { ...withoutSecrets, version };
  const model = doc.documents.model?.[""] as ModelDoc | undefined;
  return {
    ...withoutSecrets,
    version,
    documents: { ...doc.documents, ...(model ? { model: { "": previousModelShapeOf(model) } } : {}) },
  };
}

/** A refusal of the import document, naming what is wrong (400). */
function bad(what: string, details: Record<string, unknown> = {}): StewardError {
  return new StewardError("invalid-request", `model export: ${what}`, { details: { field: "export", ...details } });
}

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);
const MAX_DEPTH = 32;

/** Refuses prototype keys anywhere (they would rewrite the prototype of whatever a key is copied into) and absurd nesting. */
function checkKeys(v: unknown, path: string, depth: number): void {
  if (depth > MAX_DEPTH) throw bad(`nested deeper than ${MAX_DEPTH} levels at ${path}`);
  if (Array.isArray(v)) {
    v.forEach((x, i) => checkKeys(x, `${path}[${i}]`, depth + 1));
    return;
  }
  if (v === null || typeof v !== "object") return;
  for (const k of Object.keys(v)) {
    if (FORBIDDEN_KEYS.has(k)) throw bad(`key "${k}" at ${path} is not allowed`, { path });
    checkKeys((v as Record<string, unknown>)[k], `${path}.${k}`, depth + 1);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
/** One segment of an id: names, unit numbers, padded task ids. */
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._@+:-]{0,99}$/;

/** Upgrades `raw` (parsed JSON of any version this controller reads) to the current version, after checking its envelope. */
export function upgradeModelExport(raw: unknown): ModelExport {
  checkKeys(raw, "$", 0);
  if (!isObject(raw)) throw bad("not a JSON object");
  if (raw.format !== MODEL_EXPORT_FORMAT)
    throw bad(
      `"format" must be "${MODEL_EXPORT_FORMAT}", got ${JSON.stringify(raw.format)?.slice(0, 60) ?? "nothing"}`,
    );
  const version = raw.version;
  if (typeof version !== "number" || !Number.isInteger(version) || version < 1)
    throw bad(`"version" must be a whole number from 1, got ${JSON.stringify(version)?.slice(0, 60) ?? "nothing"}`);
  if (version > MODEL_EXPORT_VERSION) {
    throw bad(
      `format version ${version} is newer than this controller reads (1 to ${MODEL_EXPORT_VERSION}): import it into a controller of the version that exported it or later`,
      { version, supported: MODEL_EXPORT_VERSION },
    );
  }
  let doc = raw;
  if (version === 1) doc = upgradeV1(doc);
  // v2 → v3 is the model's placement, upgraded with every kind's documents in checkModelExport; v3 → v4 adds kinds only.
  doc = { ...doc, version: MODEL_EXPORT_VERSION };
  return checkModelExport(doc);
}

/**
 * v1 → v2: databags split into the bag as stored and its version (moved to `versions.bags`);
 * `unit-ports` renamed `ports`; the store revision moved from `source.revision` alone into `versions.revision` too.
 */
function upgradeV1(v1: Record<string, unknown>): Record<string, unknown> {
  const documents = isObject(v1.documents) ? { ...v1.documents } : undefined;
  if (!documents) throw bad(`"documents" must be an object`);
  const source = isObject(v1.source) ? v1.source : {};
  const bags: Record<string, number> = {};
  const split = (kind: string, versionKey: (id: string) => string): void => {
    const group = documents[kind];
    if (group === undefined) return;
    if (!isObject(group)) throw bad(`documents["${kind}"] must be an object`);
    const out: Record<string, unknown> = {};
    for (const [id, entry] of Object.entries(group)) {
      if (!isObject(entry) || !isObject(entry.data) || typeof entry.version !== "number")
        throw bad(`v1 documents["${kind}"]["${id}"] must be {data, version}`);
      out[id] = entry.data;
      bags[versionKey(id)] = entry.version;
    }
    documents[kind] = out;
  };
  split("relation-data", (id) => id);
  split("leader-data", (id) => `leader/${id}`);
  if ("unit-ports" in documents) {
    documents.ports = documents["unit-ports"];
    delete documents["unit-ports"];
  }
  const revision = typeof source.revision === "number" ? source.revision : 0;
  return { ...v1, version: 2, documents, versions: { revision, bags } };
}

/** Refuses a document that does not fit its kind's schema, naming its place in the file and the field. */
function checkDocument(spec: KindSpec, id: string, value: unknown): void {
  const res = spec.schema?.safeParse(value);
  if (!res || res.success) return;
  const issue = res.error.issues[0]!;
  const field = issue.path.map(String).join(".");
  throw bad(
    `documents["${spec.name}"][${JSON.stringify(id)}] does not fit a ${spec.name} document: ${describeIssues(res.error.issues)}`,
    { kind: spec.name, id, ...(field ? { path: field } : {}) },
  );
}

/** Checks a v2 document's shape and every id in it; returns it typed. */
export function checkModelExport(doc: Record<string, unknown>): ModelExport {
  for (const field of ["documents", "versions", "operators", "references", "source"])
    if (!isObject(doc[field])) throw bad(`"${field}" must be an object`);
  const documents = doc.documents as Record<string, unknown>;
  const exportedNames = new Set<string>(EXPORTED_KINDS.map((k) => k.name));
  for (const [kind, group] of Object.entries(documents)) {
    if (!exportedNames.has(kind)) throw bad(`unknown kind of document "${kind}"`, { kind });
    if (!isObject(group)) throw bad(`documents["${kind}"] must be an object`, { kind });
    const spec = KIND[kind as KindName];
    // Documents of an older shape (an export of the previous build) in the current one, then checked as such.
    if (spec.upgrade)
      for (const [id, value] of Object.entries(group)) if (isObject(value)) group[id] = spec.upgrade(value);
    for (const id of Object.keys(group)) {
      // Each id must be names joined by "/" and must read back as this very kind: no id may reach another key.
      const ok =
        (id === "" || id.split("/").every((s) => SEGMENT.test(s))) && classifyKey(keyOf(spec, "m", id))?.kind === spec;
      if (!ok)
        throw bad(
          `documents["${kind}"] has an id that is not valid for that kind: ${JSON.stringify(id.slice(0, 80))}`,
          { kind },
        );
    }
    for (const [id, value] of Object.entries(group)) checkDocument(spec, id, value);
  }
  const model = (documents.model as Record<string, unknown> | undefined)?.[""];
  if (!isObject(model)) throw bad(`documents.model[""] (the model itself) is missing`);
  if (
    typeof model.uuid !== "string" ||
    !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(model.uuid)
  )
    throw bad("the model's uuid is not a uuid");
  if (typeof model.name !== "string") throw bad("the model has no name");
  const versions = doc.versions as Record<string, unknown>;
  if (
    typeof versions.revision !== "number" ||
    !isObject(versions.bags) ||
    !Object.values(versions.bags).every((v) => typeof v === "number" && Number.isSafeInteger(v) && v >= 0)
  ) {
    throw bad(`"versions" must be {revision: number, bags: {id: number}}`);
  }
  if (doc.secrets !== undefined) checkSecretsSection(doc.secrets);
  for (const [hash, bundle] of Object.entries(doc.operators as Record<string, unknown>)) {
    if (!isObject(bundle) || !Array.isArray(bundle.files))
      throw bad(`operators["${hash.slice(0, 80)}"] is not an operator bundle`);
  }
  return doc as unknown as ModelExport;
}

const B64URL_32 = /^[A-Za-z0-9_-]{43}$/;

/** The `secrets` section: sealed values by `<id>/<revision>`, and how they are sealed, in a shape security/transfer-sealing.ts writes. */
function checkSecretsSection(secrets: unknown): void {
  const revisions = isObject(secrets) ? secrets.revisions : undefined;
  if (
    !isObject(revisions) ||
    !Object.entries(revisions).every(
      ([ref, v]) => /^[0-9a-v]{20}\/[1-9][0-9]{0,15}$/.test(ref) && typeof v === "string" && v.length <= 200_000,
    )
  )
    throw bad(`"secrets.revisions" must map "<secret id>/<revision>" to a sealed value`);
  const sealing = isObject(secrets) ? secrets.sealing : undefined;
  const ok =
    isObject(sealing) &&
    ((sealing.kind === "x25519" &&
      typeof sealing.recipient === "string" &&
      B64URL_32.test(sealing.recipient) &&
      typeof sealing.ephemeral === "string" &&
      B64URL_32.test(sealing.ephemeral)) ||
      (sealing.kind === "passphrase" &&
        isObject(sealing.kdf) &&
        sealing.kdf.name === "scrypt" &&
        typeof sealing.keyCheck === "string"));
  if (!ok) throw bad(`"secrets.sealing" must be {kind: "x25519" | "passphrase", ...}`);
}
