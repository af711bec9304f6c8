/**
 * The controller cluster's own documents in the store: desired size and quorum-keeper settings,
 * one record per etcd member (kept after removal, so a replica that returns late learns it was
 * replaced), the pool of spare hosts, and what the quorum keeper is doing. Documents like any other,
 * so they live in state/ (the cache keeps them) and their keys come from the registry of kinds.
 */
import type { ReplicaPlacement } from "../../api";
import { keys } from "./keys";

export const clusterKeys = {
  config: keys.clusterConfig,
  membersPrefix: keys.clusterMembers,
  member: keys.clusterMember,
  sparesPrefix: keys.clusterSpares,
  spare: keys.clusterSpare,
  keeper: keys.clusterKeeper,
  /** Where the keeper launches replicas when no spare host is left (`steward set-replica-cloud`). */
  replicaCloud: keys.clusterReplicaCloud,
  /** The last in-place upgrade's progress (`steward upgrade-controller`; api ControllerUpgrade). */
  upgrade: keys.clusterUpgrade,
};

export const ALLOWED_REPLICAS = [1, 3, 5, 7] as const;

/** A replica as it publishes itself under its presence lease; `version`: the Steward version it runs (absent from replicas built before upgrade-controller existed). */
export interface ReplicaDoc {
  id: string;
  addresses: string[];
  since: string;
  version?: string;
  /** The newest store format its build reads (api STORE_FORMAT); absent: a build before formats, 1. */
  storeFormat?: number;
}
/** The controller leader, as its campaign key holds it. */
export interface ControllerLeaderDoc {
  replica: string;
  addresses: string[];
  since: string;
}

export interface HaConfig {
  /** Voters wanted (wantsVote). */
  replicas: number;
  /** A replica gone this long is replaced from the spare pool. */
  replaceAfterSeconds: number;
  /** At most this many replacements in any hour (a flapping network must not churn members). */
  maxReplacementsPerHour: number;
}

export const DEFAULT_HA_CONFIG: HaConfig = { replicas: 1, replaceAfterSeconds: 300, maxReplacementsPerHour: 2 };

export interface MemberDoc {
  /** etcd member name = replica id. */
  name: string;
  /** Host address (peers, API). */
  host: string;
  apiPort: number;
  /** etcd's member id, once added. */
  memberId?: string;
  state: "joining" | "member" | "removed";
  addedAt: string;
  removedAt?: string;
  /** Why it was removed. */
  reason?: string;
  /** Its cloud instance, when the keeper (or a bootstrap on a cloud, for the first replica) launched one for it. */
  instance?: { id: string; zone?: string };
}

/**
 * Where replacement replicas are launched: a placement like a model's (api ReplicaPlacement): a
 * cloud, its settings and the credential to use; on Kubernetes the controller's own StatefulSet,
 * reached as its pods' ServiceAccount (no credential).
 */
export type ReplicaCloudDoc = ReplicaPlacement;

/** A host the keeper may install a replica on. Its SSH key is sealed (security/sealing.ts); never returned by the API. */
export interface SpareDoc {
  host: string;
  port?: number;
  user: string;
  /** {@link SpareKey}, sealed for `spare/<host>`. */
  sealedKey: string;
  hostKey: string;
  addedAt: string;
  /** Set when an install there failed; such a spare is skipped until added again. */
  failed?: string;
}

/** What a spare's `sealedKey` holds. */
export interface SpareKey {
  privateKey: string;
  passphrase?: string;
}

export const sparePurpose = (host: string): string => `spare/${host}`;

export interface KeeperEvent {
  at: string;
  message: string;
}

export interface KeeperDoc {
  /** `idle`: nothing to do; `waiting`: a replica is gone but not yet for replaceAfter; `acting`: a change is in flight; `blocked`: something needed is missing (quorum, spares, rate limit). */
  state: "idle" | "waiting" | "acting" | "blocked";
  message: string;
  updatedAt: string;
  /** Newest last; capped. */
  history: KeeperEvent[];
  /** When replacements were made (for the hourly limit). */
  replacements: string[];
}

export const HISTORY_LIMIT = 50;
