/** Status shapes, as people who know `juju status` expect them. */

export type WorkloadStatus = "active" | "blocked" | "maintenance" | "waiting" | "unknown" | "terminated" | "error";
export type AgentStatus = "allocating" | "executing" | "idle" | "error" | "lost";
export type MachineStatus = "pending" | "started" | "down" | "stopped" | "error";
export type Life = "alive" | "dying";

export interface StatusInfo<S extends string = string> {
  current: S;
  message: string;
  /** ISO 8601 time of the last change of `current` or `message`. */
  since: string;
}

export interface UnitStatusView {
  name: string;
  machine: string;
  leader: boolean;
  life: Life;
  workload: StatusInfo<WorkloadStatus>;
  agent: StatusInfo<AgentStatus>;
  address?: string;
  ports: string[];
  /** What its hooks last ran with, reported by its agent each time it goes idle (absent from older agents). */
  applied?: AppliedChange;
  /** The storage instances attached to it (`data/0`); absent when none are. */
  storage?: string[];
}

/**
 * A change units apply by running hooks: the operator content (install/upgrade) and the effective
 * config, as a hash (config-changed). An application wants one; each unit says which it applied.
 */
export interface AppliedChange {
  operator: string;
  config: string;
}

/**
 * Whether a unit has applied what its application wants: a unit still active/idle from before a
 * change has not. Without both sides (an older agent or controller) active/idle has to do.
 */
export function hasApplied(applied: AppliedChange | undefined, wanted: AppliedChange | undefined): boolean {
  return !applied || !wanted || (applied.operator === wanted.operator && applied.config === wanted.config);
}

export interface ApplicationStatusView {
  name: string;
  /**
   * `revision`: the application's operator revision, 1 at deploy and one more on each refresh that
   * changed the operator's content (Juju's charm revision); absent from older controllers.
   */
  operator: { name: string; version: string; hash: string; revision?: number };
  status: StatusInfo<WorkloadStatus>;
  version: string;
  life: Life;
  scale: number;
  units: Record<string, UnitStatusView>;
  config: Record<string, string | number | boolean>;
  /** The change its units are to apply (absent from older controllers): see {@link hasApplied}. */
  wanted?: AppliedChange;
  /** Its own leadership lease in seconds, when it has one (absent: the controller's). */
  leadershipLeaseSeconds?: number;
}

export interface MachineStatusView {
  id: string;
  substrate: string;
  status: StatusInfo<MachineStatus>;
  address: string;
  hostname: string;
  life: Life;
  units: string[];
  /** Cloud machines: the instance, as the cloud last reported it. */
  instance?: { id: string; zone?: string; state: string };
  /** What it was asked to have (Juju's constraint syntax). */
  constraints?: string;
  /** What it has, where the substrate says (same syntax). */
  hardware?: string;
  /** The Steward version its agent runs, as it last reported (absent until it has). */
  agentVersion?: string;
  /** The agent release it was asked to move to (`steward upgrade-model`), while it does not run it. */
  agentUpgrade?: { to: string; attempt: number; failed?: string };
}

export interface IntegrationStatusView {
  id: number;
  /** `app:endpoint` of the providing side (for a peer relation, the endpoint itself). */
  provider: string;
  requirer: string;
  interface: string;
  type: "regular" | "peer";
  life: Life;
}

/** `steward show-unit`: one unit with its integrations and their data. */
export interface UnitDetails extends UnitStatusView {
  app: string;
  /** While the unit is in error: the hook that failed and the last lines of its output. */
  failure?: { hook: string; output: string; since: string };
  integrations: {
    id: number;
    endpoint: string;
    interface: string;
    remoteApp: string;
    /** The unit's own databag. */
    data: Record<string, string>;
    /** Its application's databag. */
    appData: Record<string, string>;
    /** Each remote unit in the integration, with its databag. */
    remoteUnits: Record<string, Record<string, string>>;
    remoteAppData: Record<string, string>;
  }[];
}

/**
 * What `steward status web web/0 0` narrows the status to (the route's `?application=&unit=&machine=`):
 * the named applications with all their units, the named units, the units on the named machines, and
 * the applications, machines and integrations those involve. Empty lists (or none) mean everything.
 */
export interface StatusFilter {
  applications?: readonly string[];
  units?: readonly string[];
  machines?: readonly string[];
}

export interface ModelStatus {
  model: {
    name: string;
    uuid: string;
    controller: string;
    status: StatusInfo<"available" | "busy" | "destroying">;
    revision: number;
  };
  applications: Record<string, ApplicationStatusView>;
  machines: Record<string, MachineStatusView>;
  integrations: IntegrationStatusView[];
  timestamp: string;
}

/** Juju's severity order: the application shows the most severe unit status unless its leader set one. */
export const workloadSeverity: Record<WorkloadStatus, number> = {
  error: 100,
  blocked: 90,
  maintenance: 80,
  waiting: 70,
  active: 60,
  terminated: 50,
  unknown: 40,
};

/** The readiness predicate of `juju wait-for` and terraform users: every unit active and idle. */
export function unitIsReady(u: Pick<UnitStatusView, "workload" | "agent">): boolean {
  return u.workload.current === "active" && u.agent.current === "idle";
}

/**
 * Whether an integration joins the two endpoints of `pair` (either order); a bare `app` matches
 * any endpoint of that application.
 */
export function integrationJoins(pair: readonly [string, string], i: { provider: string; requirer: string }): boolean {
  const fits = (ref: string, ep: string): boolean => (ref.includes(":") ? ref === ep : ref === ep.split(":")[0]);
  return (
    (fits(pair[0], i.provider) && fits(pair[1], i.requirer)) || (fits(pair[1], i.provider) && fits(pair[0], i.requirer))
  );
}

/**
 * WebSocket close codes of a status watch (`/v1/models/<model>/watch`) ended by the controller for
 * an authorization reason; the close reason says which. Any other close is a broken stream.
 */
export const WATCH_CLOSE_CODES = {
  /** The token expired or was revoked (logout, password change): log in again. */
  tokenEnded: 4401,
  /** The user's access to the model was revoked, or the user removed. */
  accessEnded: 4403,
} as const;

/** One change of a unit's workload or agent status (`steward show-status-log`). */
export interface StatusLogEntry {
  since: string;
  type: "workload" | "agent";
  status: string;
  message: string;
}
/**
 * Status changes kept per unit, and how much of each message: older ones are forgotten, so 10,000
 * units' history stays within tens of MB of the store.
 */
export const STATUS_HISTORY_ENTRIES = 50;
export const STATUS_HISTORY_MESSAGE_CHARS = 256;
