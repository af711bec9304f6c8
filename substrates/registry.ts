/**
 * Every substrate kind's runtime half (kind.ts), by name, each loaded on first use: a command or a
 * process that never touches a cloud never loads its SDK (`steward status` loads none). Adding a
 * kind is its folder (with its kind.ts) and one line here, its contract in api/substrate-kinds.ts
 * and, when it takes settings, their schema in api/substrate-settings.ts.
 */
import type { ModelSubstrate } from "../api/core";
import type {
  ControllerHosting,
  HostingKind,
  HostingSettings,
  RecordedHosting,
  RecordedSettings,
} from "./controller-hosting";
import type { SubstrateKind } from "./kind";

type Loaded = { kind: SubstrateKind<any, any> };
const LOADERS: Record<ModelSubstrate, () => Loaded> = {
  local: () => require("./local/kind") as Loaded,
  manual: () => require("./manual/kind") as Loaded,
  ssh: () => require("./ssh/kind") as Loaded,
  aws: () => require("./aws/kind") as Loaded,
  vsphere: () => require("./vsphere/kind") as Loaded,
  kubernetes: () => require("./kubernetes/kind") as Loaded,
};

/** The runtime half of each kind, loaded when first called. */
export const SUBSTRATES: Readonly<Record<ModelSubstrate, () => SubstrateKind<any, any>>> = Object.fromEntries(
  Object.entries(LOADERS).map(([name, load]) => [name, () => load().kind]),
) as Record<ModelSubstrate, () => SubstrateKind<any, any>>;

/** The runtime half of `name` (a model's substrate; absent in documents older than substrates: local). */
export const substrateKind = (name: ModelSubstrate | undefined): SubstrateKind<any, any> =>
  SUBSTRATES[name ?? "local"]();

const HOSTING_KINDS: readonly HostingKind[] = ["local", "ssh", "aws", "vsphere", "kubernetes"];

/** The kinds that host controllers, by name, each loaded on first use: its `controller` hosting. */
export const CONTROLLER_HOSTING = Object.fromEntries(
  HOSTING_KINDS.map((name) => [name, () => SUBSTRATES[name]().controller]),
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
