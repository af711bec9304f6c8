/** What the cache is turned into: model status for people and the per-machine view for agents. */
import type {
  AgentStatus,
  StatusFilter,
  ApplicationStatusView,
  IntegrationStatusView,
  MachineStatusView,
  ModelStatus,
  StatusInfo,
  UnitDetails,
  UnitStatusView,
  WorkloadStatus,
} from "../../api";
import { configHash, contractOf, formatConstraints, hasConstraints, notFound } from "../../api";
import type { ApplicationDoc, MachineDoc, MachineInfoDoc, RelationDoc, UnitDoc } from "./documents";
import { workloadSeverity } from "../../api";
import { migrationActive } from "./migration-phases";
import type { ModelIndex, StateCache } from "./cache";
import { effectiveConfig } from "./config";
import { relationsOf, unitNumber } from "./agent-views";
import { storageIdsOf } from "./storage-docs";

/** One unit as status shows it, from the cache's documents. */
export function unitStatusView(idx: ModelIndex, u: UnitDoc): UnitStatusView {
  const st = idx.unitStatus.get(u.name);
  const connected = idx.presence.has(u.machine);
  let agent: StatusInfo<AgentStatus> = st?.agent ?? { current: "allocating", message: "", since: u.createdAt };
  // An agent that was up and no longer talks to us is "lost", as in Juju; one never seen is still allocating.
  if (!connected && st && st.agent.current !== "allocating")
    agent = { current: "lost", message: "agent is not communicating with the controller", since: st.agent.since };
  // A machine that cannot be provisioned says why (its status has the whole message).
  const failed = idx.machineInstall.get(u.machine);
  const waiting =
    failed?.state === "failed" ? `waiting for machine ${u.machine}: ${failed.step}` : "waiting for machine";
  const workload: StatusInfo<WorkloadStatus> = st?.workload ?? {
    current: "waiting",
    message: idx.machines.get(u.machine)?.life === "alive" && connected ? "agent initialising" : waiting,
    since: u.createdAt,
  };
  const view: UnitStatusView = {
    name: u.name,
    machine: u.machine,
    leader: idx.leaders.get(u.app)?.unit === u.name,
    life: u.life,
    workload,
    agent,
    ports: idx.ports.get(u.name) ?? [],
    ...(st?.applied ? { applied: st.applied } : {}),
  };
  const storage = storageIdsOf(idx.storage, u.name);
  if (storage.length > 0) view.storage = storage;
  // Where the unit is reached: the address its agent gives hooks (STEWARD_UNIT_ADDRESS), reported as machine info.
  const info = idx.machineInfo.get(u.machine);
  if (info?.address) view.address = info.address;
  return view;
}

/**
 * An application's status, as DESIGN says: what its leader set, else the most severe unit status
 * (on a tie, the leader's, else the lowest-numbered unit's), so its message is never an arbitrary unit's.
 */
export function applicationStatus(
  idx: ModelIndex,
  app: ApplicationDoc,
  units: readonly UnitStatusView[],
): StatusInfo<WorkloadStatus> {
  let status: StatusInfo<WorkloadStatus> = {
    current: "unknown",
    message: units.length === 0 ? "no units" : "",
    since: app.createdAt,
  };
  let worst: UnitStatusView | undefined;
  for (const u of units) {
    const more = worst === undefined || workloadSeverity[u.workload.current] > workloadSeverity[worst.workload.current];
    const tieWithLeader =
      worst !== undefined &&
      u.leader &&
      workloadSeverity[u.workload.current] === workloadSeverity[worst.workload.current];
    if (more || tieWithLeader) worst = u;
  }
  if (worst) status = worst.workload;
  // The leader's word wins over the derived status (status-set --application), as in Juju.
  const set = idx.appStatus.get(app.name);
  if (set) status = set;
  if (app.life === "dying") status = { current: "terminated", message: "removing", since: status.since };
  return status;
}

/** One application as status shows it, given all its units' views (sorted) and the ones to list. */
export function applicationStatusView(
  cache: StateCache,
  idx: ModelIndex,
  app: ApplicationDoc,
  units: readonly UnitStatusView[],
  listed: readonly UnitStatusView[] = units,
): ApplicationStatusView {
  const meta = cache.operators.get(app.operator.hash)?.meta;
  const version = units.map((u) => idx.unitStatus.get(u.name)?.version).find((v) => v) ?? "";
  const config = effectiveConfig(meta, app.config);
  return {
    name: app.name,
    operator: { ...app.operator, revision: app.operatorRevision ?? 1 },
    status: applicationStatus(idx, app, units),
    version,
    life: app.life,
    scale: units.length,
    units: Object.fromEntries(listed.map((u) => [u.name, u])),
    config,
    wanted: { operator: app.operator.hash, config: configHash(config) },
    ...(app.leadershipLeaseSeconds !== undefined ? { leadershipLeaseSeconds: app.leadershipLeaseSeconds } : {}),
  };
}

export function machineStatusView(idx: ModelIndex, m: MachineDoc): MachineStatusView {
  const info = idx.machineInfo.get(m.id);
  const up = idx.presence.has(m.id);
  const install = idx.machineInstall.get(m.id);
  // A cloud machine is provisioned, not installed: so too when it failed before it had an instance.
  const provisioned =
    !!install?.instance || contractOf(m.substrate).instances || contractOf(m.substrate).provisions === "pods";
  const status: StatusInfo<MachineStatusView["status"]["current"]> = up
    ? { current: "started", message: "", since: idx.presence.get(m.id)!.since }
    : install && install.state !== "installed"
      ? {
          current: install.state === "failed" ? "error" : "pending",
          message:
            install.state === "failed"
              ? `${provisioned ? "provisioning" : "install"} failed: ${install.step}`
              : `${provisioned ? "provisioning" : "installing"}: ${install.step}`,
          since: install.at,
        }
      : info
        ? { current: "down", message: "agent is not communicating with the controller", since: info.firstSeen }
        : {
            current: "pending",
            message: contractOf(m.substrate).agentsStartedByHand
              ? "waiting for the agent to connect"
              : "starting agent",
            since: m.createdAt,
          };
  return {
    id: m.id,
    substrate: m.substrate,
    status,
    address: m.ssh?.host ?? info?.address ?? install?.instance?.address ?? "",
    hostname: info?.hostname ?? "",
    life: m.life,
    units: [...(idx.unitsByMachine.get(m.id) ?? [])].sort(),
    ...(install?.instance
      ? {
          instance: {
            id: install.instance.id,
            state: install.instance.state,
            ...(install.instance.zone ? { zone: install.instance.zone } : {}),
          },
        }
      : {}),
    ...(hasConstraints(m.constraints) ? { constraints: formatConstraints(m.constraints) } : {}),
    ...(hasConstraints(install?.hardware) ? { hardware: formatConstraints(install.hardware) } : {}),
    ...(info?.agentVersion ? { agentVersion: info.agentVersion } : {}),
    ...agentUpgradeOf(m, info),
  };
}

/** The agent release a machine was asked to move to, while its agent does not report running it. */
function agentUpgradeOf(m: MachineDoc, info: MachineInfoDoc | undefined): Pick<MachineStatusView, "agentUpgrade"> {
  const want = m.agentRelease;
  if (!want || info?.agentVersion === want.version) return {};
  const failure = info?.agentUpgradeFailure;
  const failed = failure?.version === want.version && failure.attempt === want.attempt ? failure.message : undefined;
  return { agentUpgrade: { to: want.version, attempt: want.attempt, ...(failed ? { failed } : {}) } };
}

export function modelStatusHeader(cache: StateCache, idx: ModelIndex): ModelStatus["model"] {
  const model = idx.model!;
  const dying = model.life === "dying";
  const m = cache.migrations.get(idx.uuid);
  // A model on the move is busy: it takes no change until the migration is over.
  const status: ModelStatus["model"]["status"] = migrationActive(m)
    ? {
        current: "busy",
        message: `migrating to controller ${m.target.name}: ${m.phase} (steward show-migration ${model.name})`,
        since: m.phaseStartedAt,
      }
    : { current: dying ? "destroying" : "available", message: "", since: model.createdAt };
  return {
    name: model.name,
    uuid: model.uuid,
    controller: cache.controller?.name ?? "",
    status,
    revision: idx.revision,
  };
}

/** Units, machines and applications a filter selects (see {@link StatusFilter}). */
export interface StatusSelection {
  unit(u: UnitDoc): boolean;
  app(name: string): boolean;
  machine(id: string): boolean;
}

/**
 * Resolves a filter against the model: a named application brings its units, a named unit itself,
 * a named machine the units on it; each listed unit brings its application and machine. A name
 * that matches nothing is a 404, so a typo does not read as an empty model.
 */
export function selectStatus(idx: ModelIndex, f: StatusFilter = {}): StatusSelection | undefined {
  const apps = f.applications ?? [];
  const units = f.units ?? [];
  const machines = f.machines ?? [];
  if (apps.length + units.length + machines.length === 0) return undefined;
  for (const a of apps) if (!idx.apps.has(a)) throw notFound("application", a);
  for (const u of units) if (!idx.units.has(u)) throw notFound("unit", u);
  for (const m of machines) if (!idx.machines.has(m)) throw notFound("machine", m);
  const unitSet = new Set<string>();
  for (const u of idx.units.values())
    if (apps.includes(u.app) || units.includes(u.name) || machines.includes(u.machine)) unitSet.add(u.name);
  const appSet = new Set(apps);
  const machineSet = new Set(machines);
  for (const name of unitSet) {
    const u = idx.units.get(name)!;
    appSet.add(u.app);
    machineSet.add(u.machine);
  }
  return { unit: (u) => unitSet.has(u.name), app: (name) => appSet.has(name), machine: (id) => machineSet.has(id) };
}

/** Units grouped by application, each list sorted by unit number. */
export function unitsByApplication(idx: ModelIndex): Map<string, UnitDoc[]> {
  const byApp = new Map<string, UnitDoc[]>();
  for (const u of idx.units.values()) {
    let list = byApp.get(u.app);
    if (!list) byApp.set(u.app, (list = []));
    list.push(u);
  }
  for (const list of byApp.values()) list.sort((a, b) => unitNumber(a.name) - unitNumber(b.name));
  return byApp;
}

export function sortedMachines(idx: ModelIndex): MachineDoc[] {
  return [...idx.machines.values()].sort((a, b) => Number(a.id) - Number(b.id));
}

/** The integrations a selection shows: those of its applications (all, without a selection). */
export function selectedIntegrations(idx: ModelIndex, sel: StatusSelection | undefined): IntegrationStatusView[] {
  const rels = [...idx.relations.values()].filter((r) => !sel || r.endpoints.some((e) => sel.app(e.app)));
  return rels.sort((a, b) => a.id - b.id).map(integrationStatus);
}

/**
 * The model's status as objects. {@link StatusRenderer} (status-json.ts) answers the API with the
 * same document as text, from cached fragments; this is the plain version other views build on.
 */
export function buildModelStatus(
  cache: StateCache,
  idx: ModelIndex,
  now = new Date(),
  filter?: StatusFilter,
): ModelStatus {
  const sel = selectStatus(idx, filter);
  const byApp = unitsByApplication(idx);
  const applications: Record<string, ApplicationStatusView> = {};
  for (const app of idx.apps.values()) {
    if (sel && !sel.app(app.name)) continue;
    const units = (byApp.get(app.name) ?? []).map((u) => unitStatusView(idx, u));
    const listed = sel ? units.filter((u) => sel.unit(idx.units.get(u.name)!)) : units;
    applications[app.name] = applicationStatusView(cache, idx, app, units, listed);
  }
  const machines: Record<string, MachineStatusView> = {};
  for (const m of sortedMachines(idx)) if (!sel || sel.machine(m.id)) machines[m.id] = machineStatusView(idx, m);
  return {
    model: modelStatusHeader(cache, idx),
    applications,
    machines,
    integrations: selectedIntegrations(idx, sel),
    timestamp: now.toISOString(),
  };
}

function integrationStatus(r: RelationDoc): IntegrationStatusView {
  const [a, b] = r.endpoints;
  const name = (e: { app: string; endpoint: string }): string => `${e.app}:${e.endpoint}`;
  if (!b)
    return { id: r.id, provider: name(a!), requirer: name(a!), interface: a!.interface, type: "peer", life: r.life };
  const provider = a!.role === "provider" ? a! : b;
  const requirer = provider === a ? b : a!;
  return {
    id: r.id,
    provider: name(provider),
    requirer: name(requirer),
    interface: a!.interface,
    type: "regular",
    life: r.life,
  };
}

/** `steward show-unit`: the unit's status plus each of its integrations with all their data. */
export function buildUnitDetails(idx: ModelIndex, unitName: string): UnitDetails {
  const u = idx.units.get(unitName);
  if (!u) throw notFound("unit", unitName);
  const status = unitStatusView(idx, u);
  const bag = (key: string): Record<string, string> => idx.relationData.get(key)?.data ?? {};
  return {
    ...status,
    app: u.app,
    integrations: relationsOf(idx, u.app, unitName).map((r) => ({
      id: r.id,
      endpoint: r.endpoint,
      interface: r.interface,
      remoteApp: r.remoteApp,
      data: bag(`${r.id}/unit/${unitName}`),
      appData: bag(`${r.id}/app/${u.app}`),
      remoteUnits: Object.fromEntries(
        Object.keys(r.remoteUnits)
          .sort()
          .map((ru) => [ru, bag(`${r.id}/unit/${ru}`)]),
      ),
      remoteAppData: r.remoteApp === u.app ? {} : bag(`${r.id}/app/${r.remoteApp}`),
    })),
  };
}
