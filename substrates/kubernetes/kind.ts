/**
 * The kubernetes substrate kind's runtime half (substrates/kind.ts): a model's units are pods,
 * driven by the controller's Kubernetes provisioner; what the kind says itself is whether a
 * cluster credential and a model's namespace can be used (cluster-checks.ts).
 */
import type { KubernetesModelSettings } from "../../api/core";
import { SUBSTRATE_CONTRACTS } from "../../api/core";
import type { SubstrateKind } from "../kind";
import { kubernetesHosting } from "./controller-bootstrap";
import { checkClusterCredential, checkModelCluster } from "./cluster-checks";

export const kind: SubstrateKind<KubernetesModelSettings> = {
  contract: SUBSTRATE_CONTRACTS.kubernetes,
  controller: kubernetesHosting,
  checkCredential: (name, attributes) => checkClusterCredential(name, attributes),
  checkPlacement: (credential, attributes, settings) => checkModelCluster(credential, attributes, settings.namespace),
};
