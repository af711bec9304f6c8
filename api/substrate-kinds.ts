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
  /** The CLI flags that belong to it alone (for "--region … are for aws" messages). */
  flags: readonly string[];
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
  /** Its settings in a few words, for status: "eu-west-1, t3.small". */
  describe(settings: Settings): string;
}

const listed = (words: readonly string[]): string =>
  words.length > 1 ? `${words.slice(0, -1).join(", ")} and ${words.at(-1)!}` : words.join("");

const local = {
  name: "local",
  provisions: "machines",
  instances: false,
  addMachines: "count",
  onControllerHost: true,
  hostsControllers: true,
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
  words: { thing: "host", things: "hosts", cloud: "SSH" },
  flags: [],
  describe: () => "hosts added over SSH",
} satisfies SubstrateContract<NoSettings>;
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
  flags: ["--region", "--image", "--instance-type", "--subnet", "--security-group", "--endpoint", "--endpoint-ca-file"],
  constraintsProblem: () => undefined,
  replicaHosts: "instances",
  locatedBy: ["region", "endpoint"],
  hostsControllers: true,
  // Settings not yet checked (from flags) may lack the instance type, which defaults to t3.small.
  describe: (s) => `${s.region}, ${s.instanceType ?? "t3.small"}`,
} satisfies SubstrateContract<AwsModelSettings>;
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
  flags: ["--vcenter", "--datacenter", "--template", "--folder", "--resource-pool", "--vcenter-ca-file"],
  constraintsProblem: (keys) => {
    const unsupported = ["arch", "root-disk", "instance-type"].filter((k) => keys.includes(k));
    return unsupported.length
      ? `${unsupported.join(", ")} ${unsupported.length > 1 ? "are" : "is"} not supported on vsphere (a VM is its template's architecture and disk): give cores and mem`
      : undefined;
  },
  replicaHosts: "instances",
  locatedBy: ["url", "datacenter"],
  hostsControllers: true,
  describe: (s) => `${s.datacenter}, template ${s.template}`,
} satisfies SubstrateContract<VsphereModelSettings>;
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
  words: { thing: "pod", things: "pods", cloud: "Kubernetes" },
  flags: ["--kubeconfig", "--namespace", "--controller-image", "--agent-image", "--api-address"],
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

/** "--region, --image and --endpoint are for aws" when any of the flags `given` belongs to another kind than `substrate`. */
export function foreignFlagsProblem(
  substrate: ModelSubstrate | undefined,
  given: (flag: string) => boolean,
  target = (k: ModelSubstrate) => k as string,
): string | undefined {
  for (const k of MODEL_SUBSTRATES) {
    const flags = SUBSTRATE_CONTRACTS[k].flags;
    if (k !== substrate && flags.some(given)) return `${listed(flags)} are for ${target(k)}`;
  }
  return undefined;
}

/** The kind named `name`, or undefined when no kind is called that (a command-line word). */
export const contractNamed = (name: string): SubstrateContract<any> | undefined =>
  (MODEL_SUBSTRATES as readonly string[]).includes(name) ? SUBSTRATE_CONTRACTS[name as ModelSubstrate] : undefined;

/** "aws and vsphere" (kinds whose contract says `pred`), for messages. */
export const kindsWhere = (pred: (c: SubstrateContract<any>) => boolean): string => listed(substratesWhere(pred));
