/** The hook resolver's decisions, state by state (the real sequences are asserted end to end in agent-*.test.ts). */
import test from "ava";
import type { RelationView, UnitView } from "../api";
import type { UnitLocalState } from "../agent";
import { applyDecision, commitHook, initialUnitState, nextAction, nextHook } from "../agent";

const view = (over: Partial<UnitView> = {}): UnitView => ({
  name: "a/0",
  app: "a",
  life: "alive",
  operator: { hash: "h1", name: "a", version: "1" },
  config: { x: 1 },
  leader: false,
  leaderKnown: true,
  leaderSettingsVersion: 0,
  relations: [],
  ...over,
});
const rel = (over: Partial<RelationView> = {}): RelationView => ({
  id: 3,
  endpoint: "db",
  interface: "pg",
  role: "requirer",
  remoteApp: "pg",
  life: "alive",
  remoteUnits: {},
  remoteAppVersion: 0,
  ...over,
});
const opts = { updateStatusDue: false, retryDue: false };

/** Runs the resolver until idle, committing every hook, and returns the hook names in order. */
function runToIdle(
  v: UnitView,
  s: UnitLocalState,
  limit = 40,
  machine: { address?: string; bootId?: string } = {},
): { hooks: string[]; state: UnitLocalState } {
  const hooks: string[] = [];
  for (let i = 0; i < limit; i++) {
    const d = nextHook(v, s, { ...opts, ...machine });
    if (d.kind === "run") {
      hooks.push(d.hook.remoteUnit ? `${d.hook.name}(${d.hook.remoteUnit})` : d.hook.name);
      s = commitHook(s, d.hook, v, machine);
    } else if (d.kind === "leave" || d.kind === "resign") {
      hooks.push(`(${d.kind})`);
      s = applyDecision(s, d);
    } else return { hooks, state: s };
  }
  throw new Error("did not settle");
}

test("a new follower installs, runs leader-settings-changed, configures, then starts", (t) => {
  t.deepEqual(runToIdle(view(), initialUnitState()).hooks, [
    "install",
    "leader-settings-changed",
    "config-changed",
    "start",
  ]);
});

test("a new leader runs leader-elected instead", (t) => {
  t.deepEqual(runToIdle(view({ leader: true }), initialUnitState()).hooks, [
    "install",
    "leader-elected",
    "config-changed",
    "start",
  ]);
});

test("a new unit waits after install until leadership is decided", (t) => {
  const r = runToIdle(view({ leaderKnown: false }), initialUnitState());
  t.deepEqual(r.hooks, ["install"]);
  t.deepEqual(runToIdle(view({ leader: true }), r.state).hooks, ["leader-elected", "config-changed", "start"]);
});

test("the full deploy order with an existing integration and two remote units", (t) => {
  const v = view({ leader: true, relations: [rel({ remoteUnits: { "pg/1": 5, "pg/0": 0 } })] });
  t.deepEqual(runToIdle(v, initialUnitState()).hooks, [
    "install",
    "db-relation-created",
    "leader-elected",
    "config-changed",
    "start",
    "db-relation-joined(pg/0)",
    "db-relation-changed(pg/0)",
    "db-relation-joined(pg/1)",
    "db-relation-changed(pg/1)",
  ]);
});

test("remote data changes run relation-changed; the remote app's databag too", (t) => {
  const { state } = runToIdle(view({ relations: [rel({ remoteUnits: { "pg/0": 1 } })] }), initialUnitState());
  t.deepEqual(runToIdle(view({ relations: [rel({ remoteUnits: { "pg/0": 9 }, remoteAppVersion: 4 })] }), state).hooks, [
    "db-relation-changed",
    "db-relation-changed(pg/0)",
  ]);
});

test("a remote unit leaving runs relation-departed for it", (t) => {
  const { state } = runToIdle(
    view({ relations: [rel({ remoteUnits: { "pg/0": 1, "pg/1": 1 } })] }),
    initialUnitState(),
  );
  t.deepEqual(runToIdle(view({ relations: [rel({ remoteUnits: { "pg/1": 1 } })] }), state).hooks, [
    "db-relation-departed(pg/0)",
  ]);
});

test("removing an integration departs every remote unit, then breaks, then leaves", (t) => {
  const { state } = runToIdle(
    view({ relations: [rel({ remoteUnits: { "pg/0": 1, "pg/1": 1 } })] }),
    initialUnitState(),
  );
  t.deepEqual(
    runToIdle(view({ relations: [rel({ life: "dying", remoteUnits: { "pg/0": 1, "pg/1": 1 } })] }), state).hooks,
    ["db-relation-departed(pg/0)", "db-relation-departed(pg/1)", "db-relation-broken", "(leave)"],
  );
});

test("a peer relation is never broken", (t) => {
  const peer = rel({ id: 1, endpoint: "cluster", role: "peer", remoteApp: "a", remoteUnits: { "a/1": 0 } });
  const { state } = runToIdle(view({ relations: [peer] }), initialUnitState());
  t.deepEqual(runToIdle(view({ relations: [{ ...peer, life: "dying" }] }), state).hooks, [
    "cluster-relation-departed(a/1)",
    "(leave)",
  ]);
});

test("a dying unit tears down regular relations, then peers, then stops and is removed", (t) => {
  const peer = rel({ id: 1, endpoint: "cluster", role: "peer", remoteApp: "a", remoteUnits: { "a/1": 0 } });
  const v = view({ relations: [peer, rel({ remoteUnits: { "pg/0": 0 } })] });
  const { state } = runToIdle(v, initialUnitState());
  const dying = { ...v, life: "dying" as const };
  const r = runToIdle(dying, state);
  t.deepEqual(r.hooks, [
    "db-relation-departed(pg/0)",
    "db-relation-broken",
    "(leave)",
    "cluster-relation-departed(a/1)",
    "(leave)",
    "stop",
    "remove",
  ]);
  t.deepEqual(nextHook(dying, r.state, opts), { kind: "dead" });
});

test("losing leadership resigns without a hook; a new leader value runs leader-settings-changed on followers", (t) => {
  const { state } = runToIdle(view({ leader: true }), initialUnitState());
  t.deepEqual(runToIdle(view({ leader: false, leaderSettingsVersion: 7 }), state).hooks, [
    "(resign)",
    "leader-settings-changed",
  ]);
});

test("a config change runs config-changed only; an upgrade runs upgrade then config-changed", (t) => {
  const { state } = runToIdle(view(), initialUnitState());
  t.deepEqual(runToIdle(view({ config: { x: 2 } }), state).hooks, ["config-changed"]);
  t.deepEqual(runToIdle(view({ operator: { hash: "h2", name: "a", version: "2" } }), state).hooks, [
    "upgrade",
    "config-changed",
  ]);
});

test("a new unit address (the machine came back with another) runs config-changed once, as in Juju", (t) => {
  const first = runToIdle(view(), initialUnitState(), 40, { address: "10.0.0.5" });
  t.deepEqual(
    first.hooks,
    ["install", "leader-settings-changed", "config-changed", "start"],
    "the first config-changed records the address: no extra hook",
  );
  t.is(first.state.address, "10.0.0.5");
  t.deepEqual(runToIdle(view(), first.state, 40, { address: "10.0.0.5" }).hooks, []);
  t.deepEqual(runToIdle(view(), first.state, 40, { address: "10.0.9.7" }).hooks, ["config-changed"]);
  t.deepEqual(runToIdle(view(), first.state).hooks, [], "an address not known yet triggers nothing");
  // A unit from before addresses were recorded configures once to learn it.
  const { address: _none, ...older } = first.state;
  t.deepEqual(runToIdle(view(), older, 40, { address: "10.0.0.5" }).hooks, ["config-changed"]);
});

test("after a reboot a started unit runs start again, once; an agent restart in the same boot runs nothing", (t) => {
  const first = runToIdle(view(), initialUnitState(), 40, { bootId: "boot-1" });
  t.is(first.state.bootId, "boot-1");
  t.deepEqual(runToIdle(view(), first.state, 40, { bootId: "boot-1" }).hooks, []);
  const rebooted = runToIdle(view(), first.state, 40, { bootId: "boot-2" });
  t.deepEqual(rebooted.hooks, ["start"]);
  t.deepEqual(runToIdle(view(), rebooted.state, 40, { bootId: "boot-2" }).hooks, []);
  // Rebooted with another address and a config change: start, then one config-changed.
  t.deepEqual(runToIdle(view({ config: { x: 9 } }), first.state, 40, { bootId: "boot-3", address: "10.0.9.9" }).hooks, [
    "start",
    "config-changed",
  ]);
  // A unit from before boots were recorded runs no start (its boot is unknown); its next commit records the boot.
  const { bootId: _none, ...older } = first.state;
  t.deepEqual(nextHook(view(), older, { ...opts, bootId: "boot-4" }), { kind: "idle" });
  t.is(
    commitHook(older, { kind: "update-status", name: "update-status" }, view(), { bootId: "boot-4" }).bootId,
    "boot-4",
  );
});

test("a failed hook runs again only when due or resolved, and --no-retry skips it", (t) => {
  const failed = {
    ...runToIdle(view(), initialUnitState()).state,
    failedHook: { kind: "config-changed" as const, name: "config-changed" },
  };
  t.deepEqual(nextHook(view({ config: { x: 5 } }), failed, opts), { kind: "idle" });
  t.deepEqual(nextHook(view(), failed, { ...opts, retryDue: true }), { kind: "run", hook: failed.failedHook });
  t.deepEqual(nextHook(view({ resolve: "retry" }), failed, opts), { kind: "run", hook: failed.failedHook });
  t.deepEqual(nextHook(view({ resolve: "no-retry" }), failed, opts), { kind: "skip", hook: failed.failedHook });
});

test("update-status runs only once started and when due", (t) => {
  const { state } = runToIdle(view(), initialUnitState());
  t.like(nextHook(view(), state, { ...opts, updateStatusDue: true }), { kind: "run", hook: { name: "update-status" } });
  t.deepEqual(nextHook(view(), state, opts), { kind: "idle" });
});

test("actions run once a unit has started, oldest first, each once, and not while it is being removed", (t) => {
  const actions: UnitView["actions"] = [
    { id: 4, action: "backup", params: {} },
    { id: 9, action: "restart", params: { delay: 1 } },
  ];
  const fresh = initialUnitState();
  t.is(nextAction(view({ actions }), fresh), undefined, "not before start");
  const started = runToIdle(view(), fresh).state;
  t.is(nextAction(view({ actions }), started)?.id, 4);
  t.is(nextAction(view({ actions }), { ...started, lastTask: 4 })?.id, 9, "a finished task is never picked again");
  t.is(nextAction(view({ actions }), { ...started, lastTask: 9 }), undefined);
  t.is(nextAction(view({ actions, life: "dying" }), started), undefined, "a dying unit runs its teardown, not actions");
  t.is(nextAction(view(), started), undefined, "nothing queued");
});
