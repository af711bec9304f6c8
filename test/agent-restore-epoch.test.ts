/**
 * A unit after its controller was restored (agent/restore-epoch.ts). etcd 3.4 cannot bump
 * revisions on restore, so the restored controller may serve, for another write, the very revision
 * a unit saw in the lost history: these cases are that collision, which only the epoch catches.
 */
import test from "ava";
import type { AgentView, RelationView, UnitView } from "../api";
import type { UnitLocalState } from "../agent";
import { commitHook, initialUnitState, nextAction, nextHook, reconcileRestore } from "../agent";

const R = 100; // the backup's revision
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
const restore: AgentView["restore"] = { epoch: "e1", revision: R, taskSeq: 7 };

/** A started unit in relation 3 that saw pg/0's bag at `unitV`, the app bag at `appV`, leader data at `leaderV`, tasks up to `lastTask`. */
function started(unitV: number, appV: number, leaderV: number, lastTask: number): UnitLocalState {
  let s = initialUnitState();
  const v = view({
    relations: [rel({ remoteUnits: { "pg/0": unitV }, remoteAppVersion: appV })],
    leaderSettingsVersion: leaderV,
  });
  for (;;) {
    const d = nextHook(v, s, opts);
    if (d.kind !== "run") break;
    s = commitHook(s, d.hook, v);
  }
  return { ...s, lastTask };
}

test("revisions seen after the backup are not trusted, even when the restored controller serves the same number", (t) => {
  const s = started(R + 5, R + 6, R + 7, 9);
  // The restored controller happens to serve the same revisions for other writes.
  const v = view({
    relations: [rel({ remoteUnits: { "pg/0": R + 5 }, remoteAppVersion: R + 6 })],
    leaderSettingsVersion: R + 7,
    actions: [{ id: 8, action: "echo", params: {} }],
  });
  t.is(nextHook(v, s, opts).kind, "idle", "without the epoch the unit would miss the new data and the new action");
  t.is(nextAction(v, s), undefined);
  const r = reconcileRestore(s, restore)!;
  t.is(r.storeEpoch, "e1");
  const ran: string[] = [];
  let cur = r;
  for (let i = 0; i < 10; i++) {
    const d = nextHook(v, cur, opts);
    if (d.kind !== "run") break;
    ran.push(d.hook.remoteUnit ? `${d.hook.name}(${d.hook.remoteUnit})` : d.hook.name);
    cur = commitHook(cur, d.hook, v);
  }
  t.deepEqual(ran, ["leader-settings-changed", "db-relation-changed(pg/0)", "db-relation-changed"]);
  t.is(nextAction(v, cur)?.id, 8, "task ids above the restored sequence run when given out again");
  t.is(reconcileRestore(cur, restore), undefined, "once reconciled, the same epoch changes nothing");
});

test("a report of a task given out after the backup is dropped: its id may name a new task now", (t) => {
  const report = { unit: "a/0", id: 9, status: "completed" as const, message: "", results: {}, log: [], output: "" };
  const s: UnitLocalState = { ...started(R - 1, 0, 0, 8), unsentTask: report, runningTask: 10 };
  const r = reconcileRestore(s, restore)!;
  t.is(r.unsentTask, undefined);
  t.is(r.runningTask, undefined);
  const kept = reconcileRestore({ ...s, unsentTask: { ...report, id: 6 }, runningTask: undefined }, restore)!;
  t.is(
    kept.unsentTask?.id,
    6,
    "a task from before the backup is still reported (the restored controller has it queued)",
  );
});

test("revisions up to the backup are shared history: nothing runs again for them", (t) => {
  const s = started(R - 10, R - 9, R - 8, 5);
  const r = reconcileRestore(s, restore)!;
  const v = view({
    relations: [rel({ remoteUnits: { "pg/0": R - 10 }, remoteAppVersion: R - 9 })],
    leaderSettingsVersion: R - 8,
  });
  t.is(nextHook(v, r, opts).kind, "idle");
  t.is(r.lastTask, 5);
});

test("a unit not installed yet only adopts the epoch; a controller never restored changes nothing", (t) => {
  t.deepEqual(reconcileRestore(initialUnitState(), restore), { ...initialUnitState(), storeEpoch: "e1" });
  t.is(reconcileRestore(started(R + 5, 0, 0, 3), undefined), undefined);
});
