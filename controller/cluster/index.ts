export { LeaderElection, LEADER_KEY } from "./leader-election";
export type { LeaderElectionOptions } from "./leader-election";
export { REPLICAS_PREFIX, clusterAddresses } from "./replicas";
export type { ReplicaDoc, LeaderDoc } from "./replicas";
export { fencedStore } from "./fenced-store";
