/**
 * The instance of a replica removed for good is retired (terminated) even when the first try fails:
 * the keeper tries again on its later passes until it succeeds, and leaves alone a host a member
 * uses again. Seen under load on EC2: one refused call left a replaced replica's instance running.
 * Real etcd; the host broker is the test's (the seam the clouds plug into).
 */
import test from "ava";
import { randomBytes } from "node:crypto";
import { silentLogger } from "../api";
import { EtcdStore, QuorumKeeper, REPLICAS_PREFIX, StateCache, keys } from "../controller";
import type { TestEtcd } from "./harness/etcd";
import { haveEtcd, startEtcd } from "./harness/etcd";
import { eventually } from "./harness/eventually";

(haveEtcd ? test : test.skip)(
  "a removed replica's host is retired on a later pass when the first try fails; a host in use again is not",
  async (t) => {
    let etcd: TestEtcd | undefined;
    let store: EtcdStore | undefined;
    let cache: StateCache | undefined;
    const leading = new AbortController();
    let running: Promise<void> | undefined;
    t.teardown(async () => {
      leading.abort();
      await running;
      cache?.stop();
      await store?.close();
      await etcd?.stop();
    });
    etcd = await startEtcd();
    store = await EtcdStore.connect({ endpoints: [etcd.endpoint], prefix: `/qr-${randomBytes(3).toString("hex")}` });
    const membership = store.membership();
    const [self] = await membership.list();
    // One voter present and one wanted: nothing to change, so each pass only reports (and retires).
    await store.put(
      `${REPLICAS_PREFIX}${self!.name}`,
      JSON.stringify({ id: self!.name, addresses: ["127.0.0.1:1"], since: new Date().toISOString() }),
    );
    await store.put(
      "/cluster/config",
      JSON.stringify({ replicas: 1, replaceAfterSeconds: 300, maxReplacementsPerHour: 2 }),
    );
    const member = (name: string, host: string, state: "member" | "removed") =>
      store!.put(
        keys.clusterMember(name),
        JSON.stringify({ name, host, apiPort: 17070, state, addedAt: new Date().toISOString() }),
      );
    await member(self!.name, "127.0.0.1", "member");
    await member("r-gone", "10.9.9.1", "removed");
    // An address a removed replica had, given to a replica that is a member now.
    await member("r-old", "10.9.9.2", "removed");
    await member("r-new", "10.9.9.2", "member");
    cache = await StateCache.start(store, () => undefined);
    await cache.catchUp();

    const retires: string[] = [];
    const keeper = new QuorumKeeper({
      store,
      membership,
      cache,
      log: silentLogger,
      intervalMs: 100,
      hosts: {
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
    });
    running = keeper.run(leading.signal);
    await eventually("the host retired on a second try", async () => retires.length >= 2 || undefined, 20_000, 50);
    // Several more passes: a host retired is not asked again.
    await new Promise((r) => setTimeout(r, 1000));
    t.deepEqual(retires, ["10.9.9.1", "10.9.9.1"], "tried until it succeeded, then not again; 10.9.9.2 never");
  },
);
