/**
 * Juju's hook guarantees with real agents on the local substrate: integrations, peers, leadership,
 * scaling, upgrades, removal, agent crashes between hooks. Each unit's hook sequence is recorded by
 * the recorder operator and asserted exactly.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import type { StewardError } from "../api";
import type { TestController } from "./harness/controller";
import { allReady, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { recordDir, recorderVariant, sequences } from "./harness/operators";

let tc: TestController;
/**
 * A shorter leadership lease so the takeover test runs in seconds (the default is 60 s), yet long
 * enough that renewals (every 7.5 s) never miss while the whole suite loads both cores.
 */
const LEASE_S = 15;
test.before(async () => {
  tc = await startTestController({ leadershipLeaseSeconds: LEASE_S });
});
test.after.always(async () => {
  await tc?.close();
});

async function deploy(
  model: string,
  app: string,
  opDir: string,
  units: number,
  config: Record<string, string | number | boolean>,
): Promise<string> {
  const hash = await tc.upload(opDir);
  await tc.admin.deploy(model, { name: app, operator: hash, units, config });
  return hash;
}

const leaderOf = async (model: string, app: string, on: TestController = tc): Promise<string | undefined> =>
  Object.values((await on.admin.status(model)).applications[app]?.units ?? {}).find((u) => u.leader)?.name;

/**
 * Checks relation hooks after the deploy prefix: for each remote unit, joined immediately followed
 * by changed. Juju orders remote units only by when they entered, so the order between them is free.
 */
function assertJoinedPairs(
  t: ExecutionContext,
  hooks: string[],
  endpoint: string,
  remotes: string[],
  label: string,
): void {
  t.is(hooks.length, remotes.length * 2, `${label}: ${hooks.join(", ")}`);
  for (let i = 0; i < hooks.length; i += 2) {
    t.regex(hooks[i]!, new RegExp(`^${endpoint}-relation-joined\\(`), label);
    t.is(hooks[i + 1], hooks[i]!.replace("joined", "changed"), label);
  }
  t.deepEqual(
    hooks
      .filter((h) => h.includes("joined"))
      .map((h) => h.slice(h.indexOf("(") + 1, -1))
      .sort(),
    [...remotes].sort(),
    label,
  );
}

/** The deploy sequence a unit of a peer application runs, given its peers. */
const peerDeploy = (leader: boolean, peers: string[]): string[] => [
  "install",
  "peer-relation-created",
  leader ? "leader-elected" : "leader-settings-changed",
  "config-changed",
  "start",
  ...peers.flatMap((p) => [`peer-relation-joined(${p})`, `peer-relation-changed(${p})`]),
];

test("three peer units run the deploy sequence, then scale up and down", async (t) => {
  const rec = await recordDir();
  await tc.admin.createModel("peers");
  await deploy("peers", "p", await recorderVariant({ peers: { peer: "rec-peer" } }), 3, { "record-dir": rec });
  const units = ["p/0", "p/1", "p/2"];
  await tc.waitForUnits("peers", allReady(3), "3 peers active");
  await eventually("every peer joined the others", async () => {
    const s = await sequences(rec);
    return units.every((u) => (s.get(u) ?? []).filter((h) => h.startsWith("peer-relation-changed")).length === 2);
  });
  const leader = (await leaderOf("peers", "p"))!;
  let s = await sequences(rec);
  for (const u of units) {
    const others = units.filter((o) => o !== u);
    const seq = s.get(u)!;
    t.deepEqual(seq.slice(0, 5), peerDeploy(u === leader, []), u);
    assertJoinedPairs(t, seq.slice(5), "peer", others, u);
  }

  const before = new Map([...s].map(([u, h]) => [u, h.length]));
  await tc.admin.addUnits("peers", "p", 1);
  await tc.waitForUnits("peers", allReady(4), "4 peers active");
  await eventually("the old units joined p/3", async () => {
    const x = await sequences(rec);
    return units.every((u) => x.get(u)!.includes("peer-relation-changed(p/3)"));
  });
  s = await sequences(rec);
  for (const u of units)
    t.deepEqual(s.get(u)!.slice(before.get(u)), ["peer-relation-joined(p/3)", "peer-relation-changed(p/3)"], u);
  t.deepEqual(s.get("p/3")!.slice(0, 5), peerDeploy(false, []));

  const mark = new Map([...s].map(([u, h]) => [u, h.length]));
  const victim = units.find((u) => u !== leader)!;
  await tc.admin.removeUnit("peers", victim);
  await tc.waitForUnits("peers", (us) => us.length === 3 && !us.some((x) => x.name === victim), `${victim} gone`);
  await eventually("the others saw it depart", async () => {
    const x = await sequences(rec);
    return [...units, "p/3"]
      .filter((u) => u !== victim)
      .every((u) => x.get(u)!.includes(`peer-relation-departed(${victim})`));
  });
  s = await sequences(rec);
  const removed = s.get(victim)!.slice(mark.get(victim));
  t.deepEqual(removed.slice(-2), ["stop", "remove"]);
  t.deepEqual(
    removed.slice(0, -2).map((h) => h.replace(/\(.*\)$/, "")),
    ["peer-relation-departed", "peer-relation-departed", "peer-relation-departed"],
    "departs every peer, no relation-broken for peers",
  );
  for (const u of [...units, "p/3"].filter((x) => x !== victim))
    t.deepEqual(s.get(u)!.slice(mark.get(u)), [`peer-relation-departed(${victim})`], u);
});

test("integrate, then remove-integration: created, joined, changed; departed for each unit, then broken", async (t) => {
  const rec = await recordDir();
  await tc.admin.createModel("integ");
  await deploy("integ", "prov", await recorderVariant({ name: "prov", provides: { out: "rec" } }), 2, {
    "record-dir": rec,
  });
  await deploy("integ", "cons", await recorderVariant({ name: "cons", requires: { in: "rec" } }), 1, {
    "record-dir": rec,
  });
  await tc.waitForUnits("integ", allReady(3), "all active");
  const base = new Map([...(await sequences(rec))].map(([u, h]) => [u, h.length]));
  const r = await tc.admin.integrate("integ", "cons", "prov");
  t.is(r.key, "cons:in prov:out");
  await eventually("the consumer joined both providers", async () => {
    const c = (await sequences(rec)).get("cons/0")!;
    return c.includes("in-relation-changed(prov/0)") && c.includes("in-relation-changed(prov/1)");
  });
  await eventually("each provider joined the consumer", async () => {
    const s = await sequences(rec);
    return ["prov/0", "prov/1"].every((u) => s.get(u)!.includes("out-relation-changed(cons/0)"));
  });
  let s = await sequences(rec);
  const cons = s.get("cons/0")!.slice(base.get("cons/0"));
  t.is(cons[0], "in-relation-created");
  assertJoinedPairs(t, cons.slice(1), "in", ["prov/0", "prov/1"], "cons/0");
  for (const u of ["prov/0", "prov/1"])
    t.deepEqual(
      s.get(u)!.slice(base.get(u)),
      ["out-relation-created", "out-relation-joined(cons/0)", "out-relation-changed(cons/0)"],
      u,
    );
  const status = await tc.admin.status("integ");
  t.deepEqual(
    status.integrations.map((i) => [i.provider, i.requirer, i.interface, i.type]),
    [["prov:out", "cons:in", "rec", "regular"]],
  );

  const mark = new Map([...s].map(([u, h]) => [u, h.length]));
  await tc.admin.removeIntegration("integ", "prov", "cons");
  await eventually("the integration is gone", async () => (await tc.admin.status("integ")).integrations.length === 0);
  s = await sequences(rec);
  t.deepEqual(s.get("cons/0")!.slice(mark.get("cons/0")), [
    "in-relation-departed(prov/0)",
    "in-relation-departed(prov/1)",
    "in-relation-broken",
  ]);
  for (const u of ["prov/0", "prov/1"])
    t.deepEqual(s.get(u)!.slice(mark.get(u)), ["out-relation-departed(cons/0)", "out-relation-broken"], u);
});

test("an operator upgrade runs upgrade then config-changed; removing an application tears down both sides", async (t) => {
  const rec = await recordDir();
  await tc.admin.createModel("upgrade");
  await deploy("upgrade", "a", await recorderVariant({ name: "ra", provides: { out: "rec" } }), 1, {
    "record-dir": rec,
  });
  await deploy("upgrade", "b", await recorderVariant({ name: "rb", requires: { in: "rec" } }), 1, {
    "record-dir": rec,
  });
  await tc.admin.integrate("upgrade", "a", "b");
  // Both sides: on a loaded machine b/0 can be a whole hook sequence behind a/0.
  await eventually("integrated", async () => {
    const s = await sequences(rec);
    return s.get("a/0")?.includes("out-relation-changed(b/0)") && s.get("b/0")?.includes("in-relation-changed(a/0)");
  });
  let mark = (await sequences(rec)).get("a/0")!.length;
  const v2 = await tc.upload(await recorderVariant({ name: "ra", version: "2", provides: { out: "rec" } }));
  await tc.admin.updateApplication("upgrade", "a", { operator: v2 });
  await eventually(
    "upgraded",
    async () =>
      (await tc.admin.status("upgrade")).applications.a!.operator.version === "2" &&
      (await sequences(rec)).get("a/0")!.length >= mark + 2,
  );
  t.deepEqual((await sequences(rec)).get("a/0")!.slice(mark), ["upgrade", "config-changed"]);

  const s0 = await sequences(rec);
  mark = s0.get("a/0")!.length;
  const markB = s0.get("b/0")!.length;
  await tc.admin.removeApplication("upgrade", "a");
  await eventually("a is gone", async () => !("a" in (await tc.admin.status("upgrade")).applications));
  await eventually("its integration is gone", async () => (await tc.admin.status("upgrade")).integrations.length === 0);
  const s = await sequences(rec);
  t.deepEqual(s.get("a/0")!.slice(mark), ["out-relation-departed(b/0)", "out-relation-broken", "stop", "remove"]);
  // A relation-changed for what a/0 set in its own relation hooks may still land after the mark on a
  // loaded machine; what matters is that b/0 departs and then breaks, with nothing else.
  t.deepEqual(
    s
      .get("b/0")!
      .slice(markB)
      .filter((h) => h !== "in-relation-changed(a/0)"),
    ["in-relation-departed(a/0)", "in-relation-broken"],
  );
});

test.serial(
  "an agent killed between any two hooks of the deploy sequence resumes with the same sequence",
  async (t) => {
    // The real 60 s lease: leadership outlives an agent restart, so the sequence must not change at all.
    const tc = await startTestController();
    t.teardown(() => tc.close());
    const rec = await recordDir();
    await tc.admin.createModel("crashes");
    const op = await tc.upload(await recorderVariant({ peers: { peer: "rec-peer" } }));
    const hooks = [
      "install",
      "peer-relation-created",
      "leader-elected",
      "leader-settings-changed",
      "config-changed",
      "start",
      "peer-relation-joined",
      "peer-relation-changed",
    ];
    for (const [i, hook] of hooks.entries())
      await tc.admin.deploy("crashes", {
        name: `k${i}`,
        operator: op,
        units: 2,
        config: { "record-dir": rec, "kill-before": hook },
      });
    await tc.waitForUnits(
      "crashes",
      allReady(hooks.length * 2),
      "every unit active after its agent was killed",
      90_000,
    );
    for (const [i, hook] of hooks.entries()) {
      const app = `k${i}`;
      await eventually(`${app} units joined each other`, async () => {
        const s = await sequences(rec);
        return [0, 1].every((n) => s.get(`${app}/${n}`)!.some((h) => h.startsWith("peer-relation-changed")));
      });
      const leader = (await leaderOf("crashes", app, tc))!;
      const s = await sequences(rec);
      for (const n of [0, 1]) {
        const u = `${app}/${n}`;
        t.deepEqual(s.get(u), peerDeploy(u === leader, [`${app}/${1 - n}`]), `${u} (agent killed before ${hook})`);
      }
    }
    const kills = (await readdir(rec)).filter((f) => f.startsWith("killed-"));
    t.true(kills.length >= hooks.length, `agents were really killed (${kills.length} times)`);
  },
);

test.serial(
  "when the leader's agent stops, another unit is elected and runs leader-elected exactly once",
  async (t) => {
    const rec = await recordDir();
    await tc.admin.createModel("leaders");
    await deploy("leaders", "l", await recorderVariant({ peers: { peer: "rec-peer" } }), 3, { "record-dir": rec });
    await tc.waitForUnits("leaders", allReady(3), "3 units active");
    const old = (await leaderOf("leaders", "l"))!;
    const uuid = (await tc.admin.listModels()).find((m) => m.name === "leaders")!.uuid;
    const machine = (await tc.admin.status("leaders")).applications.l!.units[old]!.machine;
    const pid = Number(await readFile(join(tc.dir, "c", "machines", uuid, machine, "agent.pid"), "utf8"));
    process.kill(pid, "SIGSTOP"); // alive but silent: it stops renewing, as a hung or cut-off machine would
    try {
      const next = await eventually(
        "a new leader",
        async () => {
          const l = await leaderOf("leaders", "l");
          return l && l !== old ? l : undefined;
        },
        LEASE_S * 1000 * 4,
      );
      await eventually("the new leader ran leader-elected", async () =>
        (await sequences(rec)).get(next)!.includes("leader-elected"),
      );
      const s = await sequences(rec);
      t.is(s.get(next)!.filter((h) => h === "leader-elected").length, 1);
      t.is(
        [...s.values()].flat().filter((h) => h === "leader-elected").length,
        2,
        "the first leader and the new one, once each",
      );
    } finally {
      process.kill(pid, "SIGCONT");
    }
    // The old leader wakes up, finds it lost leadership and does not take it back.
    await new Promise((r) => setTimeout(r, LEASE_S * 1000));
    t.not(await leaderOf("leaders", "l"), old);
    t.is((await sequences(rec)).get(old)!.filter((h) => h === "leader-elected").length, 1);
  },
);

test("a failing hook's relation-set is not committed; it is once the hook succeeds", async (t) => {
  const rec = await recordDir();
  await tc.admin.createModel("lost");
  await deploy("lost", "w", await recorderVariant({ name: "w", provides: { out: "rec" } }), 1, {
    "record-dir": rec,
    "set-marker": true,
    "fail-hook": "out-relation-joined",
    "fail-times": 2,
  });
  await deploy("lost", "r", await recorderVariant({ name: "r", requires: { in: "rec" } }), 1, { "record-dir": rec });
  await tc.waitForUnits("lost", allReady(2), "both active");
  await tc.admin.integrate("lost", "w", "r");
  await tc.waitForUnits(
    "lost",
    (us) => us.find((u) => u.name === "w/0")?.workload.message === 'hook failed: "out-relation-joined"',
    "w/0 in error",
  );
  // relation-created committed its marker; the failed joined wrote one too, which must not show.
  const during = await tc.admin.showUnit("lost", "r/0");
  t.is(during.integrations[0]!.remoteUnits["w/0"]?.marker, "out-relation-created");
  await tc.waitForUnits("lost", allReady(2), "w/0 recovered after retries", 40_000);
  await eventually(
    "the marker of the successful hook",
    async () =>
      (await tc.admin.showUnit("lost", "r/0")).integrations[0]!.remoteUnits["w/0"]?.marker === "out-relation-changed",
  );
  const s = await sequences(rec);
  t.deepEqual(s.get("w/0")!.slice(-4), [
    "out-relation-joined(r/0)",
    "out-relation-joined(r/0)",
    "out-relation-joined(r/0)",
    "out-relation-changed(r/0)",
  ]);
});

test("with automatic retries off a failed hook waits for resolve; --no-retry skips it", async (t) => {
  const rec = await recordDir();
  await tc.admin.createModel("resolve");
  await tc.admin.updateModel("resolve", { automaticallyRetryHooks: false });
  await deploy("resolve", "x", await recorderVariant({}), 2, {
    "record-dir": rec,
    "fail-hook": "install",
    "fail-times": 1,
  });
  await tc.waitForUnits(
    "resolve",
    (us) => us.length === 2 && us.every((u) => u.workload.current === "error"),
    "both in error",
  );
  await new Promise((r) => setTimeout(r, 6000)); // past the first automatic retry, had it been on
  t.true((await tc.admin.status("resolve")).applications.x!.status.current === "error");
  await tc.admin.resolve("resolve", "x/0");
  await tc.admin.resolve("resolve", "x/1", false);
  await tc.waitForUnits("resolve", allReady(2), "both active after resolve");
  const s = await sequences(rec);
  t.deepEqual(s.get("x/0")!.filter((h) => h === "install").length, 2, "retried");
  t.deepEqual(s.get("x/1")!.filter((h) => h === "install").length, 1, "skipped, not run again");
  const notInError = await t.throwsAsync<StewardError>(tc.admin.resolve("resolve", "x/0"));
  t.regex(notInError!.message, /unit x\/0 is not in error \(it is active\)/);
});

test("integrating incompatible endpoints, an app with itself or twice is refused and changes nothing", async (t) => {
  await tc.admin.createModel("badint");
  await deploy("badint", "a", await recorderVariant({ name: "ba", provides: { out: "rec", other: "rec" } }), 0, {});
  await deploy("badint", "b", await recorderVariant({ name: "bb", requires: { in: "rec" } }), 0, {});
  await deploy("badint", "c", await recorderVariant({ name: "bc", requires: { in: "pgsql" } }), 0, {});
  const incompatible = await t.throwsAsync<StewardError>(tc.admin.integrate("badint", "a", "c"));
  t.regex(
    incompatible!.message,
    /no compatible endpoints between a and c: a provides out \(rec\), other \(rec\) and requires nothing; c provides nothing and requires in \(pgsql\)/,
  );
  const ambiguous = await t.throwsAsync<StewardError>(tc.admin.integrate("badint", "a", "b"));
  t.regex(ambiguous!.message, /more than one way: a:out b:in, a:other b:in/);
  const self = await t.throwsAsync<StewardError>(tc.admin.integrate("badint", "a", "a"));
  t.regex(self!.message, /cannot integrate a with itself/);
  await tc.admin.integrate("badint", "a:out", "b");
  const twice = await t.throwsAsync<StewardError>(tc.admin.integrate("badint", "b", "a:out"));
  t.is(twice?.code, "already-exists");
  const missing = await t.throwsAsync<StewardError>(tc.admin.removeIntegration("badint", "a", "c"));
  t.is(missing?.code, "not-found");
  const noEndpoint = await t.throwsAsync<StewardError>(tc.admin.integrate("badint", "a:nope", "b"));
  t.regex(noEndpoint!.message, /a has no endpoint "nope"/);
  t.deepEqual(
    (await tc.admin.status("badint")).integrations.map((i) => `${i.provider} ${i.requirer}`),
    ["a:out b:in"],
  );
});
