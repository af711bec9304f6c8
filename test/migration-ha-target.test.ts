/**
 * Model migration with a highly available controller on either side: three real controller replicas
 * (separate processes under their supervisors, one shared real etcd) and a real local controller.
 *
 * - INTO the HA controller: its leader replica is killed while the migration is under way (agents
 *   quiescing behind a running hook), so the staging, the activation and the takeover of the local
 *   machines happen on replicas that did not start them. The model lands whole: every phase once,
 *   every unit active, no hook re-run; the agents keep every replica's address, so when the leader
 *   of the day is killed again, after DONE, a change still reaches every unit.
 * - OFF the HA controller: agents send their logs to whichever replica they reached, so each replica
 *   sends its own part at LOGTRANSFER; the target then holds every unit's log from before the move.
 */
import test from "ava";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DebugLogRecord, MigrationInfo, UnitStatusView } from "../api";
import { ControllerClient, readOperatorDir } from "../api";
import { saveClientConfig, startLocalController } from "../cli";
import { initControllerDir } from "../controller";
import { cliRunner } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { allReady, startTestController } from "./harness/controller";
import type { TestEtcd } from "./harness/etcd";
import { haveEtcd, startEtcd } from "./harness/etcd";
import { eventually } from "./harness/eventually";
import { assertNoHookRerun } from "./harness/migration";
import { recordDir, recorderVariant, sequences } from "./harness/operators";
import { killProcessesUnder } from "./harness/processes";

interface Replicas {
  replicas: { id: string; addresses: string[]; leader: boolean }[];
}

const unitsOf = async (c: ControllerClient, model: string): Promise<UnitStatusView[]> =>
  Object.values((await c.status(model)).applications).flatMap((x) => Object.values(x.units));

interface LocalReplicas {
  client: ControllerClient;
  init: { caCert: string; adminPassword?: string };
  addresses: string[];
  killLeader(): Promise<string>;
}

/** Three controller replicas sharing the CA, certificate and store, each under its own supervisor. */
async function startLocalReplicas(etcd: TestEtcd, dir: string, name: string): Promise<LocalReplicas> {
  const store = {
    backend: "etcd" as const,
    endpoints: [etcd.endpoint],
    prefix: `/${name}-${randomBytes(3).toString("hex")}`,
  };
  const first = join(dir, "r0");
  const init = await initControllerDir({ dataDir: first, name, listen: { host: "127.0.0.1", port: 0 }, store });
  for (const r of ["r1", "r2"]) {
    await mkdir(join(dir, r), { recursive: true, mode: 0o700 });
    for (const f of ["ca.crt", "ca.key", "server.crt", "server.key", "controller.json"])
      await copyFile(join(first, f), join(dir, r, f));
  }
  const replicaDirs = ["r0", "r1", "r2"].map((r) => join(dir, r));
  const addressesByDir = await Promise.all(replicaDirs.map((d) => startLocalController(d, init.caCert)));
  const client = new ControllerClient({
    addresses: addressesByDir.flat(),
    caCert: init.caCert,
    user: "admin",
    password: init.adminPassword!,
    timeoutMs: 4000,
  });
  const leaderDir = async (): Promise<string> => {
    const l = await eventually(
      "a leader",
      async () =>
        (await client.call<Replicas>("GET", "/v1/controller").catch(() => undefined))?.replicas.find((r) => r.leader),
      30_000,
      100,
    );
    const i = addressesByDir.findIndex((as) => as.some((a) => l.addresses.includes(a)));
    if (i < 0) throw new Error(`the leader ${l.id} (${l.addresses.join(", ")}) is not one of the replicas started`);
    return replicaDirs[i]!;
  };
  return {
    client,
    init,
    addresses: addressesByDir.flat(),
    async killLeader() {
      const d = await leaderDir();
      process.kill(Number(await readFile(join(d, "controller.pid"), "utf8")), "SIGKILL");
      return d;
    },
  };
}

/** The peer recorder, printing each hook it runs (so the model has a log), and taking 8 s over config-changed for a "hold" label. */
async function peerOperator(): Promise<string> {
  const opDir = await recorderVariant({ name: "peer", peers: { ring: "ring" } });
  await writeFile(
    join(opDir, "dispatch"),
    (await readFile(join(opDir, "dispatch"), "utf8")) +
      `
echo "ran $hook on $me"
case "$(config-get label)" in hold*) if [ "$hook" = "config-changed" ]; then sleep 8; fi ;; esac
`,
    { mode: 0o755 },
  );
  return opDir;
}

(haveEtcd ? test.serial : test.skip)(
  "a model migrates into an HA controller whose leader replica dies during the move: it lands whole, and its agents keep every replica",
  async (t) => {
    t.timeout(400_000);
    const dir = await mkdtemp(join(tmpdir(), "steward-mig-ha-"));
    let etcd: TestEtcd | undefined;
    let source: TestController | undefined;
    const clients: ControllerClient[] = [];
    t.teardown(async () => {
      for (const c of clients) c.close();
      // The target first: it supervises the moved agents, which run under the source's directory.
      await killProcessesUnder(dir);
      await etcd?.stop();
      await source?.close();
      await rm(dir, { recursive: true, force: true });
    });

    // The target: three replicas sharing the CA, certificate and store, each under its own supervisor.
    etcd = await startEtcd();
    const target = await startLocalReplicas(etcd, dir, "tgt");
    clients.push(target.client);
    const [tgt, init, targetAddresses, killLeader] = [target.client, target.init, target.addresses, target.killLeader];

    // The source: one local controller with a 3-unit peer operator whose config-changed takes 8 s for a "hold" label.
    source = await startTestController();
    const a = source;
    const work = join(dir, "home");
    await mkdir(work, { recursive: true });
    await saveClientConfig(work, {
      current: "a",
      controllers: {
        a: { addresses: a.addresses, caCert: a.caCert, user: "admin", password: a.adminPassword, currentModel: "shop" },
        b: { addresses: targetAddresses, caCert: init.caCert, user: "admin", password: init.adminPassword! },
      },
    });
    const steward = cliRunner(work, work);
    const opDir = await peerOperator();
    const rec = await recordDir();
    const { uuid } = await a.admin.createModel("shop");
    await a.admin.deploy("shop", {
      name: "peer",
      operator: await a.upload(opDir),
      units: 3,
      config: { "record-dir": rec, "set-marker": true },
    });
    await a.waitForUnits("shop", allReady(3), "3 units active", 120_000);

    // A change in flight holds QUIESCE for 8 s: the target's leader dies then.
    await a.admin.updateApplication("shop", "peer", { config: { label: "hold-1" } });
    await new Promise((r) => setTimeout(r, 300));
    const started = await steward("migrate", "shop", "b", "--no-wait");
    t.is(started.code, 0, started.stdout + started.stderr);
    await eventually(
      "the migration in QUIESCE",
      async () =>
        (await a.admin.call<MigrationInfo>("GET", "/v1/models/shop/migration")).phase === "QUIESCE" || undefined,
      30_000,
      100,
    );
    const killed = await killLeader();
    t.log(`killed the target's leader (${killed}) during QUIESCE`);

    const done = await eventually(
      "the migration ended",
      async () => {
        const m = await a.admin.call<MigrationInfo>("GET", "/v1/models/shop/migration").catch(() => undefined);
        return m && (m.phase === "DONE" || m.phase === "ABORTDONE") ? m : undefined;
      },
      180_000,
      300,
    );
    t.is(done.phase, "DONE", done.failure);
    t.deepEqual(
      done.history.map((h) => h.phase),
      ["QUIESCE", "IMPORT", "VALIDATION", "SUCCESS", "LOGTRANSFER", "REAP", "DONE"],
    );

    // On the target: every unit active with the change applied once, no hook re-run.
    const units = await eventually(
      "units active on the target",
      async () => {
        const u = await unitsOf(tgt, "shop").catch(() => []);
        return u.length === 3 &&
          u.every((x) => x.workload.current === "active" && x.workload.message === "label=hold-1")
          ? u
          : undefined;
      },
      90_000,
      300,
    );
    // One config-changed at deploy, one for the change.
    assertNoHookRerun(
      t,
      await sequences(rec),
      units.map((u) => u.name),
      2,
    );
    const saved = JSON.parse(await readFile(join(a.dir, "c", "machines", uuid, "0", "agent.json"), "utf8")) as {
      controllerAddresses: string[];
      caCert: string;
    };
    t.is(saved.caCert, init.caCert, "the agent saved the target's CA");
    t.true(
      saved.controllerAddresses.length >= 2,
      `the agent keeps several replicas' addresses: ${saved.controllerAddresses.join(", ")}`,
    );

    // The leader of the day dies too: the agents go on with another replica, and a change reaches every unit.
    await killLeader();
    await tgt.updateApplication("shop", "peer", { config: { label: "on-b" } });
    await eventually(
      "the target's change applied after its leader died",
      async () => {
        const u = await unitsOf(tgt, "shop").catch(() => []);
        return (
          (u.length === 3 && u.every((x) => x.workload.current === "active" && x.workload.message === "label=on-b")) ||
          undefined
        );
      },
      120_000,
      300,
    );
    t.false(
      (await a.admin.listModels()).some((x) => x.name === "shop"),
      "the source keeps only the record",
    );
  },
);

(haveEtcd ? test.serial : test.skip)(
  "a model migrates off an HA controller: every replica sends the logs its agents gave it, and the target holds every unit's log from before the move",
  async (t) => {
    t.timeout(300_000);
    const dir = await mkdtemp(join(tmpdir(), "steward-mig-ha-"));
    let etcd: TestEtcd | undefined;
    let target: TestController | undefined;
    const clients: ControllerClient[] = [];
    t.teardown(async () => {
      for (const c of clients) c.close();
      await target?.close();
      await killProcessesUnder(dir);
      await etcd?.stop();
      await rm(dir, { recursive: true, force: true });
    });
    etcd = await startEtcd();
    const source = await startLocalReplicas(etcd, join(dir, "src"), "src");
    clients.push(source.client);
    target = await startTestController();
    const work = join(dir, "home");
    await mkdir(work, { recursive: true });
    await saveClientConfig(work, {
      current: "a",
      controllers: {
        a: {
          addresses: source.addresses,
          caCert: source.init.caCert,
          user: "admin",
          password: source.init.adminPassword!,
          currentModel: "shop",
        },
        b: { addresses: target.addresses, caCert: target.caCert, user: "admin", password: target.adminPassword },
      },
    });
    const a = source.client;
    await a.createModel("shop");
    const op = await readOperatorDir(await peerOperator());
    await a.uploadOperator(op.bundle);
    const rec = await recordDir();
    await a.deploy("shop", { name: "peer", operator: op.hash, units: 3, config: { "record-dir": rec } });
    await eventually(
      "3 units active",
      async () => {
        const u = await unitsOf(a, "shop").catch(() => []);
        return (u.length === 3 && u.every((x) => x.workload.current === "active")) || undefined;
      },
      120_000,
      300,
    );

    await eventually(
      "every agent connected",
      async () => {
        const ms = await a.listMachines("shop");
        return (ms.length === 3 && ms.every((x) => x.status === "started")) || undefined;
      },
      60_000,
      300,
    ).catch(async (err: unknown) => {
      t.log(JSON.stringify(await a.listMachines("shop"), null, 1));
      t.log(
        execFileSync("sh", [
          "-c",
          `for f in $(find ${dir} -name agent.log -o -name controller.log); do echo "--- $f"; tail -40 $f; done`,
        ]).toString(),
      );
      throw err;
    });
    const r = await cliRunner(work, work)("migrate", "shop", "b");
    t.is(r.code, 0, r.stdout + r.stderr);
    const m = await a.call<MigrationInfo>("GET", "/v1/models/shop/migration");
    const logNote = m.history.find((h) => h.phase === "REAP")?.note ?? "";
    t.regex(logNote, /log records transferred from 3 replicas/, JSON.stringify(m.history));

    // Every unit's install hook printed before the move; the target has each of those lines.
    const records: DebugLogRecord[] = [];
    await target.admin.debugLog("shop", { tail: false, replay: true }, (x) => records.push(x));
    for (const unit of ["peer-0", "peer-1", "peer-2"])
      t.true(
        records.some((x) => x.message.includes(`ran install on ${unit}`)),
        `${unit}'s install is in the target's log`,
      );
  },
);
