/**
 * `steward upgrade-controller` across a minor version, in place: a local controller bootstrapped by
 * an older release (this build with a lower version and the previous store format, made by the
 * release harness), with a model whose unit runs hooks on a real agent, upgraded by this build's
 * `steward`. Once its replica runs the new release, the leader migrates the store; the command waits
 * for that. The models' status is the same before and after, no hook runs again, and the older
 * release then refuses to start on the store rather than misread it.
 */
import test from "ava";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { ModelStatus } from "../api";
import { ControllerClient, STEWARD_VERSION, STORE_FORMAT, readOperatorDir, unitIsReady } from "../api";
import { dataDirOf, loadClientConfig } from "../cli";
import { removeLocalController, stopLocalController } from "../substrates";
import { bootstrapOnFreePort, cliRunner } from "./harness/cli";
import { fixturesDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { hooksByUnit, recordDir } from "./harness/operators";
import type { Release } from "./harness/release";
import { makeRelease } from "./harness/release";

const run = promisify(execFile);
const MODEL = "kept";
let older: Release;
let home: string;
let dataDir: string;
let records: string;
let client: ControllerClient;

test.before(async () => {
  const [major, minor] = STEWARD_VERSION.split(".").map(Number) as [number, number];
  // The release before this one: a minor version older, writing the previous store format.
  older = await makeRelease({
    version: minor > 0 ? `${major}.${minor - 1}.7` : "0.0.7",
    storeFormat: STORE_FORMAT - 1,
  });
  home = await mkdtemp(join(tmpdir(), "steward-upgrade-minor-"));
  records = await recordDir();
  const boot = await bootstrapOnFreePort((...args) => older.steward(home, ...args), "up");
  if (boot.code !== 0) throw new Error(`bootstrap by ${older.version} failed: ${boot.stderr}`);
  const entry = (await loadClientConfig(home)).controllers.up!;
  dataDir = dataDirOf(entry)!;
  client = new ControllerClient({
    addresses: entry.addresses,
    caCert: entry.caCert,
    user: "admin",
    password: entry.password!,
    timeoutMs: 5000,
  });
  await client.createModel(MODEL);
  const op = await readOperatorDir(join(fixturesDir, "operators", "recorder"));
  const { hash } = await client.uploadOperator(op.bundle);
  await client.deploy(MODEL, { name: "rec", operator: hash, units: 1, config: { "record-dir": records } });
  await eventually(
    "the unit active",
    async () => {
      const units = Object.values((await client.status(MODEL)).applications.rec?.units ?? {});
      return units.length === 1 && units.every(unitIsReady);
    },
    120_000,
    500,
  );
});

test.after.always(async () => {
  client?.close();
  if (dataDir) await removeLocalController(dataDir);
  await older?.close();
  for (const dir of [home, records]) if (dir) await rm(dir, { recursive: true, force: true });
});

/** What a user reads in the model's status, without times and the controller's own version. */
const seen = (s: ModelStatus): unknown => ({
  applications: Object.fromEntries(
    Object.entries(s.applications).map(([name, a]) => [
      name,
      Object.fromEntries(
        Object.values(a.units).map((u) => [
          u.name,
          {
            machine: u.machine,
            leader: u.leader,
            workload: u.workload.current,
            message: u.workload.message,
            agent: u.agent.current,
          },
        ]),
      ),
    ]),
  ),
  machines: Object.keys(s.machines).sort(),
});

test.serial(
  "the store is migrated once the replica runs the new minor release; status and hook state are kept",
  async (t) => {
    const info = await client.controllerInfo();
    t.is(info.version, older.version);
    t.is(info.store?.format, STORE_FORMAT - 1);
    const before = await client.status(MODEL);
    const hooksBefore = (await hooksByUnit(records)).get("rec/0") ?? [];
    t.true(hooksBefore.includes("install") && hooksBefore.includes("start"), hooksBefore.join(" "));

    const steward = cliRunner(home, home);
    const dry = await steward("upgrade-controller", "-c", "up", "--dry-run");
    t.is(dry.code, 0, dry.stderr);
    t.regex(
      dry.stdout,
      new RegExp(`${older.version.replace(/\./g, "\\.")} -> ${STEWARD_VERSION.replace(/\./g, "\\.")}`),
    );
    t.regex(
      dry.stdout,
      new RegExp(`then the store: format ${STORE_FORMAT - 1} -> ${STORE_FORMAT}, migrated by the leader`),
    );

    const r = await steward("upgrade-controller", "-c", "up");
    t.is(r.code, 0, r.stderr + r.stdout);
    t.regex(
      r.stderr,
      new RegExp(
        `Store format ${STORE_FORMAT}: migrated from ${STORE_FORMAT - 1} at \\S+, [1-9]\\d* documents rewritten`,
      ),
    );
    const after = await client.controllerInfo();
    t.is(after.version, STEWARD_VERSION);
    t.is(after.store?.format, STORE_FORMAT);
    t.truthy(after.store?.migration?.doneAt);
    // Migrated once the upgrade had ended: until then its replica could still go back to the older release.
    const u = after.cluster.upgrade!;
    t.is(u.state, "done");
    t.true(
      Date.parse(after.store!.migration!.startedAt!) >= Date.parse(u.finishedAt!),
      `${after.store?.migration?.startedAt} after ${u.finishedAt}`,
    );
    // Its agent reconnects to the restarted controller (shown lost until then) and goes on as it was.
    const expected = JSON.stringify(seen(before));
    await eventually(
      "the model's status as before the upgrade",
      async () => JSON.stringify(seen(await client.status(MODEL))) === expected,
      90_000,
      500,
    );
    t.deepEqual(seen(await client.status(MODEL)), seen(before), "the model's status is the same");
    const hooksAfter = (await hooksByUnit(records)).get("rec/0") ?? [];
    t.deepEqual(
      hooksAfter.filter((h) => h === "install" || h === "start"),
      hooksBefore.filter((h) => h === "install" || h === "start"),
      "no install or start ran again",
    );
    const show = await steward("show-controller", "-c", "up");
    t.regex(show.stdout, new RegExp(`Store format ${STORE_FORMAT}: migrated from ${STORE_FORMAT - 1}`));
  },
);

test.serial("the older release refuses to start on the migrated store, saying which release to run", async (t) => {
  await stopLocalController(dataDir);
  const bundle = join(older.dir, "controller-bundle", "main.js");
  const err = await run(process.execPath, [bundle, "--data-dir", dataDir], { timeout: 60_000 }).then(
    () => undefined,
    (e: Error & { code?: number; stderr?: string }) => e,
  );
  t.truthy(err, "it did not start");
  t.regex(
    err?.stderr ?? "",
    new RegExp(
      `the store is at format ${STORE_FORMAT}, written by a newer release, and this release \\(${older.version.replace(/\./g, "\\.")}\\) reads store formats 1 to ${STORE_FORMAT - 1}: run the release the controller was upgraded to`,
    ),
  );
});
