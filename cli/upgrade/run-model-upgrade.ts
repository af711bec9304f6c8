/**
 * The run of `steward upgrade-model`: wave by wave, the controller is asked to move the wave's
 * machines' agents (each agent downloads, stages, switches when idle, restarts and reports), and
 * the run waits until every one reports the new version. The first machine that went back (its
 * new agent did not come up and report in time) or that does not report by `timeoutMs` stops the
 * run with what happened and what is left; the same command run again resumes.
 */
import type { ControllerClient } from "../../api/core";
import { StewardError, sleep } from "../../api/core";
import type { AgentStep, ModelUpgradePlan } from "./model-plan";

export interface ModelUpgradeRun {
  client: ControllerClient;
  model: string;
  plan: ModelUpgradePlan;
  /** How long each new agent has to come up and report before it goes back on its own, in seconds. */
  trialSeconds: number;
  /** How long this run waits for a wave, in ms: past the agents' trial, for the switch to be seen. */
  timeoutMs: number;
  progress: (line: string) => void;
  /** How often the model's status is read while a wave moves. @default 1000 */
  pollMs?: number;
}

export async function runModelUpgrade(o: ModelUpgradeRun): Promise<void> {
  const all = o.plan.waves.flat().length;
  let moved = 0;
  for (const [i, wave] of o.plan.waves.entries()) {
    const ids = wave.map((s) => s.machine);
    o.progress(`Wave ${i + 1} of ${o.plan.waves.length}: machine ${ids.join(", ")}`);
    const started = await o.client.upgradeAgents(o.model, {
      to: o.plan.to,
      machines: ids,
      trialSeconds: o.trialSeconds,
    });
    await waitForWave(o, wave, started.machines, all - moved);
    moved += wave.length;
    o.progress(`  ${ids.join(", ")} now run${wave.length === 1 ? "s" : ""} ${o.plan.to} (${moved} of ${all})`);
  }
}

async function waitForWave(
  o: ModelUpgradeRun,
  wave: AgentStep[],
  attempts: { id: string; attempt: number }[],
  left: number,
): Promise<void> {
  const pending = new Set(wave.map((s) => s.machine));
  const deadline = Date.now() + o.timeoutMs;
  for (;;) {
    const status = await o.client.status(o.model);
    for (const id of [...pending]) {
      const m = status.machines[id];
      if (m?.agentVersion === o.plan.to) {
        pending.delete(id);
        continue;
      }
      const want = attempts.find((a) => a.id === id)!;
      const failed = m?.agentUpgrade?.attempt === want.attempt ? m.agentUpgrade.failed : undefined;
      if (failed) throw stopped(o, id, failed, left);
    }
    if (pending.size === 0) return;
    if (Date.now() > deadline)
      throw stopped(
        o,
        [...pending][0]!,
        `its agent did not report ${o.plan.to} within ${Math.round(o.timeoutMs / 1000)} s (it may still be downloading, or waiting for a long hook to end)`,
        left,
      );
    await sleep(o.pollMs ?? 1000);
  }
}

function stopped(o: ModelUpgradeRun, machine: string, why: string, left: number): StewardError {
  return new StewardError(
    "unavailable",
    `the upgrade of model "${o.model}" to ${o.plan.to} stopped at machine ${machine}: ${why}. ${left} machine${left === 1 ? "" : "s"} did not move yet (machines that went back run their previous release). Look at the machine's agent log, then run the same steward upgrade-model again: it resumes, leaving machines already at ${o.plan.to} as they are`,
    { reason: "agent-upgrade-failed", details: { machine } },
  );
}
