/**
 * Which hook a unit runs next: a pure function of what the controller wants (the unit's view) and
 * what the unit has done (its local state), in Juju's order. Relations and leadership slot in here
 * (see ../shared/reference/juju-internals.md §4.2).
 */
import { createHash } from "node:crypto";
import type { UnitView } from "../api/core";
import type { UnitLocalState } from "./unit-state";

export type HookName = "install" | "config-changed" | "start" | "upgrade" | "update-status" | "stop" | "remove";

export type Decision =
  | { kind: "run"; hook: HookName }
  | { kind: "dead" }
  | { kind: "idle" };

export function configHash(config: UnitView["config"]): string {
  const sorted = Object.fromEntries(Object.entries(config).sort(([a], [b]) => a.localeCompare(b)));
  return createHash("sha256").update(JSON.stringify(sorted)).digest("hex").slice(0, 16);
}

export function nextHook(view: UnitView, s: UnitLocalState, updateStatusDue: boolean): Decision {
  if (view.life === "dying") {
    if (s.started && !s.stopped) return { kind: "run", hook: "stop" };
    if (s.installed && !s.removed) return { kind: "run", hook: "remove" };
    return { kind: "dead" };
  }
  if (s.failedHook) return { kind: "run", hook: s.failedHook as HookName };
  if (!s.installed) return { kind: "run", hook: "install" };
  if (s.operatorHash !== view.operator.hash) return { kind: "run", hook: "upgrade" };
  if (s.configHash !== configHash(view.config)) return { kind: "run", hook: "config-changed" };
  if (!s.started) return { kind: "run", hook: "start" };
  if (updateStatusDue) return { kind: "run", hook: "update-status" };
  return { kind: "idle" };
}

/** How the unit's local state changes when `hook` commits (Juju's commit chaining). */
export function commitHook(s: UnitLocalState, hook: HookName, view: UnitView): UnitLocalState {
  const next: UnitLocalState = { ...s, committed: [...s.committed, hook] };
  delete next.failedHook;
  switch (hook) {
    case "install": next.installed = true; next.operatorHash = view.operator.hash; break;
    case "upgrade": next.operatorHash = view.operator.hash; next.configHash = ""; break; // upgrade is always followed by config-changed
    case "config-changed": next.configHash = configHash(view.config); break;
    case "start": next.started = true; break;
    case "stop": next.stopped = true; break;
    case "remove": next.removed = true; break;
    case "update-status": break;
  }
  return next;
}
