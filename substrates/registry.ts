/**
 * Every substrate kind's runtime half (kind.ts), by name, each loaded on first use: a command or a
 * process that never touches a cloud never loads its SDK (`steward status` loads none). Adding a
 * kind is its folder (with its kind.ts) and one line here, its contract in api/substrate-kinds.ts
 * and, when it takes settings, their schema in api/substrate-settings.ts. Which kinds host
 * controllers is their contracts' word (`hostsControllers`); what settings each takes for it is its
 * own kind's (its `controller` hosting), gathered here as types only.
 */
import type { HostingSubstrate, ModelSubstrate } from "../api/core";
import { DEFAULT_SUBSTRATE, HOSTING_SUBSTRATES } from "../api/core";
import type { ControllerHosting } from "./controller-hosting";
import type { SubstrateKind } from "./kind";

/* eslint-disable @typescript-eslint/consistent-type-imports -- each kind is typed where it is loaded lazily, so a kind stays one line */
const LOADERS = {
  local: () => require("./local/kind") as typeof import("./local/kind"),
  manual: () => require("./manual/kind") as typeof import("./manual/kind"),
  ssh: () => require("./ssh/kind") as typeof import("./ssh/kind"),
  aws: () => require("./aws/kind") as typeof import("./aws/kind"),
  vsphere: () => require("./vsphere/kind") as typeof import("./vsphere/kind"),
  kubernetes: () => require("./kubernetes/kind") as typeof import("./kubernetes/kind"),
} satisfies Record<ModelSubstrate, () => { kind: SubstrateKind<any, any> }>;
/* eslint-enable @typescript-eslint/consistent-type-imports */

/** Each kind's runtime half, as its folder types it. */
type Kinds = { [K in ModelSubstrate]: ReturnType<(typeof LOADERS)[K]>["kind"] };

/** The runtime half of each kind, loaded when first called. */
export const SUBSTRATES: Readonly<Record<ModelSubstrate, () => SubstrateKind<any, any>>> = Object.fromEntries(
  Object.entries(LOADERS).map(([name, load]) => [name, () => load().kind]),
) as Record<ModelSubstrate, () => SubstrateKind<any, any>>;

/** The runtime half of `name` (a model's substrate; absent in documents older than substrates: local). */
export const substrateKind = (name: ModelSubstrate | undefined): SubstrateKind<any, any> =>
  SUBSTRATES[name ?? DEFAULT_SUBSTRATE]();

/** The kinds that host controllers (their contracts say so). */
export type HostingKind = HostingSubstrate;

/** Each hosting kind's settings: where its controllers go, as its folder declares them (a cloud's are its models'). */
export type HostingSettings = {
  [K in HostingKind]: Kinds[K] extends SubstrateKind<any, any, infer H> ? H : never;
};

/** What a client records of a controller each hosting kind hosts, as its folder declares it (no secret). */
export type RecordedSettings = {
  [K in HostingKind]: Kinds[K] extends SubstrateKind<any, any, any, infer R> ? R : never;
};

/** Where a controller runs, as a client records it (controllers.json): one discriminated field, like a model's placement. */
export type RecordedHosting = {
  [K in HostingKind]: {
    substrate: K;
    settings: RecordedSettings[K];
    /** The UUID the controller was bootstrapped with (its instances or VMs are marked with it). */
    uuid?: string;
  };
}[HostingKind];

/** The kinds that host controllers, by name, each loaded on first use: its `controller` hosting. */
export const CONTROLLER_HOSTING = Object.fromEntries(
  HOSTING_SUBSTRATES.map((name) => [name, () => SUBSTRATES[name]().controller]),
) as { [K in HostingKind]: () => ControllerHosting<HostingSettings[K], RecordedSettings[K]> };

/**
 * Where a controller runs whose hosting a client did not record (logged in to or registered, or
 * bootstrapped over SSH before entries recorded it): on hosts this client reaches over SSH, the one
 * way to a replica it knows only by the address the controller reports.
 */
export const UNRECORDED_HOSTING: RecordedHosting = { substrate: "ssh", settings: {} };

/** The hosting of the kind a client recorded a controller on (or {@link UNRECORDED_HOSTING}), loaded on first use. */
export function hostingOf(recorded: RecordedHosting | undefined): ControllerHosting<unknown, unknown> {
  return CONTROLLER_HOSTING[(recorded ?? UNRECORDED_HOSTING).substrate]() as ControllerHosting<unknown, unknown>;
}
