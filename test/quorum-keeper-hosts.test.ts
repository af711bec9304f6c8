/**
 * What a quorum keeper does with replica hosts outside the store, on one real etcd member with the
 * test's host broker (the seam clouds and StatefulSets plug into):
 * - deposed while it waited for a host (a pod to start, an instance to boot: minutes), it changes
 *   nothing once it has the host: no etcd member is added and the host is neither started nor given
 *   back to a pool (the next leader may be using it); only what no other leader can know of is
 *   abandoned (a launched instance is terminated). Seen under load on Kubernetes and EC2: two
 *   leaders' passes overlapped and a fourth replica appeared;
 * - a removed replica's host is retired (its instance terminated) even when the first try fails: the
 *   keeper tries again on later passes until it succeeds, and leaves alone a host a member uses
 *   again. Seen under load on EC2: one refused call left a replaced replica's instance running.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { randomBytes } from "node:crypto";
import { silentLogger } from "../api";
import { EtcdStore, QuorumKeeper, REPLICAS_PREFIX, StateCache, keys } from "../controller";
import { haveEtcd, startEtcd } from "./harness/etcd";
import { eventually } from "./harness/eventually";

type MemberState = "member" | "removed";

/**
 * A one-member etcd whose only replica is present, `wanted` voters configured, `members` recorded
 * (name → host and state; `self` is the present replica), and a keeper on it with `hosts`; all stopped when the test ends.
 */
async function keeperOnOneVoter(
  t: ExecutionContext,
  wanted: number,
  members: Record<string, [string, MemberState]>,
  hosts: ConstructorParameters<typeof QuorumKeeper>[0]["hosts"],
  intervalMs: number,
): Promise<{ keeper: QuorumKeeper; membership: ReturnType<EtcdStore["membership"]> }> {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  const store = await EtcdStore.connect({
    endpoints: [etcd.endpoint],
    prefix: `/qk-${randomBytes(3).toString("hex")}`,
  });
  t.teardown(() => store.close());
  const membership = store.membership();
  const [self] = await membership.list();
  await store.put(
    `${REPLICAS_PREFIX}${self!.name}`,
    JSON.stringify({ id: self!.name, addresses: ["127.0.0.1:1"], since: new Date().toISOString() }),
  );
  await store.put(
    "/cluster/config",
    JSON.stringify({ replicas: wanted, replaceAfterSeconds: 300, maxReplacementsPerHour: 2 }),
  );
  for (const [given, [host, state]] of Object.entries(members)) {
    const name = given === "self" ? self!.name : given;
    await store.put(
      keys.clusterMember(name),
      JSON.stringify({ name, host, apiPort: 17070, state, addedAt: new Date().toISOString() }),
    );
  }
  const cache = await StateCache.start(store, () => undefined);
  t.teardown(() => cache.stop());
  await cache.catchUp();
  return { keeper: new QuorumKeeper({ store, membership, cache, log: silentLogger, intervalMs, hosts }), membership };
}

(haveEtcd ? test : test.skip)(
  "a keeper deposed while it waited for a host adds no member, gives nothing back to the pool and abandons the host",
  async (t) => {
    const calls: string[] = [];
    let handOver!: () => void;
    const hostReady = new Promise<void>((r) => {
      handOver = r;
    });
    // One voter present, three wanted: the keeper grows.
    const { keeper, membership } = await keeperOnOneVoter(
      t,
      3,
      {},
      {
        unavailable: () => undefined,
        async acquire(nameFor) {
          calls.push("acquire");
          nameFor("127.0.0.9");
          await hostReady;
          return { address: "127.0.0.9" };
        },
        async start() {
          calls.push("start");
        },
        async joined() {
          calls.push("joined");
        },
        async failed() {
          calls.push("failed");
        },
        async release() {
          calls.push("release");
        },
        async abandon() {
          calls.push("abandon");
        },
      },
      60_000,
    );
    const leading = new AbortController();
    const running = keeper.run(leading.signal);
    await eventually("the keeper waiting for a host", async () => calls.includes("acquire") || undefined, 10_000, 20);
    leading.abort(); // deposed
    handOver();
    // The worker ends once its pass has (it is waited for: nothing of it goes on beside the next leader's).
    await running;
    await new Promise((r) => setTimeout(r, 1500));
    t.deepEqual(calls, ["acquire", "abandon"], "nothing done with the host but abandoning it");
    t.is((await membership.list()).length, 1, "no member added");
  },
);

(haveEtcd ? test : test.skip)(
  "a removed replica's host is retired on a later pass when the first try fails; a host in use again is not",
  async (t) => {
    const retires: string[] = [];
    // One voter present and one wanted: nothing to change, so each pass only reports (and retires).
    const { keeper } = await keeperOnOneVoter(
      t,
      1,
      {
        self: ["127.0.0.1", "member"],
        "r-gone": ["10.9.9.1", "removed"],
        // An address a removed replica had, given to a replica that is a member now.
        "r-old": ["10.9.9.2", "removed"],
        "r-new": ["10.9.9.2", "member"],
      },
      {
        unavailable: () => undefined,
        acquire: () => Promise.reject(new Error("no host is needed here")),
        async start() {},
        async joined() {},
        async failed() {},
        async release() {},
        async retire(host) {
          retires.push(host);
          if (retires.length === 1) throw new Error("RequestLimitExceeded");
        },
      },
      100,
    );
    const leading = new AbortController();
    const running = keeper.run(leading.signal);
    t.teardown(async () => {
      leading.abort();
      await running;
    });
    await eventually("the host retired on a second try", async () => retires.length >= 2 || undefined, 20_000, 50);
    // Several more passes: a host retired is not asked again.
    await new Promise((r) => setTimeout(r, 1000));
    t.deepEqual(retires, ["10.9.9.1", "10.9.9.1"], "tried until it succeeded, then not again; 10.9.9.2 never");
  },
);
