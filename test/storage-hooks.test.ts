/**
 * The storage hooks' place in a unit's sequence (issue 32), decided by the resolver alone: a unit
 * waits for the storage it is deployed with, runs `<name>-storage-attached` for each instance before
 * install, and `<name>-storage-detaching` for each after its relations end and before stop.
 */
import test from "ava";
import type { UnitStorageView, UnitView } from "../api";
import type { UnitLocalState } from "../agent";
import { applyDecision, commitHook, initialUnitState, nextHook } from "../agent";

const attached = (id: string, location?: string): UnitStorageView => ({
  id,
  kind: "filesystem",
  size: 1024,
  pool: "local",
  ...(location ? { location } : {}),
});
const view = (over: Partial<UnitView> = {}): UnitView => ({
  name: "db/0",
  app: "db",
  life: "alive",
  operator: { hash: "h1", name: "db", version: "1" },
  config: {},
  leader: true,
  leaderKnown: true,
  leaderSettingsVersion: 0,
  relations: [],
  ...over,
});
const opts = { updateStatusDue: false, retryDue: false };

function runToIdle(v: UnitView, s: UnitLocalState): { hooks: string[]; state: UnitLocalState } {
  const hooks: string[] = [];
  for (let i = 0; i < 40; i++) {
    const d = nextHook(v, s, opts);
    if (d.kind === "run") {
      hooks.push(d.hook.storageId ? `${d.hook.name}(${d.hook.storageId})` : d.hook.name);
      s = commitHook(s, d.hook, v);
    } else if (d.kind === "leave" || d.kind === "resign") s = applyDecision(s, d);
    else return { hooks, state: s };
  }
  throw new Error("did not settle");
}

test("a unit waits for the storage it is deployed with, then runs storage-attached before install", (t) => {
  const waiting = view({ storage: [attached("data/0", "/d0"), attached("logs/1")] });
  t.deepEqual(runToIdle(waiting, initialUnitState()).hooks, [], "nothing until every instance is attached");
  const ready = view({ storage: [attached("data/0", "/d0"), attached("logs/1", "/l1")] });
  const { hooks, state } = runToIdle(ready, initialUnitState());
  t.deepEqual(hooks, [
    "data-storage-attached(data/0)",
    "logs-storage-attached(logs/1)",
    "install",
    "leader-elected",
    "config-changed",
    "start",
  ]);
  t.deepEqual(state.storage, ["data/0", "logs/1"]);
  // Storage attached later runs its hook once, with nothing else again.
  const more = view({ storage: [...ready.storage!, attached("data/2", "/d2")] });
  t.deepEqual(runToIdle(more, state).hooks, ["data-storage-attached(data/2)"]);
});

test("a unit being removed runs storage-detaching for each instance after its relations end and before stop", (t) => {
  const v = view({ storage: [attached("data/0", "/d0")] });
  const up = runToIdle(v, initialUnitState()).state;
  const going = runToIdle({ ...v, life: "dying" }, up);
  t.deepEqual(going.hooks, ["data-storage-detaching(data/0)", "stop", "remove"]);
  t.deepEqual(going.state.storage, []);
  t.is(nextHook({ ...v, life: "dying" }, going.state, opts).kind, "dead");
});

test("an instance detached from a live unit runs storage-detaching, then is released; one never seen is released at once", (t) => {
  const v = view({ storage: [attached("data/0", "/d0"), attached("data/1", "/d1")] });
  const up = runToIdle(v, initialUnitState()).state;
  const detaching = view({ storage: [attached("data/0", "/d0"), { ...attached("data/1", "/d1"), life: "dying" }] });
  const d = nextHook(detaching, up, opts);
  t.like(d, { kind: "run", hook: { name: "data-storage-detaching", storageId: "data/1" } });
  const after = commitHook(up, (d as { hook: Parameters<typeof commitHook>[1] }).hook, detaching);
  t.deepEqual(after.storage, ["data/0"]);
  t.deepEqual(nextHook(detaching, after, opts), { kind: "release-storage", storageId: "data/1" });
  // Gone from the view: nothing more for it; attached again later, its attached hook runs again.
  t.is(nextHook(view({ storage: [attached("data/0", "/d0")] }), after, opts).kind, "idle");
  t.like(nextHook(v, after, opts), { kind: "run", hook: { name: "data-storage-attached", storageId: "data/1" } });
  // Detached before its broker attached it (the unit never had its hook): released without one.
  const early = view({ storage: [attached("data/0", "/d0"), { ...attached("data/2"), life: "dying" }] });
  t.deepEqual(nextHook(early, up, opts), { kind: "release-storage", storageId: "data/2" });
});
