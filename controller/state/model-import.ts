/**
 * Imports a model export into this controller's store. The model itself is written in ONE
 * transaction that holds only if neither its name nor its uuid exists: a crash or a refusal leaves
 * nothing of it. Before that transaction, content-addressed operator bundles are stored (an unused
 * one is collected later) and each leader gets a lease of this store (an unused one expires).
 *
 * Agents keep their credentials (the machines' hashes travel as stored) and their hook state: the
 * databags keep the versions they were served on the source (imported-revisions.ts), and the
 * sequences travel, so no id is reused and no hook runs again.
 *
 * What the file says is not trusted: every document fits its kind's schema (model-format.ts), a
 * local machine's directory passes this controller's rule (ImportDeps.checkLocalDir), and access
 * for a user this controller does not have is dropped (it would go to whoever later gets the name).
 * A copy under a new name beside its original gets an identity of its own (see {@link asCopy}).
 *
 * Secret values arrive sealed for this controller's import (a migration's key, a file's passphrase)
 * and are sealed with this controller's own key before the transaction (secret-transfer.ts).
 */
import { randomUUID } from "node:crypto";
import type { Bundle } from "../../api";
import { Name, StewardError, alreadyExists, bundleHash, contractOf } from "../../api";
import type { Compare, Op, Store } from "../store";
import { ValueTooLargeError, absent, unchanged } from "../store";
import type { ApplicationDoc, LeaderDoc, MachineDoc, ModelDoc, RelationDoc, UnitDoc } from "./documents";
import type { ImportedRevisionsDoc } from "./imported-revisions";
import { keys } from "./keys";
import type { ModelExport } from "./model-format";
import { upgradeModelExport } from "./model-format";
import type { TransferSealing } from "../security/transfer-sealing";
import type { ValueCipher } from "./secret-transfer";
import { importSecretRevisions } from "./secret-transfer";
import type { KindName } from "./registry";
import { KIND, keyOf, storedValue } from "./registry";
import { decode, docs, put } from "./doc-kinds";

/** etcd is run with --max-txn-ops 25000 and --max-request-bytes 10 MiB (cluster/etcd-member.ts): stay under both. */
export const MAX_IMPORT_TXN_OPS = 20_000;
export const MAX_IMPORT_TXN_BYTES = 8 * 1024 * 1024;

export interface ImportDeps {
  store: Store;
  /** Stores an operator bundle (StateOps.putOperator: validated, quota-checked, idempotent by hash). */
  putOperator: (bundle: Bundle) => Promise<unknown>;
  leaseSeconds: number;
  /** The problem with a local machine's directory named by the file, if any (substrates/local/dir-rule.ts). */
  checkLocalDir: (dir: string, model: string, machine: string) => Promise<string | undefined>;
  /** This controller's sealer (security/sealing.ts): imported secret values are sealed with it. */
  sealer?: ValueCipher;
}

export interface ImportResult {
  name: string;
  uuid: string;
  revision: number;
  /** Documents written, by kind. */
  documents: Partial<Record<KindName, number>>;
  /** The version of the file before it was upgraded. */
  fromVersion: number;
  /** Users the model's access names that this controller does not have: their access was dropped (add the user, then grant). */
  missingUsers: string[];
  /** Set when the model was imported as a copy beside its original here: the original's uuid (the copy has a new one). */
  copyOf?: string;
}

function bad(what: string): StewardError {
  return new StewardError("invalid-request", `model export: ${what}`, { details: { field: "export" } });
}

export interface ImportOptions {
  /** Imports under this name instead of the export's. */
  name?: string;
  /** More for the model's one transaction to check and do (a migration's activation takes its staged copy away in it). */
  alsoCompare?: Compare[];
  alsoDo?: Op[];
  /** Why the transaction can fail besides the name or uuid being taken, for the error. */
  refusedBecause?: string;
  /** Opens the export's secret values, given how they are sealed (a passphrase's, a migration key's). */
  openSecrets?: (sealing: TransferSealing) => Promise<ValueCipher> | ValueCipher;
}

export async function importModel(deps: ImportDeps, raw: unknown, opts: ImportOptions = {}): Promise<ImportResult> {
  const fromVersion = (raw as { version?: number } | null)?.version ?? 0;
  let doc = upgradeModelExport(raw);
  const { store } = deps;
  const original = (doc.documents.model![""] as ModelDoc).uuid;
  // Imported under a new name where the original lives: a copy, which must not pass for it.
  const copy = opts.name !== undefined && (await store.get(keys.model(original))) !== undefined;
  if (copy) doc = asCopy(doc, randomUUID());
  const model = { ...(doc.documents.model![""] as ModelDoc) };
  const uuid = model.uuid;
  if (opts.name !== undefined) model.name = opts.name;
  if (!Name.safeParse(model.name).success) throw bad(`the model name "${model.name.slice(0, 80)}" is not a valid name`);
  if (model.life !== "alive") throw bad(`the model is ${String(model.life)}: only a living model can be imported`);
  checkReferences(doc);
  await checkLocalDirs(deps.checkLocalDir, doc);
  // Opened and sealed with this controller's key before anything is written (a wrong passphrase writes nothing).
  const secretRevisions = await importSecretRevisions(doc, uuid, deps.sealer, opts.openSecrets);

  // Clear refusals before anything is written; the transaction's compares hold the line against races.
  if (await store.get(keys.modelName(model.name))) throw alreadyExists("model", model.name);
  if (await store.get(keys.model(uuid)))
    throw new StewardError(
      "already-exists",
      `a model with uuid ${uuid} already exists on this controller (imported before, or the model it came from): import it with --name NEW to make a copy with its own identity`,
      { details: { kind: "model", name: uuid } },
    );
  const compare: Compare[] = [
    absent(keys.modelName(model.name)),
    absent(keys.model(uuid)),
    ...(opts.alsoCompare ?? []),
  ];

  // Access only for users this controller has, and only while they stay (a user removed meanwhile fails the transaction).
  const missingUsers: string[] = [];
  for (const user of Object.keys(doc.documents.access ?? {})) {
    const kv = await store.get(keys.user(user));
    if (kv) compare.push(unchanged(kv.key, kv.modRevision));
    else missingUsers.push(user);
  }
  const ops: Op[] = [...(opts.alsoDo ?? [])];
  // Written first: the cache reads versions for the bags that follow it in the same revision.
  const origin: ImportedRevisionsDoc = { sourceRevision: doc.versions.revision, versions: doc.versions.bags };
  ops.push(put(docs.importedRevisions, uuid, origin));
  ops.push(put(docs.modelName, model.name, uuid));
  ops.push(...secretRevisions);

  const { credential, substrate } = model.placement;
  if (credential) {
    const c = await store.get(keys.credential(credential));
    if (!c)
      throw bad(
        `the model uses credential "${credential}", which this controller does not have: add it (steward add-credential ${credential}) and import again`,
      );
    const cred = decode(docs.credential, c.value);
    if (cred.substrate !== substrate)
      throw bad(`credential "${credential}" here is for ${cred.substrate}, but the model's substrate is ${substrate}`);
    compare.push(unchanged(keys.credential(credential), c.modRevision));
    ops.push(put(docs.credential, credential, { ...cred, models: [...cred.models, uuid] }));
  }

  for (const [hash, bundle] of Object.entries(doc.operators)) {
    if (bundleHash(bundle) !== hash)
      throw bad(`operator bundle "${hash.slice(0, 80)}" does not have the content its hash names`);
  }
  const counts: Partial<Record<KindName, number>> = {};
  const leases: string[] = [];
  try {
    for (const [kind, group] of Object.entries(doc.documents) as [KindName, Record<string, unknown>][]) {
      for (const [id, value] of Object.entries(group)) {
        if (kind === "access" && missingUsers.includes(id)) continue;
        let v = value;
        if (kind === "model") v = model;
        if (kind === "leader") {
          // At least as long as what the source granted (its agents count on it from their last renewal), and recorded.
          const { shrinkAt: _, ...leader } = value as LeaderDoc;
          const seconds = Math.max(leader.leaseSeconds ?? deps.leaseSeconds, deps.leaseSeconds);
          const lease = await store.grantLease(seconds);
          leases.push(lease.id);
          v = { ...leader, lease: lease.id, leaseSeconds: seconds };
          ops.push({ type: "put", key: keyOf(KIND.leader, uuid, id), value: JSON.stringify(v), lease: lease.id });
        } else {
          ops.push({ type: "put", key: keyOf(KIND[kind], uuid, id), value: storedValue(KIND[kind], v) });
        }
        counts[kind] = (counts[kind] ?? 0) + 1;
      }
    }
    const bytes = ops.reduce((n, op) => n + (op.type === "put" ? op.key.length + op.value.length : 0), 0);
    if (ops.length > MAX_IMPORT_TXN_OPS || bytes > MAX_IMPORT_TXN_BYTES) {
      throw bad(
        `the model is too large to import in one transaction (${ops.length} documents, ${bytes} bytes; at most ${MAX_IMPORT_TXN_OPS} and ${MAX_IMPORT_TXN_BYTES})`,
      );
    }
    // Bundles before the model: an application must never name an operator the store lacks.
    for (const bundle of Object.values(doc.operators)) await deps.putOperator(bundle);
    const res = await store.txn({ compare, success: ops });
    if (!res.succeeded)
      throw new StewardError(
        "already-exists",
        `model "${model.name}" (or its uuid) was created while it was being imported, or a user it grants access to was removed${opts.refusedBecause ? `, or ${opts.refusedBecause}` : ""}`,
        { details: { kind: "model", name: model.name } },
      );
    return {
      name: model.name,
      uuid,
      revision: res.revision,
      documents: counts,
      fromVersion,
      missingUsers,
      ...(copy ? { copyOf: original } : {}),
    };
  } catch (err) {
    for (const l of leases) await store.revokeLease(l).catch(() => undefined);
    if (err instanceof ValueTooLargeError)
      throw bad(`a document is too large for this store (${err.bytes} bytes, at most ${err.limit})`);
    throw err;
  }
}

/**
 * The export as a copy of its model under `uuid`. Its machines are new machines: no agent of the
 * original may log in as one of them (credential hashes dropped), none runs in an original's
 * directory, and the instances and agent records of the original are not the copy's (install and
 * machine-info records, agents' hook state dropped), so the copy's substrate gives them agents of
 * their own as for any new machine. A kubernetes copy would share the original's namespace: refused.
 */
function asCopy(doc: ModelExport, uuid: string): ModelExport {
  const model = doc.documents.model![""] as ModelDoc;
  const { substrate, settings } = model.placement;
  if (contractOf(substrate).provisions === "pods")
    throw bad(
      `a copy of ${substrate} model "${model.name}" would share namespace "${String((settings as { namespace?: string }).namespace)}" with the original here; import it on another controller, or remove the original first`,
    );
  const machines = Object.fromEntries(
    Object.entries((doc.documents.machine ?? {}) as Record<string, MachineDoc>).map(([id, m]) => {
      const { credentialHash: _hash, localDir: _dir, ...rest } = m;
      return [id, rest];
    }),
  );
  const { "machine-install": _install, "machine-info": _info, "unit-hook-state": _hooks, ...kept } = doc.documents;
  return {
    ...doc,
    documents: { ...kept, model: { "": { ...model, uuid } }, ...(doc.documents.machine ? { machine: machines } : {}) },
  };
}

/** Refuses a machine directory that is not a local machine's or that this controller's rule does not allow. */
export async function checkLocalDirs(check: ImportDeps["checkLocalDir"], doc: ModelExport): Promise<void> {
  const uuid = (doc.documents.model![""] as ModelDoc).uuid;
  for (const [id, m] of Object.entries((doc.documents.machine ?? {}) as Record<string, MachineDoc>)) {
    if (m.localDir === undefined) continue;
    if (!contractOf(m.substrate).onControllerHost)
      throw bad(`documents["machine"]["${id}"].localDir is only for local machines, not ${m.substrate}`);
    const problem = await check(m.localDir, uuid, id);
    if (problem)
      throw new StewardError("invalid-request", `model export: documents["machine"]["${id}"].localDir: ${problem}`, {
        details: { field: "export", kind: "machine", id, path: "localDir" },
      });
  }
}

/** Refuses a model whose documents point at what it does not hold (views would break on them). */
function checkReferences(doc: ModelExport): void {
  const d = doc.documents;
  const apps = (d.app ?? {}) as Record<string, ApplicationDoc>;
  const units = (d.unit ?? {}) as Record<string, UnitDoc>;
  const machines = (d.machine ?? {}) as Record<string, MachineDoc>;
  const shape = (ok: boolean, what: string): void => {
    if (!ok) throw bad(what);
  };
  for (const [id, a] of Object.entries(apps)) {
    shape(
      typeof a === "object" &&
        a !== null &&
        a.name === id &&
        typeof a.operator?.hash === "string" &&
        typeof a.config === "object" &&
        a.config !== null,
      `application "${id}" is malformed`,
    );
    shape(
      a.operator.hash in doc.operators,
      `application "${id}" uses operator ${a.operator.hash}, which the export does not carry`,
    );
  }
  for (const [id, m] of Object.entries(machines))
    shape(
      typeof m === "object" && m !== null && m.id === id && typeof m.substrate === "string",
      `machine "${id}" is malformed`,
    );
  for (const [id, u] of Object.entries(units)) {
    shape(
      typeof u === "object" &&
        u !== null &&
        u.name === id &&
        typeof u.app === "string" &&
        typeof u.machine === "string",
      `unit "${id}" is malformed`,
    );
    shape(u.app in apps, `unit "${id}" belongs to application "${u.app}", which the export does not carry`);
    shape(u.machine in machines, `unit "${id}" is on machine "${u.machine}", which the export does not carry`);
  }
  for (const [id, r] of Object.entries((d.relation ?? {}) as Record<string, RelationDoc>)) {
    shape(
      typeof r === "object" &&
        r !== null &&
        String(r.id) === id &&
        Array.isArray(r.endpoints) &&
        r.endpoints.every((e) => typeof e?.app === "string" && e.app in apps),
      `integration ${id} is malformed or names an application the export does not carry`,
    );
  }
  for (const kind of ["relation-data", "leader-data"] as const) {
    for (const [id, bag] of Object.entries(d[kind] ?? {})) {
      shape(
        typeof bag === "object" &&
          bag !== null &&
          !Array.isArray(bag) &&
          Object.values(bag).every((v) => typeof v === "string"),
        `${kind} "${id}" must map names to strings`,
      );
    }
  }
  for (const [app, l] of Object.entries((d.leader ?? {}) as Record<string, LeaderDoc>)) {
    shape(typeof l?.unit === "string" && units[l.unit]?.app === app, `the leader of "${app}" is not one of its units`);
  }
}
