/**
 * Tables derived from the substrate kinds' contracts (substrate-kinds.ts), for callers that ask
 * "which kinds …" rather than "what does this kind …", and how credentials are shown.
 */
import type { CredentialKind, ModelSubstrate, SubstrateContract } from "./substrate-kinds";
import { MODEL_SUBSTRATES, SUBSTRATE_CONTRACTS, substratesWhere } from "./substrate-kinds";

export {
  MODEL_SUBSTRATES,
  DEFAULT_SUBSTRATE,
  HOSTING_SUBSTRATES,
  REPLICA_SUBSTRATES,
  SUBSTRATE_CONTRACTS,
  absolutePathProblem,
  contractNamed,
  contractOf,
  describePlacement,
  kindsWhere,
  listed,
  settingsWithDefaults,
  substratesWhere,
} from "./substrate-kinds";
export type {
  AwsModelSettings,
  CredentialKind,
  HostingSubstrate,
  KubernetesModelSettings,
  ModelPlacement,
  ModelSubstrate,
  NoSettings,
  InstanceCloudSubstrate,
  KindFlag,
  KindTarget,
  KindsWhere,
  ModelSettingsInputByKind,
  ReplicaPlacement,
  ReplicaSettingsByKind,
  ReplicaSubstrate,
  SettingsByKind,
  StoragePoolAttribute,
  StoragePoolContract,
  SubstrateContract,
  VsphereModelSettings,
} from "./substrate-kinds";

/** Substrates where the controller makes a machine (or pod) itself when a unit needs one. */
export const PROVISIONED_SUBSTRATES: readonly ModelSubstrate[] = substratesWhere((c) => c.provisions !== "none");
/** Substrates whose models need a stored credential. */
export const CREDENTIALED_SUBSTRATES: readonly ModelSubstrate[] = substratesWhere(
  (c) => !!c.credential?.requiredByModels,
);

type Contracts = typeof SUBSTRATE_CONTRACTS;
/** Substrates a stored credential can be for (`steward add-credential --substrate`; `steward add-k8s` stores a kubernetes one). */
export type CredentialSubstrate = {
  [K in ModelSubstrate]: Contracts[K] extends { credential: CredentialKind } ? K : never;
}[ModelSubstrate];
const credentialOf = (s: ModelSubstrate): CredentialKind | undefined =>
  (SUBSTRATE_CONTRACTS[s] as SubstrateContract).credential;
export const CREDENTIAL_SUBSTRATES = MODEL_SUBSTRATES.filter((s): s is CredentialSubstrate => !!credentialOf(s)) as [
  CredentialSubstrate,
  ...CredentialSubstrate[],
];

/** What each kind of credential holds (attribute names as in the file given to add-credential). */
export const CREDENTIAL_KINDS = Object.fromEntries(
  CREDENTIAL_SUBSTRATES.map((s) => [s, credentialOf(s)!]),
) as unknown as Readonly<Record<CredentialSubstrate, CredentialKind>>;

/** How `steward credentials` shows an attribute's value: secrets never, masked ones by their last 4 characters. */
export function shownCredentialValue(kind: CredentialKind, attribute: string, value: string): string | undefined {
  if (!kind.shown.includes(attribute)) return undefined;
  return kind.masked?.includes(attribute) ? `…${value.slice(-4)}` : value;
}

/** "an aws", "a vsphere": for messages that name a substrate. */
export const withArticle = (substrate: string): string => `${/^[aeiou]/.test(substrate) ? "an" : "a"} ${substrate}`;
