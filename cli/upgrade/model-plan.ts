/**
 * What `steward upgrade-model` will do, decided from the model's status before anything changes:
 * which machines' agents move to release `to`, in which waves. A wave takes at most `batch`
 * machines of each application (a machine counts for every application it runs units of), and the
 * machines of applications' leaders come last, so leadership is disturbed once. Machines already
 * at `to` are left out: running the same upgrade again resumes it.
 */
import type { MachineStatusView, ModelStatus, ModelSubstrate } from "../../api/core";
import { contractOf } from "../../api/core";

export interface AgentStep {
  machine: string;
  /** The version its agent runs now ("unknown" before it reported). */
  from: string;
  /** The applications it runs units of. */
  apps: string[];
  /** The applications whose leader it runs. */
  leads: string[];
}

export interface ModelUpgradePlan {
  to: string;
  waves: AgentStep[][];
  /** Machines already at `to`. */
  done: string[];
  /** Machines this command does not move, and why (pods: their StatefulSet's image). */
  skipped: { machine: string; why: string }[];
}

export function planModelUpgrade(status: ModelStatus, to: string, batch: number): ModelUpgradePlan {
  const done: string[] = [];
  const skipped: ModelUpgradePlan["skipped"] = [];
  const steps: AgentStep[] = [];
  const machines = Object.values(status.machines).sort((a, b) => Number(a.id) - Number(b.id));
  for (const m of machines) {
    const why = notMoved(m);
    if (why) skipped.push({ machine: m.id, why });
    else if (m.agentVersion === to) done.push(m.id);
    else steps.push(stepOf(status, m));
  }
  // Leaders' machines last: every other machine first, then those, each part in waves of its own.
  const waves = [
    ...wavesOf(
      steps.filter((s) => s.leads.length === 0),
      batch,
    ),
    ...wavesOf(
      steps.filter((s) => s.leads.length > 0),
      batch,
    ),
  ];
  return { to, waves, done, skipped };
}

function notMoved(m: MachineStatusView): string | undefined {
  if (m.life !== "alive") return "it is being removed";
  const c = contractOf(m.substrate as ModelSubstrate);
  if (c.provisions === "pods") return "a pod's agent is its StatefulSet's image (not rolled by upgrade-model yet)";
  if (c.agentsStartedByHand) return "its agent was started by hand: install the new release there yourself";
  return undefined;
}

function stepOf(status: ModelStatus, m: MachineStatusView): AgentStep {
  const apps = new Set<string>();
  const leads = new Set<string>();
  for (const unit of m.units) {
    const app = unit.split("/")[0]!;
    apps.add(app);
    if (status.applications[app]?.units[unit]?.leader) leads.add(app);
  }
  return { machine: m.id, from: m.agentVersion ?? "unknown", apps: [...apps].sort(), leads: [...leads].sort() };
}

/** Greedy waves in machine order: a machine joins the first wave where each of its applications has room. */
function wavesOf(steps: AgentStep[], batch: number): AgentStep[][] {
  const waves: { steps: AgentStep[]; perApp: Map<string, number> }[] = [];
  for (const s of steps) {
    // A machine without units counts against a group of its own, so they too go `batch` at a time.
    const groups = s.apps.length > 0 ? s.apps : [""];
    let wave = waves.find((w) => groups.every((g) => (w.perApp.get(g) ?? 0) < batch));
    if (!wave) waves.push((wave = { steps: [], perApp: new Map() }));
    wave.steps.push(s);
    for (const g of groups) wave.perApp.set(g, (wave.perApp.get(g) ?? 0) + 1);
  }
  return waves.map((w) => w.steps);
}
