/**
 * How fast an HA controller notices that its leader is gone: etcd's timing and the controller
 * leader's lease, chosen together and measured in bench/ha-host-failover.
 *
 * etcd restarts every lease clock when its own leader changes, adding one election timeout, so a
 * leader whose host died (often running the etcd leader too) is replaced after about: an etcd
 * election (one to two timeouts) + one timeout + the lease + etcd's 0.5 s expiry sweep. At
 * 100/1000 ms and a 2 s lease that was 4.4 s (median of 3); at 50/500 ms and 1 s, 1.5 s (median
 * of 5, max 2.6). Heartbeats every 50 ms suit a LAN (etcd's tuning guide: about one round trip;
 * the election timeout ten times that); pre-vote keeps a slow or cut-off member from deposing a
 * healthy leader.
 */
export const ETCD_HEARTBEAT_MS = 50;
export const ETCD_ELECTION_TIMEOUT_MS = 500;
/** The shortest lease etcd grants at this timing (1.5 election timeouts, rounded up to a second). */
export const HA_LEADER_LEASE_SECONDS = 1;
/**
 * A single replica has no one to hand leadership to: a longer lease lets it ride out a stall of
 * its event loop (its leader-only work would otherwise stop and start again).
 */
export const SINGLE_REPLICA_LEADER_LEASE_SECONDS = 2;
