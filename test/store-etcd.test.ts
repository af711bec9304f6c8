/** The etcd backend against a real etcd 3.4 passes the same conformance suite as the embedded one. */
import test from "ava";
import { randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import type { Store } from "../controller";
import { EtcdStore } from "../controller";
import { storeConformance } from "./store-conformance";
import type { TestEtcd } from "./harness/etcd";
import { startEtcd } from "./harness/etcd";

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
} else {
  test("etcd backend", (t) => { t.fail("etcd-server is not installed: test/harness/setup-host.sh installs it (needs root)"); });
}
