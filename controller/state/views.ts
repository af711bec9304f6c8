/** What the cache is turned into: model status for people and the per-machine view for agents. */
import type { AgentStatus, AgentView, ApplicationStatusView, MachineStatusView, ModelStatus, StatusInfo, UnitStatusView, UnitView, WorkloadStatus } from "../../api";
import { workloadSeverity } from "../../api";
import type { ModelIndex, StateCache } from "./cache";
import { effectiveConfig } from "./operations";

export function buildModelStatus(cache: StateCache, idx: ModelIndex, now = new Date()): ModelStatus {
  const model = idx.model!;
  const ts = now.toISOString();
  const applications: Record<string, ApplicationStatusView> = {};
  const unitsByApp = new Map<string, UnitStatusView[]>();
  for (const u of idx.units.values()) {
    const st = idx.unitStatus.get(u.name);
    const connected = idx.presence.has(u.machine);
    let agent: StatusInfo<AgentStatus> = st?.agent ?? { current: "allocating", message: "", since: u.createdAt };
    // An agent that was up and no longer talks to us is "lost", as in Juju; one never seen is still allocating.
    if (!connected && st && st.agent.current !== "allocating") agent = { current: "lost", message: "agent is not communicating with the controller", since: st.agent.since };
    const workload: StatusInfo<WorkloadStatus> = st?.workload ?? { current: "waiting", message: idx.machines.get(u.machine)?.life === "alive" && connected ? "agent initialising" : "waiting for machine", since: u.createdAt };
    const view: UnitStatusView = { name: u.name, machine: u.machine, leader: false, life: u.life, workload, agent, ports: [] };
    const info = idx.machineInfo.get(u.machine);
    if (info?.address) view.address = info.address;
    let list = unitsByApp.get(u.app);
    if (!list) unitsByApp.set(u.app, (list = []));
    list.push(view);
  }
  for (const app of idx.apps.values()) {
    const units = (unitsByApp.get(app.name) ?? []).sort((a, b) => unitNumber(a.name) - unitNumber(b.name));
    const meta = cache.operators.get(app.operator.hash)?.meta;
    let status: StatusInfo<WorkloadStatus> = { current: "unknown", message: units.length === 0 ? "no units" : "", since: app.createdAt };
    for (const u of units) if (workloadSeverity[u.workload.current] > workloadSeverity[status.current] || status.message === "no units") status = u.workload;
    if (app.life === "dying") status = { current: "terminated", message: "removing", since: status.since };
    const version = units.map((u) => idx.unitStatus.get(u.name)?.version).find((v) => v) ?? "";
    applications[app.name] = {
      name: app.name,
      operator: app.operator,
      status,
      version,
      life: app.life,
      scale: units.length,
      units: Object.fromEntries(units.map((u) => [u.name, u])),
      config: effectiveConfig(meta, app.config),
    };
  }
  const machines: Record<string, MachineStatusView> = {};
  for (const m of [...idx.machines.values()].sort((a, b) => Number(a.id) - Number(b.id))) {
    const info = idx.machineInfo.get(m.id);
    const up = idx.presence.has(m.id);
    const status: StatusInfo<MachineStatusView["status"]["current"]> = up
      ? { current: "started", message: "", since: idx.presence.get(m.id)!.since }
      : info
        ? { current: "down", message: "agent is not communicating with the controller", since: info.firstSeen }
        : { current: "pending", message: m.substrate === "manual" ? "waiting for the agent to connect" : "starting agent", since: m.createdAt };
    machines[m.id] = {
      id: m.id, substrate: m.substrate, status, address: info?.address ?? "", hostname: info?.hostname ?? "", life: m.life,
      units: [...(idx.unitsByMachine.get(m.id) ?? [])].sort(),
    };
  }
  const dying = model.life === "dying";
  return {
    model: { name: model.name, uuid: model.uuid, controller: cache.controller?.name ?? "", status: { current: dying ? "destroying" : "available", message: "", since: model.createdAt }, revision: idx.revision },
    applications,
    machines,
    integrations: [],
    timestamp: ts,
  };
}

export function buildAgentView(cache: StateCache, idx: ModelIndex, machineId: string, controllerAddresses: string[]): AgentView {
  const units: UnitView[] = [];
  for (const name of idx.unitsByMachine.get(machineId) ?? []) {
    const u = idx.units.get(name);
    const app = u && idx.apps.get(u.app);
    if (!u || !app) continue;
    const meta = cache.operators.get(app.operator.hash)?.meta;
    units.push({ name: u.name, app: u.app, life: u.life, operator: app.operator, config: effectiveConfig(meta, app.config) });
  }
  units.sort((a, b) => (a.app === b.app ? unitNumber(a.name) - unitNumber(b.name) : a.app.localeCompare(b.app)));
  return {
    model: { uuid: idx.uuid, name: idx.model?.name ?? "" },
    machine: { id: machineId },
    updateStatusInterval: idx.model?.config.updateStatusInterval ?? 300,
    units,
    controllerAddresses,
  };
}

function unitNumber(name: string): number {
  return Number(name.slice(name.lastIndexOf("/") + 1));
}
