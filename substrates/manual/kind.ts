/** The manual substrate kind's runtime half (substrates/kind.ts): machines whose agents are started by hand; the controller only issues their credentials. */
import { SUBSTRATE_CONTRACTS } from "../../api/core";
import type { SubstrateKind } from "../kind";

export const kind: SubstrateKind = { contract: SUBSTRATE_CONTRACTS.manual };
