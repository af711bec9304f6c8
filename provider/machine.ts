import * as pulumi from "@pulumi/pulumi";
import type { SshHost } from "./connection";
import type { Model } from "./model";
import { shims } from "./shim";
import { TYPE_MODULE, withSecretOutputs } from "./secrets";

export interface MachineArgs {
  model: Model;
  /** The host to install the agent on; without it, a local agent process on the controller's host. */
  ssh?: pulumi.Input<SshHost>;
  /** The private key's content for `ssh`; kept secret in the state. */
  privateKey?: pulumi.Input<string>;
  /** @default false */
  forceDelete?: pulumi.Input<boolean>;
}

/** A machine in a model; pass its `machineId` to an Application's `machines` to place units on it. */
export class Machine extends pulumi.dynamic.Resource {
  declare readonly machineId: pulumi.Output<string>;
  declare readonly address: pulumi.Output<string>;
  declare readonly status: pulumi.Output<string>;

  constructor(name: string, args: MachineArgs, opts?: pulumi.CustomResourceOptions) {
    super(shims.machine, name, {
      machineId: undefined, address: undefined, status: undefined,
      connection: pulumi.secret(args.model.connection),
      model: args.model.name,
      ...(args.ssh !== undefined ? { ssh: args.ssh } : {}),
      ...(args.privateKey !== undefined ? { privateKey: pulumi.secret(args.privateKey) } : {}),
      forceDelete: args.forceDelete ?? false,
    }, withSecretOutputs(opts, ["connection", "privateKey"]), TYPE_MODULE, "Machine");
  }
}
