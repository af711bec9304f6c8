import * as pulumi from "@pulumi/pulumi";
import type { SshHost } from "./connection";
import type { Model } from "./model";
import { contractOf } from "../api/substrate-kinds";
import { BY_ADDRESS_KIND, ON_HOST_KIND } from "./substrate-args";
import type { ByAddressKind, InstanceKind, OnHostKind } from "./substrate-args";
import { shims } from "./shim";
import { TYPE_MODULE, withSecretOutputs } from "./secrets";
import { waitSeconds } from "./timeouts";

interface MachineArgsBase {
  model: Model;
  /** @default false */
  forceDelete?: pulumi.Input<boolean>;
}

/** A local agent process on the controller's host (substrate local). */
export interface LocalMachineArgs extends MachineArgsBase {
  substrate?: OnHostKind;
  ssh?: never;
  privateKey?: never;
  constraints?: never;
}

/** A host you reach over SSH (substrate ssh): the controller installs the agent there. */
export interface SshMachineArgs extends MachineArgsBase {
  substrate?: ByAddressKind;
  ssh: pulumi.Input<SshHost>;
  /** The private key's content; kept secret in the state, used for the install only. */
  privateKey: pulumi.Input<string>;
  constraints?: never;
}

/**
 * An instance the controller launches in a model of a cloud kind `K`: an EC2 instance (aws), a
 * VM cloned from the model's template (vsphere). No SSH: its agent enrols itself.
 */
export interface CloudMachineArgs<K extends InstanceKind = InstanceKind> extends MachineArgsBase {
  substrate: K;
  /**
   * Juju's syntax, merged over the model's: `cores=2 mem=4G root-disk=20G`, `instance-type=m6i.large`
   * (check refuses what the kind cannot honour: a VM takes cores and mem). Changing them replaces the machine.
   */
  constraints?: pulumi.Input<string>;
  /**
   * How long to wait for the instance to boot and its agent to enrol.
   * @default `customTimeouts.create`, else 900
   */
  timeoutSeconds?: pulumi.Input<number>;
  ssh?: never;
  privateKey?: never;
}

/** One args type per substrate, told apart by `substrate` (absent: ssh when given an SSH host, else local). */
export type MachineArgs = LocalMachineArgs | SshMachineArgs | CloudMachineArgs;

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
    const substrate = args.substrate ?? (args.ssh !== undefined ? BY_ADDRESS_KIND : ON_HOST_KIND);
    const cloud = contractOf(substrate).instances ? (args as CloudMachineArgs) : undefined;
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
