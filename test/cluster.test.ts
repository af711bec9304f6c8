/**
 * Controller replicas sharing one real etcd: one is elected leader and runs the singleton work;
 * killing its process (kill -9) hands leadership to another within seconds, the singleton work
 * resumes there, and no acknowledged write is lost. (Managing etcd members and replacing lost
 * replicas belongs to the HA work that builds on this.)
 */
import test from "ava";
import { copyFile, mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControllerClient } from "../api";
import { startLocalController } from "../cli";
import { initControllerDir } from "../controller";
import type { TestEtcd } from "./harness/etcd";
import { haveEtcd, startEtcd } from "./harness/etcd";
import { eventually } from "./harness/eventually";
import { killProcessesUnder } from "./harness/processes";

interface ControllerInfoWithReplicas {
  replicas: { id: string; addresses: string[]; leader: boolean }[];
}

(haveEtcd ? test.serial : test.skip)(
  "killing the leader replica elects another; singleton work resumes and no acknowledged write is lost",
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), "steward-cluster-"));
    let etcd: TestEtcd | undefined;
    const clients: ControllerClient[] = [];
    let stop = false; // the writer's; also set on failure, or the worker would never exit
    try {
      etcd = await startEtcd();
      const store = {
        backend: "etcd" as const,
        endpoints: [etcd.endpoint],
        prefix: `/cl-${randomBytes(3).toString("hex")}`,
      };
      const first = join(dir, "r0");
      const init = await initControllerDir({
        dataDir: first,
        name: "ha",
        listen: { host: "127.0.0.1", port: 0 },
        store,
      });
      // The other replicas share the CA, certificate and store; each listens on its own port.
      for (const r of ["r1", "r2"]) {
        await mkdir(join(dir, r), { recursive: true, mode: 0o700 });
        for (const f of ["ca.crt", "ca.key", "server.crt", "server.key", "controller.json"])
          await copyFile(join(first, f), join(dir, r, f));
      }
      const addresses = (
        await Promise.all(["r0", "r1", "r2"].map((r) => startLocalController(join(dir, r), init.caCert)))
      ).flat();
      const client = new ControllerClient({
        addresses,
        caCert: init.caCert,
        user: "admin",
        password: init.adminPassword!,
      });
      clients.push(client);
      const info = await eventually("three replicas, one leader", async () => {
        const i = await client.call<ControllerInfoWithReplicas>("GET", "/v1/controller");
        return i.replicas.length === 3 && i.replicas.filter((r) => r.leader).length === 1 ? i : undefined;
      });
      t.deepEqual(
        [...(await client.controllerInfo()).addresses].sort(),
        [...addresses].sort(),
        "every replica's address is published",
      );
      const leader = info.replicas.find((r) => r.leader)!;
      const leaderDir = join(dir, `r${addresses.indexOf(leader.addresses[0]!)}`);

      await client.createModel("doomed");
      await client.addMachines("doomed", "manual", 2);
      // A writer through the replicas that survive; each model is recorded once acknowledged.
      const survivors = new ControllerClient({
        addresses: addresses.filter((a) => !leader.addresses.includes(a)),
        caCert: init.caCert,
        user: "admin",
        password: init.adminPassword!,
      });
      clients.push(survivors);
      const acked: string[] = [];
      const writer = (async () => {
        for (let i = 0; !stop; i++) {
          try {
            await survivors.createModel(`w-${i}`);
            acked.push(`w-${i}`);
          } catch {
            /* a write may fail during failover: it was not acknowledged */
          }
        }
      })();
      while (acked.length < 20) await new Promise((r) => setTimeout(r, 10));

      const pid = Number(await readFile(join(leaderDir, "controller.pid"), "utf8"));
      const killedAt = Date.now();
      process.kill(pid, "SIGKILL");
      const next = await eventually(
        "a new leader",
        async () => {
          const i = await survivors.call<ControllerInfoWithReplicas>("GET", "/v1/controller");
          const l = i.replicas.find((r) => r.leader);
          return l && l.id !== leader.id ? l : undefined;
        },
        20_000,
        50,
      );
      const tookMs = Date.now() - killedAt;
      t.log(`new leader ${next.id} after ${tookMs} ms`);
      // Singleton work runs on the new leader: destroying a model is finished by its cleaner.
      await survivors.destroyModel("doomed");
      await eventually(
        "the model destroyed by the new leader's cleaner",
        async () => !(await survivors.listModels()).some((m) => m.name === "doomed"),
        20_000,
        100,
      );
      stop = true;
      await writer;
      const present = new Set((await survivors.listModels()).map((m) => m.name));
      t.deepEqual(
        acked.filter((m) => !present.has(m)),
        [],
        "every acknowledged write is there",
      );
      t.true(acked.length >= 20);
      // The killed incarnation's presence lapses; its supervisor starts it again as a new replica.
      await eventually(
        "the killed replica gone from the list, its restart in it",
        async () => {
          const replicas = (await survivors.call<ControllerInfoWithReplicas>("GET", "/v1/controller")).replicas;
          return !replicas.some((r) => r.id === leader.id) && replicas.length === 3;
        },
        30_000,
        200,
      );
    } finally {
      stop = true;
      for (const c of clients) c.close();
      await killProcessesUnder(dir);
      await etcd?.stop();
      await rm(dir, { recursive: true, force: true });
    }
  },
);
