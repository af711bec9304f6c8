/**
 * A quorum keeper whose replica stopped leading while it waited for a host (a pod to start, an
 * instance to boot: minutes) changes nothing outside the store once it has the host: no etcd
 * member is added and the host is neither started nor given back to a pool (the next leader may be
 * using it); only what no other leader can know of is abandoned (a launched instance is terminated).
 * Seen under load on Kubernetes and EC2: two leaders' passes overlapped and a fourth replica appeared. Real etcd; the host broker is the test's (the seam clouds and StatefulSets plug into).
 */
import test from "ava";
import { randomBytes } from "node:crypto";
import { silentLogger } from "../api";
import { EtcdStore, QuorumKeeper, REPLICAS_PREFIX, StateCache } from "../controller";
import type { TestEtcd } from "./harness/etcd";
import { haveEtcd, startEtcd } from "./harness/etcd";
import { eventually } from "./harness/eventually";

(haveEtcd ? test : test.skip)(
  "a keeper deposed while it waited for a host adds no member, gives nothing back to the pool and abandons the host",
  async (t) => {
    let etcd: TestEtcd | undefined;
    let store: EtcdStore | undefined;
    let cache: StateCache | undefined;
    t.teardown(async () => {
      cache?.stop();
      await store?.close();
      await etcd?.stop();
    });
    etcd = await startEtcd();
    store = await EtcdStore.connect({ endpoints: [etcd.endpoint], prefix: `/qk-${randomBytes(3).toString("hex")}` });
    const membership = store.membership();
    const [self] = await membership.list();
    // One voter present, three wanted: the keeper grows.
    await store.put(
      `${REPLICAS_PREFIX}${self!.name}`,
      JSON.stringify({ id: self!.name, addresses: ["127.0.0.1:1"], since: new Date().toISOString() }),
    );
    await store.put(
      "/cluster/config",
      JSON.stringify({ replicas: 3, replaceAfterSeconds: 300, maxReplacementsPerHour: 2 }),
    );
    cache = await StateCache.start(store, () => undefined);
    await cache.catchUp();

    const calls: string[] = [];
    let handOver!: () => void;
    const hostReady = new Promise<void>((r) => {
      handOver = r;
    });
    const keeper = new QuorumKeeper({
      store,
      membership,
      cache,
      log: silentLogger,
      intervalMs: 60_000,
      hosts: {
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
    });
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
