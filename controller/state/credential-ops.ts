/**
 * Stored credentials for substrates (`steward add-credential`): sealed at rest, shown only by what
 * their kind allows, opened only inside the controller for the substrate that uses them.
 */
import type { CredentialSubstrate, CredentialSummary } from "../../api";
import { CREDENTIAL_KINDS, StewardError, notFound, shownCredentialValue } from "../../api";
import type { Sealer } from "../security/sealing";
import type { Store } from "../store";
import { absent, unchanged } from "../store";
import type { CredentialDoc } from "./documents";
import { keys } from "./keys";
import { docs, put } from "./doc-kinds";
import { StoreTxns } from "./txn";

export interface CredentialInput {
  substrate: CredentialSubstrate;
  attributes: Record<string, string>;
}

const purpose = (name: string): string => `credential/${name}`;

export class CredentialOps extends StoreTxns {
  constructor(
    store: Store,
    private readonly sealer: Sealer,
  ) {
    super(store);
  }

  /**
   * Adds a credential. Adding one again with the same attributes changes nothing (`created: false`);
   * with other attributes it is refused unless `replace`, and its substrate never changes (models rely on it).
   */
  async put(
    owner: string,
    name: string,
    input: CredentialInput,
    replace: boolean,
  ): Promise<{ created: boolean; changed: boolean; revision: number }> {
    const sealed = this.sealer.sealJson(purpose(name), input.attributes);
    const kind = CREDENTIAL_KINDS[input.substrate];
    const shown = Object.fromEntries(
      Object.entries(input.attributes).flatMap(([k, v]) => {
        const s = shownCredentialValue(kind, k, v);
        return s === undefined ? [] : [[k, s]];
      }),
    );
    return this.retry<{ created: boolean; changed: boolean }>(`add credential ${name}`, async () => {
      const existing = await this.get(docs.credential, name);
      if (!existing) {
        const doc: CredentialDoc = {
          name,
          substrate: input.substrate,
          owner,
          createdAt: this.stamp(),
          shown,
          sealed,
          models: [],
        };
        return {
          compare: [absent(keys.credential(name))],
          ops: [put(docs.credential, name, doc)],
          result: { created: true, changed: true },
        };
      }
      if (existing.doc.substrate !== input.substrate) {
        throw new StewardError(
          "conflict",
          `credential "${name}" is for ${existing.doc.substrate}, not ${input.substrate}: a credential keeps its substrate; add this one under another name`,
          { details: { field: "substrate" } },
        );
      }
      if (sameAttributes(this.sealer.openJson(purpose(name), existing.doc.sealed), input.attributes)) {
        return { compare: [], ops: [], result: { created: false, changed: false } };
      }
      if (!replace)
        throw new StewardError(
          "conflict",
          `credential "${name}" already exists with other values: give --replace to replace them (models using it switch to the new values)`,
        );
      const doc: CredentialDoc = { ...existing.doc, shown, sealed, updatedAt: this.stamp() };
      return {
        compare: [unchanged(keys.credential(name), existing.rev)],
        ops: [put(docs.credential, name, doc)],
        result: { created: false, changed: true },
      };
    });
  }

  async list(): Promise<CredentialSummary[]> {
    const all = await this.getAll(docs.credential);
    const out: CredentialSummary[] = [];
    for (const { doc } of all) out.push(await this.summary(doc));
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Removes a credential that no live model uses. */
  async remove(name: string): Promise<{ revision: number }> {
    return this.retry(`remove credential ${name}`, async () => {
      const existing = await this.get(docs.credential, name);
      if (!existing) throw notFound("credential", name);
      const users = await this.liveModels(existing.doc);
      if (users.length > 0)
        throw new StewardError(
          "conflict",
          `credential "${name}" is used by model${users.length > 1 ? "s" : ""} ${users.join(", ")}: destroy ${users.length > 1 ? "them" : "it"} first`,
        );
      return {
        compare: [unchanged(keys.credential(name), existing.rev)],
        ops: [{ type: "delete", key: keys.credential(name) }],
        result: {},
      };
    });
  }

  /** The credential's attributes in plain text, for the substrate that makes machines with it. Never answered to a client. */
  async open(name: string, substrate: CredentialSubstrate): Promise<Record<string, string>> {
    const existing = await this.get(docs.credential, name);
    if (!existing) throw notFound("credential", name);
    if (existing.doc.substrate !== substrate)
      throw new StewardError(
        "invalid-request",
        `credential "${name}" is for ${existing.doc.substrate}, not ${substrate}`,
      );
    return this.sealer.openJson(purpose(name), existing.doc.sealed);
  }

  private async summary(doc: CredentialDoc): Promise<CredentialSummary> {
    return {
      name: doc.name,
      substrate: doc.substrate,
      owner: doc.owner,
      createdAt: doc.createdAt,
      ...(doc.updatedAt ? { updatedAt: doc.updatedAt } : {}),
      attributes: doc.shown,
      models: await this.liveModels(doc),
    };
  }

  /** Names of the models made with the credential that still exist. */
  private async liveModels(doc: CredentialDoc): Promise<string[]> {
    const names: string[] = [];
    for (const uuid of doc.models) {
      const m = await this.get(docs.model, uuid);
      if (m) names.push(m.doc.name);
    }
    return names.sort();
  }
}

function sameAttributes(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a).sort(),
    kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a[k] === b[k]);
}
