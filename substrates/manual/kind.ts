/** The manual substrate kind's runtime half (substrates/kind.ts): machines whose agents are started by hand; the controller only issues their credentials. */
import { SUBSTRATE_CONTRACTS } from "../../api/core";
import { HostVolumes } from "../host-volumes";
import type { SubstrateKind } from "../kind";

export const kind: SubstrateKind = {
  contract: SUBSTRATE_CONTRACTS.manual,
  // Directories on the machine, made by its agent (as on SSH hosts).
  volumes: (deps) => new HostVolumes(deps),
};
