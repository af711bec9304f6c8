/**
 * The quorum keeper's decision as a table (raft-autopilot's manner): members, presence, config, the
 * clock and the keeper's memory in; one action out. Pure: no etcd, no hosts, no root. The keeper's
 * I/O around it is covered by quorum-keeper-hosts.test.ts and the HA tests.
 */
import test from "ava";
import type { KeeperAction, KeeperView, NamedMember } from "../controller";
import { decideQuorumAction, lostCandidates, observeGone } from "../controller";

const NOW = Date.parse("2026-11-27T12:00:00Z");
const member = (name: string, learner = false): NamedMember => ({
  member: { id: `id-${name}`, name, peerUrls: [], clientUrls: [], learner },
  name,
});
const ago = (s: number): number => NOW - s * 1000;
const view = (v: Partial<KeeperView> & { members: NamedMember[] }): KeeperView => ({
  present: new Set(v.members.map((m) => m.name)),
  config: { replicas: 3, replaceAfterSeconds: 300, maxReplacementsPerHour: 2 },
  now: NOW,
  goneSince: new Map(),
  replacements: [],
  noHost: undefined,
  lost: new Set(),
  ...v,
});
const three = [member("a"), member("b"), member("c")];

const cases: [string, KeeperView, KeeperAction | ((a: KeeperAction) => boolean)][] = [
  [
    "all voters healthy: idle",
    view({ members: three }),
    { kind: "report", state: "idle", message: "3 of 3 voters healthy" },
  ],
  [
    "no majority present: blocked, nothing changed",
    view({
      members: three,
      present: new Set(["a"]),
      goneSince: new Map([
        ["b", ago(999)],
        ["c", ago(999)],
      ]),
    }),
    {
      kind: "report",
      state: "blocked",
      message: "no quorum: 1 of 3 voters present; nothing is changed until a majority is back",
    },
  ],
  [
    "a learner is promoted before anything else",
    view({
      members: [...three, member("d", true)],
      present: new Set(["a", "b"]),
      goneSince: new Map([["c", ago(999)]]),
    }),
    (a) => a.kind === "promote" && a.learner.name === "d",
  ],
  [
    "a voter gone less than replaceAfter: waiting, with the time left",
    view({ members: three, present: new Set(["a", "b"]), goneSince: new Map([["c", ago(100)]]) }),
    { kind: "report", state: "waiting", message: "replica c is gone; it is replaced in 200 s unless it returns" },
  ],
  [
    "a voter gone past replaceAfter: removed",
    view({ members: three, present: new Set(["a", "b"]), goneSince: new Map([["c", ago(301)]]) }),
    { kind: "remove", dead: member("c"), goneForSeconds: 301, recent: [], lost: false },
  ],
  [
    "a voter whose host came back empty: removed at once, as lost",
    view({
      members: three,
      present: new Set(["a", "b"]),
      goneSince: new Map([["c", ago(5)]]),
      lost: new Set(["id-c"]),
    }),
    { kind: "remove", dead: member("c"), goneForSeconds: 5, recent: [], lost: true },
  ],
  [
    "the hourly limit reached: blocked",
    view({
      members: three,
      present: new Set(["a", "b"]),
      goneSince: new Map([["c", ago(400)]]),
      replacements: [
        new Date(ago(60)).toISOString(),
        new Date(ago(1200)).toISOString(),
        new Date(ago(7200)).toISOString(),
      ],
    }),
    {
      kind: "report",
      state: "blocked",
      message: "replica c has been gone 400 s, but 2 replacements were made in the last hour (limit 2)",
    },
  ],
  [
    "replacements older than an hour do not count",
    view({
      members: three,
      present: new Set(["a", "b"]),
      goneSince: new Map([["c", ago(400)]]),
      replacements: [new Date(ago(7200)).toISOString()],
    }),
    (a) => a.kind === "remove" && a.recent.length === 0,
  ],
  [
    "overdue but no host: blocked, saying why",
    view({
      members: three,
      present: new Set(["a", "b"]),
      goneSince: new Map([["c", ago(400)]]),
      noHost: "the spare pool is empty",
    }),
    {
      kind: "report",
      state: "blocked",
      message: "replica c has been gone 400 s and should be replaced, but the spare pool is empty",
    },
  ],
  ["fewer voters than wanted: grow", view({ members: [member("a")] }), { kind: "grow" }],
  [
    "fewer voters than wanted and no host: blocked",
    view({ members: [member("a")], noHost: "no cloud is set" }),
    { kind: "report", state: "blocked", message: "1 of 3 wanted voters; no cloud is set" },
  ],
  [
    "as many voters as wanted, one of five gone: waiting, not growing",
    view({
      members: [...three, member("d"), member("e")],
      config: { replicas: 5, replaceAfterSeconds: 60, maxReplacementsPerHour: 2 },
      present: new Set(["a", "b", "c", "d"]),
      goneSince: new Map([["e", ago(59.6)]]),
    }),
    { kind: "report", state: "waiting", message: "replica e is gone; it is replaced in 0 s unless it returns" },
  ],
];

for (const [title, v, want] of cases) {
  test(`decide: ${title}`, (t) => {
    const got = decideQuorumAction(v);
    if (typeof want === "function") t.true(want(got), JSON.stringify(got));
    else t.deepEqual(got, want);
  });
}

test("observeGone times a voter from when it was first seen gone and forgets it when it returns", (t) => {
  const first = observeGone(new Map(), [...three, member("d", true)], new Set(["a", "b"]), NOW);
  t.deepEqual([...first], [["c", NOW]], "a learner is not timed");
  const later = observeGone(first, three, new Set(["a", "b"]), NOW + 5000);
  t.is(later.get("c"), NOW, "kept from the first sighting");
  t.deepEqual([...observeGone(later, three, new Set(["a", "b", "c"]), NOW + 9000)], []);
});

test("lostCandidates asks only about gone voters not yet overdue, and only when the keeper would act", (t) => {
  const gone = {
    members: three,
    present: new Set(["a"]),
    goneSince: new Map([
      ["b", ago(10)],
      ["c", ago(400)],
    ]),
  };
  t.deepEqual(
    lostCandidates(view({ ...gone, present: new Set(["a", "b"]), goneSince: new Map([["c", ago(10)]]) })).map(
      (m) => m.name,
    ),
    ["c"],
  );
  t.deepEqual(
    lostCandidates(view({ ...gone, present: new Set(["a", "b"]), goneSince: new Map([["c", ago(400)]]) })),
    [],
    "overdue already: no need to ask",
  );
  t.deepEqual(lostCandidates(view(gone)), [], "no quorum: nothing would be done");
  t.deepEqual(
    lostCandidates(
      view({
        members: [...three, member("d", true)],
        present: new Set(["a", "b"]),
        goneSince: new Map([["c", ago(10)]]),
      }),
    ),
    [],
    "a learner comes first",
  );
});
