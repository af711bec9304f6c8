/**
 * Controllers on vSphere (the vsphere hosting of ../controller-hosting.ts, for `steward bootstrap
 * vsphere:…` and the Controller resource with substrate "vsphere"): the first replica is the steps
 * of ../cloud-bootstrap.ts on one VM cloned from the template and marked (`guestinfo.steward.*`) as a
 * replica of the controller, so the keeper can retire it like the VMs it clones itself; the SSH keys
 * reach cloud-init through `guestinfo.userdata`, and the address is the one VMware Tools reports.
 * vSphere becomes the replica cloud. Destroying one destroys every VM marked with it.
 */
import type { VsphereModelSettings } from "../../api/core";
import { StewardError } from "../../api/core";
import { CLOUD_REPLICA_UPGRADE_REFUSED, bootstrapOnInstance, destroyMarked } from "../cloud-bootstrap";
import type { ControllerHosting } from "../controller-hosting";
import type { VspherePlacement } from "./machines";
import { REPLICA_MODEL, VsphereMachines, vsphereCredentialsOf } from "./machines";

export const vsphereHosting: ControllerHosting<VsphereModelSettings, VsphereModelSettings> = {
  // Where its instances are, as the bootstrap checked it (defaults filled in); the UUID they are marked with is recorded beside it.
  record: (_plan, c) => c.settings,
  destroyable: (recorded) => recorded,
  replicaUpgradeRefused: CLOUD_REPLICA_UPGRADE_REFUSED,
  bootstrap: (plan, o) =>
    bootstrapOnInstance(plan, o, {
      substrate: "vsphere",
      unreachableHint: "the VM's network and firewall",
      check: (api, settings) => api.parseRequest(api.VsphereModelSettingsSchema, settings, "vsphere settings"),
      open: (settings, uuid, attributes) => {
        const placement: VspherePlacement = {
          settings,
          controllerUuid: uuid,
          credentials: vsphereCredentialsOf(attributes),
        };
        const vms = new VsphereMachines();
        return {
          noun: "VM",
          launch: (userData) => {
            o.progress(`Cloning ${settings.template} in ${settings.datacenter} at ${settings.url}`);
            // Machine "0" of the replicas: the keeper's own clones are named by the time they were made.
            return vms.cloneWith(
              placement,
              { model: REPLICA_MODEL, machine: "0", userData },
              { progress: (l) => o.progress(`  ${l}`) },
            );
          },
          state: async (id) => {
            const vm = await vms.vm(placement, id);
            if (!vm)
              throw new StewardError("unavailable", `VM ${id} is gone before it ran; see vCenter's tasks and events`, {
                reason: "instance-gone",
              });
            return { state: vm.state, ...(vm.state === "poweredOn" && vm.address ? { address: vm.address } : {}) };
          },
          terminate: (id) => vms.destroy(placement, [{ id, state: "unknown" }]),
          // Whoever may read the VM's settings in vCenter could read the host key there.
          forgetUserData: (id) => vms.forgetUserData(placement, id),
          close: () => vms.close(),
        };
      },
    }),

  async destroy(target, o) {
    if (!target.uuid)
      throw new StewardError(
        "invalid-request",
        "destroying a controller's VMs needs its UUID (what they are marked with)",
      );
    const vms = new VsphereMachines();
    const placement: VspherePlacement = {
      settings: target.settings,
      controllerUuid: target.uuid,
      credentials: vsphereCredentialsOf(target.credential ?? {}),
    };
    return destroyMarked(
      {
        doing: `Destroying the controller's VMs in ${target.settings.datacenter}`,
        list: () => vms.controllerVms(placement),
        remove: (mine) => vms.destroy(placement, mine),
        label: (v) => v.name,
        close: () => vms.close(),
      },
      o.progress,
    );
  },
};
