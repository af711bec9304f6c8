/**
 * The clouds the provisioner makes machines on, each seen the same way: how a model's settings and
 * credential become a placement, its broker, and its instances listed with a state. A cloud that
 * plugs in here (Kubernetes next) needs nothing else from the provisioner.
 */
import type { ModelSubstrate } from "../../api";
import { StewardError } from "../../api";
import type { MachineBroker } from "../../substrates";
import { aws, vsphere } from "../../substrates";
import type { CredentialOps, ModelDoc } from "../state";

/** An instance (EC2 instance, vSphere VM) as the provisioner records it. */
export interface CloudInstance { id: string; machine?: string; state: string; zone?: string; address?: string }

export interface Cloud<P = unknown> {
  broker: MachineBroker<P>;
  placementOf(model: ModelDoc, controllerUuid: string): Promise<P>;
  /** The model's instances, newest first. */
  instances(p: P, model: string): Promise<CloudInstance[]>;
  /** The instance no longer is (or soon will not be) the machine. */
  gone(state: string): boolean;
  /** Takes over the instances of a model that migrated here from `fromController` (undefined: the cloud cannot, and its models are not migrated). */
  adopt?(p: P, model: string, fromController: string): Promise<number>;
  close(): void;
}

export function clouds(credentials: CredentialOps): Partial<Record<ModelSubstrate, Cloud>> {
  const awsMachines = new aws.AwsMachines();
  const vsphereMachines = new vsphere.VsphereMachines();
  const awsCloud: Cloud<aws.AwsPlacement> = {
    broker: awsMachines,
    async placementOf(model, controllerUuid) {
      if (!model.aws || !model.credential) throw new StewardError("invalid-request", `model ${model.name} has no aws settings or credential`);
      const c = await credentials.open(model.credential, "aws");
      return { settings: model.aws, controllerUuid, credentials: aws.awsCredentialsOf(c) };
    },
    instances: (p, model) => awsMachines.instances(p, model),
    gone: (state) => aws.GONE_STATES.has(state),
    adopt: (p, model, from) => awsMachines.adopt(p, model, from),
    close: () => awsMachines.close(),
  };
  const vsphereCloud: Cloud<vsphere.VspherePlacement> = {
    broker: vsphereMachines,
    async placementOf(model, controllerUuid) {
      if (!model.vsphere || !model.credential) throw new StewardError("invalid-request", `model ${model.name} has no vsphere settings or credential`);
      const c = await credentials.open(model.credential, "vsphere");
      return { settings: model.vsphere, controllerUuid, credentials: vsphere.vsphereCredentialsOf(c) };
    },
    // A destroyed VM is simply not listed; none listed is gone.
    instances: (p, model) => vsphereMachines.instances(p, model),
    gone: () => false,
    adopt: (p, model, from) => vsphereMachines.adopt(p, model, from),
    close: () => vsphereMachines.close(),
  };
  return { aws: awsCloud as Cloud, vsphere: vsphereCloud as Cloud };
}
