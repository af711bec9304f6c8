import * as pulumi from "@pulumi/pulumi";
import type { SshHost } from "./connection";
import type { Model } from "./model";
import { shims } from "./shim";
import { TYPE_MODULE, withSecretOutputs } from "./secrets";
import { waitSeconds } from "./timeouts";

interface MachineArgsBase {
  model: Model;
  /** @default false */
  forceDelete?: pulumi.Input<boolean>;
}

/** A local agent process on the controller's host. */
export interface LocalMachineArgs extends MachineArgsBase {
  substrate?: "local";
  ssh?: never;
  privateKey?: never;
  constraints?: never;
}

/** A host you reach over SSH: the controller installs the agent there. */
export interface SshMachineArgs extends MachineArgsBase {
  substrate?: "ssh";
  ssh: pulumi.Input<SshHost>;
  /** The private key's content; kept secret in the state, used for the install only. */
  privateKey: pulumi.Input<string>;
  constraints?: never;
}

/** An EC2 instance the controller launches in an `aws` model (no SSH: its agent enrols itself). */
export interface AwsMachineArgs extends MachineArgsBase {
  substrate: "aws";
  /** Juju's syntax, merged over the model's: `cores=2 mem=4G root-disk=20G`, `instance-type=m6i.large`. Changing them replaces the machine. */
  constraints?: pulumi.Input<string>;
  /**
   * How long to wait for the instance to boot and its agent to enrol.
   * @default `customTimeouts.create`, else 900
   */
  timeoutSeconds?: pulumi.Input<number>;
  ssh?: never;
  privateKey?: never;
}

/** A VM the controller clones from the template of a `vsphere` model (no SSH: its agent enrols itself). */
export interface VsphereMachineArgs extends MachineArgsBase {
  substrate: "vsphere";
  /** `cores` and `mem` (Juju's syntax), merged over the model's. Changing them replaces the machine. */
  constraints?: pulumi.Input<string>;
  /**
   * How long to wait for the VM to boot and its agent to enrol.
   * @default `customTimeouts.create`, else 900
   */
  timeoutSeconds?: pulumi.Input<number>;
  ssh?: never;
  privateKey?: never;
}

/** One args type per substrate, told apart by `substrate` (absent: `ssh` with `ssh` given, else `local`). */
export type MachineArgs = LocalMachineArgs | SshMachineArgs | AwsMachineArgs | VsphereMachineArgs;

/** A machine in a model; pass its `machineId` to an Application's `machines` to place units on it. */
export class Machine extends pulumi.dynamic.Resource {
  declare readonly machineId: pulumi.Output<string>;
  declare readonly address: pulumi.Output<string>;
  declare readonly status: pulumi.Output<string>;
  /** Cloud machines: the instance (EC2 instance id, vSphere VM id), its zone and state. */
  declare readonly instanceId: pulumi.Output<string | undefined>;
  declare readonly zone: pulumi.Output<string | undefined>;
  declare readonly instanceState: pulumi.Output<string | undefined>;
  /** Cloud machines: what it has (`arch=amd64 cores=2 mem=4G instance-type=t3.medium`). */
  declare readonly hardware: pulumi.Output<string | undefined>;

  constructor(name: string, args: MachineArgs, opts?: pulumi.CustomResourceOptions) {
    const substrate = args.substrate ?? (args.ssh !== undefined ? "ssh" : "local");
    const cloud = args.substrate === "aws" || args.substrate === "vsphere" ? args : undefined;
    // Passed whatever the substrate (JavaScript callers have no types): check refuses them where they do not belong.
    const constraints = (args as { constraints?: pulumi.Input<string> }).constraints;
    super(
      shims.machine,
      name,
      {
        machineId: undefined,
        address: undefined,
        status: undefined,
        instanceId: undefined,
        zone: undefined,
        instanceState: undefined,
        hardware: undefined,
        connection: pulumi.secret(args.model.connection),
        model: args.model.name,
        substrate,
        ...(args.ssh !== undefined ? { ssh: args.ssh } : {}),
        ...(args.privateKey !== undefined ? { privateKey: pulumi.secret(args.privateKey) } : {}),
        ...(constraints !== undefined ? { constraints } : {}),
        ...(cloud ? { timeoutSeconds: waitSeconds(cloud.timeoutSeconds, opts, ["create"], 900) } : {}),
        forceDelete: args.forceDelete ?? false,
      },
      withSecretOutputs(opts, ["connection", "privateKey"]),
      TYPE_MODULE,
      "Machine",
    );
  }
}
