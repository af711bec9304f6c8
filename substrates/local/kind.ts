/** The local substrate kind's runtime half (substrates/kind.ts): agent processes on the controller's host (agent-processes.ts), kept running by the controller's host-process provisioner. */
import { SUBSTRATE_CONTRACTS } from "../../api/core";
import type { SubstrateKind } from "../kind";
import type { LocalPlacement } from "./agent-processes";
import { AgentProcesses } from "./agent-processes";
import type { LocalControllerRecord, LocalControllerSettings } from "./controller-hosting";
import { localHosting } from "./controller-hosting";
import { LocalVolumes } from "./volumes";

export const kind: SubstrateKind<unknown, LocalPlacement, LocalControllerSettings, LocalControllerRecord> = {
  contract: SUBSTRATE_CONTRACTS.local,
  controller: localHosting,
  machines: (host) => new AgentProcesses(host),
  volumes: (deps) => new LocalVolumes(deps),
};
