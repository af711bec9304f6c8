/**
 * A controller's first replica on vSphere (`steward bootstrap vsphere:…`, the Controller resource
 * with substrate "vsphere"): the steps of ../cloud-bootstrap.ts on one VM cloned from the template
 * and marked (`guestinfo.steward.*`) as a replica of the controller, so the keeper can retire it
 * like the VMs it clones itself; the SSH keys reach cloud-init through `guestinfo.userdata`, and
 * the address is the one VMware Tools reports. vSphere becomes the replica cloud.
 */
import { randomUUID } from "node:crypto";
import type { VsphereModelSettings } from "../../api/core";
import { StewardError } from "../../api/core";
import type { Progress } from "../brokers";
import type { CloudController } from "../cloud-bootstrap";
import { bootstrapOnInstance } from "../cloud-bootstrap";
import type { VspherePlacement, VsphereSettings } from "./machines";
import { REPLICA_MODEL, VsphereMachines, vsphereCredentialsOf } from "./machines";

export interface VsphereControllerPlan {
  name: string;
  /** Checked already (VsphereModelSettingsSchema): they become the replica cloud's too. */
  settings: VsphereModelSettings;
  /** The credential's attributes (user, password), checked already. */
  attributes: Record<string, string>;
  /** The name it is stored under in the controller. */
  credentialName: string;
  port: number;
  progress: Progress;
}

export async function bootstrapControllerOnVsphere(plan: VsphereControllerPlan): Promise<CloudController> {
  const uuid = randomUUID();
  const placement: VspherePlacement = { settings: plan.settings, controllerUuid: uuid, credentials: vsphereCredentialsOf(plan.attributes) };
  const vms = new VsphereMachines();
  try {
    return await bootstrapOnInstance({
      name: plan.name, uuid, port: plan.port, progress: plan.progress, unreachableHint: "the VM's network and firewall",
      credential: { name: plan.credentialName, substrate: "vsphere", attributes: plan.attributes },
      replicaCloud: { substrate: "vsphere", credential: plan.credentialName, vsphere: plan.settings },
    }, {
      noun: "VM",
      launch: (userData) => {
        plan.progress(`Cloning ${plan.settings.template} in ${plan.settings.datacenter} at ${plan.settings.url}`);
        // Machine "0" of the replicas: the keeper's own clones are named by the time they were made.
        return vms.cloneWith(placement, { model: REPLICA_MODEL, machine: "0", userData }, { progress: (l) => plan.progress(`  ${l}`) });
      },
      state: async (id) => {
        const vm = await vms.vm(placement, id);
        if (!vm) throw new StewardError("unavailable", `VM ${id} is gone before it ran; see vCenter's tasks and events`, { reason: "instance-gone" });
        return { state: vm.state, ...(vm.state === "poweredOn" && vm.address ? { address: vm.address } : {}) };
      },
      terminate: (id) => vms.destroy(placement, [{ id, state: "unknown" }]),
      // Whoever may read the VM's settings in vCenter could read the host key there.
      forgetUserData: (id) => vms.forgetUserData(placement, id),
    });
  } finally {
    vms.close();
  }
}

/**
 * Destroys every VM of the controller `controllerUuid` (its replicas, those the keeper cloned
 * included, and its models' machines): what is left to do once it is destroyed. Their names.
 */
export async function destroyControllerVms(settings: VsphereSettings, attributes: Record<string, string>, controllerUuid: string): Promise<string[]> {
  const vms = new VsphereMachines();
  try {
    const placement: VspherePlacement = { settings, controllerUuid, credentials: vsphereCredentialsOf(attributes) };
    const mine = await vms.controllerVms(placement);
    await vms.destroy(placement, mine);
    return mine.map((v) => v.name);
  } finally {
    vms.close();
  }
}
