/**
 * The clouds the provisioner makes machines on, each seen the same way: how a model's settings and
 * credential become a placement, its broker, and its instances listed with a state. Built from the
 * substrate registry: every kind whose contract says its machines are cloud instances, with its
 * runtime half's placement and broker (substrates/<kind>/kind.ts). A new cloud needs nothing here.
 */
import type { ModelSubstrate } from "../../api";
import { MODEL_SUBSTRATES, StewardError, contractOf } from "../../api";
import type { CloudInstance, MachineBroker, MachineHost } from "../../substrates";
import { substrateKind } from "../../substrates";
import type { CredentialOps, ModelDoc } from "../state";

export type { CloudInstance };

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

export function clouds(credentials: CredentialOps, host: MachineHost): Partial<Record<ModelSubstrate, Cloud>> {
  const out: Partial<Record<ModelSubstrate, Cloud>> = {};
  for (const name of MODEL_SUBSTRATES) {
    if (!contractOf(name).instances) continue;
    const kind = substrateKind(name);
    const machines = kind.machines!(host);
    if (!machines.instances || !machines.gone)
      throw new Error(`the ${name} kind's machines are instances, but its broker does not list them`);
    out[name] = {
      broker: machines,
      async placementOf(model, controllerUuid) {
        const { credential, settings } = model.placement;
        if (!credential) throw new StewardError("invalid-request", `model ${model.name} has no ${name} credential`);
        return kind.placement!({ settings, controllerUuid }, await credentials.open(credential, name as never));
      },
      instances: (p, model) => machines.instances!(p, model),
      gone: (state) => machines.gone!(state),
      ...(machines.adopt
        ? { adopt: (p: unknown, model: string, from: string) => machines.adopt!(p, model, from) }
        : {}),
      close: () => machines.close(),
    };
  }
  return out;
}
