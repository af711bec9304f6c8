/**
 * What a model's migration phase means for the rest of the controller: which moves are allowed
 * (Juju's validTransitions, plus ABORT → SUCCESS when the target turns out to have taken the model),
 * when the model's writes are held, what its agents are told, and what a client of a moved model is answered.
 */
import type { MigrationPhase, MigrationView, ModelMoved } from "../../api";
import { HANDED_OVER_PHASES, StewardError, TERMINAL_PHASES } from "../../api";
import type { MigrationDoc } from "./documents";

const NEXT: Record<MigrationPhase, readonly MigrationPhase[]> = {
  QUIESCE: ["IMPORT", "ABORT"],
  IMPORT: ["VALIDATION", "ABORT"],
  VALIDATION: ["SUCCESS", "ABORT"],
  SUCCESS: ["LOGTRANSFER"],
  LOGTRANSFER: ["REAP"],
  REAP: ["DONE"],
  DONE: [],
  // An abort after the target was asked to activate may learn that it did: then the model has moved.
  ABORT: ["ABORTDONE", "SUCCESS"],
  ABORTDONE: [],
};

export function canMove(from: MigrationPhase, to: MigrationPhase): boolean {
  return NEXT[from].includes(to);
}

/** Whether the migration still runs (another cannot start). */
export function migrationActive(m: MigrationDoc | undefined): m is MigrationDoc {
  return m !== undefined && !TERMINAL_PHASES.has(m.phase);
}

/**
 * Whether the source must keep its model as it is: from QUIESCE (the export must hold everything)
 * until an abort is sure the target did not take it. Hooks stay paused exactly as long.
 */
export function holdsModel(m: MigrationDoc | undefined): boolean {
  if (m === undefined) return false;
  if (TERMINAL_PHASES.has(m.phase)) return m.phase === "DONE";
  if (m.phase === "ABORT") return m.activateAttempted === true;
  return true;
}

/** The model lives on the target now. */
export function handedOver(m: MigrationDoc | undefined): boolean {
  return m !== undefined && HANDED_OVER_PHASES.has(m.phase);
}

/** What the model's agents are told: nothing once it is over. */
export function migrationView(m: MigrationDoc | undefined): MigrationView | undefined {
  if (!migrationActive(m)) return undefined;
  return { id: m.id, phase: m.phase, paused: holdsModel(m), target: m.target };
}

/** The answer for a model that moved to another controller: where it went, for the client to follow. */
export function movedError(m: MigrationDoc): StewardError {
  const details: ModelMoved = { reason: "moved", model: m.modelName, target: m.target };
  return new StewardError(
    "moved",
    `model ${m.modelName} moved to controller ${m.target.name} (${m.target.addresses.join(", ")}); log in there (steward login) or let the client follow`,
    { details: details as unknown as Record<string, unknown> },
  );
}
