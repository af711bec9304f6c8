/** What the cache is turned into: model status for people and the per-machine view for agents. */
import type { AgentStatus, AgentView, ApplicationStatusView, IntegrationStatusView, MachineStatusView, ModelStatus, RelationView, StatusInfo, UnitDetails, UnitStatusView, UnitView, WorkloadStatus } from "../../api";
import { notFound } from "../../api";
import type { RelationDoc } from "./documents";
import { DEFAULT_LEADERSHIP_LEASE_SECONDS, modelSettings } from "./documents";
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
    const view: UnitStatusView = { name: u.name, machine: u.machine, leader: idx.leaders.get(u.app)?.unit === u.name, life: u.life, workload, agent, ports: idx.ports.get(u.name) ?? [] };
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
    // The leader's word wins over the derived status (status-set --application), as in Juju.
    const set = idx.appStatus.get(app.name);
    if (set) status = set;
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
    const install = idx.machineInstall.get(m.id);
    const status: StatusInfo<MachineStatusView["status"]["current"]> = up
      ? { current: "started", message: "", since: idx.presence.get(m.id)!.since }
      : install && install.state !== "installed"
        ? { current: install.state === "failed" ? "error" : "pending", message: install.state === "failed" ? `install failed: ${install.step}` : `installing: ${install.step}`, since: install.at }
      : info
        ? { current: "down", message: "agent is not communicating with the controller", since: info.firstSeen }
        : { current: "pending", message: m.substrate === "manual" ? "waiting for the agent to connect" : "starting agent", since: m.createdAt };
    machines[m.id] = {
      id: m.id, substrate: m.substrate, status, address: m.ssh?.host ?? info?.address ?? "", hostname: info?.hostname ?? "", life: m.life,
      units: [...(idx.unitsByMachine.get(m.id) ?? [])].sort(),
    };
  }
  const dying = model.life === "dying";
  return {
    model: { name: model.name, uuid: model.uuid, controller: cache.controller?.name ?? "", status: { current: dying ? "destroying" : "available", message: "", since: model.createdAt }, revision: idx.revision },
    applications,
    machines,
    integrations: [...idx.relations.values()].sort((a, b) => a.id - b.id).map(integrationStatus),
    timestamp: ts,
  };
}

export function buildAgentView(cache: StateCache, idx: ModelIndex, machineId: string, controllerAddresses: string[], leadershipLeaseSeconds = DEFAULT_LEADERSHIP_LEASE_SECONDS): AgentView {
  const units: UnitView[] = [];
  for (const name of idx.unitsByMachine.get(machineId) ?? []) {
    const u = idx.units.get(name);
    const app = u && idx.apps.get(u.app);
    if (!u || !app) continue;
    const meta = cache.operators.get(app.operator.hash)?.meta;
    const leader = idx.leaders.get(u.app);
    units.push({
      name: u.name, app: u.app, life: u.life, operator: app.operator, config: effectiveConfig(meta, app.config),
      leader: leader?.unit === u.name, leaderKnown: leader !== undefined, leaderSettingsVersion: idx.leaderData.get(u.app)?.rev ?? 0,
      relations: relationsOf(idx, u.app, u.name),
      ...(u.resolve ? { resolve: u.resolve } : {}),
    });
  }
  units.sort((a, b) => (a.app === b.app ? unitNumber(a.name) - unitNumber(b.name) : a.app.localeCompare(b.app)));
  const settings = modelSettings(idx.model?.config);
  return {
    model: { uuid: idx.uuid, name: idx.model?.name ?? "" },
    machine: { id: machineId, life: idx.machines.get(machineId)?.life ?? "dying" },
    updateStatusInterval: settings.updateStatusInterval,
    retryHooks: settings.automaticallyRetryHooks,
    leadershipLeaseSeconds,
    units,
    controllerAddresses,
  };
}

/** The integrations of `app` as its unit `unit` sees them: remote units in scope and databag versions. */
function relationsOf(idx: ModelIndex, app: string, unit: string): RelationView[] {
  const out: RelationView[] = [];
  for (const r of idx.relations.values()) {
    const mine = r.endpoints.find((e) => e.app === app);
    if (!mine) continue;
    const remoteApp = r.endpoints.find((e) => e.app !== app)?.app ?? app;
    const remoteUnits: Record<string, number> = {};
    for (const other of idx.scope.get(r.id) ?? []) {
      if (other === unit || idx.units.get(other)?.app !== remoteApp) continue;
      remoteUnits[other] = idx.relationData.get(`${r.id}/unit/${other}`)?.rev ?? 0;
    }
    out.push({
      id: r.id, endpoint: mine.endpoint, interface: mine.interface, role: mine.role, remoteApp, life: r.life, remoteUnits,
      remoteAppVersion: idx.relationData.get(`${r.id}/app/${remoteApp}`)?.rev ?? 0,
    });
  }
  return out.sort((a, b) => a.id - b.id);
}

function integrationStatus(r: RelationDoc): IntegrationStatusView {
  const [a, b] = r.endpoints;
  const name = (e: { app: string; endpoint: string }): string => `${e.app}:${e.endpoint}`;
  if (!b) return { id: r.id, provider: name(a!), requirer: name(a!), interface: a!.interface, type: "peer", life: r.life };
  const provider = a!.role === "provider" ? a! : b;
  const requirer = provider === a ? b : a!;
  return { id: r.id, provider: name(provider), requirer: name(requirer), interface: a!.interface, type: "regular", life: r.life };
}

/** `steward show-unit`: the unit's status plus each of its integrations with all their data. */
export function buildUnitDetails(cache: StateCache, idx: ModelIndex, unitName: string): UnitDetails {
  const u = idx.units.get(unitName);
  if (!u) throw notFound("unit", unitName);
  const status = buildModelStatus(cache, idx).applications[u.app]?.units[unitName];
  if (!status) throw notFound("unit", unitName);
  const bag = (key: string): Record<string, string> => idx.relationData.get(key)?.data ?? {};
  return {
    ...status,
    app: u.app,
    integrations: relationsOf(idx, u.app, unitName).map((r) => ({
      id: r.id, endpoint: r.endpoint, interface: r.interface, remoteApp: r.remoteApp,
      data: bag(`${r.id}/unit/${unitName}`),
      appData: bag(`${r.id}/app/${u.app}`),
      remoteUnits: Object.fromEntries(Object.keys(r.remoteUnits).sort().map((ru) => [ru, bag(`${r.id}/unit/${ru}`)])),
      remoteAppData: r.remoteApp === u.app ? {} : bag(`${r.id}/app/${r.remoteApp}`),
    })),
  };
}

function unitNumber(name: string): number {
  return Number(name.slice(name.lastIndexOf("/") + 1));
}
