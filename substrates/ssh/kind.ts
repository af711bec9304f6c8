/** The ssh substrate kind's runtime half (substrates/kind.ts): hosts added by address, agents installed over SSH (machines.ts). */
import { SUBSTRATE_CONTRACTS } from "../../api/core";
import type { SubstrateKind } from "../kind";
import { sshHosting } from "./controller-hosting";

export const kind: SubstrateKind = { contract: SUBSTRATE_CONTRACTS.ssh, controller: sshHosting };
