/** The etcd backend against a real etcd 3.4 passes the same conformance suite as the embedded one. */
import test from "ava";
import { randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import type { Store } from "../controller";
import { EtcdStore } from "../controller";
import { storeConformance } from "./store-conformance";
import type { TestEtcd } from "./harness/etcd";
import { startEtcd } from "./harness/etcd";
import { join } from "node:path";
import { operatorsDir, startTestController } from "./harness/controller";

const haveEtcd = (() => { try { execFileSync("etcd", ["--version"]); return true; } catch { return false; } })();
let etcd: TestEtcd | undefined;
const prefixes = new Map<Store, string>();

if (haveEtcd) {
  test.before(async () => { etcd = await startEtcd(); });
  test.after.always(async () => { await etcd?.stop(); });
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
  test.serial("a controller on the etcd store deploys an integrated model to active", async (t) => {
    const tc = await startTestController({ store: { backend: "etcd", endpoints: [etcd!.endpoint], prefix: `/c-${randomBytes(4).toString("hex")}` } });
    t.teardown(() => tc.close());
    await tc.admin.createModel("on-etcd");
    await tc.admin.deploy("on-etcd", { name: "web", operator: await tc.upload(join(operatorsDir, "hello-http")), units: 1 });
    await tc.admin.deploy("on-etcd", { name: "checker", operator: await tc.upload(join(operatorsDir, "http-checker")), units: 1 });
    await tc.admin.integrate("on-etcd", "checker", "web");
    const s = await tc.waitForUnits("on-etcd", (units) => units.length === 2 && units.every((u) => u.workload.current === "active" && u.agent.current === "idle") && units.some((u) => u.workload.message === "1/1 upstreams answer"), "both active, the checker reaching web", 60_000);
    t.is(s.applications.checker!.status.message, "1/1 upstreams answer");
  });
} else {
  test("etcd backend", (t) => { t.fail("etcd-server is not installed: test/harness/setup-host.sh installs it (needs root)"); });
}
