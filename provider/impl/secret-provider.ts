/**
 * The Secret resource: a user secret of a model (`steward add-secret`), its values from a Pulumi
 * secret, granted to applications. The values are never an output: the state keeps a salted hash of
 * them (itself encrypted) so a changed value shows in the diff, and the revision the controller had,
 * so a refresh shows values changed by hand (a new revision) and grants changed outside the program.
 * Nothing here puts a value in an error message.
 */
import { createHash, randomBytes } from "node:crypto";
import { SECRET_LIMITS, SECRET_NAME_PATTERN, secretContentProblem } from "../../api/core";
import type { ControllerClient, SecretInfo } from "../../api/core";
import type { ControllerConnection } from "../connection";
import { Failures } from "./checks";
import { clientFor, isConflict, isNotFound } from "./session";
import { isUnknown, plain, sameSet, sameValue } from "./values";

export interface SecretInputs {
  connection: ControllerConnection;
  model: string;
  name: string;
  /** Kept secret in the state's inputs; never copied to the outputs. */
  values: Record<string, string>;
  description?: string;
  /**
   * Applications this resource lets read it. Others may be granted too (by hand, or an Application
   * whose config option of type secret names it grants itself): they are `readers`, not revoked.
   */
  grants: string[];
  adopt: boolean;
}

export interface SecretOutputs extends Omit<SecretInputs, "values"> {
  /** `secret:<id>`: what an Application's config option of type secret takes. */
  uri: string;
  /** Every application that may read it (the `grants` and any other), as last seen. */
  readers: string[];
  /** The controller's latest revision, as this stack last set or saw it. */
  revision: number;
  /** sha256 of `salt` and the values (an encrypted output): a changed value is a diff without keeping the value. */
  valuesHash: string;
  salt: string;
}

/** What `valuesHash` becomes when a refresh finds a revision this stack did not make: the next up sets the values again. */
const CHANGED_OUTSIDE = "changed-outside-the-program";

export function valuesHash(salt: string, values: Record<string, string>): string {
  const h = createHash("sha256").update(salt).update("\0");
  for (const k of Object.keys(values).sort()) h.update(JSON.stringify([k, values[k]])).update("\0");
  return h.digest("hex");
}

export const secretProvider = {
  async check(_olds: SecretInputs, news: SecretInputs) {
    const f = new Failures();
    f.connection(news.connection);
    f.name("model", news.model, "model name");
    if (!isUnknown(news.name) && (typeof news.name !== "string" || !SECRET_NAME_PATTERN.test(news.name)))
      f.add(
        "name",
        `${JSON.stringify(news.name)} must be lower-case letters, digits and hyphens, starting with a letter`,
      );
    if (!isUnknown(news.values)) {
      if (!news.values || typeof news.values !== "object" || Array.isArray(news.values))
        f.add("values", "must be a map of key to value (a Pulumi secret)");
      else if (!Object.values(news.values).some(isUnknown)) {
        const notText = Object.entries(news.values).find(([, v]) => typeof v !== "string");
        // The problem names keys and sizes only, never a value.
        const problem = notText ? `the value of ${notText[0]} must be a string` : secretContentProblem(news.values);
        if (problem) f.add("values", problem);
      }
    }
    if (
      news.description !== undefined &&
      !isUnknown(news.description) &&
      (typeof news.description !== "string" || news.description.length > SECRET_LIMITS.descriptionChars)
    )
      f.add("description", `must be text of at most ${SECRET_LIMITS.descriptionChars} characters`);
    if (!Array.isArray(news.grants)) f.add("grants", "must be a list of application names");
    else news.grants.forEach((g, i) => f.name(`grants[${i}]`, g, "application name"));
    return { inputs: news, failures: f.list };
  },

  async diff(_id: string, olds: SecretOutputs, news: SecretInputs) {
    const replaces: string[] = [];
    if (olds.model !== news.model) replaces.push("model");
    const changes =
      replaces.length > 0 ||
      olds.name !== news.name ||
      (olds.description ?? "") !== (news.description ?? "") ||
      !sameSet(olds.grants, news.grants) ||
      valuesChanged(olds, news.values) ||
      !sameValue(olds.connection, news.connection) ||
      olds.adopt !== news.adopt;
    return { changes, replaces, deleteBeforeReplace: true };
  },

  async create(inputs: SecretInputs) {
    const client = clientFor(inputs.connection);
    let made: { uri: string; revision: number };
    try {
      made = await client.addSecret(inputs.model, inputs.name, inputs.values, inputs.description);
    } catch (e) {
      // The same name with other values (the same values answer 200 and are taken as they are).
      if (!isConflict(e)) throw e;
      if (!inputs.adopt)
        throw new Error(
          `secret "${inputs.name}" already exists in model "${inputs.model}" with other values: set adopt: true to take it over (its values are replaced), or choose another name`,
        );
      made = await client.updateSecret(inputs.model, inputs.name, {
        values: inputs.values,
        ...(inputs.description !== undefined ? { description: inputs.description } : {}),
      });
    }
    const info = await setGrants(client, inputs.model, made.uri, inputs.grants, []);
    const salt = randomBytes(16).toString("hex");
    return {
      id: `${inputs.model}/${made.uri}`,
      outs: outputsOf(inputs, made.uri, info.latestRevision, appGrants(info), salt),
    };
  },

  async read(id: string, props: SecretOutputs) {
    let info: SecretInfo;
    try {
      info = await clientFor(props.connection).showSecret(props.model, props.uri);
    } catch (e) {
      if (isNotFound(e)) return {};
      throw e;
    }
    const outs: SecretOutputs = {
      ...props,
      name: info.name ?? props.name,
      // A grant this resource made and someone revoked shows here; one made elsewhere in `readers` only.
      grants: props.grants.filter((a) => appGrants(info).includes(a)),
      readers: appGrants(info),
      revision: info.latestRevision,
      // A revision this stack did not make: someone set other values; the next up sets the program's again.
      valuesHash: info.latestRevision === props.revision ? props.valuesHash : CHANGED_OUTSIDE,
    };
    if (info.description !== undefined) outs.description = info.description;
    else delete outs.description;
    // No `inputs`: the stored inputs keep the values (encrypted), which the outputs never hold.
    return { id, props: plain(outs) };
  },

  async update(_id: string, olds: SecretOutputs, news: SecretInputs) {
    const client = clientFor(news.connection);
    const values = valuesChanged(olds, news.values);
    const renamed = olds.name !== news.name;
    const described = (olds.description ?? "") !== (news.description ?? "");
    if (values || renamed || described) {
      await client.updateSecret(news.model, olds.uri, {
        ...(values ? { values: news.values } : {}),
        ...(renamed ? { name: news.name } : {}),
        ...(described ? { description: news.description ?? "" } : {}),
      });
    }
    const info = await setGrants(client, news.model, olds.uri, news.grants, olds.grants);
    // A new salt with new values: the old hash says nothing about them.
    const salt = values ? randomBytes(16).toString("hex") : olds.salt;
    return { outs: outputsOf(news, olds.uri, info.latestRevision, appGrants(info), salt) };
  },

  async delete(_id: string, props: SecretOutputs) {
    try {
      await clientFor(props.connection).removeSecret(props.model, props.uri);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  },
};

function valuesChanged(olds: SecretOutputs, values: Record<string, string>): boolean {
  if (isUnknown(values) || !values || Object.values(values).some(isUnknown)) return true;
  return valuesHash(olds.salt, values) !== olds.valuesHash;
}

/** The applications granted it (not the relation grants its owner's operators make: user secrets have none). */
function appGrants(info: SecretInfo): string[] {
  return [
    ...new Set(info.grants.filter((g) => g.relationId === undefined && g.unit === undefined).map((g) => g.app)),
  ].sort();
}

/** Grants what `want` adds to `had` and revokes what `had` holds beyond it; answers the secret as it then is. */
async function setGrants(
  client: ControllerClient,
  model: string,
  uri: string,
  want: string[],
  had: string[],
): Promise<SecretInfo> {
  const add = want.filter((a) => !had.includes(a));
  const drop = had.filter((a) => !want.includes(a));
  let info: SecretInfo | undefined;
  if (add.length > 0) info = await client.grantSecret(model, uri, add);
  if (drop.length > 0) info = await client.revokeSecret(model, uri, drop);
  return info ?? client.showSecret(model, uri);
}

function outputsOf(
  inputs: SecretInputs,
  uri: string,
  revision: number,
  readers: string[],
  salt: string,
): SecretOutputs {
  const { values, ...rest } = inputs;
  return plain({
    ...rest,
    grants: [...rest.grants].sort(),
    readers,
    uri,
    revision,
    salt,
    valuesHash: valuesHash(salt, values),
  });
}
