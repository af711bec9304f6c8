/**
 * The static half of a substrate kind (Juju's `EnvironProvider`): its name, what it provisions,
 * its settings and their schema, the credential it takes, the words messages use for its things,
 * the CLI flags that belong to it and how its settings read in status. One entry per kind in
 * {@link SUBSTRATE_CONTRACTS}: the CLI, the provider, the dashboard and the controller ask it instead
 * of comparing names. Browser- and CLI-safe: no Node imports and no zod (the agent and the CLI
 * load this, and must stay small): each kind's settings schema is in substrate-settings.ts, in a
 * table the compiler holds to these contracts. The runtime half (brokers, placement, replica hosts)
 * is `substrates/<kind>/`, found through `substrates/registry.ts`.
 */
import type { StorageType } from "./storage";
import { EBS_POOL_ATTRIBUTES, ebsVolumeOf } from "./ebs-volumes";

/**
 * Where a model's machines come from (as a Juju model records its cloud): `local` starts agent
 * processes on the controller's host, `aws` launches EC2 instances and `vsphere` clones VMs from a
 * template, for units placed without `--to`; `kubernetes` runs each unit in a pod of its
 * application's StatefulSet (the pod is the unit's machine); `manual` and `ssh` models only use
 * machines added to them (`add-machine`).
 */
export const MODEL_SUBSTRATES = ["local", "manual", "ssh", "aws", "vsphere", "kubernetes"] as const;
export type ModelSubstrate = (typeof MODEL_SUBSTRATES)[number];

/**
 * The kind of a model made without naming one, and of model and machine documents older than
 * substrates (which were all local ones: it must stay this kind).
 */
export const DEFAULT_SUBSTRATE = "local" satisfies ModelSubstrate;

/** Where and what an `aws` model's instances are (`steward add-model --substrate aws`). */
export interface AwsModelSettings {
  region: string;
  /** The AMI: any Linux with cloud-init and curl (Node.js 20+ is fetched from the controller when missing). */
  imageId: string;
  instanceType: string;
  /** Instances are spread over these subnets in turn (one per availability zone, usually). */
  subnetIds?: string[];
  securityGroupIds?: string[];
  /** Another EC2 endpoint (a private endpoint, a test double) and the CA that signs it. */
  endpoint?: string;
  endpointCaCert?: string;
}

/** Where a `vsphere` model's VMs come from (`steward add-model --substrate vsphere`). */
export interface VsphereModelSettings {
  /** vCenter's SDK endpoint: `https://vcenter.example.com/sdk`. */
  url: string;
  datacenter: string;
  /** The template VM cloned for each machine (inventory path under the datacenter's vm folder, or its name): a Linux with cloud-init (VMware datasource) and curl. */
  template: string;
  folder?: string;
  /** A resource pool, cluster or host; by default the template's host's. */
  resourcePool?: string;
  /** The CA that signs vCenter's certificate (PEM), trusted instead of the system's. */
  caCert?: string;
}

/** Where a `kubernetes` model's pods go (`steward add-model --substrate kubernetes:CLUSTER`). */
export interface KubernetesModelSettings {
  /** The namespace the model's StatefulSets, Services and Secrets live in (made if missing); by default the model's name. */
  namespace: string;
  /** A controller's own replicas (set-replica-cloud): the StatefulSet they are pods of. */
  statefulSet?: string;
}

/**
 * Each settings-taking kind's settings as a client gives them when it makes a model (what the
 * kind's schema fills in may be left out: an instance type; a kubernetes model names no StatefulSet).
 */
export interface ModelSettingsInputByKind {
  /** aws models: where instances go and what they are. */
  aws: Omit<AwsModelSettings, "instanceType"> & { /** @default "t3.small" */ instanceType?: string };
  /** vsphere models: the vCenter and the template VMs are cloned from. */
  vsphere: VsphereModelSettings;
  /** kubernetes models: the namespace its applications' StatefulSets go in (default the model's name). */
  kubernetes: Omit<KubernetesModelSettings, "statefulSet">;
}

/** Kinds without settings (local, manual, ssh): their models carry `{}`. */
export type NoSettings = Record<string, never>;

/** Each kind's settings, by kind (kinds without settings take `{}`). */
export interface SettingsByKind {
  local: NoSettings;
  manual: NoSettings;
  ssh: NoSettings;
  aws: AwsModelSettings;
  vsphere: VsphereModelSettings;
  kubernetes: KubernetesModelSettings;
}

/**
 * Where a model's machines come from, as its document stores it: the kind, the stored credential
 * they are made with (`/credentials/<name>`), and the kind's settings.
 */
export type ModelPlacement = {
  [K in ModelSubstrate]: { substrate: K; credential?: string; settings: SettingsByKind[K] };
}[ModelSubstrate];

/**
 * Each kind's settings as a replica cloud holds them (where a controller launches its own
 * replacement replicas): a cloud's are its models'; on Kubernetes the StatefulSet is named too.
 */
export interface ReplicaSettingsByKind {
  aws: AwsModelSettings;
  vsphere: VsphereModelSettings;
  kubernetes: Required<KubernetesModelSettings>;
}
/** The same as a client may send them: what the kind's schema fills in by default may be left out (an instance type). */
export interface ReplicaSettingsInputByKind extends Omit<ReplicaSettingsByKind, "aws"> {
  aws: Omit<AwsModelSettings, "instanceType"> & { instanceType?: string };
}
/** The kinds a controller launches its own replicas on (their contracts say `replicaHosts`). */
export type ReplicaSubstrate = keyof ReplicaSettingsByKind;

/**
 * Where the quorum keeper launches replacement replicas when no spare host is left (`steward
 * set-replica-cloud`; a bootstrap on a cloud or on Kubernetes sets it), as the controller stores it:
 * a placement like a model's. `credential` is the stored one instances are launched with; a kind
 * whose replicas are its controller's own pods (kubernetes) takes none.
 */
export type ReplicaPlacement = {
  [K in ReplicaSubstrate]: { substrate: K; credential?: string; settings: ReplicaSettingsByKind[K] };
}[ReplicaSubstrate];

export interface CredentialKind {
  required: readonly string[];
  optional: readonly string[];
  /** Attributes shown back by `steward credentials` (masked when `masked`); every other attribute is secret. */
  shown: readonly string[];
  masked?: readonly string[];
  /** Environment variables read by `steward add-credential --from-env`, by attribute. */
  env?: Readonly<Record<string, string>>;
  /** Whether a model of this kind must name one (its machines or pods are made with it). */
  requiredByModels: boolean;
}

/**
 * One command-line flag of a kind: the setting it fills, how, and what `--help` says of it. The CLI
 * makes its options from these (cli/kind-flags.ts), so a kind's flags are written here only.
 */
export interface KindFlag {
  /** `--region`. */
  name: `--${string}`;
  /** The setting its value fills (`region`); with `file`, the setting the named file's contents fill (`endpointCaCert`). */
  setting: string;
  /** Its value names a file (read relative to the working directory) whose contents are the setting. */
  file?: true;
  /** Repeatable (`--subnet a --subnet b`): the setting is the list, left out when none is given. */
  list?: true;
  /** Must be given for settings made from flags; a string is what the refusal shows after it ("an AMI id such as …"). */
  required?: true | string;
  /** Only `bootstrap` on this kind takes it: it fills the controller's hosting there, not a model's settings. */
  bootstrapOnly?: true;
  /** For `--help`, after the kind's name ("aws: the region, e.g. eu-west-1"). */
  description: string;
  /** How `--help` names its value (`--subnet <id>`) when the flag's last word does not say it. */
  value?: string;
}

/**
 * How `steward bootstrap` names a place of this kind: `aws:REGION`, `vsphere:VCENTER`,
 * `kubernetes:CONTEXT`, `ssh:USER@HOST`. What follows the colon fills a setting flag's place (the two
 * must agree when both are given), or else the kind reads it itself (an SSH address, a context).
 */
export interface KindTarget {
  /** The word before the colon, and other words taken for it (`k8s`). */
  word: string;
  aliases?: readonly string[];
  /** What follows the colon, as messages and help name it: `REGION`. */
  placeholder: string;
  /** The setting flag the part after the colon stands for, and how messages speak of it. */
  fills?: {
    flag: `--${string}`;
    /** "the region": "give the region: aws:eu-west-1", "the region is given twice and differs: …". */
    what: string;
    /** The target as the "give …" refusal shows it: "aws:eu-west-1". */
    example: string;
    /** The flag's value from what follows the colon (vSphere: a host name becomes `https://host/sdk`); absent: as given. */
    normalise?: (given: string) => string;
    /** Where the controller goes, for messages: "EC2" → "EC2 (eu-west-1)". */
    place: string;
    /** The part of the value that names the place, for messages and the default controller name (vSphere: the URL's host). */
    label?: (value: string) => string;
  };
}

export interface SubstrateContract<Settings = unknown> {
  name: ModelSubstrate;
  /** What the controller makes itself when a unit needs a home: machines (processes, instances, VMs), pods, or nothing (machines are added). */
  provisions: "machines" | "pods" | "none";
  /** Its machines are instances a cloud makes: sized by constraints, provisioned (not installed), listed with a state. */
  instances: boolean;
  /** Its machines are processes on the controller's host (a superuser's development substrate). */
  onControllerHost?: true;
  /** Its machines' agents are started by hand: each machine's credential is shown once, and a machine goes as soon as it is removed. */
  agentsStartedByHand?: true;
  /** How `add-machine` adds its machines: by count (`add-machine aws -n 3`), by address (`ssh:user@host`), or not at all (pods). */
  addMachines?: "count" | "address";
  /**
   * Whether its models take settings (their schema: `SETTINGS_SCHEMAS[name]` in substrate-settings.ts),
   * must have them, and what to say when they are missing; absent: it takes none.
   */
  settings?: { required: boolean; hint: string };
  /** The settings a model of this kind has when it is made without them (kubernetes: its namespace is the model's name). */
  defaults?: (model: { name: string }) => Settings;
  /** What its credential holds; absent: it takes none. */
  credential?: CredentialKind;
  /**
   * How messages name what it makes, and where: "an instance", "EC2 instances", "AWS"; `env` names the
   * variables --from-env reads; `credential` what its credential is ("an access key").
   */
  words: { thing: string; things: string; cloud: string; env?: string; credential?: string };
  /** The CLI flags that belong to it alone (for "--region … are for aws" messages): the names of `cli.flags`. */
  flags: readonly string[];
  /** Its command-line surface: its flags and its bootstrap target word; absent: it has neither (it is the default, or not bootstrapped on). */
  cli?: { flags: readonly KindFlag[]; target?: KindTarget };
  /** Why it cannot honour constraints `keys` (given ones only), or undefined when it can; absent: it takes none. */
  constraintsProblem?: (keys: readonly string[]) => string | undefined;
  /**
   * How a controller's replacement replicas come from it (its replica cloud): `instances` launched
   * with a stored credential (set-replica-cloud; settings as its models'), or `own-pods`: a
   * controller bootstrapped there grows its own StatefulSet as its pods' identity (no credential).
   * Absent: it hosts no replicas the controller makes itself.
   */
  replicaHosts?: "instances" | "own-pods";
  /**
   * The settings that say where its instances are (a region and endpoint, a vCenter and datacenter):
   * with others, a controller that launched instances there is another controller (where its delete
   * looks for them). Kinds whose replicas are `instances`.
   */
  locatedBy?: readonly (keyof Settings & string)[];
  /** It hosts controllers: `steward bootstrap` and the provider's Controller put one there (its runtime half's `controller`). */
  hostsControllers?: true;
  /**
   * The storage pools its units can have (issue 32), the first the default; absent: none yet, and an
   * operator that declares storage is refused there before anything is made.
   */
  storagePools?: readonly StoragePoolContract[];
  /** Its settings in a few words, for status: "eu-west-1, t3.small". */
  describe(settings: Settings): string;
}

/** A storage pool of a kind: its name, the kinds of storage it gives, and what a pool made from it may set. */
export interface StoragePoolContract {
  name: string;
  kinds: readonly StorageType[];
  /**
   * The attributes a pool users make of this type takes (`create-storage-pool NAME TYPE key=value`);
   * absent: none. The kind's volume broker is given a made pool's values (VolumeSpec.attributes).
   */
  attributes?: readonly StoragePoolAttribute[];
  /**
   * Its instances live on the machine they were first attached on, for good (a directory or a disk of
   * an SSH host): kept, one can be attached only to a new unit on that machine.
   */
  machineBound?: true;
  /** Its instances are the storage devices declared for their machine (`add-machine … --storage-device`), one each. */
  declaredDevices?: true;
  /**
   * Why the pool cannot give an instance of `size` MiB with `attributes` (the limits of a cloud's
   * volumes), or undefined when it can; checked when storage is asked for, before anything is made.
   */
  problem?(size: number, attributes: Readonly<Record<string, string>>): string | undefined;
}

/** One attribute a pool type takes: its name, what it means, and the check of a value (its problem, or undefined). */
export interface StoragePoolAttribute {
  name: string;
  description: string;
  problem(value: string): string | undefined;
}

/** An absolute path without `..`: what a pool attribute naming a place on a host takes. */
export const absolutePathProblem = (value: string): string | undefined =>
  /^\/[^\0\n]{0,4094}$/.test(value) && !value.split("/").includes("..")
    ? undefined
    : "must be an absolute path without '..', such as /srv/steward-storage";

/**
 * Storage on hosts Steward does not make (SSH hosts, machines added by hand): a directory per instance
 * (`rootfs`), or a block device declared for the host (`device`); the host's agent mounts or makes it.
 */
const hostPools = [
  {
    name: "rootfs",
    kinds: ["filesystem"],
    machineBound: true,
    attributes: [
      {
        name: "location",
        description: "the directory on each host under which its instances' directories are made",
        problem: absolutePathProblem,
      },
    ],
  },
  { name: "device", kinds: ["filesystem", "block"], machineBound: true, declaredDevices: true },
] as const satisfies readonly StoragePoolContract[];

/** "a, b and c", for messages. */
export const listed = (words: readonly string[]): string =>
  words.length > 1 ? `${words.slice(0, -1).join(", ")} and ${words.at(-1)!}` : words.join("");

const local = {
  name: "local",
  provisions: "machines",
  instances: false,
  addMachines: "count",
  onControllerHost: true,
  hostsControllers: true,
  // A directory per instance under the machine's directory (substrates/local/volumes.ts).
  storagePools: [
    {
      name: "local",
      kinds: ["filesystem"],
      attributes: [
        {
          name: "location",
          description:
            "a directory of the controller's host (owned by root, not writable by others) under which each instance is <location>/<model>/<id>, attached or kept, instead of under its machine's directory",
          problem: absolutePathProblem,
        },
      ],
    },
  ],
  words: { thing: "agent process", things: "agent processes", cloud: "this host" },
  flags: [],
  describe: () => "agent processes on the controller's host",
} satisfies SubstrateContract<NoSettings>;
const manual = {
  name: "manual",
  provisions: "none",
  instances: false,
  addMachines: "count",
  agentsStartedByHand: true,
  // SSH hosts' directories (substrates/host-volumes.ts); devices are declared only for hosts added over SSH.
  storagePools: [hostPools[0]],
  words: { thing: "machine", things: "machines", cloud: "machines added by hand" },
  flags: [],
  describe: () => "machines added by hand",
} satisfies SubstrateContract<NoSettings>;
const ssh = {
  name: "ssh",
  provisions: "none",
  instances: false,
  addMachines: "address",
  hostsControllers: true,
  credential: { required: ["user", "private-key"], optional: ["passphrase"], shown: ["user"], requiredByModels: false },
  // A directory on the host per instance, or a device declared for it (substrates/host-volumes.ts).
  storagePools: hostPools,
  words: { thing: "host", things: "hosts", cloud: "SSH" },
  flags: [],
  cli: { flags: [], target: { word: "ssh", placeholder: "USER@HOST" } },
  describe: () => "hosts added over SSH",
} satisfies SubstrateContract<NoSettings>;
const awsFlags = [
  { name: "--region", setting: "region", required: true, description: "the region, e.g. eu-west-1" },
  {
    name: "--image",
    setting: "imageId",
    required: "an AMI id such as ami-0abcdef1234567890",
    description: "the AMI its instances boot (Linux with cloud-init and curl)",
  },
  { name: "--instance-type", setting: "instanceType", description: "the instance type (default t3.small)" },
  {
    name: "--subnet",
    setting: "subnetIds",
    list: true,
    value: "id",
    description: "a subnet for its instances (repeat: they are used in turn)",
  },
  {
    name: "--security-group",
    setting: "securityGroupIds",
    list: true,
    value: "id",
    description: "a security group for its instances (repeatable)",
  },
  {
    name: "--endpoint",
    setting: "endpoint",
    value: "url",
    description: "another EC2 endpoint (https://…), e.g. a VPC endpoint",
  },
  {
    name: "--endpoint-ca-file",
    setting: "endpointCaCert",
    file: true,
    description: "the CA certificate (PEM) that signs --endpoint",
  },
] as const satisfies readonly (KindFlag & { setting: keyof AwsModelSettings })[];
const aws = {
  name: "aws",
  provisions: "machines",
  instances: true,
  addMachines: "count",
  settings: { required: true, hint: "at least region and imageId" },
  // The access key id identifies the key but is shown masked all the same, as the AWS console does.
  credential: {
    required: ["access-key-id", "secret-access-key"],
    optional: ["session-token"],
    shown: ["access-key-id"],
    masked: ["access-key-id"],
    env: {
      "access-key-id": "AWS_ACCESS_KEY_ID",
      "secret-access-key": "AWS_SECRET_ACCESS_KEY",
      "session-token": "AWS_SESSION_TOKEN",
    },
    requiredByModels: true,
  },
  words: {
    thing: "instance",
    things: "EC2 instances",
    cloud: "AWS",
    env: "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY",
    credential: "an access key",
  },
  flags: awsFlags.map((f) => f.name),
  cli: {
    flags: awsFlags,
    target: {
      word: "aws",
      placeholder: "REGION",
      fills: { flag: "--region", what: "the region", example: "aws:eu-west-1", place: "EC2" },
    },
  },
  constraintsProblem: () => undefined,
  replicaHosts: "instances",
  locatedBy: ["region", "endpoint"],
  hostsControllers: true,
  // An EBS volume per instance in the instance's zone (substrates/aws/volumes.ts); attributes in api/ebs-volumes.ts.
  storagePools: [
    {
      name: "ebs",
      kinds: ["filesystem", "block"],
      attributes: EBS_POOL_ATTRIBUTES,
      problem: (size, attributes) => {
        const v = ebsVolumeOf(size, attributes);
        return "problem" in v ? v.problem : undefined;
      },
    },
  ],
  // Settings not yet checked (from flags) may lack the instance type, which defaults to t3.small.
  describe: (s) => `${s.region}, ${s.instanceType ?? "t3.small"}`,
} satisfies SubstrateContract<AwsModelSettings>;
const vsphereFlags = [
  {
    name: "--vcenter",
    setting: "url",
    required: "https://…/sdk",
    value: "url",
    description: "vCenter's SDK URL, https://…/sdk",
  },
  { name: "--datacenter", setting: "datacenter", required: true, value: "name", description: "the datacenter" },
  {
    name: "--template",
    setting: "template",
    required: true,
    value: "name",
    description: "the template VM cloned for each machine",
  },
  { name: "--folder", setting: "folder", description: "the VM folder for its VMs (default: the datacenter's)" },
  {
    name: "--resource-pool",
    setting: "resourcePool",
    description: "a resource pool, cluster or host (default: the template's host)",
  },
  {
    name: "--vcenter-ca-file",
    setting: "caCert",
    file: true,
    description: "the CA certificate (PEM) that signs vCenter's",
  },
] as const satisfies readonly (KindFlag & { setting: keyof VsphereModelSettings })[];
/** `vcenter.example.com` (or `…/sdk`) → `https://vcenter.example.com/sdk`; a full `https://…` URL is taken as it is. */
const vcenterUrl = (given: string): string =>
  /^[a-z]+:\/\//i.test(given) ? given : `https://${given.replace(/\/+$/, "").replace(/\/sdk$/, "")}/sdk`;
const vsphere = {
  name: "vsphere",
  provisions: "machines",
  instances: true,
  addMachines: "count",
  settings: { required: true, hint: "at least url, datacenter and template" },
  credential: {
    required: ["user", "password"],
    optional: [],
    shown: ["user"],
    env: { user: "VSPHERE_USER", password: "VSPHERE_PASSWORD" },
    requiredByModels: true,
  },
  words: {
    thing: "VM",
    things: "VMs",
    cloud: "vSphere",
    env: "VSPHERE_USER, VSPHERE_PASSWORD",
    credential: "a vSphere account",
  },
  flags: vsphereFlags.map((f) => f.name),
  cli: {
    flags: vsphereFlags,
    target: {
      word: "vsphere",
      placeholder: "VCENTER",
      fills: {
        flag: "--vcenter",
        what: "vCenter",
        example: "vsphere:vcenter.example.com (or vsphere:https://vcenter.example.com/sdk)",
        normalise: vcenterUrl,
        place: "vSphere",
        label: (url) => /^[a-z]+:\/\/([^/:]+)/i.exec(url)?.[1] ?? "",
      },
    },
  },
  constraintsProblem: (keys) => {
    const unsupported = ["arch", "root-disk", "instance-type"].filter((k) => keys.includes(k));
    return unsupported.length
      ? `${unsupported.join(", ")} ${unsupported.length > 1 ? "are" : "is"} not supported on vsphere (a VM is its template's architecture and disk): give cores and mem`
      : undefined;
  },
  replicaHosts: "instances",
  locatedBy: ["url", "datacenter"],
  // A VMDK per instance, added to the VM (substrates/vsphere/volumes.ts); attributes datastore, provisioning.
  storagePools: [
    {
      name: "vsphere",
      kinds: ["filesystem", "block"],
      attributes: [
        {
          name: "datastore",
          description:
            "the datastore new instances' VMDKs go to (default: the datastore of the VM an instance is first attached to)",
          // A datastore path's name part: `[name] folder/file.vmdk` cannot hold a bracket.
          problem: (v) =>
            /^[^[\]\0\n]{1,255}$/.test(v) && v.trim() === v
              ? undefined
              : "must be a datastore's name, such as datastore1 (no brackets)",
        },
        {
          name: "provisioning",
          description: "how new VMDKs are provisioned: thin (the default) or thick",
          problem: (v) => (v === "thin" || v === "thick" ? undefined : "must be thin or thick"),
        },
      ],
    },
  ],
  hostsControllers: true,
  describe: (s) => `${s.datacenter}, template ${s.template}`,
} satisfies SubstrateContract<VsphereModelSettings>;
// Its flags fill a bootstrapped controller's hosting (substrates/controller-hosting.ts), not a model's settings.
const kubernetesFlags = [
  {
    name: "--kubeconfig",
    setting: "kubeconfig",
    bootstrapOnly: true,
    description: "the kubeconfig (default $KUBECONFIG, else ~/.kube/config)",
  },
  {
    name: "--namespace",
    setting: "namespace",
    bootstrapOnly: true,
    description: "the namespace the controller runs in (default steward)",
  },
  {
    name: "--controller-image",
    setting: "image",
    bootstrapOnly: true,
    description:
      "the controller image (default steward/controller:<version>, built from images/ and pushed to your registry)",
  },
  {
    name: "--agent-image",
    setting: "agentImage",
    bootstrapOnly: true,
    description: "the agent image kubernetes models' pods run (default steward/agent:<version>)",
  },
  {
    name: "--api-address",
    setting: "apiAddresses",
    list: true,
    value: "address",
    bootstrapOnly: true,
    description:
      "how clients outside the cluster reach the controller (a load balancer's or node port's HOST:PORT; default the pods' IPs)",
  },
] as const satisfies readonly KindFlag[];
const kubernetes = {
  name: "kubernetes",
  provisions: "pods",
  instances: false,
  settings: { required: false, hint: "namespace (by default the model's name)" },
  // Model names are namespace names (api/names.ts).
  defaults: ({ name }) => ({ namespace: name }),
  // A cluster (steward add-k8s): the kubeconfig (its server, CA and user's token or certificate) is secret; its context is not.
  credential: {
    required: ["kubeconfig"],
    optional: ["context", "server"],
    shown: ["context", "server"],
    requiredByModels: true,
  },
  // A PersistentVolumeClaim per instance (substrates/kubernetes/storage-claims.ts); a pool's
  // `storage-class` attribute names its StorageClass, else the cluster's default class.
  // A claim of the application's StatefulSet per instance (substrates/kubernetes/volumes.ts).
  storagePools: [
    {
      name: "kubernetes",
      kinds: ["filesystem"],
      attributes: [
        {
          name: "storage-class",
          description: "the StorageClass of its claims (default: the cluster's default class)",
          // A StorageClass's name is a DNS subdomain (RFC 1123).
          problem: (v) =>
            v.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(v)
              ? undefined
              : "must be a StorageClass's name (lower-case letters, digits, '-' and '.'), such as fast-ssd",
        },
      ],
    },
  ],
  words: { thing: "pod", things: "pods", cloud: "Kubernetes" },
  flags: kubernetesFlags.map((f) => f.name),
  cli: { flags: kubernetesFlags, target: { word: "kubernetes", aliases: ["k8s"], placeholder: "CONTEXT" } },
  replicaHosts: "own-pods",
  hostsControllers: true,
  describe: (s) => (s.statefulSet ? `StatefulSet ${s.namespace}/${s.statefulSet}` : `namespace ${s.namespace}`),
} satisfies SubstrateContract<KubernetesModelSettings>;

/** Every substrate kind's static contract, by name. */
export const SUBSTRATE_CONTRACTS = { local, manual, ssh, aws, vsphere, kubernetes } as const satisfies {
  [K in ModelSubstrate]: SubstrateContract<any> & { name: K };
};

// The kinds with replica settings are the kinds whose contracts say they host replicas (both ways).
type Contracts = typeof SUBSTRATE_CONTRACTS;
type HostsReplicas = {
  [K in ModelSubstrate]: Contracts[K] extends { replicaHosts: string } ? K : never;
}[ModelSubstrate];
const replicaKindsAgree: [ReplicaSubstrate] extends [HostsReplicas]
  ? [HostsReplicas] extends [ReplicaSubstrate]
    ? true
    : false
  : false = true;
void replicaKindsAgree;

/** The kinds whose contracts have `P` (`KindsWhere<{ onControllerHost: true }>` is the kinds on the controller's host). */
export type KindsWhere<P> = { [K in ModelSubstrate]: Contracts[K] extends P ? K : never }[ModelSubstrate];

// Every kind that takes settings says how a model gives them, and no other kind does.
const modelSettingsAgree: [keyof ModelSettingsInputByKind] extends [KindsWhere<{ settings: object }>]
  ? [KindsWhere<{ settings: object }>] extends [keyof ModelSettingsInputByKind]
    ? true
    : false
  : false = true;
void modelSettingsAgree;

/** The kinds whose replicas are instances launched with a stored credential (a cloud's). */
export type InstanceCloudSubstrate = {
  [K in ReplicaSubstrate]: Contracts[K] extends { replicaHosts: "instances" } ? K : never;
}[ReplicaSubstrate];

/** The kinds that host controllers (their contracts say `hostsControllers`). */
export type HostingSubstrate = {
  [K in ModelSubstrate]: Contracts[K] extends { hostsControllers: true } ? K : never;
}[ModelSubstrate];

/** The kinds that host controllers, in {@link MODEL_SUBSTRATES} order. */
export const HOSTING_SUBSTRATES = MODEL_SUBSTRATES.filter(
  (s): s is HostingSubstrate => (SUBSTRATE_CONTRACTS[s] as SubstrateContract).hostsControllers === true,
);

/** The kinds a controller launches its own replicas on, in {@link MODEL_SUBSTRATES} order. */
export const REPLICA_SUBSTRATES = MODEL_SUBSTRATES.filter(
  (s): s is ReplicaSubstrate => (SUBSTRATE_CONTRACTS[s] as SubstrateContract).replicaHosts !== undefined,
);

/** The contract of `name` (a model's substrate; absent in documents older than substrates: local). */
export const contractOf = (name: ModelSubstrate | undefined): SubstrateContract<any> =>
  SUBSTRATE_CONTRACTS[name ?? DEFAULT_SUBSTRATE];

/** A new model's settings: those given over its kind's defaults (a kubernetes model's namespace is its name). */
export function settingsWithDefaults(
  substrate: ModelSubstrate,
  model: { name: string },
  settings: unknown,
): Record<string, unknown> {
  return { ...contractOf(substrate).defaults?.(model), ...(settings as Record<string, unknown> | undefined) };
}

/** `settings` in a few words for status ("" for kinds without settings to speak of). */
export function describePlacement(p: { substrate: ModelSubstrate; settings?: unknown }): string {
  return contractOf(p.substrate).describe(p.settings ?? {});
}

/** Kinds whose contract says `pred`, in {@link MODEL_SUBSTRATES} order. */
export const substratesWhere = (pred: (c: SubstrateContract<any>) => boolean): ModelSubstrate[] =>
  MODEL_SUBSTRATES.filter((s) => pred(SUBSTRATE_CONTRACTS[s]));

/** The kind named `name`, or undefined when no kind is called that (a command-line word). */
export const contractNamed = (name: string): SubstrateContract<any> | undefined =>
  (MODEL_SUBSTRATES as readonly string[]).includes(name) ? SUBSTRATE_CONTRACTS[name as ModelSubstrate] : undefined;

/** "aws and vsphere" (kinds whose contract says `pred`), for messages. */
export const kindsWhere = (pred: (c: SubstrateContract<any>) => boolean): string => listed(substratesWhere(pred));
