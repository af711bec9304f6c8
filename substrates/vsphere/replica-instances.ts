/**
 * VMs for a controller's replicas (the vsphere kind's `replicaHosts()`, ../replica-hosts.ts): cloned
 * from the template and named and marked as the machines of a pseudo-model (the bootstrap's first VM
 * is its machine 0; the keeper's clones are named by the time they were made), live while powered on.
 */
import type { VsphereModelSettings } from "../../api/core";
import type { ReplicaInstanceCloud } from "../replica-hosts";
import type { VspherePlacement, VsphereVm } from "./machines";
import { REPLICA_MODEL, VsphereMachines, vsphereCredentialsOf } from "./machines";

export function vsphereReplicaInstances(): ReplicaInstanceCloud<VsphereModelSettings> {
  const machines = new VsphereMachines();
  return {
    name: "vsphere",
    instances: (settings, credential, controllerUuid) => {
      const p: VspherePlacement = { settings, controllerUuid, credentials: vsphereCredentialsOf(credential) };
      const vms = (): Promise<VsphereVm[]> => machines.instances(p, REPLICA_MODEL);
      return {
        launch: async (_n, userData) => ({
          id: await machines.cloneWith(p, { model: REPLICA_MODEL, machine: String(Date.now()), userData }),
        }),
        state: async (id) => {
          const vm = (await vms()).find((v) => v.id === id);
          return { gone: !vm || vm.state !== "poweredOn", ...(vm?.address ? { address: vm.address } : {}) };
        },
        live: async () => (await vms()).filter((v) => v.state === "poweredOn"),
        terminate: async (ids) => {
          for (const vm of (await vms()).filter((v) => ids.includes(v.id)))
            await machines.stopMachine({ model: REPLICA_MODEL, machine: vm.machine!, placement: p });
        },
      };
    },
    close: () => machines.close(),
  };
}
