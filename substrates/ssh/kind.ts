/** The ssh substrate kind's runtime half (substrates/kind.ts): hosts added by address, checked first (facts.ts), agents installed over SSH (machines.ts). */
import { SUBSTRATE_CONTRACTS } from "../../api/core";
import { HostVolumes } from "../host-volumes";
import type { SubstrateKind } from "../kind";
import type { SshControllerRecord, SshControllerSettings } from "./controller-hosting";
import { sshHosting } from "./controller-hosting";
import { checkHost } from "./facts";
import { SshMachines } from "./machines";
import type { SshTarget } from "./ssh-session";

export const kind: SubstrateKind<unknown, SshTarget, SshControllerSettings, SshControllerRecord> = {
  contract: SUBSTRATE_CONTRACTS.ssh,
  controller: sshHosting,
  machines() {
    const m = new SshMachines();
    return {
      admit: (target, o) => checkHost(target, o.attempts),
      startMachine: (spec, o) => m.startMachine(spec, o),
      stopMachine: (target) => m.stopMachine(target),
      close: () => undefined,
    };
  },
  // A directory or a declared device on the host, made or mounted by its agent (host-volumes.ts).
  volumes: (deps) => new HostVolumes(deps),
};
