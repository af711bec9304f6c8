/**
 * Model migration on the wire: the phases (Juju's, core/migration/phase.go), what an agent is told
 * of a migration in its view, and what `steward show-migration` shows.
 *
 * QUIESCE → IMPORT → VALIDATION → SUCCESS → LOGTRANSFER → REAP → DONE, and ABORT → ABORTDONE from
 * any phase before SUCCESS. Juju's PROCESSRELATIONS is left out: Steward has no cross-model
 * relations to re-point.
 */

export const MIGRATION_PHASES = [
  "QUIESCE",
  "IMPORT",
  "VALIDATION",
  "SUCCESS",
  "LOGTRANSFER",
  "REAP",
  "DONE",
  "ABORT",
  "ABORTDONE",
] as const;
export type MigrationPhase = (typeof MIGRATION_PHASES)[number];

/** Phases with no way out: the migration is over. */
export const TERMINAL_PHASES: ReadonlySet<MigrationPhase> = new Set(["DONE", "ABORTDONE"]);

/** From SUCCESS on the model lives on the target: nothing rolls back, and the source redirects. */
export const HANDED_OVER_PHASES: ReadonlySet<MigrationPhase> = new Set(["SUCCESS", "LOGTRANSFER", "REAP", "DONE"]);

/** The phases agents report on (the others they need not answer). */
export const REPORTED_PHASES: ReadonlySet<MigrationPhase> = new Set(["QUIESCE", "VALIDATION", "SUCCESS"]);

/** Where a model is going: what an agent needs to reach the target (no secret). */
export interface MigrationTarget {
  /** The target controller's uuid, which it proves by answering over TLS with its CA. */
  controller: string;
  /** The name the user knows the target by (their client's name for it). */
  name: string;
  addresses: string[];
  caCert: string;
}

/** A migration as an agent's view carries it. */
export interface MigrationView {
  id: string;
  phase: MigrationPhase;
  /** Whether hooks must stay paused (a running phase, or an abort that must first learn the target did not take the model). */
  paused: boolean;
  target: MigrationTarget;
}

/** A controller's answer to `GET /v1/migrations/hello`. */
export interface ControllerHello {
  controller: string;
  name: string;
  version: string;
  /**
   * The newest model export format version it reads (a migration's source writes that one). Absent:
   * a controller of the build before placements, which reads up to version 2.
   */
  modelExport?: number;
}

/** One agent's answer for one phase. */
export interface MigrationReport {
  id: string;
  phase: MigrationPhase;
  ok: boolean;
  reason?: string;
}

/** One phase entered, with when (and why, for an abort or a step that went otherwise). */
export interface MigrationStep {
  phase: MigrationPhase;
  at: string;
  note?: string;
}

/** Where a migration stands: the source's record of it and what `steward show-migration` shows share this. */
export interface MigrationProgress {
  phase: MigrationPhase;
  startedAt: string;
  phaseStartedAt: string;
  endedAt?: string;
  /** Every phase entered, in order. */
  history: MigrationStep[];
  /** The reason it was aborted (kept: a later step never overwrites it). */
  failure?: string;
  /** What the master is doing now, or why it is retrying. */
  status: string;
}

/** `steward show-migration`: the model's last migration and where it stands. */
export interface MigrationInfo extends MigrationProgress {
  id: string;
  model: { uuid: string; name: string };
  target: Omit<MigrationTarget, "caCert">;
  /** While the master waits on agents: who has answered this phase and who has not. */
  agents?: { reported: number; failed: { machine: string; reason: string }[]; waitingFor: string[] };
}

/**
 * `steward show-migration` asked of the controller a migration brought the model to (which keeps
 * no record of the phases: the source ran them): which migration, from which controller, when.
 */
export interface MigrationArrivalInfo {
  arrival: {
    id: string;
    model: { uuid: string; name: string };
    source: { controller: string; name: string };
    stagedAt?: string;
    arrivedAt: string;
  };
}

/** The answer of a source controller for a model that moved away (HTTP 409 with code `conflict`, `details.reason` "moved"). */
export interface ModelMoved {
  reason: "moved";
  model: string;
  target: MigrationTarget;
}

export function isModelMoved(
  details: Record<string, unknown> | undefined,
): details is Record<string, unknown> & ModelMoved {
  const t = details?.target as Partial<MigrationTarget> | undefined;
  return (
    details?.reason === "moved" &&
    typeof details.model === "string" &&
    typeof t?.caCert === "string" &&
    Array.isArray(t.addresses)
  );
}
