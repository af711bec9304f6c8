import * as pulumi from "@pulumi/pulumi";
import type { ControllerConnection, ReplicaCount, SshHost } from "./connection";
import type { InstanceCloudSubstrate } from "../api/substrate-kinds";
import { CLOUD_KINDS, credentialArg } from "./substrate-args";
import type { ByAddressKind, CloudCredentialArgs, OnHostKind, SettingsArgs } from "./substrate-args";
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

/** One replica on the machine running Pulumi (embedded store): substrate local. */
export interface LocalControllerArgs extends ControllerArgsBase {
  substrate: OnHostKind;
  /** The data directory. @default ~/.steward/pulumi/<name> */
  dataDir?: pulumi.Input<string>;
  /** The admin password (generated when absent); with `adopt`, the existing controller's. */
  adminPassword?: pulumi.Input<string>;
  /** Take over a controller that already exists there instead of failing. */
  adopt?: pulumi.Input<boolean>;
}

/** Installed over SSH on `hosts` (host keys pinned): substrate ssh. */
export interface SshControllerArgs extends ControllerArgsBase {
  substrate: ByAddressKind;
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
 * On instances or VMs a cloud kind `K` (aws, vsphere) launches, as `steward bootstrap aws:` does:
 * the controller launches further replicas and replaces lost ones itself, and deleting it removes
 * every instance marked with it. Its settings are the argument named as the kind (where its
 * instances go, and where the controller launches replicas; changing where they are, a region or
 * endpoint, a vCenter or datacenter, replaces it); the credential it launches (and later removes)
 * them with is `<kind>Credential`, kept secret.
 */
export type CloudControllerArgs<K extends InstanceCloudSubstrate> = ControllerArgsBase & {
  substrate: K;
  /** The name the credential is stored under in the controller, for models' `credential`. @default the kind's name */
  credentialName?: pulumi.Input<string>;
} & { [P in K]: pulumi.Input<SettingsArgs<K>> } & { [P in `${K}Credential`]: pulumi.Input<CloudCredentialArgs[K]> };

/** A controller's arguments: one type per substrate, told apart by `substrate`. */
export type ControllerArgs =
  | LocalControllerArgs
  | SshControllerArgs
  | { [K in InstanceCloudSubstrate]: CloudControllerArgs<K> }[InstanceCloudSubstrate];

/** The arguments the resource passes on to the provider, besides those it fills in (check refuses those of another substrate). */
const PASSED = [
  "dataDir",
  "port",
  "replaceAfterSeconds",
  "maxReplacementsPerHour",
  "credentialName",
  ...CLOUD_KINDS.flatMap((k) => [k, credentialArg(k)]),
];
/** The arguments kept secret in the state. */
const SECRET = ["privateKey", ...CLOUD_KINDS.map(credentialArg)];

/** Every field the host and SSH substrates take (a cloud's are read by name). */
type Fields<T> = Omit<T, "substrate">;
type AnyControllerArgs = Partial<Fields<LocalControllerArgs> & Fields<SshControllerArgs>> & {
  substrate: ControllerArgs["substrate"];
};

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
    // The fields passed on as given, read by name (JavaScript callers have no types).
    const given = controllerArgs as unknown as Record<string, pulumi.Input<unknown> | undefined>;
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
        ...Object.fromEntries(
          [...PASSED, ...SECRET]
            .filter((k) => given[k] !== undefined)
            .map((k) => [k, SECRET.includes(k) ? pulumi.secret(given[k]) : given[k]]),
        ),
        adminPassword: args.adminPassword !== undefined ? pulumi.secret(args.adminPassword) : undefined,
        adopt: args.adopt ?? false,
        timeoutSeconds: waitSeconds(args.timeoutSeconds, opts, ["create", "update"], 900),
      },
      withSecretOutputs(opts, ["connection", "adminPassword", ...SECRET]),
      TYPE_MODULE,
      "Controller",
    );
  }
}
