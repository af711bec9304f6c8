/**
 * The kubernetes substrate kind's runtime half (substrates/kind.ts): a model's units are pods, made
 * by its pod broker (application-pods.ts) in the model's namespace on the cluster its credential
 * reaches (the placement), and their storage as the StatefulSet's claims (volumes.ts); what the kind says itself is whether a cluster credential and a model's
 * namespace can be used (cluster-checks.ts), and, for a controller that runs here, its own
 * StatefulSet's pods as replica hosts (replica-hosts.ts).
 */
import type { KubernetesModelSettings } from "../../api/core";
import { SUBSTRATE_CONTRACTS } from "../../api/core";
import type { SubstrateKind } from "../kind";
import type { KubernetesPlacement } from "./application-pods";
import { KubernetesApplicationPods } from "./application-pods";
import type { KubernetesControllerRecord, KubernetesControllerSettings } from "./controller-bootstrap";
import { kubernetesHosting } from "./controller-bootstrap";
import { checkClusterCredential, checkModelCluster } from "./cluster-checks";
import { CONTROLLER_API_PORT, clientServiceDnsName } from "./controller-pods";
import { connectionOfCredential } from "./kubeconfig";
import { PodReplicaHosts } from "./replica-hosts";
import { KubernetesVolumes } from "./volumes";

export const kind: SubstrateKind<
  KubernetesModelSettings,
  KubernetesPlacement,
  KubernetesControllerSettings,
  KubernetesControllerRecord
> = {
  contract: SUBSTRATE_CONTRACTS.kubernetes,
  controller: kubernetesHosting,
  placement: ({ settings }, credential) => {
    if (!settings.namespace) throw new Error("the model's kubernetes settings name no namespace");
    return { connection: connectionOfCredential(credential), namespace: settings.namespace };
  },
  pods: (settings) => new KubernetesApplicationPods(settings),
  volumes: (deps) => new KubernetesVolumes(deps),
  checkCredential: (name, attributes) => checkClusterCredential(name, attributes),
  checkPlacement: (credential, attributes, settings) => checkModelCluster(credential, attributes, settings.namespace),
  replicaHosts: (deps) => new PodReplicaHosts(deps),
  // The client Service resolves to whichever replicas are ready, so it still leads somewhere when some replicas' own names do not.
  replicaServiceAddresses: (s: { namespace: string; statefulSet: string }) => [
    `${clientServiceDnsName({ name: s.statefulSet, namespace: s.namespace })}:${CONTROLLER_API_PORT}`,
  ],
};
