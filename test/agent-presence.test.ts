/**
 * An agent's presence belongs to the connection it keeps. With several replicas an agent's parallel
 * connection attempts can each get in; the one it drops may have been recorded last and then
 * delete its record as it closes, so the machine would look down while its agent is connected
 * elsewhere (seen under load: a migration precheck refused the model, units "lost"). The replica
 * holding the live connection writes the presence again. Here the losing replica's write and delete
 * are made directly in the store (a real etcd), exactly as that race leaves them.
 */
import test from "ava";
import { randomBytes } from "node:crypto";
import { EtcdStore, keys } from "../controller";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import type { TestEtcd } from "./harness/etcd";
import { haveEtcd, startEtcd } from "./harness/etcd";
import { eventually } from "./harness/eventually";

(haveEtcd ? test : test.skip)(
  "a connected agent's presence taken and deleted by another replica's dropped connection is recorded again",
  async (t) => {
    let etcd: TestEtcd | undefined;
    let tc: TestController | undefined;
    let store: EtcdStore | undefined;
    t.teardown(async () => {
      await store?.close();
      await tc?.close();
      await etcd?.stop();
    });
    etcd = await startEtcd();
    const prefix = `/pr-${randomBytes(3).toString("hex")}`;
    tc = await startTestController({ store: { backend: "etcd", endpoints: [etcd.endpoint], prefix } });
    const { uuid } = await tc.admin.createModel("m");
    const { machines } = await tc.admin.addMachines("m", "local");
    const machine = machines[0]!.id;
    const status = async (): Promise<string | undefined> =>
      (await tc!.admin.listMachines("m")).find((x) => x.id === machine)?.status;
    await eventually("the agent connected", async () => (await status()) === "started" || undefined, 60_000, 200);

    store = await EtcdStore.connect({ endpoints: [etcd.endpoint], prefix });
    const key = keys.presence(uuid, machine);
    const ours = JSON.parse((await store.get(key))!.value) as { replica: string; conn: string };
    // The other replica's connection, recorded last, then closed by the agent: its record goes with it.
    await store.put(
      key,
      JSON.stringify({ replica: "another-replica", since: new Date().toISOString(), conn: "dropped-connection" }),
    );
    await store.delete(key);
    const back = await eventually(
      "the presence recorded again by the live connection",
      async () => {
        const kv = await store!.get(key);
        return kv ? (JSON.parse(kv.value) as { replica: string; conn: string }) : undefined;
      },
      20_000,
      100,
    );
    t.is(back.replica, ours.replica);
    t.is(back.conn, ours.conn, "the same connection: the agent did not have to reconnect");
    t.is(await status(), "started");
  },
);
