import * as pulumi from "@pulumi/pulumi";
import type { ControllerConnection, ReplicaCount, SshHost } from "./connection";
import type { AwsModelArgs } from "./model";
import { shims } from "./shim";
import { TYPE_MODULE, withSecretOutputs } from "./secrets";

export interface ControllerArgs {
  /** @default the resource name */
  name?: pulumi.Input<string>;
  /**
   * `local`: one replica on the machine running Pulumi. `ssh`: installed on `hosts`. `aws`: on EC2
   * instances it launches (as `steward bootstrap aws:` does); the controller launches further
   * replicas and replaces lost ones itself, and deleting it terminates all its instances.
   */
  substrate: pulumi.Input<"local" | "ssh" | "aws">;
  /** aws: where its instances go; also where the controller launches replicas. Changing region or endpoint replaces it. */
  aws?: pulumi.Input<AwsModelArgs & { endpoint?: pulumi.Input<string>; endpointCaCert?: pulumi.Input<string> }>;
  /** aws: the access key it launches (and later terminates) instances with; kept secret. */
  awsCredential?: pulumi.Input<{ accessKeyId: pulumi.Input<string>; secretAccessKey: pulumi.Input<string>; sessionToken?: pulumi.Input<string> }>;
  /** aws: the name the key is stored under in the controller, for models' `credential`. @default "aws" */
  credentialName?: pulumi.Input<string>;
  /** @default 1; 3, 5 or 7 for high availability (ssh). Growing runs enable-ha; shrinking is refused. */
  replicas?: pulumi.Input<ReplicaCount>;
  /** ssh: the hosts, first one first; replicas go on the first `replicas` of them. */
  hosts?: pulumi.Input<pulumi.Input<SshHost>[]>;
  /** ssh: hosts the controller may install a replacement replica on when one is lost. */
  spares?: pulumi.Input<pulumi.Input<SshHost>[]>;
  /** ssh: the private key's content; kept secret in the state. */
  privateKey?: pulumi.Input<string>;
  /** local: the data directory. @default ~/.steward/pulumi/<name> */
  dataDir?: pulumi.Input<string>;
  /** API port. @default a free port (local), 17070 (ssh) */
  port?: pulumi.Input<number>;
  /** How long a replica may be gone before it is replaced. @default 300 */
  replaceAfterSeconds?: pulumi.Input<number>;
  /** @default 2 */
  maxReplacementsPerHour?: pulumi.Input<number>;
  /** local: the admin password (generated when absent); with `adopt`, the existing controller's. */
  adminPassword?: pulumi.Input<string>;
  /** Take over a controller that already exists there instead of failing. */
  adopt?: pulumi.Input<boolean>;
  /** How long to wait for every replica. @default 900 */
  timeoutSeconds?: pulumi.Input<number>;
}

/** A Steward controller. Pass its `connection` to models. */
export class Controller extends pulumi.dynamic.Resource {
  /** Addresses, CA and admin credentials: secret. */
  declare readonly connection: pulumi.Output<ControllerConnection>;
  declare readonly adminPassword: pulumi.Output<string>;
  declare readonly uuid: pulumi.Output<string>;
  declare readonly addresses: pulumi.Output<string[]>;
  declare readonly caCert: pulumi.Output<string>;
  declare readonly replicas: pulumi.Output<number>;
  declare readonly members: pulumi.Output<{ name: string; host: string; hasVote: boolean; present: boolean; leader: boolean }[]>;
  /** The replica running the controller's singleton work. */
  declare readonly leader: pulumi.Output<string>;

  constructor(name: string, args: ControllerArgs, opts?: pulumi.CustomResourceOptions) {
    super(shims.controller, name, {
      connection: undefined, uuid: undefined, addresses: undefined, caCert: undefined, members: undefined, leader: undefined,
      name: args.name ?? name,
      substrate: args.substrate,
      replicas: args.replicas ?? 1,
      hosts: args.hosts ?? [],
      spares: args.spares ?? [],
      ...(args.privateKey !== undefined ? { privateKey: pulumi.secret(args.privateKey) } : {}),
      ...(args.aws !== undefined ? { aws: args.aws } : {}),
      ...(args.awsCredential !== undefined ? { awsCredential: pulumi.secret(args.awsCredential) } : {}),
      ...(args.credentialName !== undefined ? { credentialName: args.credentialName } : {}),
      ...(args.dataDir !== undefined ? { dataDir: args.dataDir } : {}),
      ...(args.port !== undefined ? { port: args.port } : {}),
      ...(args.replaceAfterSeconds !== undefined ? { replaceAfterSeconds: args.replaceAfterSeconds } : {}),
      ...(args.maxReplacementsPerHour !== undefined ? { maxReplacementsPerHour: args.maxReplacementsPerHour } : {}),
      adminPassword: args.adminPassword !== undefined ? pulumi.secret(args.adminPassword) : undefined,
      adopt: args.adopt ?? false,
      timeoutSeconds: args.timeoutSeconds ?? 900,
    }, withSecretOutputs(opts, ["connection", "adminPassword", "privateKey", "awsCredential"]), TYPE_MODULE, "Controller");
  }
}
