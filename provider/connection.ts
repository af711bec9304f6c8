/** How every resource reaches its controller; the Controller resource's `connection` output has this shape. */
export interface ControllerConnection {
  /** `host:port` of each replica. */
  addresses: string[];
  /** PEM of the controller's CA: the only authority trusted. */
  caCert: string;
  user: string;
  password: string;
}

/** The replica counts a controller may have, and why others are refused. */
export const REPLICA_COUNTS = [1, 3, 5, 7] as const;
export type ReplicaCount = (typeof REPLICA_COUNTS)[number];

/** An SSH host: its host key is always pinned (fingerprint), never trusted blindly. */
export interface SshHost {
  host: string;
  /** @default 22 */
  port?: number;
  /** @default "root" */
  user?: string;
  /** `SHA256:…`, from `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on the host. */
  hostKey: string;
}
