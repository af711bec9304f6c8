/**
 * What a quorum keeper does with replica hosts outside the store, on one real etcd member with the
 * test's host broker (the seam clouds and StatefulSets plug into):
 * - deposed while it waited for a host (a pod to start, an instance to boot: minutes), it changes
 *   nothing once it has the host: no etcd member is added and the host is neither started nor given
 *   back to a pool (the next leader may be using it); only what no other leader can know of is
 *   abandoned (a launched instance is terminated). Seen under load on Kubernetes and EC2: two
 *   leaders' passes overlapped and a fourth replica appeared;
 * - a removed replica's host is retired (its instance terminated) even when the first try fails or
 *   the termination is not seen finished: the keeper tries again on later passes until the cloud
 *   says the instance is gone, and leaves alone a host a member uses again. Seen under load on EC2:
 *   one refused call left a replaced replica's instance running;
 * - a replica etcd no longer lists but still recorded as in the cluster (its leader removed it and was
 *   deposed before recording so) is recorded as removed, and its instance retired.
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
  members: Record<string, [string, MemberState, string?, string?]>,
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
  for (const [given, [host, state, instance, memberId]] of Object.entries(members)) {
    const name = given === "self" ? self!.name : given;
    await store.put(
      keys.clusterMember(name),
      JSON.stringify({
        name,
        host,
        apiPort: 17070,
        state,
        addedAt: new Date().toISOString(),
        ...(instance ? { instance: { id: instance } } : {}),
        ...(memberId ? { memberId } : {}),
      }),
    );
  }
  const cache = await StateCache.start(store, () => undefined);
  t.teardown(() => cache.stop());
  await cache.catchUp();
  return { keeper: new QuorumKeeper({ store, membership, cache, log: silentLogger, intervalMs, hosts }), membership };
}

/**
 * A broker that gives no host and only retires: each replica asked about is pushed to `retires`
 * (`host/instance`) and answered by `gone` (whether the cloud says its instance is gone).
 */
function retiringHosts(
  retires: string[],
  gone: () => boolean | Promise<boolean>,
): ConstructorParameters<typeof QuorumKeeper>[0]["hosts"] {
  return {
    unavailable: () => undefined,
    acquire: () => Promise.reject(new Error("no host is needed here")),
    async start() {},
    async joined() {},
    async failed() {},
    async release() {},
    async retire(replica) {
      retires.push(`${replica.host}/${replica.instance?.id ?? ""}`);
      return gone();
    },
  };
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
  "a removed replica's instance is retired on later passes until the cloud says it is gone; a host in use again is not",
  async (t) => {
    const retires: string[] = [];
    // The cloud's answers for i-gone, in turn: refused, still shutting down, gone.
    const answers = [() => Promise.reject(new Error("RequestLimitExceeded")), () => false, () => true];
    // One voter present and one wanted: nothing to change, so each pass only reports (and retires).
    const { keeper } = await keeperOnOneVoter(
      t,
      1,
      {
        self: ["127.0.0.1", "member"],
        "r-gone": ["10.9.9.1", "removed", "i-gone"],
        // An address a removed replica had, given to a replica that is a member now.
        "r-old": ["10.9.9.2", "removed", "i-old"],
        "r-new": ["10.9.9.2", "member"],
      },
      retiringHosts(retires, () => (answers[retires.length - 1] ?? (() => true))()),
      100,
    );
    const leading = new AbortController();
    const running = keeper.run(leading.signal);
    t.teardown(async () => {
      leading.abort();
      await running;
    });
    await eventually("the instance seen gone", async () => retires.length >= 3 || undefined, 20_000, 50);
    // Several more passes: an instance seen gone is not asked about again.
    await new Promise((r) => setTimeout(r, 1000));
    t.deepEqual(
      retires,
      ["10.9.9.1/i-gone", "10.9.9.1/i-gone", "10.9.9.1/i-gone"],
      "tried until the cloud said it was gone, then not again; 10.9.9.2 never",
    );
  },
);

(haveEtcd ? test : test.skip)(
  "a replica removed from etcd by a leader deposed before it recorded so is recorded as removed, and its instance retired",
  async (t) => {
    const retires: string[] = [];
    const { keeper, membership } = await keeperOnOneVoter(
      t,
      1,
      {
        self: ["127.0.0.1", "member"],
        // Added once (etcd gave it this id), then removed from etcd; its record was never updated.
        "r-orphan": ["10.9.9.3", "member", "i-orphan", "8e9e05c52164694d"],
      },
      retiringHosts(retires, () => true),
      100,
    );
    const [self] = await membership.list();
    t.not(self!.id, "8e9e05c52164694d");
    const leading = new AbortController();
    const running = keeper.run(leading.signal);
    t.teardown(async () => {
      leading.abort();
      await running;
    });
    await eventually("the orphan's instance retired", async () => retires.length >= 1 || undefined, 20_000, 50);
    t.deepEqual(retires, ["10.9.9.3/i-orphan"]);
    t.is((await membership.list()).length, 1, "etcd's membership is left as it is");
  },
);
