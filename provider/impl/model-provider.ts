/** The Model resource: a model on a controller, with its settings; adopted by name when asked. */
import type { AwsModelSettings, KubernetesModelSettings, ModelSubstrate, VsphereModelSettings } from "../../api/core";
import {
  CREDENTIALED_SUBSTRATES,
  MODEL_SUBSTRATES,
  StewardError,
  constraintsProblem,
  contractOf,
  formatConstraints,
  parseConstraints,
  substratesWhere,
  withArticle,
} from "../../api/core";
import type { ControllerConnection } from "../connection";
import { Failures } from "./checks";
import { schemas } from "./schemas";
import { changed, clientFor, isConflict, isNotFound, until } from "./session";
import { migrateIfMoved } from "./model-migration";
import { isUnknown, plain, sameValue } from "./values";

export interface ModelInputs {
  connection: ControllerConnection;
  name: string;
  config: { updateStatusInterval?: number; automaticallyRetryHooks?: boolean };
  /** Where machines for units placed without `to` come from; fixed for the model's life. */
  substrate: ModelSubstrate;
  /** Cloud models: the stored credential (steward add-credential) and where instances go. Fixed for the model's life. */
  credential?: string;
  aws?: AwsModelSettings;
  vsphere?: VsphereModelSettings;
  kubernetes?: KubernetesModelSettings;
  /** The default constraints of the machines it makes (Juju's syntax); a change applies to machines made after it. */
  constraints?: string;
  adopt: boolean;
  /** On delete, force removal (no stop hooks) when the model is not gone within `deleteTimeoutSeconds`. */
  forceDelete: boolean;
  deleteTimeoutSeconds: number;
  /** How long a migration to another controller (a changed `connection`) may take. @default 1800 */
  migrateTimeoutSeconds?: number;
}
export interface ModelOutputs extends ModelInputs {
  uuid: string;
}

const MODEL_SETTINGS = ["updateStatusInterval", "automaticallyRetryHooks"] as const;
/** The kinds whose settings a model takes, each as the input named after it. */
const SETTINGS_KINDS = substratesWhere((k) => !!k.settings);
const settingsArg = (i: ModelInputs, kind: ModelSubstrate): unknown => (i as unknown as Record<string, unknown>)[kind];

export const modelProvider = {
  async check(_olds: ModelInputs, news: ModelInputs) {
    const f = new Failures();
    f.connection(news.connection);
    f.name("name", news.name, "model name");
    f.oneOf("substrate", news.substrate, MODEL_SUBSTRATES);
    if (CREDENTIALED_SUBSTRATES.includes(news.substrate)) {
      if (!news.credential)
        f.add(
          "credential",
          `required for ${withArticle(news.substrate)} model: the name of a credential stored with steward add-credential`,
        );
    } else if (news.credential) f.add("credential", `only for cloud and kubernetes models, not ${news.substrate}`);
    // Each kind that takes settings takes them under its own name (aws, vsphere, kubernetes).
    for (const kind of SETTINGS_KINDS.map(contractOf)) {
      const settings = settingsArg(news, kind.name);
      if (news.substrate !== kind.name) {
        if (settings) f.add(kind.name, `only for ${kind.name} models, not ${news.substrate}`);
        continue;
      }
      if (!settings) {
        if (kind.settings?.required)
          f.add(kind.name, `required for ${withArticle(kind.name)} model: ${kind.settings.hint}`);
        continue;
      }
      if (isUnknown(settings)) continue;
      const parsed = schemas().settingsSchemaOf(kind.name)!.safeParse(settings);
      if (!parsed.success) f.add(kind.name, schemas().describeIssues(parsed.error.issues));
    }
    if (typeof news.constraints === "string") {
      try {
        const problem = constraintsProblem(news.substrate, parseConstraints(news.constraints));
        if (problem) f.add("constraints", problem.replace(/^constraints: /, ""));
      } catch (e) {
        if (!StewardError.isInstance(e)) throw e;
        f.add("constraints", e.message.replace(/^constraints: /, ""));
      }
    }
    f.unknownKeys("config", news.config, MODEL_SETTINGS);
    f.wholeNumber("config.updateStatusInterval", news.config?.updateStatusInterval, 1, 3600);
    f.oneOf("config.automaticallyRetryHooks", news.config?.automaticallyRetryHooks, [true, false]);
    f.wholeNumber("deleteTimeoutSeconds", news.deleteTimeoutSeconds, 0, 86400);
    f.wholeNumber("migrateTimeoutSeconds", news.migrateTimeoutSeconds, 60, 86400);
    return { inputs: news, failures: f.list };
  },

  async diff(_id: string, olds: ModelOutputs, news: ModelInputs) {
    // A model keeps its substrate for life (its machines came from it): another one is another model.
    const replaces = [
      ...(olds.name !== news.name ? ["name"] : []),
      ...(contractOf(olds.substrate).name !== news.substrate ? ["substrate"] : []),
      ...(olds.credential !== news.credential ? ["credential"] : []),
      ...SETTINGS_KINDS.filter((k) => !sameValue(settingsArg(olds, k), settingsArg(news, k))),
    ];
    const changes =
      replaces.length > 0 ||
      !sameValue(olds.config, news.config) ||
      !sameValue(olds.connection, news.connection) ||
      normal(olds.constraints) !== normal(news.constraints) ||
      olds.forceDelete !== news.forceDelete ||
      olds.deleteTimeoutSeconds !== news.deleteTimeoutSeconds ||
      olds.adopt !== news.adopt;
    return { changes, replaces, deleteBeforeReplace: true };
  },

  async create(inputs: ModelInputs) {
    const client = clientFor(inputs.connection);
    let uuid: string;
    try {
      uuid = (
        await client.createModel(inputs.name, inputs.config, inputs.substrate, {
          credential: inputs.credential,
          settings: settingsArg(inputs, inputs.substrate) as object | undefined,
          constraints: inputs.constraints || undefined,
        })
      ).uuid;
    } catch (e) {
      if (!isConflict(e)) throw e;
      if (!inputs.adopt)
        throw new Error(
          `model "${inputs.name}" already exists on the controller: set adopt: true to take it over, or choose another name`,
        );
      const existing = (await client.listModels()).find((m) => m.name === inputs.name)!;
      if (existing.substrate !== inputs.substrate)
        throw new Error(
          `model "${inputs.name}" exists with the ${existing.substrate} substrate, not ${inputs.substrate}: a model keeps its substrate, so it cannot be adopted as this one`,
        );
      await client.updateModel(inputs.name, inputs.config);
      if (normal(existing.constraints) !== normal(inputs.constraints))
        await client.setModelConstraints(inputs.name, inputs.constraints ?? "");
      uuid = existing.uuid;
    }
    return { id: uuid, outs: plain({ ...inputs, uuid }) };
  },

  async read(id: string, props: ModelOutputs) {
    const models = await clientFor(props.connection).listModels();
    const found = models.find((m) => m.uuid === id);
    if (!found || found.life !== "alive") return {};
    // Settings the program leaves unset are not its to report: only those it manages show drift.
    // (A controller too old to list settings shows none.)
    const config: ModelInputs["config"] = {};
    for (const key of MODEL_SETTINGS)
      if (props.config?.[key] !== undefined) Object.assign(config, { [key]: (found.config ?? props.config)[key] });
    const now: ModelOutputs = {
      ...props,
      name: found.name,
      config,
      substrate: contractOf(found.substrate as ModelSubstrate | undefined).name,
    };
    // Constraints set by hand show as drift, kept as the program wrote them when they mean the same.
    if (normal(found.constraints) !== normal(props.constraints)) {
      if (found.constraints) now.constraints = found.constraints;
      else delete now.constraints;
    }
    return { id, props: plain(now), inputs: plain(inputsOf(now)) };
  },

  async update(_id: string, olds: ModelOutputs, news: ModelInputs) {
    // Another controller: the model migrates there (an update, never a replace: its units keep running).
    if (!sameValue(olds.connection, news.connection))
      await migrateIfMoved(
        news.name,
        olds.uuid,
        olds.connection,
        news.connection,
        (news.migrateTimeoutSeconds ?? 1800) * 1000,
      );
    if (!sameValue(olds.config, news.config)) await clientFor(news.connection).updateModel(news.name, news.config);
    if (normal(olds.constraints) !== normal(news.constraints))
      await clientFor(news.connection).setModelConstraints(news.name, news.constraints ?? "");
    return { outs: plain({ ...news, uuid: olds.uuid }) };
  },

  async delete(id: string, props: ModelOutputs) {
    const client = clientFor(props.connection);
    const gone = async (): Promise<boolean> => !(await client.listModels()).some((m) => m.uuid === id);
    try {
      await client.destroyModel(props.name);
    } catch (e) {
      if (isNotFound(e)) return;
      throw e;
    }
    changed(props.connection, props.name);
    const timeoutMs = (props.deleteTimeoutSeconds ?? 600) * 1000;
    try {
      await until(`model "${props.name}" to be destroyed (stop and remove hooks run on each unit)`, timeoutMs, gone);
    } catch (e) {
      if (!props.forceDelete)
        throw new Error(`${(e as Error).message}; set forceDelete: true to remove it without its hooks`);
      await client.destroyModel(props.name, true);
      await until(`model "${props.name}" to be removed by force`, 60_000, gone);
    }
  },
};

/** Constraints as what they mean (`mem=4096` is `mem=4G`); unparsable text as written, for check to refuse. */
function normal(text: string | undefined): string {
  try {
    return formatConstraints(parseConstraints(text ?? ""));
  } catch {
    return text ?? "";
  }
}

function inputsOf(o: ModelOutputs): ModelInputs {
  const { uuid: _uuid, ...inputs } = o;
  return inputs;
}
