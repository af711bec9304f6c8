/** The resolver's secret hooks (issue 33), state by state; the real runs are in secrets.test.ts. */
import test from "ava";
import type { UnitSecretView, UnitView } from "../api";
import type { UnitLocalState } from "../agent";
import { commitHook, initialUnitState, nextHook } from "../agent";

const URI_A = "secret:aaaaaaaaaaaaaaaaaaaa";
const URI_B = "secret:bbbbbbbbbbbbbbbbbbbb";

const view = (secrets: UnitSecretView[], over: Partial<UnitView> = {}): UnitView => ({
  name: "a/0",
  app: "a",
  life: "alive",
  operator: { hash: "h1", name: "a", version: "1" },
  config: { x: 1 },
  leader: true,
  leaderKnown: true,
  leaderSettingsVersion: 0,
  relations: [],
  secrets,
  ...over,
});
const opts = { updateStatusDue: false, retryDue: false };

/** Runs the resolver until idle, committing every hook; returns `name(uri-letter[@revision])` per hook. */
function runToIdle(v: UnitView, s: UnitLocalState, limit = 30): { hooks: string[]; state: UnitLocalState } {
  const hooks: string[] = [];
  for (let i = 0; i < limit; i++) {
    const d = nextHook(v, s, opts);
    if (d.kind !== "run") return { hooks, state: s };
    const h = d.hook;
    hooks.push(
      h.secretUri
        ? `${h.name}(${h.secretUri.slice(7, 8)}${h.secretRevision !== undefined ? `@${h.secretRevision}` : ""})`
        : h.name,
    );
    s = commitHook(s, h, v);
  }
  throw new Error("did not settle");
}

/** A started leader with nothing else due. */
function started(v: UnitView): UnitLocalState {
  return runToIdle({ ...v, secrets: [] }, initialUnitState()).state;
}

test("a new unit runs no secret hook before install and start, then its secret hooks before relation hooks", (t) => {
  const v = view([{ uri: URI_A, owner: true, latest: 3, rotateDue: "2026-11-27T20:00:00.000Z", obsolete: [1] }], {
    relations: [
      {
        id: 1,
        endpoint: "db",
        interface: "pg",
        role: "provider",
        remoteApp: "c",
        life: "alive",
        remoteUnits: { "c/0": 1 },
        remoteAppVersion: 0,
      },
    ],
  });
  t.deepEqual(runToIdle(v, initialUnitState()).hooks, [
    "install",
    "db-relation-created",
    "leader-elected",
    "config-changed",
    "start",
    "secret-rotate(a)",
    "secret-remove(a@1)",
    "db-relation-joined",
    "db-relation-changed",
  ]);
});

test("an owner gets secret-rotate once per due time, and again for a later one", (t) => {
  const due1 = "2026-11-27T20:00:00.000Z";
  let s = started(view([]));
  const r1 = runToIdle(view([{ uri: URI_A, owner: true, latest: 1, rotateDue: due1 }]), s);
  t.deepEqual(r1.hooks, ["secret-rotate(a)"]);
  s = r1.state;
  t.deepEqual(runToIdle(view([{ uri: URI_A, owner: true, latest: 1, rotateDue: due1 }]), s).hooks, []);
  const due2 = "2026-11-27T20:05:00.000Z";
  t.deepEqual(runToIdle(view([{ uri: URI_A, owner: true, latest: 1, rotateDue: due2 }]), s).hooks, [
    "secret-rotate(a)",
  ]);
  // A unit that reads a secret but does not manage it never rotates it.
  t.deepEqual(runToIdle(view([{ uri: URI_A, latest: 1, tracked: 1, rotateDue: due2 }]), s).hooks, []);
});

test("a consumer gets secret-changed once per latest revision, and none once it tracks the latest", (t) => {
  let s = started(view([]));
  t.deepEqual(runToIdle(view([{ uri: URI_A, latest: 1 }]), s).hooks, [], "a secret it has not read: nothing");
  t.deepEqual(runToIdle(view([{ uri: URI_A, latest: 1, tracked: 1 }]), s).hooks, []);
  const r = runToIdle(view([{ uri: URI_A, latest: 2, tracked: 1, label: "db-pass" }]), s);
  t.deepEqual(r.hooks, ["secret-changed(a@2)"]);
  s = r.state;
  // It did not refresh: no second hook for revision 2, one for revision 3.
  t.deepEqual(runToIdle(view([{ uri: URI_A, latest: 2, tracked: 1 }]), s).hooks, []);
  t.deepEqual(runToIdle(view([{ uri: URI_A, latest: 3, tracked: 1 }]), s).hooks, ["secret-changed(a@3)"]);
  t.deepEqual(runToIdle(view([{ uri: URI_A, latest: 3, tracked: 3 }]), s).hooks, []);
  // The owner is never told of its own revisions.
  t.deepEqual(runToIdle(view([{ uri: URI_B, owner: true, latest: 5, tracked: 1 }]), s).hooks, []);
});

test("the secret hook carries the label and revision the agent puts in the hook's environment", (t) => {
  const s = started(view([]));
  const d = nextHook(view([{ uri: URI_A, latest: 2, tracked: 1, label: "db-pass" }]), s, opts);
  t.deepEqual(d, {
    kind: "run",
    hook: {
      kind: "secret-changed",
      name: "secret-changed",
      secretUri: URI_A,
      secretLabel: "db-pass",
      secretRevision: 2,
    },
  });
});

test("an owner gets secret-expired once per expired revision and secret-remove once per obsolete one, rotate first", (t) => {
  let s = started(view([]));
  const v1 = view([
    { uri: URI_B, owner: true, latest: 4, expired: [3], obsolete: [1, 2] },
    { uri: URI_A, owner: true, latest: 2, rotateDue: "2026-11-27T20:00:00.000Z", expired: [2] },
  ]);
  const r = runToIdle(v1, s);
  t.deepEqual(r.hooks, [
    "secret-rotate(a)",
    "secret-expired(a@2)",
    "secret-expired(b@3)",
    "secret-remove(b@1)",
    "secret-remove(b@2)",
  ]);
  s = r.state;
  t.deepEqual(runToIdle(v1, s).hooks, [], "each once");
  // Revision 1 was removed; 2 is still obsolete, and 4 became obsolete: only 4 is new.
  const v2 = view([{ uri: URI_B, owner: true, latest: 5, obsolete: [2, 4] }]);
  const r2 = runToIdle(v2, s);
  t.deepEqual(r2.hooks, ["secret-remove(b@4)"]);
  t.deepEqual(r2.state.secrets, { [URI_B]: { expired: [], removed: [2, 4] } }, "forgets what the view no longer has");
  // A consumer is not told of expiry or obsolete revisions.
  t.deepEqual(runToIdle(view([{ uri: URI_B, latest: 5, tracked: 5, expired: [5], obsolete: [1] }]), s).hooks, []);
});

test("no secret hook while the unit is dying, in error, or started before a reboot it has not run start for", (t) => {
  const s = started(view([]));
  const due = [{ uri: URI_A, owner: true as const, latest: 1, rotateDue: "2026-11-27T20:00:00.000Z" }];
  t.like(nextHook(view(due, { life: "dying" }), s, opts), { kind: "run", hook: { kind: "stop" } });
  const failed = { ...s, failedHook: { kind: "config-changed" as const, name: "config-changed" } };
  t.deepEqual(nextHook(view(due), failed, opts), { kind: "idle" });
  const booted = { ...s, bootId: "boot-1" };
  const d = nextHook(view(due), booted, { ...opts, bootId: "boot-2" });
  t.like(d, { kind: "run", hook: { kind: "start" } });
});
