/**
 * What `steward upgrade-controller` will do, decided from the controller's own answer before
 * anything changes: which replicas to upgrade and in which order (followers first, the leader last,
 * so leadership moves once), or why it refuses (a major step or more than one minor, a store this
 * release cannot read, an older CLI, an unhealthy cluster, an upgrade in flight or one to another
 * version left unfinished).
 */
import type { ControllerInfo, ControllerUpgrade } from "../../api/core";
import {
  OLDEST_STORE_FORMAT,
  STORE_FORMAT,
  StewardError,
  UPGRADE_RECORD_STALE_MS,
  compareVersions,
  nextMinor,
  parseVersion,
  readsStoreFormat,
  samePatchLine,
} from "../../api/core";
import type { ControllerHosting, ReplicaStep } from "../../substrates";

export type { ReplicaStep };

export interface UpgradePlan {
  /** The version the controller runs now (its oldest replica's). */
  from: string;
  to: string;
  /** The replicas still to upgrade, in order. */
  steps: ReplicaStep[];
  /** Replicas already at `to` (a resumed upgrade). */
  done: ReplicaStep[];
  /** Set when this run resumes the recorded upgrade. */
  resumes?: ControllerUpgrade;
  /** The store's format now, when older than `to` writes: its leader migrates it once every replica runs `to`. */
  storeFrom?: number;
}

/** A `running` record not written for this long is an upgrade whose runner died: a re-run resumes it. */
export const STALE_RECORD_MS = UPGRADE_RECORD_STALE_MS;

const MIGRATION_HINT =
  "a major upgrade, or one of more than one minor version, goes by migration: bootstrap a new controller at the new version and `steward upgrade-controller --via-migration TARGET`";

export function planUpgrade(info: ControllerInfo, to: string, now = Date.now()): UpgradePlan {
  const c = info.cluster;
  const replicas = replicasOf(info);
  const unknown = replicas.filter((r) => !parseVersion(r.version));
  if (unknown.length > 0)
    throw new StewardError(
      "unavailable",
      `replica ${unknown.map((r) => r.name).join(", ")} does not report its version (it is down, or older than in-place upgrades): every replica must be up and healthy first (steward show-controller)`,
      { reason: "replica-version-unknown" },
    );
  for (const r of replicas) {
    if (compareVersions(r.version, to) > 0)
      throw new StewardError(
        "invalid-request",
        `this client is older (${to}) than replica ${r.name} (${r.version}): upgrade with a steward of the version you want, not an older one`,
      );
    if (!samePatchLine(r.version, to) && !nextMinor(r.version, to))
      throw new StewardError(
        "invalid-request",
        `the controller runs ${r.version} and this client ${to}: ${MIGRATION_HINT}`,
      );
  }
  // Across a minor version the new release migrates the store: it must read the format it is at.
  const format = info.store?.format ?? 1;
  if (replicas.some((r) => !samePatchLine(r.version, to)) && !readsStoreFormat(format))
    throw new StewardError(
      "invalid-request",
      `the controller's store is at format ${format}, which ${to} does not migrate (it reads formats ${OLDEST_STORE_FORMAT} to ${STORE_FORMAT}): ${MIGRATION_HINT}`,
    );
  const record = c.upgrade;
  const steps = order(replicas.filter((r) => r.version !== to));
  const done = replicas.filter((r) => r.version === to);
  const from = replicas.map((r) => r.version).sort(compareVersions)[0] ?? to;
  if (record && record.state !== "done") {
    const stuck = record.replicas.find((r) => r.state !== "upgraded") ?? record.replicas[0];
    const where = stuck
      ? ` (replica ${stuck.name}${stuck.host ? ` on ${stuck.host}` : ""}: ${stuck.state}${stuck.message ? `, ${stuck.message}` : ""})`
      : "";
    if (record.state === "running" && now - Date.parse(record.updatedAt) < STALE_RECORD_MS) {
      throw new StewardError(
        "conflict",
        `an upgrade to ${record.to} is in progress${where}, last progress at ${record.updatedAt}: wait for it (steward show-controller); if its run was stopped, run the same upgrade again after ${STALE_RECORD_MS / 1000} s and it resumes`,
      );
    }
    if (record.to !== to && steps.length > 0) {
      throw new StewardError(
        "conflict",
        `a previous upgrade to ${record.to} did not complete${where}: finish it first by running upgrade-controller with steward ${record.to} (it resumes where it stopped)`,
      );
    }
  }
  if (steps.length > 0) requireHealthy(info);
  return {
    from,
    to,
    steps,
    done,
    ...(format < STORE_FORMAT ? { storeFrom: format } : {}),
    ...(record && record.state !== "done" && record.to === to ? { resumes: record } : {}),
  };
}

/**
 * Why this controller's replicas cannot be upgraded in place by this command, if its hosting kind
 * offers no in-place upgrade (the kind's reason); a kind that does refuses, when it opens, the
 * replicas it cannot reach (SSH: one on a cloud instance its replica cloud launched).
 */
export function unsupportedReplicas(
  hosting: Pick<ControllerHosting<unknown>, "replicaUpgrade" | "replicaUpgradeRefused">,
  steps: ReplicaStep[],
  to: string,
): string | undefined {
  if (hosting.replicaUpgrade || !steps[0]) return undefined;
  return `replica ${steps[0].name} ${hosting.replicaUpgradeRefused ?? "cannot be upgraded in place by this command"}: bootstrap a controller at ${to} and move the models to it by migration`;
}

/** Every voter up, a majority, no learner catching up, the quorum keeper idle: else nothing starts. */
export function requireHealthy(info: ControllerInfo): void {
  const c = info.cluster;
  if (c.degraded || !c.quorum)
    throw new StewardError(
      "unavailable",
      `the controller has no quorum${c.degraded ? ` (${c.degraded})` : ""}: bring its replicas back before upgrading`,
      { reason: "cluster-not-ready" },
    );
  const voters = c.members.filter((m) => m.hasVote);
  const down = voters.filter((m) => !m.present);
  if (down.length > 0)
    throw new StewardError(
      "unavailable",
      `replica ${down.map((m) => `${m.name}${m.host ? ` on ${m.host}` : ""}`).join(", ")} is down: an upgrade restarts replicas one at a time and needs every other one up; bring it back (or let the quorum keeper replace it) first`,
      { reason: "cluster-not-ready" },
    );
  const learners = c.members.filter((m) => m.learner);
  if (learners.length > 0)
    throw new StewardError(
      "unavailable",
      `replica ${learners.map((m) => m.name).join(", ")} is still joining (a learner): wait until it has a vote (steward show-controller)`,
      { reason: "cluster-not-ready" },
    );
  if (voters.length < c.wantsVote)
    throw new StewardError(
      "unavailable",
      `the controller has ${voters.length} of ${c.wantsVote} wanted voters: wait until the quorum keeper has grown it back (steward show-controller)`,
      { reason: "cluster-not-ready" },
    );
  if (c.keeper.state === "acting")
    throw new StewardError(
      "unavailable",
      `the quorum keeper is changing the cluster (${c.keeper.message}): wait until it is idle`,
      { reason: "cluster-not-ready" },
    );
  if (voters.filter((m) => m.leader).length !== 1)
    throw new StewardError("unavailable", "the controller has no leader right now: wait a few seconds and run again", {
      reason: "cluster-not-ready",
    });
}

function replicasOf(info: ControllerInfo): ReplicaStep[] {
  return info.cluster.members
    .filter((m) => m.hasVote)
    .map((m) => ({
      // A single replica on the embedded store names no etcd host: its API address says where it runs.
      name: m.name,
      host: m.host || (m.addresses[0]?.replace(/:\d+$/, "") ?? ""),
      addresses: m.addresses,
      version: m.version ?? "",
      leader: m.leader,
      ...(m.instance ? { instance: m.instance } : {}),
    }));
}

/** Followers first (by name, so a re-run goes the same way), the leader last. */
function order(steps: ReplicaStep[]): ReplicaStep[] {
  return [...steps].sort((a, b) => Number(a.leader) - Number(b.leader) || a.name.localeCompare(b.name));
}
