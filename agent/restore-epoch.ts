/**
 * A unit's local state after the controller was restored from a backup. The controller's store
 * went back to revision R and, on etcd 3.4, may hand out revisions after R again for other writes;
 * so a revision this unit recorded above R under the earlier epoch proves nothing: the databag it
 * saw is lost. Those are marked "changed is due" (the hook runs once more against what the restored
 * controller holds); revisions up to R are shared history and stay trusted, so a restore does not
 * re-run every relation hook. Config is compared by content, not revision, so a config set after
 * the backup reverts through config-changed by itself.
 */
import type { AgentView } from "../api/core";
import type { UnitLocalState } from "./unit-state";

/** The state to save when the controller's restore epoch differs from the unit's; undefined when it does not. */
export function reconcileRestore(s: UnitLocalState, restore: AgentView["restore"]): UnitLocalState | undefined {
  const current = restore?.epoch ?? "";
  if ((s.storeEpoch ?? "") === current) return undefined;
  if (!s.installed) return { ...s, storeEpoch: current };
  // No restore record but an epoch remembered: nothing is known to be shared, trust nothing.
  const shared = restore?.revision ?? 0;
  const relations: UnitLocalState["relations"] = {};
  for (const [id, r] of Object.entries(s.relations)) {
    const joined: Record<string, number> = {};
    for (const [u, v] of Object.entries(r.joined)) joined[u] = v > shared ? -1 : v;
    relations[id] = { ...r, joined, appVersion: r.appVersion > shared ? -1 : r.appVersion };
  }
  const taskSeq = restore?.taskSeq ?? 0;
  const next: UnitLocalState = {
    ...s,
    relations,
    // -2: never a version the controller serves, and not -1 (which means "no leader hook ran yet").
    leaderSettingsVersion: s.leaderSettingsVersion > shared ? -2 : s.leaderSettingsVersion,
    // Task ids above the restored sequence will be given out again, to new actions.
    lastTask: Math.min(s.lastTask, taskSeq),
    storeEpoch: current,
  };
  // A report or a cut-off run of a task given out after the backup: that task is gone, and its id
  // may now name another one, which the report must not finish.
  if (s.unsentTask && s.unsentTask.id > taskSeq) delete next.unsentTask;
  if (s.runningTask !== undefined && s.runningTask > taskSeq) delete next.runningTask;
  return next;
}
