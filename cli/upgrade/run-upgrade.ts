/**
 * Runs an upgrade plan: the new release is staged on every replica first, then replica by replica:
 * switch and restart, gate on health; on a failed gate, roll that replica back, record why, and stop (never a second replica
 * while one is down). Progress is recorded in the controller's store as it goes, so
 * `show-controller` shows it and a re-run resumes.
 */
import { randomUUID } from "node:crypto";
import type { ControllerClient, ControllerUpgrade } from "../../api/core";
import { StewardError } from "../../api/core";
import { waitForReplica } from "./health-gate";
import type { ReplicaStep, UpgradePlan } from "./plan";
import { requireHealthy } from "./plan";
import type { ReplicaUpgrader } from "../../substrates";

export interface RunUpgradeOptions {
  client: ControllerClient;
  caCert: string;
  plan: UpgradePlan;
  upgrader: ReplicaUpgrader;
  /** How long each replica may take to come back healthy. */
  timeoutMs: number;
  progress: (line: string) => void;
}

/** How often a running upgrade refreshes its record (well inside plan.ts's STALE_RECORD_MS). */
const HEARTBEAT_MS = 15_000;
/** How long a record write may wait for the cluster (a leader restarting, an election). */
const RECORD_RETRY_MS = 30_000;

export async function runUpgrade(o: RunUpgradeOptions): Promise<ControllerUpgrade> {
  const { plan } = o;
  const now = (): string => new Date().toISOString();
  const record: ControllerUpgrade = {
    run: randomUUID(),
    from: plan.resumes?.from ?? plan.from,
    to: plan.to,
    state: "running",
    startedAt: plan.resumes?.startedAt ?? now(),
    updatedAt: now(),
    replicas: [
      ...plan.done.map((r) => ({ name: r.name, host: r.host, version: r.version, state: "upgraded" as const })),
      ...plan.steps.map((r) => ({ name: r.name, host: r.host, version: r.version, state: "pending" as const })),
    ],
    message: plan.resumes
      ? `resumed: ${plan.steps.length} replica(s) left`
      : `upgrading ${plan.steps.length} replica(s)`,
  };
  const mark: Mark = (step, state, version, message) => {
    const r = record.replicas.find((x) => x.name === step.name)!;
    Object.assign(r, { state, version, at: now() });
    if (message) r.message = message;
    else delete r.message;
  };
  const save = (): Promise<void> => saveRecord(o.client, record);
  await save();
  // A running record that stops being refreshed means its run died (plan.ts): refresh it while a gate waits.
  const heartbeat = setInterval(() => {
    void saveRecord(o.client, record).catch(() => undefined);
  }, HEARTBEAT_MS);
  try {
    await stageAll(o, record, mark, save);
    await upgradeEach(o, record, mark, save);
  } finally {
    clearInterval(heartbeat);
  }
  await finish(record, "done", `every replica runs ${plan.to}`, save);
  return record;
}

/** Replica by replica: switch, restart, gate; a failed gate rolls the replica back and stops. */
async function upgradeEach(
  o: RunUpgradeOptions,
  record: ControllerUpgrade,
  mark: Mark,
  save: () => Promise<void>,
): Promise<void> {
  const { plan, progress } = o;
  const remaining = [...plan.steps];
  for (let i = 0; remaining.length > 0; i++) {
    // Whatever happened since the plan (or the last gate), every replica must be healthy before one goes down.
    const info = await o.client.controllerInfo();
    requireHealthy(info);
    // Leadership may have moved since the plan: a follower still goes first, so it moves only once
    // (unless the substrate imposes the order: then the plan's holds).
    const leaderNow = info.cluster.members.find((m) => m.leader)?.name;
    const next = o.upgrader.order ? 0 : remaining.findIndex((s) => s.name !== leaderNow);
    const [picked] = remaining.splice(next >= 0 ? next : 0, 1);
    const step: ReplicaStep = { ...picked!, leader: picked!.name === leaderNow };
    // (A single replica on the embedded store is the only one, whatever its id.)
    const sinceBefore = (
      info.cluster.store === "embedded" ? info.replicas[0] : info.replicas.find((r) => r.id === step.name)
    )?.since;
    progress(
      `Replica ${step.name}${step.host ? ` on ${step.host}` : ""} (${i + 1} of ${plan.steps.length}${step.leader ? ", the leader" : ""}): ${step.version} -> ${plan.to}`,
    );
    mark(step, "upgrading", step.version);
    record.message = `upgrading replica ${step.name}`;
    await save();
    const switched = Date.now();
    const reach = o.upgrader.reach?.bind(o.upgrader);
    const gate = (version: string): Promise<void> =>
      waitForReplica({
        client: o.client,
        caCert: o.caCert,
        step,
        version,
        sinceBefore,
        timeoutMs: o.timeoutMs,
        progress,
        ...(reach ? { reach } : {}),
      });
    try {
      await o.upgrader.switchOver(step, progress);
      await gate(plan.to);
    } catch (err) {
      const why = (err as Error).message;
      progress(`    replica ${step.name} failed: ${why}`);
      progress(`    rolling replica ${step.name} back to ${step.version}`);
      const rolledBack = await o.upgrader
        .rollBack(step, progress)
        .then(() => gate(step.version))
        .then(
          () => undefined,
          (e: Error) => e.message,
        );
      const look = o.upgrader.hint?.(step) ?? "look at the replica's log on its host";
      const after =
        rolledBack === undefined
          ? `it was rolled back to ${step.version} and is healthy again${o.upgrader.hint ? `. To see why: ${look}` : ""}`
          : `rolling it back failed too: ${rolledBack}; ${look}`;
      mark(
        step,
        rolledBack === undefined ? "rolled-back" : "failed",
        rolledBack === undefined ? step.version : "unknown",
        why,
      );
      await finish(record, "failed", `stopped at replica ${step.name}: ${why}; ${after}`, save);
      const upgraded = record.replicas.filter((r) => r.state === "upgraded").map((r) => r.name);
      throw new StewardError(
        "unavailable",
        `the upgrade stopped at replica ${step.name}: ${why}. ${after[0]!.toUpperCase()}${after.slice(1)}. ${upgraded.length > 0 ? `Already at ${plan.to}: ${upgraded.join(", ")}; they` : "The other replicas"} run on. Fix the cause and run steward upgrade-controller again: it resumes with ${step.name}`,
        { reason: "upgrade-stopped" },
      );
    }
    mark(step, "upgraded", plan.to);
    await save();
    // Tidying is not the upgrade: a failure to delete old files only says so.
    await o.upgrader
      .prune(step)
      .catch((err: Error) => progress(`    could not remove older releases of replica ${step.name}: ${err.message}`));
    progress(
      `    replica ${step.name} is back at ${plan.to}, a healthy voter (${seconds(switched)} s after its switch)`,
    );
  }
}

type Mark = (
  step: ReplicaStep,
  state: ControllerUpgrade["replicas"][number]["state"],
  version: string,
  message?: string,
) => void;

/**
 * Stages the new release on every replica first, side by side: nothing that runs changes, so it
 * needs no one-at-a-time, and the replicas' down times stay short. A failure stops the upgrade
 * before any replica was switched.
 */
async function stageAll(
  o: RunUpgradeOptions,
  record: ControllerUpgrade,
  mark: Mark,
  save: () => Promise<void>,
): Promise<void> {
  const t0 = Date.now();
  if (o.upgrader.stageAll) {
    o.progress(`Preparing ${o.plan.to} for ${o.plan.steps.length} replica(s)`);
    try {
      await o.upgrader.stageAll(o.plan.steps, (l) => o.progress(`  ${l.trim()}`));
    } catch (err) {
      const why = (err as Error).message;
      await finish(record, "failed", `preparing the new release failed (${why}); no replica was switched`, save);
      throw new StewardError(
        "unavailable",
        `the upgrade stopped before changing any replica: ${why}. Fix that and run steward upgrade-controller again`,
        { reason: "upgrade-stopped" },
      );
    }
    return;
  }
  o.progress(`Staging ${o.plan.to} beside the running release on ${o.plan.steps.length} replica(s)`);
  const results = await Promise.allSettled(
    o.plan.steps.map(async (step) => o.upgrader.stage?.(step, (l) => o.progress(`  ${step.name}: ${l.trim()}`))),
  );
  const failed = o.plan.steps.map((step, i) => [step, results[i]!] as const).filter(([, r]) => r.status === "rejected");
  if (failed.length === 0) {
    o.progress(`  staged (${seconds(t0)} s)`);
    return;
  }
  const why = failed
    .map(
      ([step, r]) =>
        `${step.name}${step.host ? ` on ${step.host}` : ""}: ${((r as PromiseRejectedResult).reason as Error).message}`,
    )
    .join("; ");
  for (const [step, r] of failed)
    mark(step, "failed", step.version, `staging failed: ${((r as PromiseRejectedResult).reason as Error).message}`);
  await finish(record, "failed", `staging the new release failed (${why}); no replica was switched`, save);
  throw new StewardError(
    "unavailable",
    `the upgrade stopped before changing any replica: staging the new release failed on ${why}. Fix that and run steward upgrade-controller again`,
    { reason: "upgrade-stopped" },
  );
}

const seconds = (since: number): string => ((Date.now() - since) / 1000).toFixed(1);

async function finish(
  record: ControllerUpgrade,
  state: "done" | "failed",
  message: string,
  save: () => Promise<void>,
): Promise<void> {
  Object.assign(record, { state, message, finishedAt: new Date().toISOString() });
  await save();
}

/** Writes the record, waiting out a brief unavailability (the leader's restart moves leadership). */
async function saveRecord(client: ControllerClient, record: ControllerUpgrade): Promise<void> {
  const deadline = Date.now() + RECORD_RETRY_MS;
  for (;;) {
    record.updatedAt = new Date().toISOString();
    try {
      await client.recordUpgrade(record);
      return;
    } catch (err) {
      // Another run's live record: this run must not go on (two replicas would restart at once), and
      // says so at once. Nor is any other refusal the controller marks final worth waiting out.
      if (StewardError.isInstance(err) && (err.reason === "upgrade-in-progress" || !err.retryable)) throw err;
      if (Date.now() > deadline)
        throw new StewardError(
          "deadline-exceeded",
          `cannot record the upgrade's progress in the controller: ${(err as Error).message}`,
        );
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
