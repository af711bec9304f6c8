/**
 * The kubernetes substrate kind's runtime half (substrates/kind.ts): a model's units are pods,
 * driven by the controller's Kubernetes provisioner; what the kind says itself is whether a
 * cluster credential and a model's namespace can be used (cluster-checks.ts), and, for a controller
 * that runs here, its own StatefulSet's pods as replica hosts (replica-hosts.ts).
 */
import type { KubernetesModelSettings } from "../../api/core";
import { SUBSTRATE_CONTRACTS } from "../../api/core";
import type { SubstrateKind } from "../kind";
import { kubernetesHosting } from "./controller-bootstrap";
import { checkClusterCredential, checkModelCluster } from "./cluster-checks";
import { CONTROLLER_API_PORT, clientServiceDnsName } from "./controller-pods";
import { PodReplicaHosts } from "./replica-hosts";

export const kind: SubstrateKind<KubernetesModelSettings> = {
  contract: SUBSTRATE_CONTRACTS.kubernetes,
  controller: kubernetesHosting,
  checkCredential: (name, attributes) => checkClusterCredential(name, attributes),
  checkPlacement: (credential, attributes, settings) => checkModelCluster(credential, attributes, settings.namespace),
  replicaHosts: (deps) => new PodReplicaHosts(deps),
  // The client Service resolves to whichever replicas are ready, so it still leads somewhere when some replicas' own names do not.
  replicaServiceAddresses: (s: { namespace: string; statefulSet: string }) => [
    `${clientServiceDnsName({ name: s.statefulSet, namespace: s.namespace })}:${CONTROLLER_API_PORT}`,
  ],
};
