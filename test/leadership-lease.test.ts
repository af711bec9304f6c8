/**
 * Per-application leadership leases and the agent's local guarantee: the lease is set at deploy
 * and changed later (bad values refused naming the minimum), claims answer the lease they granted,
 * the agent view carries it, a longer lease applies at the next renewal and a shorter one is
 * promised at once while the longer store lease outlives every earlier promise; leader-resign
 * hands leadership over. The agent's is-leader rule is driven by a clock the test moves.
 */
import test from "ava";
import type { StewardError } from "../api";
import { LEADERSHIP_LEASE, formatLeaseSeconds, parseLeadershipLease } from "../api";
import { UnitLeadership, answerWaitMs, leaderAt } from "../agent";
import type { Store } from "../controller";
import { keys } from "../controller";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import type { SimulatedAgent } from "./harness/simulated-agent";
import { simulatedAgent } from "./harness/simulated-agent";
import { recorderVariant } from "./harness/operators";
import { cliOnControllers } from "./harness/cli";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

let tc: TestController;
test.before(async () => {
  tc = await startTestController();
});
test.after.always(async () => {
  await tc?.close();
});

type Claim = { leader: boolean; leaseSeconds?: number };
type LeaderKey = { unit: string; since: string; lease: string; leaseSeconds?: number; shrinkAt?: string };

/** A model with application `app` of `units` units on one manual machine, and that machine's simulated agent. */
async function deployed(
  model: string,
  app: string,
  units: number,
  leadershipLease?: string | number,
): Promise<{ uuid: string; agent: SimulatedAgent }> {
  const { uuid } = await tc.admin.createModel(model);
  const [m] = (await tc.admin.addMachines(model, "manual", 1)).machines;
  const op = await tc.upload(await recorderVariant({ peers: { peer: "rec-peer" } }));
  await tc.admin.deploy(model, {
    name: app,
    operator: op,
    units,
    to: Array.from({ length: units }, () => m!.id),
    ...(leadershipLease !== undefined ? { leadershipLease } : {}),
  });
  const agent = await simulatedAgent(tc, uuid, m!.id, m!.credential!);
  await eventually("the agent's view", () => (agent.view()?.units.length === units ? true : undefined));
  return { uuid, agent };
}

test("leases parse from seconds and durations, and are refused below 5 s or above 1 h", (t) => {
  t.deepEqual(parseLeadershipLease("10s"), { ok: true, seconds: 10 });
  t.deepEqual(parseLeadershipLease("1m"), { ok: true, seconds: 60 });
  t.deepEqual(parseLeadershipLease("1m30s"), { ok: true, seconds: 90 });
  t.deepEqual(parseLeadershipLease(15), { ok: true, seconds: 15 });
  t.deepEqual(parseLeadershipLease("20"), { ok: true, seconds: 20 });
  for (const bad of ["4s", 2, "2h", "soon", "1.5s", "", "10 s"]) {
    const r = parseLeadershipLease(bad);
    t.false(r.ok, String(bad));
    if (!r.ok) t.regex(r.message, /5s/, "the message names the minimum");
  }
  t.is(formatLeaseSeconds(10), "10s");
  t.is(formatLeaseSeconds(90), "1m30s");
  t.is(formatLeaseSeconds(3600), "1h");
  t.is(LEADERSHIP_LEASE.minSeconds, 5);
});

test("deploy and update set the lease; bad values get a 400 naming the minimum", async (t) => {
  const { agent } = await deployed("lease-set", "db", 2, "10s");
  t.teardown(agent.close);
  t.is((await tc.admin.getApplication("lease-set", "db")).leadershipLeaseSeconds, 10);
  t.is(agent.view()!.units[0]!.leadershipLeaseSeconds, 10, "the view carries the application's lease");
  const status = await tc.admin.status("lease-set");
  t.is(status.applications["db"]!.leadershipLeaseSeconds, 10, "status shows it");

  const err = await t.throwsAsync<StewardError>(() =>
    tc.admin.updateApplication("lease-set", "db", { leadershipLease: "2s" }),
  );
  t.is(err?.code, "invalid-request");
  t.regex(err!.message, /minimum leadership lease is 5s/);
  const notDuration = await t.throwsAsync<StewardError>(() =>
    tc.admin.updateApplication("lease-set", "db", { leadershipLease: "soon" }),
  );
  t.regex(notDuration!.message, /not a duration/);
  const op = (await tc.admin.getApplication("lease-set", "db")).operator.hash;
  const atDeploy = await t.throwsAsync<StewardError>(() =>
    tc.admin.deploy("lease-set", { name: "db2", operator: op, units: 0, leadershipLease: 3 }),
  );
  t.is(atDeploy?.code, "invalid-request");
  t.regex(atDeploy!.message, /5s/);

  t.is((await tc.admin.updateApplication("lease-set", "db", { leadershipLease: "1m30s" })).leadershipLeaseSeconds, 90);
  await eventually("the view's new lease", () =>
    agent.view()?.units[0]?.leadershipLeaseSeconds === 90 ? true : undefined,
  );
  const reset = await tc.admin.updateApplication("lease-set", "db", { leadershipLease: null });
  t.is(reset.leadershipLeaseSeconds, undefined, "back to the controller's");
  await eventually("a view without its own lease", () =>
    agent.view()?.units[0] && agent.view()!.units[0]!.leadershipLeaseSeconds === undefined ? true : undefined,
  );
  t.is(agent.view()!.leadershipLeaseSeconds, 60, "the controller's lease, model-wide");
});

test("the CLI: deploy --leadership-lease, leadership-lease shows and changes it, status shows it, bad values are refused", async (t) => {
  const home = await mkdtemp(join(tmpdir(), "steward-lease-cli-"));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  await tc.admin.createModel("lease-cli");
  const steward = await cliOnControllers(home, { c: tc }, { currentModel: "lease-cli" });
  const op = await recorderVariant({});
  const tooShort = await steward("deploy", op, "db", "-n", "0", "--leadership-lease", "3s");
  t.not(tooShort.code, 0);
  t.regex(tooShort.stdout + tooShort.stderr, /minimum leadership lease is 5s/);
  const deployed = await steward("deploy", op, "db", "-n", "0", "--leadership-lease", "10s");
  t.is(deployed.code, 0, deployed.stderr);
  t.regex(deployed.stdout, /leadership lease 10s/);
  t.is((await steward("leadership-lease", "db")).stdout.trim(), "10s");
  const status = await steward("status");
  t.regex(status.stdout, /Lease/);
  t.regex(status.stdout, /db .* 10s/);
  t.is((await steward("leadership-lease", "db", "1m")).stdout.trim(), "1m");
  const bad = await steward("leadership-lease", "db", "soon");
  t.not(bad.code, 0);
  t.regex(bad.stdout + bad.stderr, /not a duration/);
  t.regex((await steward("leadership-lease", "db", "--reset")).stdout, /controller's applies/);
  t.notRegex((await steward("status")).stdout, /Lease/, "no column when no application has its own");
});

test("claims answer the application's lease; a longer one applies at the next renewal, a shorter one never cuts a promise short", async (t) => {
  const { uuid, agent } = await deployed("lease-claims", "db", 2, 5);
  t.teardown(agent.close);
  t.deepEqual(await agent.call<Claim>("leader.claim", { unit: "db/0" }), { leader: true, leaseSeconds: 5 });
  t.deepEqual(await agent.call<Claim>("leader.claim", { unit: "db/1" }), { leader: false });
  const store = (tc.controller as unknown as { store: Store }).store;
  const leaderDoc = async (): Promise<LeaderKey> =>
    JSON.parse((await store.get(keys.leader(uuid, "db")))!.value) as LeaderKey;
  const first = await leaderDoc();
  t.is(first.leaseSeconds, 5);

  await tc.admin.updateApplication("lease-claims", "db", { leadershipLease: 20 });
  t.deepEqual(await agent.call<Claim>("leader.claim", { unit: "db/0" }), { leader: true, leaseSeconds: 20 });
  const grown = await leaderDoc();
  t.not(grown.lease, first.lease, "a longer lease is a new store lease, taken at once");
  t.is(grown.leaseSeconds, 20);
  t.is(grown.since, first.since, "the same leadership");

  await tc.admin.updateApplication("lease-claims", "db", { leadershipLease: 6 });
  t.deepEqual(
    await agent.call<Claim>("leader.claim", { unit: "db/0" }),
    { leader: true, leaseSeconds: 6 },
    "the shorter lease is what is promised from now on",
  );
  const shrinking = await leaderDoc();
  t.is(shrinking.lease, grown.lease, "the longer store lease lives on: it promised 20 s to earlier claims");
  t.truthy(shrinking.shrinkAt);
  t.true(Date.parse(shrinking.shrinkAt!) >= Date.now() + 15_000, "not before the last 20 s promise has run out");
});

test("leader-resign hands leadership over: --to names who may claim for one lease; without it anyone but the resigner", async (t) => {
  const { agent } = await deployed("lease-resign", "db", 3, 30);
  t.teardown(agent.close);
  const claim = (unit: string): Promise<Claim> => agent.call<Claim>("leader.claim", { unit });
  t.true((await claim("db/0")).leader);

  const notLeader = await t.throwsAsync<StewardError>(() => agent.call("leader.resign", { unit: "db/1" }));
  t.is(notLeader?.code, "forbidden");
  t.regex(notLeader!.message, /not the leader/);
  const unknown = await t.throwsAsync<StewardError>(() => agent.call("leader.resign", { unit: "db/0", to: "db/9" }));
  t.is(unknown?.code, "not-found");
  await tc.admin.deploy("lease-resign", {
    name: "other",
    operator: (await tc.admin.getApplication("lease-resign", "db")).operator.hash,
    units: 0,
  });
  await tc.admin.addUnits("lease-resign", "other", 1, [agent.view()!.machine.id]);
  const otherApp = await t.throwsAsync<StewardError>(() =>
    agent.call("leader.resign", { unit: "db/0", to: "other/0" }),
  );
  t.is(otherApp?.code, "invalid-request");
  t.regex(otherApp!.message, /not of db/);
  t.true((await claim("db/0")).leader, "a refused resign changes nothing");

  await agent.call("leader.resign", { unit: "db/0", to: "db/2" });
  t.false((await claim("db/0")).leader, "the resigner may not take it back");
  t.false((await claim("db/1")).leader, "only the named unit may claim");
  t.deepEqual(await claim("db/2"), { leader: true, leaseSeconds: 30 });
  t.false((await claim("db/1")).leader);

  await agent.call("leader.resign", { unit: "db/2" });
  t.false((await claim("db/2")).leader, "without --to: anyone but the resigner");
  t.true((await claim("db/0")).leader);
});

/** A UnitLeadership on a clock the test moves, whose controller answers as the test says. */
function driven(leaseSeconds = 10): {
  l: UnitLeadership;
  clock: { now: number };
  answer: (res: Claim | Error) => void;
  calls: string[];
} {
  const clock = { now: 1000 };
  const calls: string[] = [];
  let waiting: ((res: Claim | Error) => void)[] = [];
  const l = new UnitLeadership({
    unit: "db/0",
    now: () => clock.now,
    leaseSeconds: () => leaseSeconds,
    call: <T>(method: string) => {
      calls.push(method);
      return new Promise<T>((resolve, reject) => {
        waiting.push((res) => (res instanceof Error ? reject(res) : resolve(res as T)));
      });
    },
  });
  return {
    l,
    clock,
    calls,
    answer: (res) => {
      const w = waiting;
      waiting = [];
      for (const r of w) r(res);
    },
  };
}

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

test("the local rule: true only while half the lease from the last successful claim's send remains", (t) => {
  t.false(leaderAt(undefined, 0));
  const r = { sent: 1000, leaseMs: 10_000 };
  t.true(leaderAt(r, 1000));
  t.true(leaderAt(r, 5999));
  t.false(leaderAt(r, 6000), "half the lease after the send");
  t.false(leaderAt(r, 11_000), "never after sent + lease");
  t.is(answerWaitMs(5000), 1250);
  t.is(answerWaitMs(60_000), 5000);
});

test("is-leader answers by when the claim was sent: a late answer is not true, an unreachable controller leaves the record to decide", async (t) => {
  const { l, clock, answer } = driven(10);
  // A claim answered at once: leader, with guarantee from its send.
  const first = l.claim();
  clock.now = 1100;
  answer({ leader: true, leaseSeconds: 10 });
  await first;
  t.deepEqual(l.current, { sent: 1000, leaseMs: 10_000 });

  // is-leader while the controller does not answer (cut off): the record decides, true for now…
  clock.now = 3000;
  const asked = l.isLeader();
  await settle();
  t.true(await Promise.race([asked, new Promise<boolean>((r) => setTimeout(() => r(true), 3000))]));
  // …and false once half the lease since the last successful send has gone, though nothing said so.
  clock.now = 6000;
  t.false(await l.isLeader());

  // The claim sent at 3000 is answered "leader" only now (TCP delivered it after the cut): too late.
  clock.now = 40_000;
  answer({ leader: true, leaseSeconds: 10 });
  await settle();
  t.is(l.current!.sent, 3000, "recorded with when it was sent");
  t.false(await raceIsLeader(l, answer, clock, 40_000), "a late answer is not true");

  // An answer in time is true; a "not the leader" clears the record at once.
  t.true(await raceIsLeader(l, answer, clock, 41_000, { leader: true, leaseSeconds: 10 }));
  t.false(await raceIsLeader(l, answer, clock, 41_100, { leader: false }));
  t.is(l.current, undefined);
});

/** is-leader at `at`, the controller answering `res` at once (or never). */
async function raceIsLeader(
  l: UnitLeadership,
  answer: (res: Claim | Error) => void,
  clock: { now: number },
  at: number,
  res?: Claim,
): Promise<boolean> {
  clock.now = at;
  const p = l.isLeader();
  if (res) answer(res);
  return p;
}

test("a claim granted a shorter lease than the view's is judged by the shorter; a failed claim keeps the record", async (t) => {
  const { l, clock, answer } = driven(60);
  const c = l.claim();
  answer({ leader: true, leaseSeconds: 6 });
  await c;
  t.deepEqual(l.current, { sent: 1000, leaseMs: 6000 });
  clock.now = 3999;
  const failing = l.claim();
  answer(new Error("connection to the controller was lost"));
  await failing;
  t.deepEqual(
    l.current,
    { sent: 1000, leaseMs: 6000 },
    "what the controller did with it is unknown: the record stands",
  );
  clock.now = 4001;
  const p = l.isLeader();
  t.false(await p, "3 s after the send of a 6 s claim");
});

test("leader-resign answers false at once, and an answer to a claim sent before it is not recorded", async (t) => {
  const { l, clock, answer, calls } = driven(10);
  const c = l.claim();
  answer({ leader: true, leaseSeconds: 10 });
  await c;
  const before = l.claim(); // in flight when the resign starts
  clock.now = 1500;
  const resigned = l.resign("db/1");
  t.is(l.current, undefined, "false before the controller is even asked");
  answer({ leader: true, leaseSeconds: 10 }); // answers both the old claim and the resign
  await Promise.all([before, resigned]);
  t.is(l.current, undefined, "the old claim's answer does not bring it back");
  t.deepEqual(calls, ["leader.claim", "leader.claim", "leader.resign"]);
  const p = l.isLeader();
  answer({ leader: false });
  t.false(await p);
});
