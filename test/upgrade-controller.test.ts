/**
 * `steward upgrade-controller` on a local controller: a real bootstrapped controller (supervised
 * processes on this host) and a real second release of this build with a higher version, whose own
 * CLI runs the upgrade as a separate process. One controller goes through the whole story: a dry
 * run, a refused release two minor versions on, a release that fails its health gate and is rolled back, the good
 * release resuming that upgrade, then nothing left to do.
 */
import test from "ava";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readlink, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControllerClient, STEWARD_VERSION } from "../api";
import { dataDirOf, loadClientConfig } from "../cli";
import { removeLocalController } from "../substrates";
import { bootstrapOnFreePort, cliRunner } from "./harness/cli";
import type { Release } from "./harness/release";
import { makeRelease } from "./harness/release";
import { startTestController } from "./harness/controller";

let home: string;
let dataDir: string;
let client: ControllerClient;
let steward: ReturnType<typeof cliRunner>;
const releases: Release[] = [];

test.before(async () => {
  home = await mkdtemp(join(tmpdir(), "steward-upgrade-"));
  steward = cliRunner(home, home);
  const boot = await bootstrapOnFreePort(steward, "up");
  if (boot.code !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
  const entry = (await loadClientConfig(home)).controllers.up!;
  dataDir = dataDirOf(entry)!;
  client = new ControllerClient({
    addresses: entry.addresses,
    caCert: entry.caCert,
    user: "admin",
    password: entry.password!,
    timeoutMs: 5000,
  });
  await client.createModel("before-upgrade");
});
test.after.always(async () => {
  client?.close();
  if (dataDir) await removeLocalController(dataDir);
  for (const r of releases) await r.close();
  if (home) await rm(home, { recursive: true, force: true });
});

const release = async (o: Parameters<typeof makeRelease>[0]): Promise<Release> => {
  const r = await makeRelease(o);
  releases.push(r);
  return r;
};
const runningVersion = async (): Promise<string> =>
  (await client.call<{ version: string }>("GET", "/v1/health")).version;

test.serial("--dry-run prints the plan and changes nothing", async (t) => {
  const patch = await release({ bump: "patch" });
  const r = await patch.steward(home, "upgrade-controller", "-c", "up", "--dry-run");
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, new RegExp(`${STEWARD_VERSION} -> ${patch.version}`));
  t.regex(r.stdout, /1\. .*\(the leader, last\)/);
  t.regex(r.stdout, /Dry run: nothing was changed/);
  t.is(await runningVersion(), STEWARD_VERSION);
  t.false(existsSync(join(dataDir, "releases")), "nothing staged");
  t.is((await client.controllerInfo()).cluster.upgrade, undefined, "nothing recorded");
});

test.serial("a release two minor versions on is refused: its client is outside the window", async (t) => {
  const [major, minor0] = STEWARD_VERSION.split(".").map(Number) as [number, number];
  const minor = await release({ version: `${major}.${minor0 + 2}.0` });
  const r = await minor.steward(home, "upgrade-controller", "-c", "up");
  t.not(r.code, 0);
  // One minor at a time: the release between is the one whose client can upgrade it (upgrade-plan.test.ts covers the plan's own refusal).
  t.regex(r.stderr + r.stdout, /are 2 minor versions apart .*use a client of/);
  t.is(await runningVersion(), STEWARD_VERSION);
  const via = await minor.steward(home, "upgrade-controller", "-c", "up", "--via-migration", "other");
  t.not(via.code, 0);
  t.regex(via.stderr + via.stdout, /controller "other" is not known here/);
});

test.serial("a release that fails its health gate is rolled back, and the record says where it stopped", async (t) => {
  const broken = await release({ bump: "patch", broken: true });
  const r = await broken.steward(home, "upgrade-controller", "-c", "up", "--timeout", "20s");
  t.not(r.code, 0);
  t.regex(r.stderr, new RegExp(`rolled back to ${STEWARD_VERSION} and is healthy again`));
  t.is(await runningVersion(), STEWARD_VERSION, "the controller runs the release it ran before");
  t.is(await readlink(join(dataDir, "current")), join("releases", STEWARD_VERSION));
  const u = (await client.controllerInfo()).cluster.upgrade!;
  t.is(u.state, "failed");
  t.is(u.replicas[0]!.state, "rolled-back");
  t.is(u.replicas[0]!.version, STEWARD_VERSION);
  t.true((await client.listModels()).some((m) => m.name === "before-upgrade"));
});

test.serial("the good patch release resumes the upgrade and keeps the state; a re-run has nothing to do", async (t) => {
  const patch = await release({ bump: "patch" });
  // An older release left from before: pruned once the upgrade passed its gate.
  await mkdir(join(dataDir, "releases", "0.0.9", "controller-bundle"), { recursive: true });
  const r = await patch.steward(home, "upgrade-controller", "-c", "up");
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /resuming the upgrade started/);
  t.deepEqual(
    (await readdir(join(dataDir, "releases"))).sort(),
    [STEWARD_VERSION, patch.version].sort(),
    "the previous release is kept, older ones go",
  );
  t.regex(r.stderr, new RegExp(`back at ${patch.version.replace(/\./g, "\\.")}, a healthy voter`));
  t.is(await runningVersion(), patch.version);
  t.is(await readlink(join(dataDir, "current")), join("releases", patch.version));
  t.true(
    existsSync(join(dataDir, "releases", STEWARD_VERSION, "controller-bundle", "main.js")),
    "the previous release is kept for a rollback",
  );
  t.true(
    (await client.listModels()).some((m) => m.name === "before-upgrade"),
    "state survives the upgrade",
  );
  const show = await patch.steward(home, "show-controller", "-c", "up");
  t.regex(show.stdout, new RegExp(`Upgrade ${STEWARD_VERSION} -> ${patch.version}: done`));
  const again = await patch.steward(home, "upgrade-controller", "-c", "up");
  t.is(again.code, 0, again.stderr);
  t.regex(again.stdout, new RegExp(`already at ${patch.version}`));
  // This test's own steward is now older than the controller.
  const older = await steward("upgrade-controller", "-c", "up");
  t.not(older.code, 0);
  t.regex(older.stderr + older.stdout, /this client is older/);
});

test("the controller keeps one live run's record: a second run is refused until the first's goes stale", async (t) => {
  const tc = await startTestController();
  try {
    const now = new Date().toISOString();
    const record = {
      run: "run-a",
      from: "0.1.0",
      to: "0.1.1",
      state: "running" as const,
      startedAt: now,
      updatedAt: now,
      replicas: [],
      message: "upgrading",
    };
    await tc.admin.recordUpgrade(record);
    await tc.admin.recordUpgrade({ ...record, message: "still run-a" });
    const other = await t.throwsAsync(tc.admin.recordUpgrade({ ...record, run: "run-b" }));
    t.regex(other!.message, /another upgrade-controller run is upgrading the controller to 0\.1\.1/);
    t.is((await tc.admin.controllerInfo()).cluster.upgrade?.run, "run-a");
    // A run that died: its record stops being refreshed, and another run may take over.
    await tc.admin.recordUpgrade({ ...record, updatedAt: new Date(Date.now() - 120_000).toISOString() });
    await tc.admin.recordUpgrade({ ...record, run: "run-b", updatedAt: new Date().toISOString() });
    t.is((await tc.admin.controllerInfo()).cluster.upgrade?.run, "run-b");
    const bad = await t.throwsAsync(tc.admin.recordUpgrade({ ...record, run: "run-b", to: "not-a-version" }));
    t.regex(bad!.message, /must be MAJOR\.MINOR\.PATCH/);
  } finally {
    await tc.close();
  }
});
