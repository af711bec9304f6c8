/**
 * Secret values as a model export carries them (issue 33). In the store each revision's content is a
 * `secret-revision` document sealed with the controller's own key (`secret/<id>/<rev>`), which no
 * other controller holds, so the registry does not export those keys. An export carries each
 * revision's content instead in its `secrets` section, opened and sealed again for its reader (a
 * migration target's X25519 key, or a file's passphrase: security/transfer-sealing.ts), with how it
 * was sealed. The import opens each with the reader's key and seals it with its own before the
 * model's one transaction. So no value is in the clear in an export file, a migration's stream or its
 * staged copy, and none opens with the store of the controller it came from.
 *
 * Between reading the store and leaving, an export's section is sealed `{kind: "controller"}` (this
 * controller's key): {@link sealExportSecrets} turns it into the reader's, and exportForReader
 * (model-format.ts) refuses to write out one still sealed so.
 */
import { StewardError } from "../../api";
import type { Op } from "../store";
import type { TransferSealing } from "../security/transfer-sealing";
import { sealerForPassphrase, sealerToPublicKey } from "../security/transfer-sealing";
import { docs, put } from "./doc-kinds";
import type { ModelExport } from "./model-format";
import type { SecretDoc } from "./secret-docs";
import { revisionPurpose } from "./secret-docs";

/** Seals and opens values bound to a purpose: the controller's Sealer, or a transfer sealer. */
export interface ValueCipher {
  seal(purpose: string, plaintext: string): string;
  open(purpose: string, sealed: string): string;
}

/** How an export's secret values are sealed: for its reader, or (only inside this controller) with its own key. */
export type ExportSealing = TransferSealing | { kind: "controller" };

/** The `secrets` section: each revision's content (`<id>/<revision>` → sealed), and how it is sealed. */
export interface ExportSecrets {
  sealing: ExportSealing;
  revisions: Record<string, string>;
}

/** Where an export's secret values go: to a migration target's key, or to a passphrase. */
export type SecretDestination = { kind: "x25519"; publicKey: string } | { kind: "passphrase"; passphrase: string };

/** How many secret revisions' contents `doc` carries. */
export function countSecretValues(doc: Pick<ModelExport, "secrets">): number {
  return Object.keys(doc.secrets?.revisions ?? {}).length;
}

/** `"<id>/<revision>"` → [id, revision], or undefined when it is not one. */
function revisionRef(ref: string): [string, number] | undefined {
  const m = /^([0-9a-v]{20})\/([1-9][0-9]{0,15})$/.exec(ref);
  return m ? [m[1]!, Number(m[2])] : undefined;
}

/** `revisions` opened by `from` and sealed again by `to`, each under its own purpose. */
function reseal(revisions: Record<string, string>, from: ValueCipher, to: ValueCipher): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [ref, sealed] of Object.entries(revisions)) {
    const r = revisionRef(ref);
    if (!r) throw new StewardError("invalid-request", `model export: secrets.revisions has a bad reference`);
    const purpose = revisionPurpose(r[0], r[1]);
    out[ref] = to.seal(purpose, from.open(purpose, sealed));
  }
  return out;
}

/**
 * `doc` (as exportModel read it: values sealed with this controller's key, `own`) ready to leave:
 * its values sealed for `to`. A model without secret values leaves as it is; one with them and no
 * destination is refused, naming what to do.
 */
export async function sealExportSecrets(
  doc: ModelExport,
  own: ValueCipher,
  to: SecretDestination | undefined,
): Promise<ModelExport> {
  const count = countSecretValues(doc);
  if (count === 0 || doc.secrets?.sealing.kind !== "controller") {
    const { secrets: _none, ...rest } = doc;
    return count === 0 ? rest : doc;
  }
  if (!to)
    throw new StewardError(
      "invalid-request",
      `the model holds ${count} secret revision${count === 1 ? "" : "s"}, whose values an export carries only sealed to a passphrase: export it with one (steward export-model --passphrase-env VAR, --passphrase-file FILE or --passphrase)`,
      { details: { field: "passphrase", secrets: count } },
    );
  const { sealer, sealing } =
    to.kind === "x25519" ? sealerToPublicKey(to.publicKey) : await sealerForPassphrase(to.passphrase);
  return { ...doc, secrets: { sealing, revisions: reseal(doc.secrets.revisions, own, sealer) } };
}

/**
 * The import's side: the writes of `doc`'s secret revisions, each opened with the reader's key
 * (`opener` makes it from the export's sealing) and sealed with this controller's (`own`), for model
 * `uuid`. Refused before anything is written when they cannot be opened, when a revision a secret
 * lists has no content, or when content belongs to no secret.
 */
export async function importSecretRevisions(
  doc: ModelExport,
  uuid: string,
  own: ValueCipher | undefined,
  opener: ((sealing: TransferSealing) => Promise<ValueCipher> | ValueCipher) | undefined,
): Promise<Op[]> {
  const bad = (what: string, details: Record<string, unknown> = {}): StewardError =>
    new StewardError("invalid-request", `model export: ${what}`, { details: { field: "export", ...details } });
  const secrets = (doc.documents.secret ?? {}) as Record<string, SecretDoc>;
  const revisions = doc.secrets?.revisions ?? {};
  const want = new Set(Object.values(secrets).flatMap((s) => s.revisions.map((r) => `${s.id}/${r.revision}`)));
  for (const [id, s] of Object.entries(secrets)) if (s.id !== id) throw bad(`secret "${id}" is malformed`);
  const missing = [...want].filter((ref) => !(ref in revisions));
  if (missing.length > 0)
    throw bad(`secret revision ${missing[0]} has no content in the export's secrets section`, {
      missing: missing.length,
    });
  const stray = Object.keys(revisions).filter((ref) => !want.has(ref));
  if (stray.length > 0)
    throw bad(`secrets.revisions holds content of a revision no secret lists (${stray[0]!.slice(0, 40)})`);
  const count = want.size;
  if (count === 0) return [];
  const sealing = doc.secrets?.sealing;
  if (!sealing || sealing.kind === "controller")
    throw bad(`its ${count} secret value${count === 1 ? " is" : "s are"} not sealed for transfer`);
  if (!own) throw bad("this controller cannot seal secret values");
  if (!opener)
    throw new StewardError(
      "invalid-request",
      sealing.kind === "passphrase"
        ? `model export: its ${count} secret value${count === 1 ? " is" : "s are"} sealed to a passphrase: give it (steward import-model --passphrase-env VAR or --passphrase-file FILE)`
        : "model export: its secret values are sealed to a migration target's key; only that migration imports them",
      { details: { field: "passphrase", secrets: count } },
    );
  const resealed = reseal(revisions, await opener(sealing), own);
  return Object.entries(resealed).map(([ref, sealed]) => {
    const [id, revision] = revisionRef(ref)!;
    return put(docs.secretRevision, uuid, id, revision, { sealed });
  });
}
