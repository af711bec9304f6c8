/** The vsphere substrate kind's runtime half (substrates/kind.ts): VMs cloned from a template for a model's machines. */
import type { VsphereModelSettings } from "../../api/core";
import { SUBSTRATE_CONTRACTS } from "../../api/core";
import type { SubstrateKind } from "../kind";
import { vsphereHosting } from "./bootstrap";
import type { VspherePlacement } from "./machines";
import { VsphereMachines, vsphereCredentialsOf } from "./machines";
import { InstanceReplicaHosts } from "../replica-hosts";
import { vsphereReplicaInstances } from "./replica-instances";
import { VsphereVolumes } from "./volumes";

export const kind: SubstrateKind<VsphereModelSettings, VspherePlacement, VsphereModelSettings, VsphereModelSettings> = {
  contract: SUBSTRATE_CONTRACTS.vsphere,
  controller: vsphereHosting,
  placement: ({ settings, controllerUuid }, credential) => ({
    settings,
    controllerUuid,
    credentials: vsphereCredentialsOf(credential),
  }),
  machines() {
    const m = new VsphereMachines();
    return {
      startMachine: (spec, o) => m.startMachine(spec, o),
      stopMachine: (target, o) => m.stopMachine(target, o),
      instances: (p, model) => m.instances(p, model),
      // A destroyed VM is simply not listed; none listed is gone.
      gone: () => false,
      adopt: (p, model, from) => m.adopt(p, model, from),
      close: () => m.close(),
    };
  },
  volumes(deps) {
    const placement = deps.placement;
    if (!placement) throw new Error("vsphere storage needs the models' placements (VolumeDeps.placement)");
    return new VsphereVolumes({ placement: (model) => placement(model) as Promise<VspherePlacement> });
  },
  replicaHosts: (deps) => new InstanceReplicaHosts(deps, vsphereReplicaInstances()),
};
