import * as pulumi from "@pulumi/pulumi";
import type { ModelSubstrate } from "../api/substrate-kinds";
import { substratesWhere } from "../api/substrate-kinds";
import type { ControllerConnection } from "./connection";
import { ON_HOST_KIND } from "./substrate-args";
import type { ModelSettingsArgs } from "./substrate-args";
import { shims } from "./shim";
import { TYPE_MODULE, withSecretOutputs } from "./secrets";
import { waitSeconds } from "./timeouts";

/**
 * A model's arguments. Its kind's settings are the argument named as the kind (aws, vsphere,
 * kubernetes: {@link ModelSettingsArgs}), taken only by models of that kind; changing them replaces the model.
 */
export interface ModelArgs extends ModelSettingsArgs {
  /**
   * The controller's `connection` output (or the same shape for a controller made elsewhere).
   * Pointing it at ANOTHER controller migrates the model there (an update, not a replace: its
   * machines and units move and keep running); the same controller with new addresses or a new
   * password is no migration.
   */
  connection: pulumi.Input<ControllerConnection>;
  /** @default the resource name */
  name?: pulumi.Input<string>;
  config?: pulumi.Input<{
    updateStatusInterval?: pulumi.Input<number>;
    automaticallyRetryHooks?: pulumi.Input<boolean>;
  }>;
  /**
   * Where machines for units placed without `to` come from: local (agent processes on the
   * controller's host), ssh or manual (only machines added to the model), a cloud (aws, vsphere:
   * instances the controller launches) or kubernetes (pods). Changing it replaces the model.
   * @default local
   */
  substrate?: pulumi.Input<ModelSubstrate>;
  /** Cloud models: the credential stored on the controller (`steward add-credential`) its machines are made with; kubernetes models: the cluster (`steward add-k8s`). */
  credential?: pulumi.Input<string>;
  /**
   * aws and vsphere models: the default constraints of the machines it makes (Juju's syntax,
   * `cores=2 mem=4G`); applications' and machines' own are merged over them. A change applies to
   * machines made after it (machines that exist keep theirs), as `steward model-constraints` does.
   */
  constraints?: pulumi.Input<string>;
  /** Take over a model of this name that already exists instead of failing. */
  adopt?: pulumi.Input<boolean>;
  /** On destroy, remove without hooks when the model is not gone within `deleteTimeoutSeconds`. @default false */
  forceDelete?: pulumi.Input<boolean>;
  /** How long delete waits for the model to go. @default `customTimeouts.delete`, else 600 */
  deleteTimeoutSeconds?: pulumi.Input<number>;
  /** How long a migration to another controller may take. @default `customTimeouts.update`, else 1800 */
  migrateTimeoutSeconds?: pulumi.Input<number>;
}

const SETTINGS_KINDS = substratesWhere((k) => !!k.settings) as (keyof ModelSettingsArgs)[];

/** A model: the space applications, machines and integrations live in. */
export class Model extends pulumi.dynamic.Resource {
  declare readonly name: pulumi.Output<string>;
  declare readonly uuid: pulumi.Output<string>;
  declare readonly connection: pulumi.Output<ControllerConnection>;

  constructor(name: string, args: ModelArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      shims.model,
      name,
      {
        uuid: undefined,
        connection: pulumi.secret(args.connection),
        name: args.name ?? name,
        config: args.config ?? {},
        substrate: args.substrate ?? ON_HOST_KIND,
        credential: args.credential,
        // Each settings-taking kind's argument, as given (check refuses those of another kind).
        ...Object.fromEntries(SETTINGS_KINDS.map((k) => [k, args[k]])),
        ...(args.constraints !== undefined ? { constraints: args.constraints } : {}),
        adopt: args.adopt ?? false,
        forceDelete: args.forceDelete ?? false,
        deleteTimeoutSeconds: waitSeconds(args.deleteTimeoutSeconds, opts, ["delete"], 600),
        migrateTimeoutSeconds: waitSeconds(args.migrateTimeoutSeconds, opts, ["update"], 1800),
      },
      withSecretOutputs(opts, ["connection"]),
      TYPE_MODULE,
      "Model",
    );
  }
}
