/**
 * The settings schemas of the substrate kinds that take settings, kept apart from their contracts
 * (substrate-kinds.ts) because they bring zod, which the agent and the CLI do not load.
 * {@link SETTINGS_SCHEMAS} has one per kind whose contract says it takes settings (the compiler
 * checks it), so a new kind adds its schema here and its contract there.
 */
import { z } from "zod";
import type {
  AwsModelSettings,
  KubernetesModelSettings,
  ModelSettingsInputByKind,
  ModelSubstrate,
  ReplicaSettingsByKind,
  ReplicaSubstrate,
  SUBSTRATE_CONTRACTS,
  VsphereModelSettings,
} from "./substrate-kinds";
import { NAME_PATTERN } from "./names";

const awsId = (prefix: string): z.ZodString =>
  z
    .string()
    .regex(new RegExp(`^${prefix}-[0-9a-f]{8,17}$`), { message: `must be an id such as ${prefix}-0123456789abcdef0` });
export const AwsModelSettingsSchema = z.strictObject({
  region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, { message: "must be an AWS region such as eu-west-1" }),
  imageId: awsId("ami"),
  instanceType: z
    .string()
    .regex(/^[a-z0-9-]+\.[a-z0-9]+$/, { message: "must be an instance type such as t3.small" })
    .default("t3.small"),
  subnetIds: z.array(awsId("subnet")).min(1).max(16).optional(),
  securityGroupIds: z.array(awsId("sg")).min(1).max(16).optional(),
  endpoint: z
    .string()
    .max(512)
    .regex(/^https:\/\/[^\s/]+\/?$/, { message: "must be an https:// URL of an EC2 endpoint" })
    .optional(),
  endpointCaCert: z
    .string()
    .max(16 * 1024)
    .regex(/-----BEGIN CERTIFICATE-----/, { message: "must be a PEM certificate" })
    .optional(),
});
const inventoryPath = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[^\u0000-\u001f]+$/, { message: "must be an inventory path or name" });
export const VsphereModelSettingsSchema = z.strictObject({
  url: z
    .string()
    .max(512)
    .regex(/^https:\/\/[^\s/]+(\/sdk)?\/?$/, {
      message: "must be vCenter's https:// SDK URL, e.g. https://vcenter.example.com/sdk",
    }),
  datacenter: inventoryPath,
  template: inventoryPath,
  folder: inventoryPath.optional(),
  resourcePool: inventoryPath.optional(),
  caCert: z
    .string()
    .max(16 * 1024)
    .regex(/-----BEGIN CERTIFICATE-----/, { message: "must be a PEM certificate" })
    .optional(),
});

/** A Kubernetes namespace's name: a DNS label (RFC 1123), as the API server requires. */
export const KubernetesNamespace = z
  .string()
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, {
    message:
      "must be a Kubernetes namespace name: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters",
  });
export const KubernetesModelSettingsSchema = z.strictObject({ namespace: KubernetesNamespace });

type Contracts = typeof SUBSTRATE_CONTRACTS;
/** The kinds whose contract says they take settings. */
export type SettingsSubstrate = {
  [K in ModelSubstrate]: Contracts[K] extends { settings: object } ? K : never;
}[ModelSubstrate];

/** Each settings-taking kind's schema, by kind: what a model's `placement.settings` must be. */
export const SETTINGS_SCHEMAS = {
  aws: AwsModelSettingsSchema,
  vsphere: VsphereModelSettingsSchema,
  kubernetes: KubernetesModelSettingsSchema,
} satisfies { [K in SettingsSubstrate]: z.ZodType<unknown> };

// The settings types and the schemas agree (a field added to one and not the other does not compile).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const agree: [
  Same<z.output<typeof AwsModelSettingsSchema>, AwsModelSettings>,
  Same<z.output<typeof VsphereModelSettingsSchema>, VsphereModelSettings>,
  Same<z.output<typeof KubernetesModelSettingsSchema>, Omit<KubernetesModelSettings, "statefulSet">>,
] = [true, true, true];
void agree;
// And so do what a client gives when it makes a model and what the schemas take (Pulumi's Model arguments are typed from it).
const inputsAgree: {
  [K in keyof ModelSettingsInputByKind]: Same<
    [z.input<(typeof SETTINGS_SCHEMAS)[K]>, keyof z.input<(typeof SETTINGS_SCHEMAS)[K]>],
    [ModelSettingsInputByKind[K], keyof ModelSettingsInputByKind[K]]
  >;
} = { aws: true, vsphere: true, kubernetes: true };
void inputsAgree;

/**
 * Each replica-hosting kind's settings schema as a replica cloud takes them: a cloud's are its
 * models'; a controller's own StatefulSet is named besides its namespace.
 */
export const REPLICA_SETTINGS_SCHEMAS = {
  aws: AwsModelSettingsSchema,
  vsphere: VsphereModelSettingsSchema,
  kubernetes: KubernetesModelSettingsSchema.extend({
    statefulSet: z.string().max(63).regex(NAME_PATTERN, { message: "must be a StatefulSet's name" }),
  }),
} satisfies { [K in ReplicaSubstrate]: z.ZodType<ReplicaSettingsByKind[K]> };

/** The schema of `substrate`'s settings, or undefined when it takes none. */
export const settingsSchemaOf = (substrate: ModelSubstrate): z.ZodType<unknown> | undefined =>
  (SETTINGS_SCHEMAS as Partial<Record<ModelSubstrate, z.ZodType<unknown>>>)[substrate];
