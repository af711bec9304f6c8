/**
 * What each machine's agent is told (api's AgentView): its units, their config, leadership,
 * integrations, storage and the secrets they may read (never their values), and the controller's addresses. {@link AgentViewRound} makes it as the JSON text
 * that is pushed; {@link buildAgentView} as objects, the plain form the text must equal.
 */
import type { AgentView, QueuedAction, RelationView, UnitSecretView, UnitStorageView, UnitView } from "../../api";
import { secretUri } from "../../api";
import type { ApplicationDoc, MachineDoc, UnitDoc } from "./documents";
import { DEFAULT_LEADERSHIP_LEASE_SECONDS, modelSettings } from "./documents";
import type { ModelIndex, StateCache } from "./cache";
import { effectiveConfig } from "./config";
import { migrationView } from "./migration-phases";
import { machineStorageWork } from "./storage-docs";
import type { SecretDoc } from "./secret-docs";
import { expiredRevisions, grantFor, manages, obsoleteRevisions, ownerSide } from "./secret-docs";

export function unitNumber(name: string): number {
  return Number(name.slice(name.lastIndexOf("/") + 1));
}

/** The units on a machine with their applications, by application name, then unit number. */
function unitsOnMachine(idx: ModelIndex, machineId: string): { unit: UnitDoc; app: ApplicationDoc }[] {
  const out: { unit: UnitDoc; app: ApplicationDoc }[] = [];
  for (const name of idx.unitsByMachine.get(machineId) ?? []) {
    const unit = idx.units.get(name);
    const app = unit && idx.apps.get(unit.app);
    if (unit && app) out.push({ unit, app });
  }
  return out.sort((a, b) =>
    a.unit.app === b.unit.app
      ? unitNumber(a.unit.name) - unitNumber(b.unit.name)
      : a.unit.app.localeCompare(b.unit.app),
  );
}

/** The model-wide head of a view: the model and its settings, in the order both builders write them. */
function viewHead(
  cache: StateCache,
  idx: ModelIndex,
  leadershipLeaseSeconds: number,
): Pick<
  AgentView,
  "model" | "updateStatusInterval" | "retryHooks" | "leadershipLeaseSeconds" | "restore" | "migration"
> {
  const settings = modelSettings(idx.model?.config);
  const r = cache.restore;
  const migration = migrationView(cache.migrations.get(idx.uuid));
  return {
    model: { uuid: idx.uuid, name: idx.model?.name ?? "" },
    updateStatusInterval: settings.updateStatusInterval,
    retryHooks: settings.automaticallyRetryHooks,
    leadershipLeaseSeconds,
    // Only once restored: views of a controller never restored read as before.
    ...(r ? { restore: { epoch: r.clusterId, revision: r.revision, taskSeq: r.taskSeqs[idx.uuid] ?? 0 } } : {}),
    ...(migration ? { migration } : {}),
  };
}

export function buildAgentView(
  cache: StateCache,
  idx: ModelIndex,
  machineId: string,
  controllerAddresses: string[],
  leadershipLeaseSeconds = DEFAULT_LEADERSHIP_LEASE_SECONDS,
  now = Date.now(),
): AgentView {
  const byApp = idx.secrets.size > 0 ? secretsByApp(idx) : undefined;
  const units: UnitView[] = unitsOnMachine(idx, machineId).map(({ unit: u, app }) => {
    const leader = idx.leaders.get(u.app);
    return {
      name: u.name,
      app: u.app,
      life: u.life,
      operator: app.operator,
      config: effectiveConfig(cache.operators.get(app.operator.hash)?.meta, app.config),
      ...(app.leadershipLeaseSeconds !== undefined ? { leadershipLeaseSeconds: app.leadershipLeaseSeconds } : {}),
      leader: leader?.unit === u.name,
      leaderKnown: leader !== undefined,
      leaderSettingsVersion: idx.leaderData.get(u.app)?.rev ?? 0,
      relations: relationsOf(idx, u.app, u.name),
      ...(u.resolve ? { resolve: u.resolve } : {}),
      ...queuedActions(idx, u.name),
      ...unitStorage(idx, u.name),
      ...unitSecrets(idx, byApp, u, now),
    };
  });
  const machineStorage = machineStorageWork(idx.storage, machineId);
  return {
    ...viewHead(cache, idx, leadershipLeaseSeconds),
    machine: machineHead(idx.machines.get(machineId), machineId),
    units,
    controllerAddresses,
    ...(machineStorage ? { machineStorage } : {}),
  };
}

/** The machine's own part of its view: its life, and the agent release it is asked to run. */
function machineHead(m: MachineDoc | undefined, id: string): AgentView["machine"] {
  return {
    id,
    life: m?.life ?? "dying",
    // What the agent needs of the request, field by field: agents of the previous release read the view too.
    ...(m?.agentRelease
      ? {
          agentRelease: {
            version: m.agentRelease.version,
            hash: m.agentRelease.hash,
            attempt: m.agentRelease.attempt,
            trialSeconds: m.agentRelease.trialSeconds,
          },
        }
      : {}),
  };
}

/**
 * Views as JSON text for one push round. A config change on a 10,000-unit application pushes 10,000
 * views that differ only in the unit's name: the application's operator and effective config, the
 * model's head and the address list are made into text once per round, not once per agent. A round
 * must not outlive the synchronous loop it serves (it keys on the documents it saw).
 */
export class AgentViewRound {
  private readonly appParts = new Map<ApplicationDoc, string>();
  private readonly heads = new Map<ModelIndex, string>();
  /** Each model's secrets by the applications that may see them, as text parts, made once per round. */
  private readonly secretIndex = new Map<ModelIndex, Map<string, SecretPart[]>>();
  private readonly tail: string;

  constructor(
    private readonly cache: StateCache,
    controllerAddresses: readonly string[],
    private readonly leadershipLeaseSeconds = DEFAULT_LEADERSHIP_LEASE_SECONDS,
    /** The time expiries are judged at (ms), one for the round. */
    private readonly now = Date.now(),
  ) {
    this.tail = `,"controllerAddresses":${JSON.stringify(controllerAddresses)}`;
  }

  /** The machine's view: the same text as `JSON.stringify(buildAgentView(…))` with this round's arguments. */
  text(idx: ModelIndex, machineId: string): string {
    let units = "";
    const byApp = this.secretsOf(idx);
    for (const { unit: u, app } of unitsOnMachine(idx, machineId)) {
      const leader = idx.leaders.get(u.app);
      units +=
        `${units ? "," : ""}{"name":${JSON.stringify(u.name)},"app":${JSON.stringify(u.app)},"life":${JSON.stringify(u.life)},${this.appPart(app)}` +
        `,"leader":${leader?.unit === u.name},"leaderKnown":${leader !== undefined},"leaderSettingsVersion":${idx.leaderData.get(u.app)?.rev ?? 0}` +
        `,"relations":${JSON.stringify(relationsOf(idx, u.app, u.name))}${u.resolve ? `,"resolve":${JSON.stringify(u.resolve)}` : ""}` +
        `${idx.taskQueue.has(u.name) ? `,"actions":${JSON.stringify(queuedActions(idx, u.name).actions)}` : ""}` +
        `${storageText(idx, u.name)}${byApp ? secretsText(idx, byApp.get(u.app), u, this.now) : ""}}`;
    }
    const machine = machineHead(idx.machines.get(machineId), machineId);
    const machineStorage = machineStorageWork(idx.storage, machineId);
    const storage = machineStorage ? `,"machineStorage":${JSON.stringify(machineStorage)}` : "";
    return `${this.head(idx)},"machine":${JSON.stringify(machine)},"units":[${units}]${this.tail}${storage}}`;
  }

  /** The model's secrets by application as text parts (undefined when it has none: views then carry no field). */
  private secretsOf(idx: ModelIndex): Map<string, SecretPart[]> | undefined {
    if (idx.secrets.size === 0) return undefined;
    let byApp = this.secretIndex.get(idx);
    if (!byApp) {
      byApp = new Map();
      const alive = (id: number): boolean => idx.relations.get(id)?.life === "alive";
      for (const [app, list] of secretsByApp(idx))
        byApp.set(
          app,
          list.map((doc) => secretPart(doc, app, alive)),
        );
      this.secretIndex.set(idx, byApp);
    }
    return byApp;
  }

  /** `"operator":…,"config":…` (and its own leadership lease) of an application's units. */
  private appPart(app: ApplicationDoc): string {
    let part = this.appParts.get(app);
    if (part === undefined) {
      const config = effectiveConfig(this.cache.operators.get(app.operator.hash)?.meta, app.config);
      const lease =
        app.leadershipLeaseSeconds !== undefined ? `,"leadershipLeaseSeconds":${app.leadershipLeaseSeconds}` : "";
      part = `"operator":${JSON.stringify(app.operator)},"config":${JSON.stringify(config)}${lease}`;
      this.appParts.set(app, part);
    }
    return part;
  }

  /** `{"model":…,"updateStatusInterval":…,…` without its closing brace. */
  private head(idx: ModelIndex): string {
    let head = this.heads.get(idx);
    if (head === undefined) {
      head = JSON.stringify(viewHead(this.cache, idx, this.leadershipLeaseSeconds)).slice(0, -1);
      this.heads.set(idx, head);
    }
    return head;
  }
}

/** The storage attached to `unit`, by id (none: no field, so views without storage read as before). */
function unitStorage(idx: ModelIndex, unit: string): { storage?: UnitStorageView[] } {
  const out: UnitStorageView[] = [];
  for (const s of idx.storage.values()) {
    if (s.unit !== unit || s.status !== "attached") continue;
    out.push({
      id: s.id,
      kind: s.kind,
      size: s.size,
      pool: s.pool,
      ...(s.location !== undefined ? { location: s.location } : {}),
      ...(s.detaching ? { life: "dying" as const } : {}),
    });
  }
  return out.length > 0 ? { storage: out.sort((a, b) => a.id.localeCompare(b.id)) } : {};
}

/** `,"storage":[…]` of a unit with storage, as {@link unitStorage} gives it. */
function storageText(idx: ModelIndex, unit: string): string {
  if (idx.storage.size === 0) return "";
  const { storage } = unitStorage(idx, unit);
  return storage ? `,"storage":${JSON.stringify(storage)}` : "";
}

/**
 * The model's secrets by the applications whose units may see them (the owning application, the
 * owning unit's, and every application granted it), each list in uri order: a unit's secrets are then
 * found among its application's few, not among the model's all.
 */
function secretsByApp(idx: ModelIndex): Map<string, SecretDoc[]> {
  const out = new Map<string, SecretDoc[]>();
  const ids = [...idx.secrets.keys()].sort();
  for (const id of ids) {
    const doc = idx.secrets.get(id)!;
    const apps = new Set<string>();
    const o = doc.owner;
    if (o.kind === "application") apps.add(o.app);
    else if (o.kind === "unit") apps.add(o.unit.slice(0, o.unit.lastIndexOf("/")));
    for (const g of doc.grants) apps.add(g.app);
    for (const app of apps) {
      const list = out.get(app);
      if (list) list.push(doc);
      else out.set(app, [doc]);
    }
  }
  return out;
}

/**
 * The secrets `unit` may see (none: no field, so views without secrets read as before): never values;
 * for the unit that manages one (its owner, or its application's leader) what its secret-rotate,
 * secret-expired and secret-remove hooks need; for a consumer the revision it tracks.
 */
function unitSecrets(
  idx: ModelIndex,
  byApp: Map<string, SecretDoc[]> | undefined,
  unit: UnitDoc,
  now: number,
): { secrets?: UnitSecretView[] } {
  const candidates = byApp?.get(unit.app);
  if (!candidates) return {};
  const out: UnitSecretView[] = [];
  for (const doc of candidates) {
    const view = unitSecretView(idx, doc, unit, now);
    if (view) out.push(view);
  }
  return out.length > 0 ? { secrets: out } : {};
}

/** What `unit` sees of `doc`, or undefined when it may not see it. */
function unitSecretView(idx: ModelIndex, doc: SecretDoc, unit: UnitDoc, now: number): UnitSecretView | undefined {
  const side = ownerSide(doc, unit);
  if (!side && !grantFor(doc, unit, (id) => idx.relations.get(id)?.life === "alive")) return undefined;
  const owner = manages(doc, unit, (app) => idx.leaders.get(app)?.unit);
  const consumer = doc.consumers[unit.name];
  const label = side ? doc.label : consumer?.label;
  const expired = owner ? expiredRevisions(doc, now) : [];
  const obsolete = owner ? obsoleteRevisions(doc) : [];
  return {
    uri: secretUri(doc.id),
    ...(label !== undefined ? { label } : {}),
    ...(owner ? { owner: true as const } : {}),
    latest: doc.latest,
    ...(consumer ? { tracked: consumer.revision } : {}),
    ...(owner && doc.rotateDueAt !== undefined ? { rotateDue: doc.rotateDueAt } : {}),
    ...(expired.length > 0 ? { expired } : {}),
    ...(obsolete.length > 0 ? { obsolete } : {}),
  };
}

/**
 * One secret as the units of one application see it, made once per round. Most of them see it alike
 * (through their application: it owns the secret, or was granted it), and differ only in what they
 * track and the label they gave it: their text is made from `head` and `latest`, not object by
 * object. A unit the secret singles out (its owning unit, a unit it was granted to, the leader that
 * manages it) gets {@link unitSecretView}'s.
 */
interface SecretPart {
  doc: SecretDoc;
  /** Every unit of the application sees it alike, but for `manager` (undefined: each unit is looked at alone). */
  alike?: {
    /** `{"uri":…` */
    head: string;
    /** `,"label":…` of the owner's label, for units on the owner's side ("" without one); undefined: a consumer's own. */
    ownerLabel?: string;
    /** `,"latest":N` */
    latest: string;
    /** The application whose leader manages it: its units get {@link unitSecretView}'s. */
    managedBy?: string;
  };
  /** No unit of the application sees it (neither owner nor granted through the application, nor a unit of it). */
  hidden?: true;
}

function secretPart(doc: SecretDoc, app: string, alive: (id: number) => boolean): SecretPart {
  if (doc.owner.kind === "unit" || doc.grants.some((g) => g.unit !== undefined)) return { doc };
  const side = doc.owner.kind === "application" && doc.owner.app === app;
  if (!side && !doc.grants.some((g) => g.app === app && (g.relationId === undefined || alive(g.relationId))))
    return { doc, hidden: true };
  return {
    doc,
    alike: {
      head: `{"uri":${JSON.stringify(secretUri(doc.id))}`,
      ...(side ? { ownerLabel: doc.label !== undefined ? `,"label":${JSON.stringify(doc.label)}` : "" } : {}),
      latest: `,"latest":${doc.latest}`,
      ...(side ? { managedBy: app } : {}),
    },
  };
}

/** `,"secrets":[…]` of a unit that may see secrets: the text of {@link unitSecrets}'s, made from the round's parts. */
function secretsText(idx: ModelIndex, parts: SecretPart[] | undefined, unit: UnitDoc, now: number): string {
  if (!parts) return "";
  let out = "";
  for (const { doc, alike, hidden } of parts) {
    if (hidden) continue;
    let text: string | undefined;
    if (alike && (alike.managedBy === undefined || idx.leaders.get(alike.managedBy)?.unit !== unit.name)) {
      const consumer = doc.consumers[unit.name];
      const label =
        alike.ownerLabel ?? (consumer?.label !== undefined ? `,"label":${JSON.stringify(consumer.label)}` : "");
      text = `${alike.head}${label}${alike.latest}${consumer ? `,"tracked":${consumer.revision}` : ""}}`;
    } else {
      const view = unitSecretView(idx, doc, unit, now);
      text = view && JSON.stringify(view);
    }
    if (text !== undefined) out += out ? `,${text}` : text;
  }
  return out ? `,"secrets":[${out}]` : "";
}

/** Queued actions a view carries: the agent runs them one at a time, and the next come as these finish. */
const ACTIONS_IN_VIEW = 3;

/** The unit's oldest queued actions (none: no field, so views without actions read as before). */
function queuedActions(idx: ModelIndex, unit: string): { actions?: QueuedAction[] } {
  const queue = idx.taskQueue.get(unit);
  if (!queue) return {};
  return {
    actions: [...queue.values()]
      .sort((a, b) => a.id - b.id)
      .slice(0, ACTIONS_IN_VIEW)
      .map((t) => ({ id: t.id, action: t.action, params: t.params })),
  };
}

/** The integrations of `app` as its unit `unit` sees them: remote units in scope and databag versions. */
export function relationsOf(idx: ModelIndex, app: string, unit: string): RelationView[] {
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
      id: r.id,
      endpoint: mine.endpoint,
      interface: mine.interface,
      role: mine.role,
      remoteApp,
      life: r.life,
      remoteUnits,
      remoteAppVersion: idx.relationData.get(`${r.id}/app/${remoteApp}`)?.rev ?? 0,
    });
  }
  return out.sort((a, b) => a.id - b.id);
}
