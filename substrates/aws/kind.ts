/** The aws substrate kind's runtime half (substrates/kind.ts): EC2 instances for a model's machines, EBS volumes for their storage. */
import type { AwsModelSettings } from "../../api/core";
import { SUBSTRATE_CONTRACTS } from "../../api/core";
import type { SubstrateKind } from "../kind";
import { awsHosting } from "./bootstrap";
import type { AwsPlacement } from "./ec2";
import { GONE_STATES, awsCredentialsOf } from "./ec2";
import { instanceTypeFor } from "./instance-types";
import { AwsMachines } from "./machines";
import { InstanceReplicaHosts } from "../replica-hosts";
import { awsReplicaInstances } from "./replica-instances";
import { EbsVolumes } from "./volumes";

export const kind: SubstrateKind<AwsModelSettings, AwsPlacement, AwsModelSettings, AwsModelSettings> = {
  contract: SUBSTRATE_CONTRACTS.aws,
  controller: awsHosting,
  placement: ({ settings, controllerUuid }, credential) => ({
    settings,
    controllerUuid,
    credentials: awsCredentialsOf(credential),
  }),
  machines() {
    const m = new AwsMachines();
    return {
      startMachine: (spec, o) => m.startMachine(spec, o),
      stopMachine: (target) => m.stopMachine(target),
      instances: (p, model) => m.instances(p, model),
      gone: (state) => GONE_STATES.has(state),
      adopt: (p, model, from) => m.adopt(p, model, from),
      close: () => m.close(),
    };
  },
  replicaHosts: (deps) => new InstanceReplicaHosts(deps, awsReplicaInstances()),
  // An EBS volume per storage instance, in its instance's zone.
  volumes: (deps) => new EbsVolumes(deps),
  // Throws, saying what the largest types are, when nothing fits.
  checkConstraints: (settings, c) => {
    instanceTypeFor(c, settings.instanceType);
  },
};
