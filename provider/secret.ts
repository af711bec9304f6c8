import * as pulumi from "@pulumi/pulumi";
import type { ControllerConnection } from "./connection";
import type { Model } from "./model";
import { shims } from "./shim";
import { TYPE_MODULE, withSecretOutputs } from "./secrets";

export interface SecretArgs {
  model: Model;
  /** The secret's name in the model (as `steward secrets` shows it). @default the resource name */
  name?: pulumi.Input<string>;
  /**
   * Its values, key to value. Always kept as a Pulumi secret (encrypted in the state's inputs, made
   * secret here when given plain); never an output. A change is a new revision, which the units
   * reading it get as `secret-changed`.
   */
  values: pulumi.Input<Record<string, pulumi.Input<string>>>;
  description?: pulumi.Input<string>;
  /**
   * Applications whose units may read it (`secret-get`). An `Application` whose config option of type
   * secret holds `uri` needs not be here (it depends on this resource, so it could not be): it grants
   * itself the secret before its units read their config.
   */
  grants?: pulumi.Input<pulumi.Input<string>[]>;
  /** Take over a secret of this name that already exists with other values (they are replaced) instead of failing. */
  adopt?: pulumi.Input<boolean>;
}

/**
 * A user secret of a model (`steward add-secret`): values an operator reads once granted, typically
 * through a config option of type `secret`:
 *
 * ```ts
 * const token = new Secret("api-token", { model, values: { token: cfg.requireSecret("token") } });
 * new Application("web", { model, operator: "./operators/web", config: { "api-key": token.uri } });  // granted
 * ```
 *
 * The state holds no value in the clear: the values are an encrypted input only, and a salted hash
 * of them (encrypted too) detects a change. `pulumi refresh` shows a revision made outside the
 * program (the next `up` sets the program's values again) and grants changed by hand.
 */
export class Secret extends pulumi.dynamic.Resource {
  declare readonly name: pulumi.Output<string>;
  /** `secret:<id>`: the value to give a config option of type secret. */
  declare readonly uri: pulumi.Output<string>;
  /** The latest revision. */
  declare readonly revision: pulumi.Output<number>;
  declare readonly grants: pulumi.Output<string[]>;
  /** Every application that may read it: `grants`, Applications using it in config, grants made by hand. */
  declare readonly readers: pulumi.Output<string[]>;
  declare readonly connection: pulumi.Output<ControllerConnection>;

  constructor(name: string, args: SecretArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      shims.secret,
      name,
      {
        uri: undefined,
        revision: undefined,
        readers: undefined,
        valuesHash: undefined,
        salt: undefined,
        connection: pulumi.secret(args.model.connection),
        model: args.model.name,
        name: args.name ?? name,
        values: pulumi.secret(args.values),
        ...(args.description !== undefined ? { description: args.description } : {}),
        grants: args.grants ?? [],
        adopt: args.adopt ?? false,
      },
      withSecretOutputs(opts, ["connection", "valuesHash"]),
      TYPE_MODULE,
      "Secret",
    );
  }
}
