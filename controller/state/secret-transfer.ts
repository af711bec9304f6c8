/**
 * Secret values as a model export carries them (issue 33). In the store each revision's content is
 * sealed with the controller's own key (`secret/<id>/<rev>`), which no other controller holds; an
 * export leaves with every such value opened and sealed again for its reader (a migration target's
 * X25519 key, or a file's passphrase: security/transfer-sealing.ts), and says how in its `secrets`
 * section. The import opens each with the reader's key and seals it with its own before anything is
 * written. So no value is in the clear in an export file, a migration's stream or its staged copy,
 * and none opens with the store of the controller it came from.
 *
 * {@link SEALED_SECRET_FIELDS} names where sealed values sit in the exported documents: the kinds
 * the secrets' documents are stored as (registry.ts) and the field of each.
 */
import { StewardError } from "../../api";
import type { TransferSealing } from "../security/transfer-sealing";
import { sealerForPassphrase, sealerToPublicKey } from "../security/transfer-sealing";
import type { ModelExport } from "./model-format";
import type { KindName } from "./registry";

/** Seals and opens values bound to a purpose: the controller's Sealer, or a transfer sealer. */
export interface ValueCipher {
  seal(purpose: string, plaintext: string): string;
  open(purpose: string, sealed: string): string;
}

/** Where one kind of exported document holds a sealed value. */
export interface SealedField {
  kind: KindName;
  /** The document's sealed value (undefined: this one holds none). */
  get(doc: Record<string, unknown>): string | undefined;
  /** The document with `sealed` in place of its value. */
  set(doc: Record<string, unknown>, sealed: string): Record<string, unknown>;
  /** What the value was sealed for (its additional data), from the document's id and content. */
  purpose(id: string, doc: Record<string, unknown>): string;
}

/** The exported kinds that hold sealed secret values (filled as the secrets' documents are stored: state/secret-docs). */
export const SEALED_SECRET_FIELDS: SealedField[] = [];
/** Every exported kind that belongs to secrets (values or not): a reader of an export version before 5 has none of them. */
export const SECRET_KINDS: KindName[] = [];

/** Where an export's secret values go: to a migration target's key, or to a passphrase. */
export type SecretDestination = { kind: "x25519"; publicKey: string } | { kind: "passphrase"; passphrase: string };

type Documents = ModelExport["documents"];

/** How many sealed values `documents` hold. */
export function countSecretValues(documents: Documents): number {
  let n = 0;
  for (const f of SEALED_SECRET_FIELDS)
    for (const doc of Object.values(documents[f.kind] ?? {})) if (f.get(doc as Record<string, unknown>)) n++;
  return n;
}

/** How many secret documents `documents` hold (any kind of {@link SECRET_KINDS}). */
export function countSecretDocuments(documents: Documents): number {
  return SECRET_KINDS.reduce((n, k) => n + Object.keys(documents[k] ?? {}).length, 0);
}

/** `documents` with every sealed value opened by `from` and sealed again by `to` (new objects: the input is not changed). */
export function resealSecretValues(documents: Documents, from: ValueCipher, to: ValueCipher): Documents {
  const out: Documents = { ...documents };
  for (const f of SEALED_SECRET_FIELDS) {
    const group = documents[f.kind];
    if (!group) continue;
    const next: Record<string, unknown> = {};
    for (const [id, value] of Object.entries(group)) {
      const doc = value as Record<string, unknown>;
      const sealed = f.get(doc);
      if (sealed === undefined) {
        next[id] = doc;
        continue;
      }
      const purpose = f.purpose(id, doc);
      next[id] = f.set(doc, to.seal(purpose, from.open(purpose, sealed)));
    }
    out[f.kind] = next;
  }
  return out;
}

/**
 * `doc` (as exportModel read it: values sealed with this controller's key, `own`) ready to leave:
 * its values sealed for `to`, and its `secrets` section saying how. A model without secret values
 * leaves as it is; one with them and no destination is refused, naming what to do.
 */
export async function sealExportSecrets(
  doc: ModelExport,
  own: ValueCipher,
  to: SecretDestination | undefined,
): Promise<ModelExport> {
  const count = countSecretValues(doc.documents);
  if (count === 0) return doc;
  if (!to)
    throw new StewardError(
      "invalid-request",
      `the model holds ${count} secret revision${count === 1 ? "" : "s"}, whose values an export carries sealed to a passphrase: export it with one (steward export-model --passphrase-env VAR or --passphrase-file FILE)`,
      { details: { field: "passphrase", secrets: count } },
    );
  const { sealer, sealing } =
    to.kind === "x25519" ? sealerToPublicKey(to.publicKey) : await sealerForPassphrase(to.passphrase);
  return { ...doc, documents: resealSecretValues(doc.documents, own, sealer), secrets: { sealing } };
}

/**
 * The import's side: `doc`'s values opened with the reader's key (`opener` makes it from the
 * export's `secrets.sealing`) and sealed with this controller's (`own`). An export with values but
 * no way to open them is refused before anything is written.
 */
export async function openImportSecrets(
  doc: ModelExport,
  own: ValueCipher | undefined,
  opener: ((sealing: TransferSealing) => Promise<ValueCipher> | ValueCipher) | undefined,
): Promise<ModelExport> {
  const count = countSecretValues(doc.documents);
  if (count === 0) return doc;
  const sealing = doc.secrets?.sealing;
  if (!sealing || sealing.kind === "none")
    throw new StewardError(
      "invalid-request",
      `model export: it holds ${count} secret value${count === 1 ? "" : "s"} but does not say how they are sealed for transfer`,
      { details: { field: "export" } },
    );
  if (!own) throw new StewardError("invalid-request", "model export: this controller cannot seal secret values");
  if (!opener)
    throw new StewardError(
      "invalid-request",
      sealing.kind === "passphrase"
        ? `model export: its ${count} secret value${count === 1 ? " is" : "s are"} sealed to a passphrase: give it (steward import-model --passphrase-env VAR or --passphrase-file FILE)`
        : "model export: its secret values are sealed to a migration target's key; only that migration imports them",
      { details: { field: "passphrase", secrets: count } },
    );
  const from = await opener(sealing);
  return { ...doc, documents: resealSecretValues(doc.documents, from, own) };
}
