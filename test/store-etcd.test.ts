/** The etcd backend against a real etcd 3.4 passes the same conformance suite as the embedded one. */
import test from "ava";
import { randomBytes } from "node:crypto";
import type { Store } from "../controller";
import { EtcdStore } from "../controller";
import { storeConformance } from "./store-conformance";
import type { TestEtcd } from "./harness/etcd";
import { haveEtcd, startEtcd } from "./harness/etcd";
import { join } from "node:path";
import { operatorsDir, startTestController } from "./harness/controller";

let etcd: TestEtcd | undefined;
const prefixes = new Map<Store, string>();

if (haveEtcd) {
  test.before(async () => {
    etcd = await startEtcd();
  });
  test.after.always(async () => {
    await etcd?.stop();
  });
  // Serial: revisions are global to the etcd all these tests share.
  storeConformance(test.serial, "etcd", {
    async create() {
      const prefix = `/t-${randomBytes(4).toString("hex")}`;
      const s = await EtcdStore.connect({ endpoints: [etcd!.endpoint], prefix });
      prefixes.set(s, prefix);
      return s;
    },
    async reopen(store) {
      const prefix = prefixes.get(store)!;
      await store.close();
      const s = await EtcdStore.connect({ endpoints: [etcd!.endpoint], prefix });
      prefixes.set(s, prefix);
      return s;
    },
  });
  test.serial("large reads go in pages at one revision: writes landing between pages do not show", async (t) => {
    const store = await EtcdStore.connect({
      endpoints: [etcd!.endpoint],
      prefix: `/p-${randomBytes(4).toString("hex")}`,
      readPageKeys: 3,
    });
    t.teardown(() => store.close());
    for (let i = 0; i < 60; i++) await store.put(`/a/${String(i).padStart(3, "0")}`, "x");
    await store.put("/b/only", "y");
    // A writer adds keys to both prefixes while the 20-odd pages are read.
    let writing = true;
    let n = 0;
    const writer = (async () => {
      while (writing) {
        await store.put(`/a/${String(100 + n).padStart(3, "0")}`, "late");
        await store.put(`/b/${n++}`, "late");
      }
    })();
    const read = await store.txn({
      success: [
        { type: "range", prefix: "/a/" },
        { type: "get", key: "/b/only" },
        { type: "range", prefix: "/b/" },
      ],
    });
    const single = await store.range("/a/");
    writing = false;
    await writer;
    t.true(n > 0, "the writer wrote during the read");
    const [a, only, b] = read.responses;
    // Exactly the keys that existed at the read's revision, in order, across every page and prefix.
    const atRev = (kvs: { createRevision: number }[]) => kvs.every((kv) => kv.createRevision <= read.revision);
    t.true(atRev(a!) && atRev(b!), "nothing newer than the snapshot's revision");
    t.true(a!.length >= 60);
    t.deepEqual(
      a!.map((kv) => kv.key),
      [...a!.map((kv) => kv.key)].sort(),
    );
    t.is(new Set(a!.map((kv) => kv.key)).size, a!.length, "no key twice at page edges");
    t.deepEqual(
      only!.map((kv) => kv.value),
      ["y"],
    );
    const lateA = a!.filter((kv) => kv.value === "late").length;
    const lateB = b!.filter((kv) => kv.value === "late").length;
    // The writer puts /a/ then /b/: one snapshot sees as many of each, or one /a/ more.
    t.true(lateA - lateB === 0 || lateA - lateB === 1, `${lateA} late /a/ keys, ${lateB} late /b/ keys`);
    // A plain range pages the same way and misses nothing written before it.
    t.true(single.kvs.length >= a!.length);
    t.deepEqual(
      single.kvs.slice(0, 60).map((kv) => kv.key),
      Array.from({ length: 60 }, (_, i) => `/a/${String(i).padStart(3, "0")}`),
    );
  });

  test.serial("a controller on the etcd store deploys an integrated model to active", async (t) => {
    const tc = await startTestController({
      store: { backend: "etcd", endpoints: [etcd!.endpoint], prefix: `/c-${randomBytes(4).toString("hex")}` },
    });
    t.teardown(() => tc.close());
    await tc.admin.createModel("on-etcd");
    await tc.admin.deploy("on-etcd", {
      name: "web",
      operator: await tc.upload(join(operatorsDir, "hello-http")),
      units: 1,
    });
    await tc.admin.deploy("on-etcd", {
      name: "checker",
      operator: await tc.upload(join(operatorsDir, "http-checker")),
      units: 1,
    });
    await tc.admin.integrate("on-etcd", "checker", "web");
    const s = await tc.waitForUnits(
      "on-etcd",
      (units) =>
        units.length === 2 &&
        units.every((u) => u.workload.current === "active" && u.agent.current === "idle") &&
        units.some((u) => u.workload.message === "1/1 upstreams answer"),
      "both active, the checker reaching web",
      60_000,
    );
    t.is(s.applications.checker!.status.message, "1/1 upstreams answer");
  });
} else {
  test("etcd backend", (t) => {
    t.fail("etcd-server is not installed: test/harness/setup-host.sh installs it (needs root)");
  });
}
