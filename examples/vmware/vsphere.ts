/**
 * The parts of Pulumi's vSphere provider that this example uses, declared here because the npm
 * registry this project builds from does not serve `@pulumi/vsphere`. Everything keeps the
 * package's own names (classes, functions, type tokens, properties: those of its 4.17.0 SDK), so
 * `import * as vsphere from "@pulumi/vsphere"` can replace `import * as vsphere from "./vsphere"`
 * unchanged. The engine runs the same provider plugin either way, `vsphere` {@link PLUGIN_VERSION},
 * which `pulumi up` downloads when it is missing (`pulumi plugin install resource vsphere 4.17.0`
 * does it beforehand).
 *
 * Only what the stack sets or reads is declared; the plugin itself checks every value.
 */
import * as pulumi from "@pulumi/pulumi";

/** The vSphere provider plugin the resources and lookups below are for. */
export const PLUGIN_VERSION = "4.17.0";

const resourceDefaults = (): pulumi.CustomResourceOptions => ({ version: PLUGIN_VERSION });
const invokeDefaults = (): pulumi.InvokeOutputOptions => ({ version: PLUGIN_VERSION });

// ---- the provider ----

export interface ProviderArgs {
  /** vCenter's host name or address (not a URL). */
  vsphereServer: pulumi.Input<string>;
  user: pulumi.Input<string>;
  password: pulumi.Input<string>;
  /** Accept any certificate from vCenter. @default false (the environment's VSPHERE_ALLOW_UNVERIFIED_SSL when unset) */
  allowUnverifiedSsl?: pulumi.Input<boolean>;
  /** Minutes to wait for vSphere API calls. @default 5 */
  apiTimeout?: pulumi.Input<number>;
}

/** An explicit vSphere provider: resources and lookups given it as `provider` talk to its vCenter. */
export class Provider extends pulumi.ProviderResource {
  declare readonly vsphereServer: pulumi.Output<string | undefined>;
  declare readonly user: pulumi.Output<string | undefined>;

  constructor(name: string, args: ProviderArgs, opts?: pulumi.ResourceOptions) {
    // Provider configuration travels as strings; booleans and numbers are JSON, as the SDK sends them.
    super(
      "vsphere",
      name,
      {
        vsphereServer: args.vsphereServer,
        user: args.user,
        password: args.password,
        allowUnverifiedSsl: pulumi
          .output(args.allowUnverifiedSsl)
          .apply((v) => (v === undefined ? undefined : JSON.stringify(v))),
        apiTimeout: pulumi.output(args.apiTimeout).apply((v) => (v === undefined ? undefined : JSON.stringify(v))),
      },
      pulumi.mergeOptions(resourceDefaults(), opts),
    );
  }
}

// ---- virtual machines ----

export interface VirtualMachineClone {
  /** The UUID of the VM or template cloned (`getVirtualMachine(…).id`). */
  templateUuid: pulumi.Input<string>;
  linkedClone?: pulumi.Input<boolean>;
  /** Minutes. @default 30 */
  timeout?: pulumi.Input<number>;
}

export interface VirtualMachineDisk {
  label: pulumi.Input<string>;
  /** GB; at least the template's disk. */
  size?: pulumi.Input<number>;
  unitNumber?: pulumi.Input<number>;
  thinProvisioned?: pulumi.Input<boolean>;
  eagerlyScrub?: pulumi.Input<boolean>;
}

export interface VirtualMachineNetworkInterface {
  networkId: pulumi.Input<string>;
  /** `vmxnet3`, `e1000e`, …: the template's, for a clone. */
  adapterType?: pulumi.Input<string>;
}

export interface VirtualMachineArgs {
  name?: pulumi.Input<string>;
  resourcePoolId: pulumi.Input<string>;
  datastoreId?: pulumi.Input<string>;
  /** A VM folder path, relative to the datacenter's. */
  folder?: pulumi.Input<string>;
  /** The ESXi host to place the VM on (its managed object id). */
  hostSystemId?: pulumi.Input<string>;
  numCpus?: pulumi.Input<number>;
  /** MB. */
  memory?: pulumi.Input<number>;
  guestId?: pulumi.Input<string>;
  /** `bios` or `efi`: a clone's must be its template's. */
  firmware?: pulumi.Input<string | undefined>;
  scsiType?: pulumi.Input<string>;
  annotation?: pulumi.Input<string>;
  networkInterfaces?: pulumi.Input<pulumi.Input<VirtualMachineNetworkInterface>[]>;
  disks?: pulumi.Input<pulumi.Input<VirtualMachineDisk>[]>;
  clone?: pulumi.Input<VirtualMachineClone>;
  /** Advanced configuration (`guestinfo.*` keys for cloud-init's VMware datasource). */
  extraConfig?: pulumi.Input<Record<string, pulumi.Input<string>>>;
  /** Minutes to wait for the guest to report an address (VMware Tools); below 1, none. @default 5 */
  waitForGuestNetTimeout?: pulumi.Input<number>;
  /** Wait for an address on the default gateway's network. @default true */
  waitForGuestNetRoutable?: pulumi.Input<boolean>;
}

/** A VM; its `id` is its UUID. */
export class VirtualMachine extends pulumi.CustomResource {
  /** The VM's managed object id (`vm-42`). */
  declare readonly moid: pulumi.Output<string>;
  declare readonly uuid: pulumi.Output<string>;
  declare readonly name: pulumi.Output<string>;
  /** The guest's address on the default gateway's network, as VMware Tools reports it. */
  declare readonly defaultIpAddress: pulumi.Output<string>;
  declare readonly guestIpAddresses: pulumi.Output<string[]>;
  declare readonly hostSystemId: pulumi.Output<string>;
  declare readonly resourcePoolId: pulumi.Output<string>;
  declare readonly powerState: pulumi.Output<string>;

  constructor(name: string, args: VirtualMachineArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      "vsphere:index/virtualMachine:VirtualMachine",
      name,
      {
        ...args,
        moid: undefined,
        uuid: undefined,
        defaultIpAddress: undefined,
        guestIpAddresses: undefined,
        powerState: undefined,
      },
      pulumi.mergeOptions(resourceDefaults(), opts),
    );
  }
}

export interface ComputeClusterVmAntiAffinityRuleArgs {
  /** The cluster's managed object id. */
  computeClusterId: pulumi.Input<string>;
  /** UUIDs (VirtualMachine `id`s) of the VMs to keep on different hosts. */
  virtualMachineIds: pulumi.Input<pulumi.Input<string>[]>;
  /** Unique among the cluster's rules. */
  name?: pulumi.Input<string>;
  /** @default true */
  enabled?: pulumi.Input<boolean>;
  /** Refuse any operation that would break the rule (HA restarts included). @default false */
  mandatory?: pulumi.Input<boolean>;
}

/** A DRS rule: the VMs run on different hosts of the cluster. */
export class ComputeClusterVmAntiAffinityRule extends pulumi.CustomResource {
  declare readonly name: pulumi.Output<string>;
  declare readonly virtualMachineIds: pulumi.Output<string[]>;

  constructor(name: string, args: ComputeClusterVmAntiAffinityRuleArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      "vsphere:index/computeClusterVmAntiAffinityRule:ComputeClusterVmAntiAffinityRule",
      name,
      { ...args },
      pulumi.mergeOptions(resourceDefaults(), opts),
    );
  }
}

// ---- lookups (data sources); names may be inventory paths ----

const lookup = <T>(fn: string, args: pulumi.Inputs, opts?: pulumi.InvokeOutputOptions): pulumi.Output<T> =>
  pulumi.runtime.invokeOutput<T>(`vsphere:index/${fn}:${fn}`, args, pulumi.mergeOptions(invokeDefaults(), opts ?? {}));

export interface GetDatacenterResult {
  readonly id: string;
  readonly name?: string;
}
export function getDatacenterOutput(
  args: { name?: pulumi.Input<string> },
  opts?: pulumi.InvokeOutputOptions,
): pulumi.Output<GetDatacenterResult> {
  return lookup("getDatacenter", { name: args.name }, opts);
}

export interface GetComputeClusterResult {
  readonly id: string;
  readonly name: string;
  readonly resourcePoolId: string;
}
export function getComputeClusterOutput(
  args: { name: pulumi.Input<string>; datacenterId?: pulumi.Input<string> },
  opts?: pulumi.InvokeOutputOptions,
): pulumi.Output<GetComputeClusterResult> {
  return lookup("getComputeCluster", { name: args.name, datacenterId: args.datacenterId }, opts);
}

export interface GetResourcePoolResult {
  readonly id: string;
  readonly name?: string;
}
/** `name`: a pool's path under the datacenter's host folder, `cluster/Resources` being a cluster's root pool. */
export function getResourcePoolOutput(
  args: { name?: pulumi.Input<string>; datacenterId?: pulumi.Input<string> },
  opts?: pulumi.InvokeOutputOptions,
): pulumi.Output<GetResourcePoolResult> {
  return lookup("getResourcePool", { name: args.name, datacenterId: args.datacenterId }, opts);
}

export interface GetDatastoreResult {
  readonly id: string;
  readonly name: string;
}
export function getDatastoreOutput(
  args: { name: pulumi.Input<string>; datacenterId?: pulumi.Input<string> },
  opts?: pulumi.InvokeOutputOptions,
): pulumi.Output<GetDatastoreResult> {
  return lookup("getDatastore", { name: args.name, datacenterId: args.datacenterId }, opts);
}

export interface GetNetworkResult {
  readonly id: string;
  readonly name: string;
  readonly type: string;
}
export function getNetworkOutput(
  args: { name: pulumi.Input<string>; datacenterId?: pulumi.Input<string> },
  opts?: pulumi.InvokeOutputOptions,
): pulumi.Output<GetNetworkResult> {
  return lookup("getNetwork", { name: args.name, datacenterId: args.datacenterId }, opts);
}

export interface GetHostResult {
  readonly id: string;
  readonly name?: string;
  readonly resourcePoolId: string;
}
export function getHostOutput(
  args: { name?: pulumi.Input<string>; datacenterId: pulumi.Input<string> },
  opts?: pulumi.InvokeOutputOptions,
): pulumi.Output<GetHostResult> {
  return lookup("getHost", { name: args.name, datacenterId: args.datacenterId }, opts);
}

export interface GetVirtualMachineDisk {
  readonly label: string;
  readonly size: number;
  readonly unitNumber: number;
  readonly thinProvisioned: boolean;
  readonly eagerlyScrub: boolean;
}
export interface GetVirtualMachineResult {
  /** The VM's or template's UUID: a clone's `templateUuid`. */
  readonly id: string;
  readonly guestId: string;
  readonly firmware?: string;
  readonly scsiType: string;
  /** Adapter types of its network interfaces, in bus order. */
  readonly networkInterfaceTypes: string[];
  readonly disks: GetVirtualMachineDisk[];
}
export function getVirtualMachineOutput(
  args: { name?: pulumi.Input<string>; datacenterId?: pulumi.Input<string> },
  opts?: pulumi.InvokeOutputOptions,
): pulumi.Output<GetVirtualMachineResult> {
  return lookup("getVirtualMachine", { name: args.name, datacenterId: args.datacenterId }, opts);
}
