/**
 * Model migration between two real local controllers, with real agents and hooks (api/migration.ts,
 * controller/migration/): the model moves while a config change is in flight, every unit stays
 * active on the target, no hook runs twice and none is skipped, relations, their data, leadership
 * and leader data come along, the source keeps only the record and redirects the CLI and the
 * client; a target that dies during the move aborts it with the source fully working, and the
 * migration succeeds when tried again; an agent killed during QUIESCE is started again and answers.
 */
import test from "ava";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { MigrationInfo, UnitStatusView } from "../api";
import { ControllerClient, StewardError, silentLogger } from "../api";
import { loadClientConfig, saveClientConfig } from "../cli";
import { Controller } from "../controller";
import type { cliRunner } from "./harness/cli";
import { cliOnControllers } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { allReady, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { assertNoHookRerun } from "./harness/migration";
import { recordDir, recorderVariant, sequences } from "./harness/operators";

let a: TestController;
let b: TestController;
let work: string;
let steward: ReturnType<typeof cliRunner>;
let peerOp: string;

/** A peer operator whose config-changed takes 3 s when its label starts with "slow" (a change in flight), 30 s with "hold". */
async function slowPeer(): Promise<string> {
  const dir = await recorderVariant({ name: "peer", peers: { ring: "ring" } });
  await writeFile(
    join(dir, "dispatch"),
    (await readFile(join(dir, "dispatch"), "utf8")) +
      `
if [ "$hook" = "leader-elected" ]; then leader-set token="t-$me"; fi
if [ -n "\${STEWARD_RELATION_ID:-}" ] && [ "$(is-leader)" = "true" ]; then relation-set --app ring=from-$me; fi
case "$(config-get label)" in slow*) if [ "$hook" = "config-changed" ]; then sleep 3; fi ;; hold*) if [ "$hook" = "config-changed" ]; then sleep 30; fi ;; esac
`,
    { mode: 0o755 },
  );
  return dir;
}

test.before(async () => {
  [a, b] = await Promise.all([startTestController(), startTestController()]);
  work = a.dir;
  steward = await cliOnControllers(work, { a, b }, { currentModel: "shop" });
  peerOp = await slowPeer();
});
// The target first: it supervises the moved agents, which run under the source's directory.
test.after.always(async () => {
  await b?.close();
  await a?.close();
});

const migration = (c: ControllerClient, model: string): Promise<MigrationInfo> =>
  c.call<MigrationInfo>("GET", `/v1/models/${model}/migration`);
const waitPhase = (c: ControllerClient, model: string, phases: string[], timeoutMs = 60_000): Promise<MigrationInfo> =>
  eventually(
    `migration of ${model} in ${phases.join("/")}`,
    async () => {
      const m = await migration(c, model);
      return phases.includes(m.phase) ? m : undefined;
    },
    timeoutMs,
    100,
  );
const unitsOf = async (c: ControllerClient, model: string): Promise<UnitStatusView[]> =>
  Object.values((await c.status(model)).applications).flatMap((x) => Object.values(x.units));
const countOf = (hooks: string[] | undefined, name: string): number => (hooks ?? []).filter((h) => h === name).length;

async function deployShop(model: string, rec: string): Promise<string> {
  const { uuid } = await a.admin.createModel(model);
  await a.admin.deploy(model, {
    name: "peer",
    operator: await a.upload(peerOp),
    units: 3,
    config: { "record-dir": rec, "set-marker": true },
  });
  await a.waitForUnits(model, allReady(3), "3 units active", 90_000);
  return uuid;
}

test.serial(
  "a model moves with a config change in flight: units active on the target, no hook re-run or skipped, data and leadership kept, the source redirects",
  async (t) => {
    const rec = await recordDir();
    const uuid = await deployShop("shop", rec);
    const before = await a.admin.call<{ documents: Record<string, Record<string, unknown>> }>(
      "GET",
      "/v1/models/shop/export",
    );
    const leaderBefore = (await unitsOf(a.admin, "shop")).find((u) => u.leader)?.name;
    t.truthy(leaderBefore);

    // The change every unit must apply exactly once: its hook takes 3 s, so QUIESCE waits for it.
    await a.admin.updateApplication("shop", "peer", { config: { label: "slow-1" } });
    await new Promise((r) => setTimeout(r, 300));
    const r = await steward("migrate", "shop", "b");
    t.is(r.code, 0, r.stdout + r.stderr);
    t.regex(r.stdout, /QUIESCE[\s\S]*DONE/);

    // On the target: every unit active, with the new config, the leader the same, the data the same.
    const units = await eventually(
      "units active on the target",
      async () => {
        const u = await unitsOf(b.admin, "shop");
        return u.length === 3 &&
          u.every((x) => x.workload.current === "active" && x.workload.message === "label=slow-1")
          ? u
          : undefined;
      },
      60_000,
    );
    t.is(units.find((u) => u.leader)?.name, leaderBefore, "leadership carried over");
    const after = await b.admin.call<{ documents: Record<string, Record<string, unknown>> }>(
      "GET",
      "/v1/models/shop/export",
    );
    t.deepEqual(after.documents["leader-data"], before.documents["leader-data"]);
    t.deepEqual(after.documents.relation, before.documents.relation);
    for (const [bag, data] of Object.entries(before.documents["relation-data"] ?? {}))
      t.deepEqual(after.documents["relation-data"]?.[bag], data, `relation data ${bag}`);

    // No hook re-ran, none was skipped: each unit ran config-changed once for the change, and install/start once.
    // One config-changed at deploy, one for the change.
    assertNoHookRerun(
      t,
      await sequences(rec),
      units.map((u) => u.name),
      2,
    );

    // The agents now work for the target: a change made there reaches every unit.
    await b.admin.updateApplication("shop", "peer", { config: { label: "on-b" } });
    await eventually(
      "the target's change applied",
      async () => (await unitsOf(b.admin, "shop")).every((x) => x.workload.message === "label=on-b") || undefined,
      60_000,
    );
    const saved = JSON.parse(await readFile(join(a.dir, "c", "machines", uuid, "0", "agent.json"), "utf8")) as {
      controllerAddresses: string[];
      caCert: string;
    };
    t.deepEqual(saved.controllerAddresses, b.addresses, "the agent saved the target's addresses");
    t.is(saved.caCert, b.caCert);

    // The source keeps only the record, and redirects.
    const m = await migration(a.admin, "shop");
    t.is(m.phase, "DONE");
    t.deepEqual(
      m.history.map((h) => h.phase),
      ["QUIESCE", "IMPORT", "VALIDATION", "SUCCESS", "LOGTRANSFER", "REAP", "DONE"],
    );
    t.false((await a.admin.listModels()).some((x) => x.name === "shop"));
    const err = await a.admin.status("shop").catch((e: unknown) => e);
    t.true(StewardError.isInstance(err) && err.code === "moved", String(err));
    // A client that follows lands on the target with the same login there.
    const following = new ControllerClient({
      addresses: a.addresses,
      caCert: a.caCert,
      user: "admin",
      password: a.adminPassword,
      onMoved: (mv) => ({
        addresses: mv.target.addresses,
        caCert: mv.target.caCert,
        user: "admin",
        password: b.adminPassword,
      }),
    });
    t.is(Object.keys((await following.status("shop")).applications).length, 1);
    following.close();
    // The CLI follows too, and the current model's controller becomes the target.
    const s = await steward("status", "-m", "shop", "-c", "a");
    t.is(s.code, 0, s.stderr);
    t.regex(s.stderr, /moved to controller b/);
    t.regex(s.stdout, /peer\/0/);
    const cfg = await loadClientConfig(work);
    t.is(cfg.current, "b");
    t.is(cfg.controllers.b?.currentModel, "shop");
  },
);

test.serial(
  "a model that moved away comes back: the first controller holds it again, nothing of the first move stands in the way, and the other redirects",
  async (t) => {
    const before = (await unitsOf(b.admin, "shop")).map((u) => u.name).sort();
    t.is(before.length, 3, "the model the first test moved is on b");
    const r = await steward("migrate", "shop", "a", "-c", "b");
    t.is(r.code, 0, r.stdout + r.stderr);
    // a holds it as its own: it answers for it (no redirect left from the first move) and takes changes.
    await a.admin.updateApplication("shop", "peer", { config: { label: "home-again" } });
    await eventually(
      "a's change applied on every unit",
      async () => {
        const u = await unitsOf(a.admin, "shop");
        return (
          (u.length === 3 &&
            u.every((x) => x.workload.current === "active" && x.workload.message === "label=home-again")) ||
          undefined
        );
      },
      60_000,
    );
    t.deepEqual((await unitsOf(a.admin, "shop")).map((u) => u.name).sort(), before);
    t.is((await a.admin.status("shop")).model.status.current, "available");
    // b keeps only the record of the second move, and sends clients back to a.
    const err = await b.admin.status("shop").catch((e: unknown) => e);
    t.true(StewardError.isInstance(err) && err.code === "moved", String(err));
    t.is((await migration(b.admin, "shop")).phase, "DONE");
    // And it can go again: a's record of the first move did not block a second one out.
    const again = await steward("migrate", "shop", "b", "-c", "a");
    t.is(again.code, 0, again.stdout + again.stderr);
    await eventually(
      "units active on b again",
      async () => {
        const u = await unitsOf(b.admin, "shop");
        return (u.length === 3 && u.every((x) => x.workload.current === "active")) || undefined;
      },
      60_000,
    );
  },
);

test.serial(
  "the target dies during the move: the migration aborts, the source model works on, and a second attempt succeeds",
  async (t) => {
    const rec = await recordDir();
    await deployShop("cafe", rec);
    // Holds QUIESCE for 3 s, while the target goes away.
    await a.admin.updateApplication("cafe", "peer", { config: { label: "slow-2" } });
    await new Promise((r) => setTimeout(r, 300));
    const start = await steward("migrate", "cafe", "b", "-c", "a", "--no-wait");
    t.is(start.code, 0, start.stdout + start.stderr);
    await waitPhase(a.admin, "cafe", ["QUIESCE"]);
    // While it moves, the model is busy and takes no change.
    const busy = (await a.admin.status("cafe")).model.status;
    t.is(busy.current, "busy");
    t.regex(busy.message, /migrating to controller b: QUIESCE/);
    const refused = await a.admin.addUnits("cafe", "peer", 1).catch((e: unknown) => e);
    t.true(
      StewardError.isInstance(refused) && refused.code === "conflict" && /being migrated/.test(refused.message),
      String(refused),
    );
    const port = Number(b.addresses[0]!.split(":").at(-1));
    await b.controller.stop();

    const aborting = await waitPhase(a.admin, "cafe", ["ABORT", "ABORTDONE"]);
    t.regex(aborting.failure ?? "", /stage|reach|answer/i);
    // The source model is the one that counts again at once: changes are taken and reach the units.
    await a.admin.updateApplication("cafe", "peer", { config: { label: "still-here" } });
    // The target comes back; the abort is retried until it takes, and nothing was left there.
    b.controller = await Controller.start({
      dataDir: join(b.dir, "c"),
      log: silentLogger,
      port,
      localMachines: { agentsDir: join(b.dir, "agents") },
    });
    await eventually(
      "the source's change applied while aborting",
      async () => (await unitsOf(a.admin, "cafe")).every((x) => x.workload.message === "label=still-here") || undefined,
      60_000,
    );
    const ended = await waitPhase(a.admin, "cafe", ["ABORTDONE"], 120_000);
    t.truthy(ended.failure);
    t.false((await b.admin.listModels()).some((x) => x.name === "cafe"));

    const again = await steward("migrate", "cafe", "b", "-c", "a");
    t.is(again.code, 0, again.stdout + again.stderr);
    const units = await eventually(
      "units active on the target",
      async () => {
        const u = await unitsOf(b.admin, "cafe");
        return u.length === 3 && u.every((x) => x.workload.current === "active") ? u : undefined;
      },
      60_000,
    );
    const seq = await sequences(rec);
    for (const u of units) t.is(countOf(seq.get(u.name), "install"), 1, `${u.name}: ${seq.get(u.name)?.join(" ")}`);
  },
);

test.serial("an agent killed during QUIESCE is started again, answers, and moves with its model", async (t) => {
  const rec = await recordDir();
  const uuid = await deployShop("deli", rec);
  // A user the target does not have: their access does not travel.
  await a.admin.createUser("carol", "carol-password-1");
  await a.admin.grant("deli", "carol", "read");
  await a.admin.updateApplication("deli", "peer", { config: { label: "slow-3" } });
  await new Promise((r) => setTimeout(r, 300));
  const start = await steward("migrate", "deli", "b", "-c", "a", "--no-wait");
  t.is(start.code, 0, start.stdout + start.stderr);
  await waitPhase(a.admin, "deli", ["QUIESCE"]);
  const machineDir = join(a.dir, "c", "machines", uuid, "1");
  const pid = Number(await readFile(join(machineDir, "agent.pid"), "utf8"));
  process.kill(pid, "SIGKILL");
  const done = await waitPhase(a.admin, "deli", ["DONE", "ABORTDONE"], 120_000);
  t.is(done.phase, "DONE", done.failure);
  t.regex(
    done.history.find((h) => h.phase === "SUCCESS")?.note ?? "",
    /access not carried for users the target does not have: carol/,
  );
  const access =
    (await b.admin.call<{ documents: Record<string, Record<string, unknown>> }>("GET", "/v1/models/deli/export"))
      .documents.access ?? {};
  t.false("carol" in access, "carol's access was not stored on the target");
  await eventually(
    "units active on the target",
    async () => {
      const u = await unitsOf(b.admin, "deli");
      return u.length === 3 && u.every((x) => x.workload.current === "active" && x.workload.message === "label=slow-3")
        ? u
        : undefined;
    },
    60_000,
  );
  const restarted = Number(await readFile(join(machineDir, "agent.pid"), "utf8"));
  t.not(restarted, pid, "the source started the killed agent again");
  const saved = JSON.parse(await readFile(join(machineDir, "agent.json"), "utf8")) as { controllerAddresses: string[] };
  t.deepEqual(saved.controllerAddresses, b.addresses);
});

test.serial(
  "after a move the CLI follows the model everywhere: model-config on the source, switch -c, show-migration on the target, and status without a model names the models there",
  async (t) => {
    // deli moved a → b in the test before.
    const moved = await migration(a.admin, "deli");
    t.is(moved.phase, "DONE");
    const setConfig = async (change: (cfg: Awaited<ReturnType<typeof loadClientConfig>>) => void): Promise<void> => {
      const cfg = await loadClientConfig(work);
      change(cfg);
      await saveClientConfig(work, cfg);
    };

    // model-config asked of the source follows the move, as status and config do.
    const mc = await steward("model-config", "-m", "deli", "-c", "a");
    t.is(mc.code, 0, mc.stdout + mc.stderr);
    t.regex(mc.stderr, /moved to controller b/);
    t.regex(mc.stdout, /update-status-interval\s+\d+s/);

    // The target names the migration that brought the model.
    const shown = await steward("show-migration", "deli", "-c", "b");
    t.is(shown.code, 0, shown.stdout + shown.stderr);
    const hello = await a.admin.hello();
    t.regex(
      shown.stdout,
      new RegExp(`arrived by migration ${moved.id} from controller ${hello.name} \\(${hello.controller}\\)`),
    );
    const json = JSON.parse((await steward("show-migration", "deli", "-c", "b", "--format", "json")).stdout) as {
      arrival: { id: string; source: { controller: string } };
    };
    t.is(json.arrival.id, moved.id);
    t.is(json.arrival.source.controller, hello.controller);

    // switch -c makes that controller the current one, and so does switching to a model that moved.
    await setConfig((cfg) => {
      cfg.current = "a";
    });
    const sw = await steward("switch", "-c", "b", "deli");
    t.is(sw.code, 0, sw.stdout + sw.stderr);
    let cfg = await loadClientConfig(work);
    t.is(cfg.current, "b");
    t.is(cfg.controllers.b?.currentModel, "deli");
    await setConfig((c) => {
      c.current = "a";
    });
    const followed = await steward("switch", "-c", "a", "deli");
    t.is(followed.code, 0, followed.stdout + followed.stderr);
    cfg = await loadClientConfig(work);
    t.is(cfg.current, "b", "the controller the model moved to");
    t.regex(followed.stdout, /"deli" on controller "b"/);

    // No current model where models exist: status says how to pick one, not to make one.
    await setConfig((c) => {
      delete c.controllers.b!.currentModel;
    });
    const st = await steward("status", "-c", "b");
    t.not(st.code, 0);
    t.regex(st.stdout + st.stderr, /steward switch \S+ \(models here: [^)]*deli/);
    t.notRegex(st.stdout + st.stderr, /add-model/);
    await setConfig((c) => {
      c.controllers.b!.currentModel = "shop";
    });
  },
);

test.serial(
  "a migration aborted by its user while agents quiesce ends at once, not when the hook holding QUIESCE ends",
  async (t) => {
    const rec = await recordDir();
    await deployShop("bakery", rec);
    await a.admin.updateApplication("bakery", "peer", { config: { label: "hold-1" } });
    await eventually(
      "a unit in its 30 s hook",
      async () => (await unitsOf(a.admin, "bakery")).some((u) => u.agent.current === "executing") || undefined,
      30_000,
      100,
    );
    const start = await steward("migrate", "bakery", "b", "-c", "a", "--no-wait");
    t.is(start.code, 0, start.stdout + start.stderr);
    await waitPhase(a.admin, "bakery", ["QUIESCE"]);
    const abort = await steward("migrate", "bakery", "--abort", "-c", "a");
    t.is(abort.code, 0, abort.stdout + abort.stderr);
    t.regex(abort.stdout, /ABORTDONE/);
    t.true(
      (await unitsOf(a.admin, "bakery")).some((u) => u.agent.current === "executing"),
      "the abort did not wait for the hook that held QUIESCE",
    );
    const m = await migration(a.admin, "bakery");
    t.is(m.failure, "aborted by admin");
    t.false(
      (await b.admin.listModels()).some((x) => x.name === "bakery"),
      "nothing of it on the target",
    );
    await eventually(
      "the change applied on the source",
      async () =>
        (await unitsOf(a.admin, "bakery")).every(
          (u) => u.workload.message === "label=hold-1" && u.agent.current === "idle",
        ) || undefined,
      90_000,
    );
  },
);

test.serial("bad migration requests are refused, saying why, and change nothing", async (t) => {
  await a.admin.createModel("empty");
  const bad = async (body: unknown): Promise<string> => {
    const e = await a.admin.call("POST", "/v1/models/empty/migrate", body).catch((x: unknown) => x);
    t.true(StewardError.isInstance(e), String(e));
    return (e as StewardError).message;
  };
  t.regex(await bad({}), /target/);
  t.regex(
    await bad({ target: { name: "b", addresses: ["nowhere"], caCert: b.caCert, user: "admin", password: "x" } }),
    /host:port/,
  );
  t.regex(
    await bad({ target: { name: "b", addresses: b.addresses, caCert: b.caCert, user: "admin" } }),
    /password or token/,
  );
  t.regex(
    await bad({
      target: { name: "a", addresses: a.addresses, caCert: a.caCert, user: "admin", password: a.adminPassword },
    }),
    /this controller/,
  );
  t.regex(
    await bad({ target: { name: "b", addresses: b.addresses, caCert: b.caCert, user: "admin", password: "wrong" } }),
    /refused the login/,
  );
  t.regex(
    await bad({
      target: { name: "b", addresses: b.addresses, caCert: a.caCert, user: "admin", password: b.adminPassword },
    }),
    /cannot be reached with the CA given/,
  );
  const none = await a.admin.call("GET", "/v1/models/empty/migration").catch((x: unknown) => x);
  t.true(StewardError.isInstance(none) && none.code === "not-found");
  const r = await steward("migrate", "empty", "nowhere", "-c", "a");
  t.not(r.code, 0);
  t.regex(r.stdout + r.stderr, /not known here/);
});

test.serial(
  "upgrade-controller --via-migration moves every model, one at a time, stops at the first that cannot move, and moves the rest when run again",
  async (t) => {
    for (const m of ["via-1", "via-2", "via-3"]) await a.admin.createModel(m);
    await b.admin.createModel("via-2"); // the target has one by that name: that model cannot move
    const dry = await steward("upgrade-controller", "-c", "a", "--via-migration", "b", "--dry-run");
    t.is(dry.code, 0, dry.stdout + dry.stderr);
    t.regex(dry.stdout, /\d\. via-1\n\s+\d\. via-2\n\s+\d\. via-3\n/);
    t.true(
      (await a.admin.listModels()).some((m) => m.name === "via-1"),
      "a dry run moves nothing",
    );

    const first = await steward("upgrade-controller", "-c", "a", "--via-migration", "b");
    t.not(first.code, 0);
    t.regex(
      first.stderr,
      /stopped at model via-2: .*already has a model named via-2.*Moved to b: (.*, )?via-1; still on a: via-2, via-3\./,
    );
    const onA = (await a.admin.listModels()).map((m) => m.name).sort();
    t.deepEqual(onA, ["via-2", "via-3"], "the models before via-2 moved, via-2 and those after it stayed");

    await b.admin.destroyModel("via-2", true);
    const again = await steward("upgrade-controller", "-c", "a", "--via-migration", "b");
    t.is(again.code, 0, again.stdout + again.stderr);
    t.regex(again.stdout, /Every model of "a" now lives on "b" \(2 moved/);
    t.deepEqual(
      (await a.admin.listModels()).map((m) => m.name),
      [],
    );
    t.true((await b.admin.listModels()).some((m) => m.name === "via-3"));
  },
);
