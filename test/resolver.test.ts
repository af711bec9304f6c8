/** The hook resolver's decisions, state by state (the real sequence is asserted end to end in agent-lifecycle). */
import test from "ava";
import type { UnitView } from "../api";
import type { HookName, UnitLocalState } from "../agent";
import { commitHook, initialUnitState, nextHook } from "../agent";

const view = (over: Partial<UnitView> = {}): UnitView => ({ name: "a/0", app: "a", life: "alive", operator: { hash: "h1", name: "a", version: "1" }, config: { x: 1 }, ...over });

function runToIdle(v: UnitView, s: UnitLocalState, limit = 20): { hooks: HookName[]; state: UnitLocalState } {
  const hooks: HookName[] = [];
  for (let i = 0; i < limit; i++) {
    const d = nextHook(v, s, false);
    if (d.kind !== "run") return { hooks, state: s };
    hooks.push(d.hook);
    s = commitHook(s, d.hook, v);
  }
  throw new Error("did not settle");
}

test("a new unit installs, configures, then starts", (t) => {
  t.deepEqual(runToIdle(view(), initialUnitState()).hooks, ["install", "config-changed", "start"]);
});

test("a config change runs config-changed only", (t) => {
  const { state } = runToIdle(view(), initialUnitState());
  t.deepEqual(runToIdle(view({ config: { x: 2 } }), state).hooks, ["config-changed"]);
});

test("an operator upgrade runs upgrade then config-changed", (t) => {
  const { state } = runToIdle(view(), initialUnitState());
  t.deepEqual(runToIdle(view({ operator: { hash: "h2", name: "a", version: "2" } }), state).hooks, ["upgrade", "config-changed"]);
});

test("a dying unit stops, is removed, then is dead", (t) => {
  const { state } = runToIdle(view(), initialUnitState());
  const dying = view({ life: "dying" });
  const r = runToIdle(dying, state);
  t.deepEqual(r.hooks, ["stop", "remove"]);
  t.deepEqual(nextHook(dying, r.state, false), { kind: "dead" });
});

test("a unit dying before it started skips stop", (t) => {
  const installed = commitHook(initialUnitState(), "install", view());
  t.deepEqual(runToIdle(view({ life: "dying" }), installed).hooks, ["remove"]);
});

test("a failed hook runs again before anything else", (t) => {
  const s = { ...commitHook(initialUnitState(), "install", view()), failedHook: "config-changed" };
  t.deepEqual(nextHook(view({ config: { x: 5 } }), s, true), { kind: "run", hook: "config-changed" });
});

test("update-status runs only once started and when due", (t) => {
  const { state } = runToIdle(view(), initialUnitState());
  t.deepEqual(nextHook(view(), state, true), { kind: "run", hook: "update-status" });
  t.deepEqual(nextHook(view(), state, false), { kind: "idle" });
});
