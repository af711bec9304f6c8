/**
 * Secrets at rest and in motion (issue 33): after secrets with distinctive values are made (a user's
 * through the API, updated and granted; an operator's through the agent protocol's hook commit, read
 * back with secret.get) and refused (too large, through both), no value shows, in the clear or as
 * base64, in any file under the controller's data directory (store, controller log) or the agents'
 * directories and logs, in the debug-log stream, in `steward status --format json`, in an export file
 * (sealed to a passphrase) or in a backup file. The export imports on another controller with its
 * passphrase (a wrong one is refused, a GET export refused), and the backup restored onto a fresh
 * data directory opens them again (it carries the CA key the sealing key derives from). Then the same
 * scan after real hooks (the secret-db / secret-client fixture pair on local machines) added, read
 * and published a new revision of a secret: its values, learnt by revealing each revision, are
 * nowhere either.
 */
import test from "ava";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DebugLogRecord, RevealedSecret, StewardError } from "../api";
import { routes } from "../api";
import { saveClientConfig } from "../cli";
import { Sealer, keys, openBackup, parseSnapshot, restoreControllerDir, revisionPurpose } from "../controller";
import { cliRunner } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { allReady, fixturesDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { recordDir, recorderVariant } from "./harness/operators";
import { filesUnder, secretEventOf } from "./harness/secret-fixtures";
import type { SimulatedAgent } from "./harness/simulated-agent";
import { simulatedAgent } from "./harness/simulated-agent";

let tc: TestController;
let other: TestController;
let pg: SimulatedAgent | undefined;
const tag = Math.random().toString(36).slice(2, 10);
const USER_VALUE = `user-secret-value-${tag}-a1`;
const USER_VALUE2 = `user-secret-value-${tag}-b2`;
const OP_VALUE = `operator-secret-value-${tag}-c3`;
const BIG_VALUE = `too-large-secret-value-${tag}-d4`;
const BIG_HOOK_VALUE = `too-large-hook-secret-${tag}-e5`;
const VALUES = [USER_VALUE, USER_VALUE2, OP_VALUE, BIG_VALUE, BIG_HOOK_VALUE];
const EXPORT_PASS = "export passphrase for the leak scan";
const BACKUP_PASS = "backup passphrase for the leak scan";
const OP_URI = "secret:d4s1k4tb5h0ut5tqbq20";

/** Each value as it could leak: plain, base64 and base64url (of the value alone, and as the JSON a sealer seals). */
const forms = (v: string): string[] => [
  v,
  Buffer.from(v).toString("base64").replace(/=+$/, ""),
  Buffer.from(v).toString("base64url"),
  Buffer.from(v).toString("hex"),
];

/** Where in `text` (named `where`) any of `values` shows, as "where: value form". */
function leaks(where: string, text: string | Buffer, values: string[] = VALUES): string[] {
  const s = typeof text === "string" ? text : text.toString("latin1");
  return values.flatMap((v) =>
    forms(v)
      .filter((f) => s.includes(f))
      .map((f) => `${where}: ${f.slice(0, 40)}`),
  );
}

/** The leaks of `values` in every file under `dirs` and in each of `texts` (named by their keys), and the files read. */
async function scan(
  values: string[],
  dirs: string[],
  texts: Record<string, string>,
): Promise<{ found: string[]; files: string[] }> {
  const files = (await Promise.all(dirs.map(filesUnder))).flat();
  const found: string[] = [];
  // (A file may go between the listing and the read: a running hook's record.)
  for (const f of files) found.push(...leaks(f, await readFile(f).catch(() => Buffer.alloc(0)), values));
  for (const [where, text] of Object.entries(texts)) found.push(...leaks(where, text, values));
  return { found, files };
}

/** `steward status --format json` of `model`, as the CLI prints it. */
async function statusJson(model: string): Promise<{ code: number; stdout: string; stderr: string }> {
  await saveClientConfig(work, {
    current: "t",
    controllers: {
      t: { addresses: tc.addresses, caCert: tc.caCert, user: "admin", password: tc.adminPassword, currentModel: model },
    },
  });
  return cliRunner(work, work)("status", "--format", "json");
}

/** The model's debug-log stream, replayed from the start, for a second after its first record. */
async function debugLogOf(model: string): Promise<DebugLogRecord[]> {
  const records: DebugLogRecord[] = [];
  const stop = new AbortController();
  const streamed = tc.admin
    .debugLog(model, { replay: true }, (r) => records.push(r), { signal: stop.signal })
    .catch(() => undefined);
  await eventually("debug-log records", () => records.length > 0, 30_000);
  await new Promise((r) => setTimeout(r, 1000));
  stop.abort();
  await streamed;
  return records;
}

let work: string;
let logFile: string;

test.before(async () => {
  work = await mkdtemp(join(tmpdir(), "steward-leak-"));
  // The controller's log, as a bootstrapped controller's controller.log, at debug level.
  logFile = join(work, "controller.log");
  tc = await startTestController({ logFile });
});
test.after.always(async () => {
  pg?.close();
  await other?.close();
  await tc?.close();
  await rm(work, { recursive: true, force: true });
});

test.serial(
  "no secret value is in any file, log, stream, status, export or backup; both travel sealed and open again",
  async (t) => {
    t.timeout(300_000);
    const { uuid } = await tc.admin.createModel("vault");
    // A real agent (a local machine), whose data directory and logs are scanned too.
    const web = await tc.upload(await recorderVariant({ name: "web" }));
    await tc.admin.deploy("vault", {
      name: "web",
      operator: web,
      units: 1,
      config: { "record-dir": await recordDir() },
    });
    // An operator's secret, committed by a hook of pg/0 (a simulated agent on a manual machine).
    const [m] = (await tc.admin.addMachines("vault", "manual", 1)).machines;
    await tc.admin.deploy("vault", {
      name: "pg",
      operator: await tc.upload(await recorderVariant({ name: "pg" })),
      units: 1,
      to: [m!.id],
    });
    pg = await simulatedAgent(tc, uuid, m!.id, m!.credential!);
    await eventually("pg/0's view", () => pg!.view()?.units.length === 1);
    t.deepEqual(await pg.call("leader.claim", { unit: "pg/0" }), { leader: true, leaseSeconds: 60 });
    await pg.call("hook.commit", {
      unit: "pg/0",
      relations: [],
      secrets: [{ op: "add", uri: OP_URI, owner: "application", label: "creds", content: { password: OP_VALUE } }],
    });
    t.like(await pg.call("secret.get", { unit: "pg/0", uri: OP_URI }), { values: { password: OP_VALUE } });

    // A user's secret, a second revision, granted to web.
    await tc.admin.call(routes.addSecret, { model: "vault" }, { name: "api-key", values: { token: USER_VALUE } });
    await tc.admin.call(routes.updateSecret, { model: "vault", secret: "api-key" }, { values: { token: USER_VALUE2 } });
    await tc.admin.call(routes.grantSecret, { model: "vault", secret: "api-key" }, { apps: ["web"] });
    const revealed = await tc.admin.call(routes.showSecret, { model: "vault", secret: "api-key" }, undefined, {
      reveal: "true",
    });
    t.like(revealed, { content: { revision: 2, values: { token: USER_VALUE2 } } });

    // Too large, through the API and a hook: refused, naming the limit and not the value.
    const big = `${BIG_VALUE}${"x".repeat(70 * 1024)}`;
    const refused = await t.throwsAsync<StewardError>(
      tc.admin.call(routes.addSecret, { model: "vault" }, { name: "huge", values: { blob: big } }),
    );
    t.is(refused?.code, "invalid-request", "one value over the limit: refused by the request's schema");
    const half = `${BIG_VALUE}${"x".repeat(40 * 1024)}`;
    const tooMuch = await t.throwsAsync<StewardError>(
      tc.admin.call(routes.addSecret, { model: "vault" }, { name: "huge", values: { first: half, second: half } }),
    );
    t.is(tooMuch?.code, "quota-exceeded");
    t.is(tooMuch?.reason, "secret-too-large");
    t.regex(tooMuch!.message, /64 KiB/);
    const hookRefused = await t.throwsAsync<StewardError>(
      pg.call("hook.commit", {
        unit: "pg/0",
        relations: [],
        secrets: [{ op: "set", uri: OP_URI, content: { password: `${BIG_HOOK_VALUE}${"y".repeat(70 * 1024)}` } }],
      }),
    );
    const refusals = JSON.stringify([refused, tooMuch, hookRefused].flatMap((e) => [e, e?.message, e?.details]));
    t.truthy(hookRefused, "the hook's commit is refused");
    t.deepEqual(leaks("refusals", refusals), [], "a refusal does not echo the value");

    await tc.waitForUnits(
      "vault",
      (u) => allReady(1)(u.filter((x) => x.name.startsWith("web/"))),
      "web/0 active",
      90_000,
    );

    // An export file: refused without a passphrase, sealed to one with it.
    const plain = await t.throwsAsync<StewardError>(tc.admin.call("GET", "/v1/models/vault/export"));
    t.regex(plain!.message, /2 secret revisions|3 secret revisions|secret revision/);
    t.regex(plain!.message, /passphrase/);
    const exported = await tc.admin.call(routes.exportModelSealed, { model: "vault" }, { passphrase: EXPORT_PASS });
    const exportFile = join(work, "vault.export.json");
    await writeFile(exportFile, JSON.stringify(exported));
    t.like(exported, { version: 5, secrets: { sealing: { kind: "passphrase" } } });

    // A backup file.
    const made = await tc.admin.call(routes.createBackup, {}, { passphrase: BACKUP_PASS });
    const parts: Buffer[] = [];
    for (let part = 0; part < made.record.chunks; part++)
      parts.push(
        Buffer.from(
          (await tc.admin.call(routes.backupPart, { id: made.record.id }, undefined, { part })).data,
          "base64",
        ),
      );
    const backupFile = join(work, "vault.sbk");
    await writeFile(backupFile, Buffer.concat(parts));

    // The status as the CLI prints it, and the model's debug-log.
    const status = await statusJson("vault");
    t.is(status.code, 0, status.stderr);
    t.regex(status.stdout, /"web\/0"/);
    const records = await debugLogOf("vault");

    // The scan: every file under the test's directory (controller data, store, agents' directories and logs), the log, the export, the backup.
    const { found, files } = await scan(VALUES, [tc.dir, work], {
      "status --format json": status.stdout + status.stderr,
      "debug-log": JSON.stringify(records),
    });
    t.true(files.some((f) => f.endsWith("controller.log")));
    t.true(
      files.some((f) => f.includes(join(tc.dir, "agents"))),
      "the agents' directories are scanned",
    );
    t.deepEqual(found, [], "no value anywhere");
    t.true(leaks("a reveal", JSON.stringify(revealed)).length > 0, "the scan finds a value where there is one");
    const logged = await readFile(logFile, "utf8");
    t.log(`controller.log: ${logged.split("\n").length} lines`);
    t.true(logged.length > 100, "the controller logged (at debug level)");
    t.log(
      `scanned ${files.length} files, ${records.length} debug-log records, ${status.stdout.length} bytes of status`,
    );

    // The export opens on another controller with its passphrase only; the values come back.
    other = await startTestController();
    const wrong = await t.throwsAsync<StewardError>(
      other.admin.call(routes.importModel, {}, { passphrase: "not the passphrase", export: exported }),
    );
    t.regex(wrong!.message, /wrong passphrase/);
    const noPass = await t.throwsAsync<StewardError>(other.admin.call(routes.importModel, {}, exported));
    t.regex(noPass!.message, /sealed to a passphrase: give it/);
    t.deepEqual(await other.admin.listModels(), [], "a refused import writes nothing");
    await other.admin.call(routes.importModel, {}, { passphrase: EXPORT_PASS, export: exported });
    t.like(
      await other.admin.call(routes.showSecret, { model: "vault", secret: "api-key" }, undefined, { reveal: "true" }),
      { content: { revision: 2, values: { token: USER_VALUE2 } } },
    );
    t.like(
      await other.admin.call(routes.showSecret, { model: "vault", secret: OP_URI }, undefined, {
        reveal: "true",
        revision: "1",
      }),
      { owner: "application:pg", content: { revision: 1, values: { password: OP_VALUE } } },
    );

    // The backup restored onto a fresh data directory brings the CA key the sealing key derives
    // from: that directory's sealer opens the backed-up revisions (another controller's does not).
    const restoredDir = join(work, "restored");
    await mkdir(restoredDir);
    const file = await readFile(backupFile);
    await restoreControllerDir({
      dataDir: restoredDir,
      file,
      passphrase: BACKUP_PASS,
      listen: { host: "127.0.0.1", port: 0 },
    });
    const { kvs } = parseSnapshot((await openBackup(file, BACKUP_PASS)).plain);
    const apiKey = (await tc.admin.call(routes.showSecret, { model: "vault", secret: "api-key" })).uri.slice(7);
    const sealed = kvs.find((kv) => kv.key === keys.secretRevision(uuid, apiKey, 2));
    t.truthy(sealed, "the backup holds the revision");
    const content = (JSON.parse(sealed!.value) as { sealed: string }).sealed;
    t.deepEqual((await Sealer.forDataDir(restoredDir)).openJson(revisionPurpose(apiKey, 2), content), {
      token: USER_VALUE2,
    });
    const elsewhere = await Sealer.forDataDir(join(other.dir, "c"));
    t.throws(() => elsewhere.open(revisionPurpose(apiKey, 2), content), { message: /does not open/ });
  },
);

test.serial(
  "with real hooks: a secret the secret-db / secret-client pair added, read and gave a new revision is in no file, log, stream or status",
  async (t) => {
    t.timeout(240_000);
    const model = "hooks";
    const record = await recordDir();
    await tc.admin.createModel(model);
    const dbOp = await tc.upload(join(fixturesDir, "operators", "secret-db"));
    const appOp = await tc.upload(join(fixturesDir, "operators", "secret-client"));
    await tc.admin.deploy(model, { name: "db", operator: dbOp, units: 1, config: { "record-dir": record } });
    await tc.admin.deploy(model, { name: "app", operator: appOp, units: 1, config: { "record-dir": record } });
    await tc.admin.integrate(model, "app", "db");
    const hashOf = (v: string): string => createHash("sha256").update(v).digest("hex").slice(0, 16);
    const reveal = async (uri: string, revision: number): Promise<RevealedSecret> =>
      (await tc.admin.call(routes.showSecret, { model, secret: uri }, undefined, {
        reveal: "true",
        revision: String(revision),
      })) as RevealedSecret;

    // Revision 1, added by db's leader-elected and read by app's relation hook: revealed before it
    // goes (nobody tracks it once app moved on, and db's secret-remove hook removes it).
    const added = await secretEventOf(record, "db/0", "added");
    const uri = added[2]!;
    t.is((await secretEventOf(record, "app/0", "read"))[2], added[3]);
    const first = await reveal(uri, 1);
    t.is(hashOf(first.content.values.password!), added[3], "revealed what the owner added");

    // Revision 2, published by db's config-changed (secret-set --file -), read by app's secret-changed.
    await tc.admin.updateApplication(model, "db", { config: { generation: 1 } });
    const set = await secretEventOf(record, "db/0", "set");
    t.is((await secretEventOf(record, "app/0", "changed"))[2], set[2]);
    const second = await reveal(uri, 2);
    t.is(hashOf(second.content.values.password!), set[2], "revealed what the owner set");
    await secretEventOf(record, "db/0", "removed");
    await tc.waitForUnits(
      model,
      (units) =>
        units.length === 2 &&
        units.every((u) => u.agent.current === "idle") &&
        units.find((u) => u.name === "app/0")?.workload.message === `read ${set[2]}`,
      "both units idle, app/0 showing the hash of revision 2",
      60_000,
    );

    const values = [first.content.values.password!, second.content.values.password!];
    const status = await statusJson(model);
    t.is(status.code, 0, status.stderr);
    t.regex(status.stdout, /"app\/0"/);
    const records = await debugLogOf(model);
    t.true(
      records.some((r) => r.unit === "app/0"),
      "the consumer's hooks logged",
    );
    const { found, files } = await scan(values, [tc.dir, work, record], {
      "status --format json": status.stdout + status.stderr,
      "debug-log": JSON.stringify(records),
    });
    // The controller's data directory and log, each agent's directory: its log, each unit's state and hooks.log.
    t.true(files.some((f) => f.endsWith("controller.log")));
    t.true(files.some((f) => f.startsWith(join(tc.dir, "c", "store"))));
    for (const unit of ["db-0", "app-0"])
      for (const file of ["state.json", "hooks.log"])
        t.true(
          files.some((f) => f.startsWith(join(tc.dir, "agents")) && f.endsWith(join("units", unit, file))),
          `${unit}'s ${file} is scanned`,
        );
    t.true(files.filter((f) => f.startsWith(join(tc.dir, "agents")) && f.endsWith("agent.log")).length >= 2);
    t.true(files.some((f) => f === join(record, "hooks.log")));
    t.deepEqual(found, [], "no value anywhere");
    t.true(leaks("a reveal", JSON.stringify(second), values).length > 0, "the scan finds a value where there is one");
    t.log(
      `scanned ${files.length} files, ${records.length} debug-log records, ${status.stdout.length} bytes of status`,
    );
  },
);
