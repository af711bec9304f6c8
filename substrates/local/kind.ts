/** The local substrate kind's runtime half (substrates/kind.ts): agent processes on the controller's host, made by the controller's local provisioner. */
import { SUBSTRATE_CONTRACTS } from "../../api/core";
import type { SubstrateKind } from "../kind";
import { localHosting } from "./controller-hosting";
import { LocalVolumes } from "./volumes";

export const kind: SubstrateKind = {
  contract: SUBSTRATE_CONTRACTS.local,
  controller: localHosting,
  volumes: (deps) => new LocalVolumes(deps),
};
