/**
 * Where the package's argument names meet the substrate contracts (api/substrate-kinds.ts), once for
 * every resource: a kind's settings are the argument named as the kind (aws, vsphere, kubernetes),
 * typed from the contract's settings with each field a Pulumi input; a cloud controller's credential is
 * `<kind>Credential`, its fields the contract's credential attributes in camelCase (`access-key-id`:
 * `accessKeyId`). The names are the package's published API (stacks in use name them) and stay; what
 * stands behind them is the contract's, so a new kind needs nothing here but its credential's fields.
 * It loads only the contracts (api/substrate-kinds.ts, which import nothing): the published declarations reach no schema library.
 */
import type * as pulumi from "@pulumi/pulumi";
import type {
  InstanceCloudSubstrate,
  KindsWhere,
  ModelSettingsInputByKind,
  ModelSubstrate,
} from "../api/substrate-kinds";
import { SUBSTRATE_CONTRACTS, contractOf, substratesWhere } from "../api/substrate-kinds";

/** `T` as Pulumi inputs: each field may be an Input, and so may each item of a list. */
export type Inputs<T> = {
  [P in keyof T]: T[P] extends readonly (infer E)[] | undefined ? pulumi.Input<pulumi.Input<E>[]> : pulumi.Input<T[P]>;
};

/** A settings-taking kind's settings as the Model and Controller resources take them. */
export type SettingsArgs<K extends keyof ModelSettingsInputByKind> = Inputs<ModelSettingsInputByKind[K]>;

/** A model's settings arguments: each settings-taking kind's under its name, for that kind's models only; a change replaces the model. */
export type ModelSettingsArgs = {
  [K in keyof ModelSettingsInputByKind]?: pulumi.Input<SettingsArgs<K>>;
};

/** What a cloud controller's `<kind>Credential` holds (kept secret): its contract's credential attributes, camelCased. */
export interface CloudCredentialArgs {
  /** An AWS access key. */
  aws: {
    accessKeyId: pulumi.Input<string>;
    secretAccessKey: pulumi.Input<string>;
    sessionToken?: pulumi.Input<string>;
  };
  /** A vSphere account. */
  vsphere: { user: pulumi.Input<string>; password: pulumi.Input<string> };
}
// Every kind whose controllers launch their replicas with a credential has its credential's fields here, and only those.
const credentialsAgree: [keyof CloudCredentialArgs] extends [InstanceCloudSubstrate]
  ? [InstanceCloudSubstrate] extends [keyof CloudCredentialArgs]
    ? true
    : false
  : false = true;
void credentialsAgree;

/** The kind whose agents and controller run on the controller's (here: Pulumi's) host. */
export type OnHostKind = KindsWhere<{ onControllerHost: true }>;
/** The kind whose machines and controllers are hosts given by address (over SSH). */
export type ByAddressKind = KindsWhere<{ addMachines: "address" }>;
/** The kinds whose machines are instances the controller launches. */
export type InstanceKind = KindsWhere<{ instances: true }>;

export const ON_HOST_KIND = substratesWhere((k) => !!k.onControllerHost)[0] as OnHostKind;
export const BY_ADDRESS_KIND = substratesWhere((k) => k.addMachines === "address")[0] as ByAddressKind;
/** The kind whose controllers grow their own pods as replicas (the KubernetesController component's). */
export const OWN_PODS_KIND = substratesWhere((k) => k.replicaHosts === "own-pods")[0] as KindsWhere<{
  replicaHosts: "own-pods";
}>;
/** The kinds a Controller resource launches instances on, in the contracts' order. */
export const CLOUD_KINDS = substratesWhere((k) => k.replicaHosts === "instances") as InstanceCloudSubstrate[];

/** The argument a cloud controller's credential is given in. */
export const credentialArg = <K extends InstanceCloudSubstrate>(kind: K): `${K}Credential` => `${kind}Credential`;
/** The field of a credential argument an attribute is given in (`access-key-id`: `accessKeyId`). */
export const attributeField = (attribute: string): string =>
  attribute.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
/** A cloud's credential argument as the attributes the controller stores (absent fields left out). */
export function credentialAttributes(kind: ModelSubstrate, given: object): Record<string, string> {
  const c = contractOf(kind).credential;
  const key = given as Record<string, string | undefined>;
  return Object.fromEntries(
    [...(c?.required ?? []), ...(c?.optional ?? [])].flatMap((a) =>
      key[attributeField(a)] ? [[a, key[attributeField(a)]!]] : [],
    ),
  );
}
/** The credential fields a cloud controller must be given. */
export const requiredCredentialFields = (kind: InstanceCloudSubstrate): string[] =>
  SUBSTRATE_CONTRACTS[kind].credential.required.map(attributeField);
