import * as pulumi from "@pulumi/pulumi";
import type { ControllerConnection } from "./connection";
import { shims } from "./shim";
import { TYPE_MODULE, withSecretOutputs } from "./secrets";
import { waitSeconds } from "./timeouts";

/** Where an aws model's instances go (see `steward add-model --substrate aws`). */
export interface AwsModelArgs {
  region: pulumi.Input<string>;
  /** An AMI with cloud-init and curl; Node.js 20+ is fetched from the controller when the image has none. */
  imageId: pulumi.Input<string>;
  /** @default "t3.small" */
  instanceType?: pulumi.Input<string>;
  /** Instances go to these subnets in turn (one per zone spreads them over zones). */
  subnetIds?: pulumi.Input<pulumi.Input<string>[]>;
  securityGroupIds?: pulumi.Input<pulumi.Input<string>[]>;
}

/** Where a vsphere model's VMs come from (see `steward add-model --substrate vsphere`). */
export interface VsphereModelArgs {
  /** vCenter's SDK URL: `https://vcenter.example.com/sdk`. */
  url: pulumi.Input<string>;
  datacenter: pulumi.Input<string>;
  /** A template VM with cloud-init (VMware datasource) and curl. */
  template: pulumi.Input<string>;
  folder?: pulumi.Input<string>;
  resourcePool?: pulumi.Input<string>;
  /** The CA that signs vCenter's certificate (PEM). */
  caCert?: pulumi.Input<string>;
}

export interface ModelArgs {
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
   * Where machines for units placed without `to` come from: `local` (agent processes on the
   * controller's host), or `ssh` / `manual` (only machines added to the model). Changing it
   * replaces the model.
   * @default "local"
   */
  substrate?: pulumi.Input<"local" | "manual" | "ssh" | "aws" | "vsphere" | "kubernetes">;
  /** Cloud models: the credential stored on the controller (`steward add-credential`) its machines are made with; kubernetes models: the cluster (`steward add-k8s`). */
  credential?: pulumi.Input<string>;
  /** aws models: where instances go and what they are. Changing it replaces the model. */
  aws?: pulumi.Input<AwsModelArgs>;
  /** vsphere models: the vCenter and the template VMs are cloned from. Changing it replaces the model. */
  vsphere?: pulumi.Input<VsphereModelArgs>;
  /** kubernetes models: the namespace its applications' StatefulSets go in (default the model's name). Changing it replaces the model. */
  kubernetes?: pulumi.Input<{ namespace: pulumi.Input<string> }>;
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
        substrate: args.substrate ?? "local",
        credential: args.credential,
        aws: args.aws,
        vsphere: args.vsphere,
        kubernetes: args.kubernetes,
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
