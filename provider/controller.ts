import * as pulumi from "@pulumi/pulumi";
import type { ControllerConnection, ReplicaCount, SshHost } from "./connection";
import type { AwsModelArgs, VsphereModelArgs } from "./model";
import { shims } from "./shim";
import { TYPE_MODULE, withSecretOutputs } from "./secrets";
import { waitSeconds } from "./timeouts";

/** What every controller takes, whatever its substrate. */
interface ControllerArgsBase {
  /** @default the resource name */
  name?: pulumi.Input<string>;
  /** @default 1; 3, 5 or 7 for high availability (ssh, aws, vsphere). Growing runs enable-ha; shrinking is refused. */
  replicas?: pulumi.Input<ReplicaCount>;
  /** API port. @default a free port (local), 17070 (the others) */
  port?: pulumi.Input<number>;
  /** How long a replica may be gone before it is replaced. @default 300 */
  replaceAfterSeconds?: pulumi.Input<number>;
  /** @default 2 */
  maxReplacementsPerHour?: pulumi.Input<number>;
  /** How long to wait for every replica. @default `customTimeouts.create` (or `.update`), else 900 */
  timeoutSeconds?: pulumi.Input<number>;
}

/** One replica on the machine running Pulumi (embedded store). */
export interface LocalControllerArgs extends ControllerArgsBase {
  substrate: "local";
  /** The data directory. @default ~/.steward/pulumi/<name> */
  dataDir?: pulumi.Input<string>;
  /** The admin password (generated when absent); with `adopt`, the existing controller's. */
  adminPassword?: pulumi.Input<string>;
  /** Take over a controller that already exists there instead of failing. */
  adopt?: pulumi.Input<boolean>;
}

/** Installed over SSH on `hosts` (host keys pinned). */
export interface SshControllerArgs extends ControllerArgsBase {
  substrate: "ssh";
  /** The hosts, first one first; replicas go on the first `replicas` of them. */
  hosts: pulumi.Input<pulumi.Input<SshHost>[]>;
  /** Hosts the controller may install a replacement replica on when one is lost. */
  spares?: pulumi.Input<pulumi.Input<SshHost>[]>;
  /** The private key's content; kept secret in the state. */
  privateKey: pulumi.Input<string>;
  /** With `adopt`: the admin password of the controller already there. */
  adminPassword?: pulumi.Input<string>;
  /** Take over a controller that already runs on the first host instead of failing. */
  adopt?: pulumi.Input<boolean>;
}

/**
 * On EC2 instances it launches (as `steward bootstrap aws:` does); the controller launches further
 * replicas and replaces lost ones itself, and deleting it terminates all its instances.
 */
export interface AwsControllerArgs extends ControllerArgsBase {
  substrate: "aws";
  /** Where its instances go; also where the controller launches replicas. Changing region or endpoint replaces it. */
  aws: pulumi.Input<AwsModelArgs & { endpoint?: pulumi.Input<string>; endpointCaCert?: pulumi.Input<string> }>;
  /** The access key it launches (and later terminates) instances with; kept secret. */
  awsCredential: pulumi.Input<{
    accessKeyId: pulumi.Input<string>;
    secretAccessKey: pulumi.Input<string>;
    sessionToken?: pulumi.Input<string>;
  }>;
  /** The name the key is stored under in the controller, for models' `credential`. @default "aws" */
  credentialName?: pulumi.Input<string>;
}

/**
 * On VMs it clones from a template (as `steward bootstrap vsphere:` does); the controller clones
 * further replicas and replaces lost ones itself, and deleting it destroys every VM marked with it.
 */
export interface VsphereControllerArgs extends ControllerArgsBase {
  substrate: "vsphere";
  /** Where its VMs come from; also where the controller clones replicas. Changing `url` or `datacenter` replaces it. */
  vsphere: pulumi.Input<VsphereModelArgs>;
  /** The vSphere account it clones (and later destroys) VMs with; kept secret. */
  vsphereCredential: pulumi.Input<{ user: pulumi.Input<string>; password: pulumi.Input<string> }>;
  /** The name the account is stored under in the controller, for models' `credential`. @default "vsphere" */
  credentialName?: pulumi.Input<string>;
}

/** A controller's arguments: one type per substrate, told apart by `substrate`. */
export type ControllerArgs = LocalControllerArgs | SshControllerArgs | AwsControllerArgs | VsphereControllerArgs;

/** Every field any substrate takes: what the provider receives (it refuses those of another substrate). */
type Fields<T> = Omit<T, "substrate">;
type AnyControllerArgs = Partial<
  Fields<LocalControllerArgs> & Fields<SshControllerArgs> & Fields<AwsControllerArgs> & Fields<VsphereControllerArgs>
> & { substrate: ControllerArgs["substrate"] };

/** A Steward controller. Pass its `connection` to models. */
export class Controller extends pulumi.dynamic.Resource {
  /** Addresses, CA and admin credentials: secret. */
  declare readonly connection: pulumi.Output<ControllerConnection>;
  declare readonly adminPassword: pulumi.Output<string>;
  declare readonly uuid: pulumi.Output<string>;
  declare readonly addresses: pulumi.Output<string[]>;
  declare readonly caCert: pulumi.Output<string>;
  declare readonly replicas: pulumi.Output<number>;
  declare readonly members: pulumi.Output<
    { name: string; host: string; hasVote: boolean; present: boolean; leader: boolean }[]
  >;
  /** The replica running the controller's singleton work. */
  declare readonly leader: pulumi.Output<string>;

  constructor(name: string, controllerArgs: ControllerArgs, opts?: pulumi.CustomResourceOptions) {
    const args: AnyControllerArgs = controllerArgs;
    super(
      shims.controller,
      name,
      {
        connection: undefined,
        uuid: undefined,
        addresses: undefined,
        caCert: undefined,
        members: undefined,
        leader: undefined,
        name: args.name ?? name,
        substrate: args.substrate,
        replicas: args.replicas ?? 1,
        hosts: args.hosts ?? [],
        spares: args.spares ?? [],
        ...(args.privateKey !== undefined ? { privateKey: pulumi.secret(args.privateKey) } : {}),
        ...(args.aws !== undefined ? { aws: args.aws } : {}),
        ...(args.awsCredential !== undefined ? { awsCredential: pulumi.secret(args.awsCredential) } : {}),
        ...(args.vsphere !== undefined ? { vsphere: args.vsphere } : {}),
        ...(args.vsphereCredential !== undefined ? { vsphereCredential: pulumi.secret(args.vsphereCredential) } : {}),
        ...(args.credentialName !== undefined ? { credentialName: args.credentialName } : {}),
        ...(args.dataDir !== undefined ? { dataDir: args.dataDir } : {}),
        ...(args.port !== undefined ? { port: args.port } : {}),
        ...(args.replaceAfterSeconds !== undefined ? { replaceAfterSeconds: args.replaceAfterSeconds } : {}),
        ...(args.maxReplacementsPerHour !== undefined ? { maxReplacementsPerHour: args.maxReplacementsPerHour } : {}),
        adminPassword: args.adminPassword !== undefined ? pulumi.secret(args.adminPassword) : undefined,
        adopt: args.adopt ?? false,
        timeoutSeconds: waitSeconds(args.timeoutSeconds, opts, ["create", "update"], 900),
      },
      withSecretOutputs(opts, ["connection", "adminPassword", "privateKey", "awsCredential", "vsphereCredential"]),
      TYPE_MODULE,
      "Controller",
    );
  }
}
