/**
 * Where a model's machines come from (as a Juju model records its cloud): `local` starts agent
 * processes on the controller's host, `aws` launches EC2 instances and `vsphere` clones VMs from a
 * template, for units placed without `--to`; `kubernetes` runs each unit in a pod of its
 * application's StatefulSet (the pod is the unit's machine); `manual` and `ssh` models only use
 * machines added to them (`add-machine`).
 */
export const MODEL_SUBSTRATES = ["local", "manual", "ssh", "aws", "vsphere", "kubernetes"] as const;
export type ModelSubstrate = (typeof MODEL_SUBSTRATES)[number];

/** Substrates where the controller makes a machine itself when a unit needs one. */
export const PROVISIONED_SUBSTRATES: readonly ModelSubstrate[] = ["local", "aws", "vsphere", "kubernetes"];
/** Substrates whose models need a stored credential. */
export const CREDENTIALED_SUBSTRATES: readonly ModelSubstrate[] = ["aws", "vsphere", "kubernetes"];

/** Where an `aws` model's instances go and what they are (`steward add-model --substrate aws`). */
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
}

/** Substrates a stored credential can be for (`steward add-credential --substrate`; `steward add-k8s` stores a kubernetes one). */
export const CREDENTIAL_SUBSTRATES = ["aws", "vsphere", "ssh", "kubernetes"] as const;
export type CredentialSubstrate = (typeof CREDENTIAL_SUBSTRATES)[number];

export interface CredentialKind {
  required: readonly string[];
  optional: readonly string[];
  /** Attributes shown back by `steward credentials` (masked when `masked`); every other attribute is secret. */
  shown: readonly string[];
  masked?: readonly string[];
  /** Environment variables read by `steward add-credential --from-env`, by attribute. */
  env?: Readonly<Record<string, string>>;
}

/** What each kind of credential holds (attribute names as in the file given to add-credential). */
export const CREDENTIAL_KINDS: Readonly<Record<CredentialSubstrate, CredentialKind>> = {
  // The access key id identifies the key but is shown masked all the same, as the AWS console does.
  aws: {
    required: ["access-key-id", "secret-access-key"], optional: ["session-token"], shown: ["access-key-id"], masked: ["access-key-id"],
    env: { "access-key-id": "AWS_ACCESS_KEY_ID", "secret-access-key": "AWS_SECRET_ACCESS_KEY", "session-token": "AWS_SESSION_TOKEN" },
  },
  vsphere: {
    required: ["user", "password"], optional: [], shown: ["user"],
    env: { user: "VSPHERE_USER", password: "VSPHERE_PASSWORD" },
  },
  ssh: { required: ["user", "private-key"], optional: ["passphrase"], shown: ["user"] },
  // A cluster (steward add-k8s): the kubeconfig (its server, CA and user's token or certificate) is secret; its context is not.
  kubernetes: { required: ["kubeconfig"], optional: ["context", "server"], shown: ["context", "server"] },
};

/** How `steward credentials` shows an attribute's value: secrets never, masked ones by their last 4 characters. */
export function shownCredentialValue(kind: CredentialKind, attribute: string, value: string): string | undefined {
  if (!kind.shown.includes(attribute)) return undefined;
  return kind.masked?.includes(attribute) ? `…${value.slice(-4)}` : value;
}

/** "an aws", "a vsphere": for messages that name a substrate. */
export const withArticle = (substrate: string): string => `${/^[aeiou]/.test(substrate) ? "an" : "a"} ${substrate}`;
