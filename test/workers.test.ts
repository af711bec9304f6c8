/**
 * The worker kit (controller/workers/): a reconciler runs one pass at a time and coalesces kicks, runs
 * only when its signature moves, and on abort waits for the pass in flight; a group stops its layers
 * newest first, bounded, and fails when a worker throws before it was told to stop; the leader-scoped
 * group aborts its term in the deposition callback and waits for it before a new term, and a real
 * election over the embedded store fences the term's writes. No hosts, no root.
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../api";
import type { Leadership, StateCache, Store, Worker } from "../controller";
import {
  EmbeddedStore,
  LeaderElection,
  REPLICAS_PREFIX,
  Reconciler,
  WorkerGroup,
  aborted,
  leaderScoped,
  service,
} from "../controller";
import { eventually } from "./harness/eventually";
import { storeWithCache } from "./harness/state";

const tick = (ms = 20): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A gate a pass waits on, opened by the test. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => {
    open = r;
  });
  return { wait, open };
}

/** A reconciler whose passes the test counts and holds. */
class Probe extends Reconciler {
  readonly name = "probe";
  passes = 0;
  inFlight = 0;
  mostInFlight = 0;
  hold?: Promise<void>;
  sig?: () => string;

  constructor(o: { cache?: StateCache; pollMs?: number } = {}) {
    super({ log: silentLogger, failure: "probe pass failed", ...o });
  }

  poke(): void {
    this.kick();
  }
  protected override signature(): string | undefined {
    return this.sig?.();
  }

  protected async reconcile(): Promise<void> {
    this.passes++;
    this.mostInFlight = Math.max(this.mostInFlight, ++this.inFlight);
    try {
      await this.hold;
    } finally {
      this.inFlight--;
    }
  }
}

test("a reconciler runs one pass at a time and folds the kicks that came during it into one more", async (t) => {
  const probe = new Probe();
  const g = gate();
  probe.hold = g.wait;
  const ctl = new AbortController();
  const running = probe.run(ctl.signal);
  await eventually("the first pass", () => probe.passes === 1);
  for (let i = 0; i < 5; i++) probe.poke();
  await tick();
  t.is(probe.passes, 1, "no second pass while the first runs");
  probe.hold = undefined;
  g.open();
  await eventually("the one pass after it", () => probe.passes === 2);
  await tick(100);
  t.is(probe.passes, 2, "five kicks, one more pass");
  t.is(probe.mostInFlight, 1);
  ctl.abort();
  await running;
});

test("on abort a reconciler waits for the pass in flight and starts none after it", async (t) => {
  const probe = new Probe({ pollMs: 10 });
  const g = gate();
  probe.hold = g.wait;
  const ctl = new AbortController();
  let ended = false;
  const running = probe.run(ctl.signal).then(() => {
    ended = true;
  });
  await eventually("a pass", () => probe.passes === 1);
  probe.poke(); // would make one more pass after this one
  ctl.abort();
  await tick(100);
  t.false(ended, "run has not resolved while its pass still runs");
  t.is(probe.inFlight, 1);
  g.open();
  await running;
  t.is(probe.inFlight, 0);
  const passes = probe.passes;
  probe.poke();
  await tick(50);
  t.is(probe.passes, passes, "no pass after the stop, neither kicked nor on the timer");
});

test("a reconciler on a real cache runs when its signature moves, not on every change", async (t) => {
  const { store, cache } = await storeWithCache(t, "workers");
  const probe = new Probe({ cache });
  probe.sig = () => [...cache.replicas.keys()].sort().join(",");
  const ctl = new AbortController();
  const running = probe.run(ctl.signal);
  await eventually("the first pass", () => probe.passes === 1);
  const replica = (id: string, since: string): Promise<number> =>
    store.put(`${REPLICAS_PREFIX}${id}`, JSON.stringify({ id, addresses: ["127.0.0.1:1"], since }));
  await replica("r1", "a");
  await eventually("a pass for the new replica", () => probe.passes === 2);
  await replica("r1", "b"); // same replicas: the signature stays
  await cache.catchUp();
  await tick(100);
  t.is(probe.passes, 2, "a change that leaves the signature alone runs nothing");
  await replica("r2", "a");
  await eventually("a pass for the second replica", () => probe.passes === 3);
  ctl.abort();
  await running;
});

test("a group stops its layers newest first, each bounded, and fails only on a throw before the stop", async (t) => {
  const order: string[] = [];
  const group = new WorkerGroup({ name: "test", log: silentLogger, stopTimeoutMs: 300 });
  let failure: unknown;
  void group.failed.catch((err: unknown) => {
    failure = err;
  });
  group.add(
    service("server", () => {
      order.push("server");
    }),
  );
  group.add(
    service("hub-a", () => {
      order.push("hubs");
    }),
    service("hub-b", () => undefined),
  );
  // A worker that ignores its signal: the stop goes on without it after the bound.
  const stuck: Worker = { name: "stuck", run: () => new Promise<void>(() => undefined) };
  // A worker that throws once stopped: logged, not a failure.
  const noisy: Worker = {
    name: "noisy",
    run: async (signal) => {
      await aborted(signal);
      throw new Error("closing went wrong");
    },
  };
  group.add(
    stuck,
    noisy,
    service("leader", () => {
      order.push("leader");
    }),
  );
  group.start();
  await tick();
  const started = Date.now();
  await group.stop();
  t.deepEqual(order, ["leader", "hubs", "server"]);
  t.true(Date.now() - started >= 250, "the stuck worker was waited for up to the bound");
  t.true(Date.now() - started < 3000);
  await tick();
  t.is(failure, undefined);
});

test("a worker that throws while running fails its group, naming it", async (t) => {
  const group = new WorkerGroup({ name: "test", log: silentLogger });
  group.add(
    service("fine", () => undefined),
    {
      name: "broken",
      run: async () => {
        await tick();
        throw new Error("bug");
      },
    },
  );
  group.start();
  const err = await t.throwsAsync(group.failed);
  t.regex(err!.message, /worker broken of test failed: bug/);
  await group.stop();
});

/** A leadership the test flips by hand (LeaderElection's seam). */
class HandLeadership implements Leadership {
  isLeader = false;
  private readonly listeners = new Set<(leading: boolean) => void>();
  constructor(readonly store: Store) {}
  fenced(): Store {
    return this.store;
  }
  watch(l: (leading: boolean) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  start(): void {}
  async stop(): Promise<void> {
    this.flip(false);
  }
  flip(leading: boolean): void {
    if (this.isLeader === leading) return;
    this.isLeader = leading;
    for (const l of [...this.listeners]) l(leading);
  }
}

test("leader-scoped work starts on election, is aborted in the deposition itself and drained before the next term", async (t) => {
  const leadership = new HandLeadership({} as Store);
  const terms: { signal: AbortSignal; release: () => void; ended: boolean }[] = [];
  const worker = leaderScoped(
    leadership,
    () => [
      {
        name: "term-worker",
        run: async (signal) => {
          const g = gate();
          const term = { signal, release: g.open, ended: false };
          terms.push(term);
          await aborted(signal);
          await g.wait; // a pass that takes its time to end
          term.ended = true;
        },
      },
    ],
    { log: silentLogger },
  );
  const ctl = new AbortController();
  const running = worker.run(ctl.signal);
  await tick();
  t.is(terms.length, 0, "nothing runs before an election");
  leadership.flip(true);
  await eventually("the first term", () => terms.length === 1);
  leadership.flip(false);
  t.true(terms[0]!.signal.aborted, "aborted synchronously, in the deposition callback");
  leadership.flip(true);
  await tick(100);
  t.is(terms.length, 1, "no new term while the last one still drains");
  terms[0]!.release();
  await eventually("the second term", () => terms.length === 2);
  t.true(terms[0]!.ended);
  ctl.abort();
  await tick();
  t.true(terms[1]!.signal.aborted);
  terms[1]!.release();
  await running;
  t.true(terms[1]!.ended, "stopping waits for the term");
  t.false(leadership.isLeader, "stopping stepped down");
});

test("a leader worker that throws fails the leader-scoped worker", async (t) => {
  const leadership = new HandLeadership({} as Store);
  leadership.isLeader = true;
  const worker = leaderScoped(
    leadership,
    () => [
      {
        name: "bad",
        run: async () => {
          throw new Error("leader bug");
        },
      },
    ],
    { log: silentLogger },
  );
  const err = await t.throwsAsync(worker.run(new AbortController().signal));
  t.regex(err!.message, /worker bad of leader term failed: leader bug/);
  t.false(leadership.isLeader, "it stepped down");
});

test("with a real election the term writes through a fenced store, which refuses once the work is stopped", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-workers-"));
  const store = await EmbeddedStore.open({ dir });
  t.teardown(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  const election = new LeaderElection({
    store,
    replicaId: "r0",
    addresses: () => [],
    log: silentLogger,
    ttlSeconds: 5,
  });
  let fenced: Store | undefined;
  const written: string[] = [];
  const group = new WorkerGroup({ name: "replica", log: silentLogger });
  group.add(
    leaderScoped(
      election,
      (f) => {
        fenced = f;
        return [
          {
            name: "writer",
            run: async (signal) => {
              await f.put("/test/leader-wrote", "1");
              written.push("1");
              await aborted(signal);
            },
          },
        ];
      },
      { log: silentLogger },
    ),
  );
  group.start();
  await eventually("elected and written", () => written.length === 1, 10_000, 20);
  t.true(election.isLeader);
  t.is((await store.get("/test/leader-wrote"))?.value, "1");
  await group.stop();
  t.false(election.isLeader);
  await t.throwsAsync(fenced!.put("/test/leader-wrote", "2"), { message: /no longer the controller leader/ });
  t.is((await store.get("/test/leader-wrote"))?.value, "1");
});
