/**
 * What the REST API's resource modules (this folder) are given: the state they read and change,
 * the cluster, the substrates they provision on, and the controller's limits.
 */
import type { Logger } from "../../../api";
import type { ClusterControl } from "../../cluster";
import type { SshProvisioner } from "../../provisioner/ssh-machines";
import type { CredentialOps, OperatorQuotas, RelationOps, SecretOps, StateCache, StateOps, UserOps } from "../../state";
import type { LocalMachinePolicy } from "../../access/controller-host";
import type { FailedLoginLimiterOptions } from "../failed-login-limiter";
import type { AgentReleases } from "../agent-releases";

export interface HttpApiDeps {
  cache: StateCache;
  ops: StateOps;
  /** Users and their access (state/user-ops.ts). */
  users: UserOps;
  relations: RelationOps;
  credentials: CredentialOps;
  /** Secrets: users' own, and opening values for a reveal (state/secret-ops.ts). */
  secrets: SecretOps;
  ssh: SshProvisioner;
  cluster: ClusterControl;
  log: Logger;
  controllerAddresses: () => string[];
  /** The SHA-256 fingerprint of the controller's CA (what every user is shown of its TLS). */
  caFingerprint: string;
  /** The controller's CA certificate (PEM): public, served to clients that pin it by fingerprint. */
  caCert: string;
  /** Operator quotas: the controller's, its superusers' reserve, per model and per user (see operator-quotas.ts). */
  operatorQuotas: OperatorQuotas;
  /**
   * How long the tokens issued at login live, in ms (at most MAX_TOKEN_LIFETIME_MS).
   * @default 24 hours
   */
  tokenLifetimeMs?: number;
  /** Limits on failed logins per user and per source network (see FailedLoginLimiter for defaults). */
  failedLogins?: FailedLoginLimiterOptions;
  /** Whether this controller makes local machines, and how many its host takes. */
  localMachines: LocalMachinePolicy;
  /** The agent releases it holds for `steward upgrade-model`. */
  agentReleases: AgentReleases;
}
