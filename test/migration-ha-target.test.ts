/**
 * Model migration INTO a highly available controller: three real controller replicas (separate
 * processes under their supervisors, one shared real etcd) receive a model from a real local
 * controller. The target's leader replica is killed while the migration is under way (its agents
 * quiescing behind a running hook), so the staging, the activation and the takeover of the local
 * machines happen on replicas that did not start them. The model lands whole: every phase once,
 * every unit active, no hook re-run; the agents keep every replica's address, so when the leader of
 * the day is killed again, after DONE, a change still reaches every unit.
 */
import test from "ava";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MigrationInfo, UnitStatusView } from "../api";
import { ControllerClient } from "../api";
import { saveClientConfig, startLocalController } from "../cli";
import { initControllerDir } from "../controller";
import { cliRunner } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { allReady, startTestController } from "./harness/controller";
import type { TestEtcd } from "./harness/etcd";
import { startEtcd } from "./harness/etcd";
import { eventually } from "./harness/eventually";
import { recordDir, recorderVariant, sequences } from "./harness/operators";
import { killProcessesUnder } from "./harness/processes";

const haveEtcd = (() => { try { execFileSync("etcd", ["--version"]); return true; } catch { return false; } })();
interface Replicas { replicas: { id: string; addresses: string[]; leader: boolean }[] }

const unitsOf = async (c: ControllerClient, model: string): Promise<UnitStatusView[]> => Object.values((await c.status(model)).applications).flatMap((x) => Object.values(x.units));
const countOf = (hooks: string[] | undefined, name: string): number => (hooks ?? []).filter((h) => h === name).length;

(haveEtcd ? test.serial : test.skip)("a model migrates into an HA controller whose leader replica dies during the move: it lands whole, and its agents keep every replica", async (t) => {
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
  const store = { backend: "etcd" as const, endpoints: [etcd.endpoint], prefix: `/tgt-${randomBytes(3).toString("hex")}` };
  const first = join(dir, "r0");
  const init = await initControllerDir({ dataDir: first, name: "tgt", listen: { host: "127.0.0.1", port: 0 }, store });
  for (const r of ["r1", "r2"]) {
    await mkdir(join(dir, r), { recursive: true, mode: 0o700 });
    for (const f of ["ca.crt", "ca.key", "server.crt", "server.key", "controller.json"]) await copyFile(join(first, f), join(dir, r, f));
  }
  const replicaDirs = ["r0", "r1", "r2"].map((r) => join(dir, r));
  const addressesByDir = await Promise.all(replicaDirs.map((d) => startLocalController(d, init.caCert)));
  const targetAddresses = addressesByDir.flat();
  const tgt = new ControllerClient({ addresses: targetAddresses, caCert: init.caCert, user: "admin", password: init.adminPassword!, timeoutMs: 4000 });
  clients.push(tgt);
  const leaderDir = async (): Promise<string> => {
    const l = await eventually("a target leader", async () => (await tgt.call<Replicas>("GET", "/v1/controller").catch(() => undefined))?.replicas.find((r) => r.leader), 30_000, 100);
    const i = addressesByDir.findIndex((as) => as.some((a) => l.addresses.includes(a)));
    if (i < 0) throw new Error(`the leader ${l.id} (${l.addresses.join(", ")}) is not one of the replicas started`);
    return replicaDirs[i]!;
  };
  const killLeader = async (): Promise<string> => {
    const d = await leaderDir();
    process.kill(Number(await readFile(join(d, "controller.pid"), "utf8")), "SIGKILL");
    return d;
  };

  // The source: one local controller with a 3-unit peer operator whose config-changed takes 8 s for a "hold" label.
  source = await startTestController();
  const a = source;
  const work = join(dir, "home");
  await mkdir(work, { recursive: true });
  await saveClientConfig(work, { current: "a", controllers: {
    a: { addresses: a.addresses, caCert: a.caCert, user: "admin", password: a.adminPassword, currentModel: "shop" },
    b: { addresses: targetAddresses, caCert: init.caCert, user: "admin", password: init.adminPassword! },
  } });
  const steward = cliRunner(work, work);
  const opDir = await recorderVariant({ name: "peer", peers: { ring: "ring" } });
  await writeFile(join(opDir, "dispatch"), (await readFile(join(opDir, "dispatch"), "utf8")) + `
case "$(config-get label)" in hold*) if [ "$hook" = "config-changed" ]; then sleep 8; fi ;; esac
`, { mode: 0o755 });
  const rec = await recordDir();
  const { uuid } = await a.admin.createModel("shop");
  await a.admin.deploy("shop", { name: "peer", operator: await a.upload(opDir), units: 3, config: { "record-dir": rec, "set-marker": true } });
  await a.waitForUnits("shop", allReady(3), "3 units active", 120_000);

  // A change in flight holds QUIESCE for 8 s: the target's leader dies then.
  await a.admin.updateApplication("shop", "peer", { config: { label: "hold-1" } });
  await new Promise((r) => setTimeout(r, 300));
  const started = await steward("migrate", "shop", "b", "--no-wait");
  t.is(started.code, 0, started.stdout + started.stderr);
  await eventually("the migration in QUIESCE", async () => (await a.admin.call<MigrationInfo>("GET", "/v1/models/shop/migration")).phase === "QUIESCE" || undefined, 30_000, 100);
  const killed = await killLeader();
  t.log(`killed the target's leader (${killed}) during QUIESCE`);

  const done = await eventually("the migration ended", async () => {
    const m = await a.admin.call<MigrationInfo>("GET", "/v1/models/shop/migration").catch(() => undefined);
    return m && (m.phase === "DONE" || m.phase === "ABORTDONE") ? m : undefined;
  }, 180_000, 300);
  t.is(done.phase, "DONE", done.failure);
  t.deepEqual(done.history.map((h) => h.phase), ["QUIESCE", "IMPORT", "VALIDATION", "SUCCESS", "LOGTRANSFER", "REAP", "DONE"]);

  // On the target: every unit active with the change applied once, no hook re-run.
  const units = await eventually("units active on the target", async () => {
    const u = await unitsOf(tgt, "shop").catch(() => []);
    return u.length === 3 && u.every((x) => x.workload.current === "active" && x.workload.message === "label=hold-1") ? u : undefined;
  }, 90_000, 300);
  const seq = await sequences(rec);
  for (const u of units) {
    const hooks = seq.get(u.name);
    t.is(countOf(hooks, "install"), 1, `${u.name}: ${hooks?.join(" ")}`);
    t.is(countOf(hooks, "start"), 1, `${u.name}: ${hooks?.join(" ")}`);
    t.is(countOf(hooks, "config-changed"), 2, `${u.name}: one at deploy, one for the change: ${hooks?.join(" ")}`);
  }
  const saved = JSON.parse(await readFile(join(a.dir, "c", "machines", uuid, "0", "agent.json"), "utf8")) as { controllerAddresses: string[]; caCert: string };
  t.is(saved.caCert, init.caCert, "the agent saved the target's CA");
  t.true(saved.controllerAddresses.length >= 2, `the agent keeps several replicas' addresses: ${saved.controllerAddresses.join(", ")}`);

  // The leader of the day dies too: the agents go on with another replica, and a change reaches every unit.
  await killLeader();
  await tgt.updateApplication("shop", "peer", { config: { label: "on-b" } });
  await eventually("the target's change applied after its leader died", async () => {
    const u = await unitsOf(tgt, "shop").catch(() => []);
    return (u.length === 3 && u.every((x) => x.workload.current === "active" && x.workload.message === "label=on-b")) || undefined;
  }, 120_000, 300);
  t.false((await a.admin.listModels()).some((x) => x.name === "shop"), "the source keeps only the record");
});
