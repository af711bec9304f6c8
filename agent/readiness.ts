/**
 * Whether a unit is ready to be served (a pod's readiness probe, so a Service lists only ready
 * units): as its operator last said with `readiness-set` in this boot, or, for an operator that
 * never said, when its workload status is `active`, no hook is failing and `start` has run in this
 * boot. A recreated pod is a new boot: a word said about the workload of an earlier boot no longer
 * holds, and it is not ready before its workload was started again.
 */
import type { UnitLocalState } from "./unit-state";

export interface Readiness {
  ready: boolean;
  /** Why not (empty when ready), for the probe's answer and `readiness-get`. */
  reason: string;
  /** Whether it is the operator's word (readiness-set) or the default from the workload status. */
  source: "operator" | "workload";
}

export function unitReadiness(unit: string, s: Readonly<UnitLocalState>, bootId: string | undefined): Readiness {
  const sameBoot = (b: string | undefined): boolean => bootId === undefined || b === undefined || b === bootId;
  const said = s.readiness && sameBoot(s.readiness.bootId) ? s.readiness : undefined;
  const source = said ? "operator" : "workload";
  if (s.stopped || s.removed) return { ready: false, reason: `${unit} is stopped`, source };
  if (said)
    return said.ready
      ? { ready: true, reason: "", source }
      : {
          ready: false,
          reason: `${unit} is not ready${said.message ? `: ${said.message}` : " (its operator said so)"}`,
          source,
        };
  if (!s.started || !sameBoot(s.bootId))
    return {
      ready: false,
      reason: `${unit} has not run its start hook${s.started ? " since this pod started" : " yet"}`,
      source,
    };
  if (s.failedHook)
    return { ready: false, reason: `${unit} is in error: its ${s.failedHook.name} hook failed`, source };
  if (s.statusSet && s.workload.status === "active") return { ready: true, reason: "", source };
  const status = s.statusSet
    ? `${s.workload.status}${s.workload.message ? ` (${s.workload.message})` : ""}`
    : "unknown (its operator never set one)";
  return {
    ready: false,
    reason: `${unit}'s workload status is ${status}: ready when it is active, or when its operator runs readiness-set ready`,
    source,
  };
}
