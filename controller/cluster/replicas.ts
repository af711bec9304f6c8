/** The controller replicas, as each publishes itself under its presence lease. */
import { substrateKind } from "../../substrates";
import type { StateCache } from "../state";
import { keys } from "../state";

export const REPLICAS_PREFIX = keys.clusterReplicas;
export type { ControllerLeaderDoc as LeaderDoc, ReplicaDoc } from "../state";

/**
 * Every replica's API addresses, this replica's first: what agents and clients are given. A
 * controller on Kubernetes puts its client Service's name before them: it resolves to whichever
 * replicas are ready, so it still leads somewhere when some replicas' own names do not.
 */
export function clusterAddresses(cache: StateCache, own: string[]): string[] {
  const others = [...cache.replicas.values()]
    .flatMap((r) => r.addresses)
    .filter((a) => !own.includes(a))
    .sort();
  const cloud = cache.replicaCloud;
  const service = cloud ? (substrateKind(cloud.substrate).replicaServiceAddresses?.(cloud.settings) ?? []) : [];
  return [...service, ...own, ...others];
}
