/**
 * Backup and restore of a whole controller, through the CLI, with a real local controller (its
 * supervisor and process) and real agents: writes acknowledged before the backup come back, writes
 * after it are gone, and the agents, which outlive the controller, reconnect with their credentials
 * and converge on the restored state instead of trusting revisions from the lost history (a config
 * set after the backup reverts through config-changed; relation data seen after it is seen again;
 * a task id given out again is run). Bad files and passphrases restore nothing.
 */
import test from "ava";
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ModelStatus } from "../api";
import { ControllerClient, unitIsReady } from "../api";
import { dataDirOf, loadClientConfig } from "../cli";
import { dataFiles, freePort, readPidFile } from "../controller";
import { bootstrapOnFreePort, cliRunner } from "./harness/cli";
import { fixturesDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { killProcessesUnder } from "./harness/processes";
import { recordDir, recorderVariant, sequences } from "./harness/operators";
import { readOperatorDir } from "../api";

const PASS = "correct horse battery staple";

/** Publishes its label on every integration (config-changed and relation hooks); logs what it sees of the other side. */
const EXTRA = `
label="$(config-get label)"
if [ "$hook" = "config-changed" ]; then echo "$STEWARD_UNIT_NAME $label" >>"$dir/labels.log"; fi
for id in $(relation-ids p 2>/dev/null || true); do relation-set -r "$id" gen="$label"; done
if [ "$hook" = "r-relation-changed" ] && [ -n "\${STEWARD_REMOTE_UNIT:-}" ]; then
  echo "$STEWARD_UNIT_NAME $STEWARD_REMOTE_UNIT $(relation-get gen "$STEWARD_REMOTE_UNIT")" >>"$dir/seen.log"
fi
`;

async function lines(file: string): Promise<string[]> {
  return (await readFile(file, "utf8").catch(() => "")).split("\n").filter(Boolean);
}

/** The last value `seen.log` has for what `sub/0` saw of `remote`. */
async function lastSeen(rec: string, remote: string): Promise<string | undefined> {
  return (await lines(join(rec, "seen.log")))
    .filter((l) => l.split(" ")[1] === remote)
    .at(-1)
    ?.split(" ")[2];
}

test("a controller destroyed after a backup comes back from it: agents reconnect, converge, nothing acknowledged before it is lost", async (t) => {
  t.timeout(300_000);
  const home = await mkdtemp(join(tmpdir(), "steward-bk-"));
  const steward = cliRunner(home, home);
  process.env.BACKUP_TEST_PASSPHRASE = PASS;
  let dataDir = "";
  t.teardown(async () => {
    await steward("destroy-controller", "bk", "--yes", "--timeout", "5s").catch(() => undefined);
    if (dataDir) await killProcessesUnder(dataDir);
    await rm(home, { recursive: true, force: true });
  });
  const boot = await bootstrapOnFreePort(steward, "bk");
  t.is(boot.code, 0, boot.stderr);
  const entry = (await loadClientConfig(home)).controllers.bk!;
  dataDir = dataDirOf(entry)!;
  const admin = new ControllerClient({
    addresses: entry.addresses,
    caCert: entry.caCert,
    user: "admin",
    password: entry.password!,
  });
  t.teardown(() => admin.close());

  // A model: two publishers, a subscriber seeing their data, and a unit that runs actions.
  const rec = await recordDir();
  const pubDir = await recorderVariant({ name: "pub", provides: { p: "gen" } });
  const subDir = await recorderVariant({ name: "sub", requires: { r: "gen" } });
  for (const d of [pubDir, subDir]) {
    const dispatch = join(d, "dispatch");
    const text = await readFile(dispatch, "utf8");
    // Before the status-set at the end, so status follows the label.
    await writeFile(dispatch, text.replace(/\ncase "\$hook" in/, `${EXTRA}\ncase "$hook" in`), { mode: 0o755 });
  }
  const upload = async (dir: string): Promise<string> =>
    (await admin.uploadOperator((await readOperatorDir(dir)).bundle)).hash;
  await admin.createModel("m");
  await admin.deploy("m", {
    name: "pub",
    operator: await upload(pubDir),
    units: 2,
    config: { "record-dir": rec, label: "v1" },
  });
  await admin.deploy("m", { name: "sub", operator: await upload(subDir), units: 1, config: { "record-dir": rec } });
  await admin.deploy("m", {
    name: "act",
    operator: await upload(join(fixturesDir, "operators", "actor")),
    units: 1,
    config: { "record-dir": rec },
  });
  await admin.integrate("m", "pub:p", "sub:r");
  const status = (): Promise<ModelStatus> => admin.status("m");
  const units = (s: ModelStatus) => Object.values(s.applications).flatMap((a) => Object.values(a.units));
  const labelsAre = async (label: string): Promise<boolean> => {
    const s = await status();
    return (
      units(s).length === 4 &&
      units(s).every(unitIsReady) &&
      Object.values(s.applications.pub!.units).every((u) => u.workload.message === `label=${label}`) &&
      (await lastSeen(rec, "pub/0")) === label &&
      (await lastSeen(rec, "pub/1")) === label
    );
  };
  await eventually("every unit active, sub seeing v1", () => labelsAre("v1"), 90_000, 300);

  // Acknowledged before the backup: a config change (and the relation data it publishes), an action's result.
  await admin.updateApplication("m", "pub", { config: { label: "v2" } });
  await eventually("pub at v2, seen by sub", () => labelsAre("v2"), 60_000, 300);
  const before = (await admin.runAction("m", ["act/0"], "echo", { text: "before" })).tasks[0]!.id;
  await eventually("the first action done", async () => (await admin.task("m", before)).status === "completed", 30_000);
  const leader = Object.values((await status()).applications.pub!.units).find((u) => u.leader)?.name;

  // The backup catches act/0 in a hook (its status "executing"), which ends after it: the restored
  // controller must hear from the agent that it is idle now.
  await admin.updateApplication("m", "act", { config: { "hook-sleep": 4 } });
  await eventually(
    "act/0 in its slow config-changed",
    async () => (await status()).applications.act!.units["act/0"]!.agent.current === "executing",
    30_000,
    100,
  );
  const made = await steward("create-backup", "--passphrase-env", "BACKUP_TEST_PASSPHRASE", "-o", "bk.sbk");
  t.is(made.code, 0, made.stderr + made.stdout);
  t.regex(made.stdout, /Backup \S+ made: store revision \d+, \d+ keys, 1 models/);
  const listed = await steward("backups");
  t.regex(listed.stdout, /\d{8}T\d{6}Z-[0-9a-f]{6}/);
  const file = await readFile(join(home, "bk.sbk"));
  t.false(file.includes(Buffer.from("BEGIN PRIVATE KEY")), "the CA key is not in the clear");
  t.false(file.includes(Buffer.from("label")), "the store is not in the clear");

  await eventually(
    "act/0 idle again",
    async () => unitIsReady((await status()).applications.act!.units["act/0"]!),
    30_000,
    200,
  );
  // After the backup: another config change and another action. The restore must lose both.
  await admin.updateApplication("m", "pub", { config: { label: "v3" } });
  await eventually("pub at v3, seen by sub", () => labelsAre("v3"), 60_000, 300);
  const after = (await admin.runAction("m", ["act/0"], "echo", { text: "after" })).tasks[0]!.id;
  await eventually("the second action done", async () => (await admin.task("m", after)).status === "completed", 30_000);
  const hooksBefore = await sequences(rec);
  const refused = await steward("restore-backup", "bk.sbk", "--passphrase-env", "BACKUP_TEST_PASSPHRASE");
  t.is(refused.code, 1);
  t.regex(
    refused.stdout + refused.stderr,
    /controller "bk" is running with models \(m\): restoring replaces them with the backup's; pass --force/,
  );
  t.is(
    (await status()).applications.pub!.units["pub/0"]!.workload.message,
    "label=v3",
    "a refused restore changes nothing",
  );

  // The controller is lost: its supervisor and process killed, its data directory gone. Its
  // machines' directories (this host's agents, which keep running) are all that is left.
  await loseController(dataDir);
  const nothingRestored = async (): Promise<boolean> =>
    !(await stat(join(dataDir, dataFiles.config)).then(
      () => true,
      () => false,
    ));

  // Bad files and passphrases: a clear error each, and nothing restored.
  await writeFile(join(home, "wrong-pass"), "not the passphrase\n");
  const wrong = await steward("restore-backup", "bk.sbk", "--passphrase-file", "wrong-pass");
  t.is(wrong.code, 1);
  t.regex(wrong.stderr + wrong.stdout, /wrong passphrase/);
  await writeFile(join(home, "short.sbk"), file.subarray(0, file.length - 100));
  const short = await steward("restore-backup", "short.sbk", "--passphrase-env", "BACKUP_TEST_PASSPHRASE");
  t.regex(short.stderr + short.stdout, /truncated/);
  const tampered = Buffer.from(file);
  tampered[tampered.length - 500]! ^= 0x01;
  await writeFile(join(home, "tampered.sbk"), tampered);
  const bad = await steward("restore-backup", "tampered.sbk", "--passphrase-env", "BACKUP_TEST_PASSPHRASE");
  t.regex(bad.stderr + bad.stdout, /altered/);
  await writeFile(
    join(home, "future.sbk"),
    Buffer.from(file.toString("latin1").replace('"format":1,', '"format":9,'), "latin1"),
  );
  const future = await steward("restore-backup", "future.sbk", "--passphrase-env", "BACKUP_TEST_PASSPHRASE");
  t.regex(future.stderr + future.stdout, /format version 9/);
  for (const r of [short, bad, future]) t.is(r.code, 1, r.stdout);
  t.true(await nothingRestored(), "no bad restore wrote a controller");

  const restored = await steward("restore-backup", "bk.sbk", "--passphrase-env", "BACKUP_TEST_PASSPHRASE");
  t.is(restored.code, 0, restored.stderr);
  t.regex(restored.stdout, /Controller "bk" restored from backup .* models: m \(restore epoch 1\)/);
  const back = (await loadClientConfig(home)).controllers.bk!;
  t.deepEqual(back.addresses, entry.addresses, "on the same address, where the agents look");

  // The agents reconnect with their credentials and converge on the restored state: v2, not v3.
  const s = await eventually(
    "every unit back at v2, sub seeing v2 again",
    async () => ((await labelsAre("v2")) ? status() : undefined),
    120_000,
    500,
  ).catch(async (err: unknown) => {
    const now = await status().catch(() => undefined);
    t.log(
      JSON.stringify(now && units(now).map((u) => [u.name, u.workload, u.agent])),
      (await lines(join(rec, "seen.log"))).slice(-4),
      await sequences(rec),
    );
    for (const m of await readdir(
      join(dataDir, dataFiles.machines, (await readdir(join(dataDir, dataFiles.machines)))[0]!),
    ).catch(() => [])) {
      t.log(
        m,
        (
          await readFile(
            join(dataDir, dataFiles.machines, (await readdir(join(dataDir, dataFiles.machines)))[0]!, m, "agent.log"),
            "utf8",
          ).catch(() => "")
        )
          .split("\n")
          .slice(-8)
          .join("\n"),
      );
    }
    throw err;
  });
  t.is(Object.values(s.applications.pub!.units).find((u) => u.leader)?.name, leader, "leadership kept");
  const echoed = async (id: number): Promise<unknown> =>
    ((await admin.task("m", id)).results.echo as { text?: string } | undefined)?.text;
  t.is(await echoed(before), "before", "the action result acknowledged before the backup is back");
  await t.throwsAsync(admin.task("m", after), { message: /not found/ }, "the action after the backup is gone");
  // The task id given out after the backup is given out again: the agent must run it, not skip it.
  const again = (await admin.runAction("m", ["act/0"], "echo", { text: "again" })).tasks[0]!.id;
  t.is(again, after);
  await eventually(
    "the reused task id runs",
    async () => (await admin.task("m", again)).status === "completed",
    30_000,
  );
  t.is(await echoed(again), "again");

  // What ran after the restore: config-changed where the config differs, relation-changed where
  // data seen since the backup was lost; nothing installed, started or joined again.
  const hooksAfter = await sequences(rec);
  for (const [unit, hooks] of hooksAfter) {
    const since = hooks.slice(hooksBefore.get(unit)?.length ?? 0);
    t.false(
      since.some((h) => /^(install|start|leader-elected|relation-created|relation-joined)/.test(h)),
      `${unit} ran ${since.join(", ")}`,
    );
    if (unit.startsWith("pub/"))
      t.true(since.includes("config-changed"), `${unit} reverted its config: ${since.join(", ")}`);
  }
  t.deepEqual(
    (await lines(join(rec, "labels.log")))
      .slice(-2)
      .map((l) => l.split(" ")[1])
      .sort(),
    ["v2", "v2"],
  );
  t.log(
    `backup: ${file.length} bytes; after restore: ${[...hooksAfter].map(([u, h]) => `${u}: ${h.slice(hooksBefore.get(u)?.length ?? 0).join(" ")}`).join("; ")}`,
  );
});

/** Kills a local controller (supervisor and process) and deletes its data directory but for its machines' directories. */
async function loseController(dataDir: string): Promise<void> {
  for (const f of [dataFiles.supervisorPid, dataFiles.pid]) {
    const pid = await readPidFile(join(dataDir, f));
    if (pid) process.kill(pid, "SIGKILL");
  }
  for (const e of await readdir(dataDir))
    if (e !== dataFiles.machines) await rm(join(dataDir, e), { recursive: true, force: true });
}

test("restored on another port, the agents on this host are pointed at it and carry on", async (t) => {
  t.timeout(180_000);
  const home = await mkdtemp(join(tmpdir(), "steward-bk2-"));
  const steward = cliRunner(home, home);
  process.env.BACKUP_TEST_PASSPHRASE = PASS;
  let dataDir = "";
  t.teardown(async () => {
    await steward("destroy-controller", "mv", "--yes", "--timeout", "5s").catch(() => undefined);
    if (dataDir) await killProcessesUnder(dataDir);
    await rm(home, { recursive: true, force: true });
  });
  t.is((await bootstrapOnFreePort(steward, "mv")).code, 0);
  const entry = (await loadClientConfig(home)).controllers.mv!;
  dataDir = dataDirOf(entry)!;
  const admin = new ControllerClient({
    addresses: entry.addresses,
    caCert: entry.caCert,
    user: "admin",
    password: entry.password!,
  });
  const rec = await recordDir();
  await admin.createModel("m");
  await admin.deploy("m", {
    name: "solo",
    operator: (await admin.uploadOperator((await readOperatorDir(await recorderVariant({ name: "solo" }))).bundle))
      .hash,
    units: 1,
    config: { "record-dir": rec },
  });
  await eventually(
    "solo/0 active",
    async () => Object.values((await admin.status("m")).applications.solo?.units ?? {}).every(unitIsReady) || undefined,
    60_000,
    300,
  );
  admin.close();
  t.is((await steward("create-backup", "--passphrase-env", "BACKUP_TEST_PASSPHRASE", "-o", "mv.sbk")).code, 0);
  const before = await sequences(rec);
  await loseController(dataDir);

  const port = await freePort("127.0.0.1");
  const r = await steward(
    "restore-backup",
    "mv.sbk",
    "--passphrase-env",
    "BACKUP_TEST_PASSPHRASE",
    "--port",
    String(port),
  );
  t.is(r.code, 0, r.stderr + r.stdout);
  t.regex(r.stdout, /1 agents on this host were pointed at it/);
  const back = (await loadClientConfig(home)).controllers.mv!;
  t.deepEqual(back.addresses, [`127.0.0.1:${port}`]);
  const client = new ControllerClient({
    addresses: back.addresses,
    caCert: back.caCert,
    user: "admin",
    password: back.password!,
  });
  t.teardown(() => client.close());
  // The agent is seen again (its presence comes only from its own connection) and its unit is ready.
  await eventually(
    "solo/0's agent back on the new port",
    async () => {
      const u = (await client.status("m")).applications.solo?.units["solo/0"];
      return u &&
        u.agent.current !== "lost" &&
        unitIsReady(u) &&
        (await readdir(join(dataDir, dataFiles.machines))).length > 0
        ? u
        : undefined;
    },
    90_000,
    500,
  );
  const machines = join(dataDir, dataFiles.machines);
  const [model] = await readdir(machines);
  const [machine] = await readdir(join(machines, model!));
  t.deepEqual(
    (
      JSON.parse(await readFile(join(machines, model!, machine!, "agent.json"), "utf8")) as {
        controllerAddresses: string[];
      }
    ).controllerAddresses,
    [`127.0.0.1:${port}`],
  );
  const since = (await sequences(rec)).get("solo/0")!.slice(before.get("solo/0")!.length);
  t.false(
    since.some((h) => /^(install|leader-elected|config-changed)$/.test(h)),
    `after the move it ran ${since.join(", ")}`,
  );
});
