/** `<container>-workload-ready`: when the resolver runs it (after start, once per supervisor that answers). */
import test from "ava";
import type { UnitView } from "../api";
import type { UnitLocalState } from "../agent";
import { commitHook, initialUnitState, nextHook } from "../agent";

const view = (): UnitView => ({
  name: "a/0",
  app: "a",
  life: "alive",
  operator: { hash: "h1", name: "a", version: "1" },
  config: {},
  leader: false,
  leaderKnown: true,
  leaderSettingsVersion: 0,
  relations: [],
});
const opts = { updateStatusDue: false, retryDue: false, bootId: "pod-1" };

function runToIdle(s: UnitLocalState, workloads?: Record<string, string>): { hooks: string[]; state: UnitLocalState } {
  const hooks: string[] = [];
  for (let i = 0; i < 20; i++) {
    const d = nextHook(view(), s, { ...opts, ...(workloads ? { workloads } : {}) });
    if (d.kind !== "run") return { hooks, state: s };
    hooks.push(d.hook.name);
    s = commitHook(s, d.hook, view(), { bootId: opts.bootId });
  }
  throw new Error("did not settle");
}

test("workload-ready runs after start for each answering container, in name order, once per supervisor", (t) => {
  const first = runToIdle(initialUnitState(), { web: "sup-1", cache: "sup-2" });
  t.deepEqual(first.hooks, [
    "install",
    "leader-settings-changed",
    "config-changed",
    "start",
    "cache-workload-ready",
    "web-workload-ready",
  ]);
  t.deepEqual(first.state.workloadReady, { web: "sup-1", cache: "sup-2" });
  t.deepEqual(
    runToIdle(first.state, { web: "sup-1", cache: "sup-2" }).hooks,
    [],
    "the same supervisors: nothing again",
  );
  // The web container was restarted: its new supervisor has lost the layer, so the operator is told again.
  t.deepEqual(runToIdle(first.state, { web: "sup-3", cache: "sup-2" }).hooks, ["web-workload-ready"]);
  // A supervisor not answering (yet) runs nothing.
  t.deepEqual(runToIdle(first.state, { cache: "sup-2" }).hooks, []);
});

test("workload-ready waits for start, and a hook decided carries its container and supervisor", (t) => {
  const installed = {
    ...initialUnitState(),
    installed: true,
    operatorHash: "h1",
    leaderSettingsVersion: 0,
    configHash: "x",
  };
  const d = nextHook(view(), installed, { ...opts, workloads: { web: "sup-1" } });
  t.is(d.kind === "run" ? d.hook.name : d.kind, "config-changed");
  const started = runToIdle(initialUnitState()).state;
  const ready = nextHook(view(), started, { ...opts, workloads: { web: "sup-1" } });
  t.deepEqual(ready, {
    kind: "run",
    hook: { kind: "workload-ready", name: "web-workload-ready", container: "web", supervisor: "sup-1" },
  });
});
