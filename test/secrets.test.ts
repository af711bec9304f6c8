/**
 * Secrets between operators end to end (issue 33), on a local controller with real agents: the
 * secret-db / secret-client fixture pair records every secret event (hashes of values, never values)
 * in a hooks.log this test reads. A provider adds a secret, grants it over the relation and the
 * consumer reads it; a new revision reaches the consumer with secret-changed; a unit of an unrelated
 * application is refused; a revoked grant is refused; rotation, expiry and obsolete revisions run
 * the owner's hooks; and no value reaches the agents' files or debug-log.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import test from "ava";
import type { DebugLogRecord, RevealedSecret } from "../api";
import { routes } from "../api";
import type { TestController } from "./harness/controller";
import { fixturesDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { recordDir } from "./harness/operators";
import { filesUnder, secretEventOf as eventOf, secretEvents as events } from "./harness/secret-fixtures";

/** Every rotation policy lasts this long here (and the controller looks every second). */
const ROTATE_SECONDS = 4;
let tc: TestController;
let dbOp: string;
let clientOp: string;
test.before(async () => {
  tc = await startTestController({ secretRotateSeconds: ROTATE_SECONDS });
  dbOp = await tc.upload(join(fixturesDir, "operators", "secret-db"));
  clientOp = await tc.upload(join(fixturesDir, "operators", "secret-client"));
});
test.after.always(async () => {
  await tc?.close();
});

test.serial(
  "the provider adds and grants, the consumer reads; a new revision reaches it with secret-changed; others are refused",
  async (t) => {
    const record = await recordDir();
    const model = "secrets";
    await tc.admin.createModel(model);
    await tc.admin.deploy(model, { name: "db", operator: dbOp, units: 1, config: { "record-dir": record } });
    await tc.admin.deploy(model, { name: "app", operator: clientOp, units: 1, config: { "record-dir": record } });
    await tc.admin.integrate(model, "app", "db");

    const added = await eventOf(record, "db/0", "added");
    const uri = added[2]!;
    t.regex(uri, /^secret:[0-9a-v]{20}$/);
    t.truthy(await eventOf(record, "db/0", "granted"));
    const read = await eventOf(record, "app/0", "read");
    t.is(read[2], added[3], "the consumer read the value the provider added");
    await tc.waitForUnits(
      model,
      (units) => units.find((u) => u.name === "app/0")?.workload.message === `read ${added[3]}`,
      "the consumer's status shows the hash it read",
    );

    // A new revision: the consumer gets secret-changed and reads it with --refresh.
    await tc.admin.updateApplication(model, "db", { config: { generation: 1 } });
    const set = await eventOf(record, "db/0", "set");
    t.not(set[2], added[3]);
    const changed = await eventOf(record, "app/0", "changed");
    t.is(changed[2], set[2], "secret-changed read the new revision");
    // Once the consumer moved on, revision 1 is tracked by nobody: its owner's secret-remove hook removes it.
    const removed = await eventOf(record, "db/0", "removed");
    t.deepEqual(removed.slice(2), [uri, "1"]);

    // The revealed value is what the consumer read, and it is nowhere in the agents' files or debug-log.
    const revealed = (await tc.admin.call(routes.showSecret, { model, secret: uri }, undefined, {
      reveal: true,
    })) as RevealedSecret;
    const value = revealed.content.values.password!;
    t.is(createHash("sha256").update(value).digest("hex").slice(0, 16), set[2], "the value revealed is the one read");
    const logs: DebugLogRecord[] = [];
    await tc.admin.debugLog(model, { replay: true, tail: false }, (r) => logs.push(r));
    t.true(logs.length > 0);
    t.false(
      logs.some((r) => r.message.includes(value)),
      "debug-log holds no value",
    );
    const files = await filesUnder(join(tc.dir, "agents"));
    t.true(files.some((f) => f.endsWith("hooks.log")));
    // (A file may go between the listing and the read: a running hook's record.)
    for (const f of files) t.false((await readFile(f).catch(() => Buffer.alloc(0))).includes(value), f);

    // A unit of an application it was never granted to is refused by the controller.
    await tc.admin.deploy(model, {
      name: "other",
      operator: clientOp,
      units: 1,
      config: { "record-dir": record, uri },
    });
    const refused = await eventOf(record, "other/0", "refused");
    t.is(
      refused.slice(2).join(" ").trim(),
      `secret-get: other/0 may not read ${uri}: it neither owns it nor was granted it`,
    );

    // Revoked, the consumer's next read is refused too.
    await tc.admin.updateApplication(model, "db", { config: { revoke: true } });
    await eventOf(record, "db/0", "revoked");
    const after = await eventually(
      "the consumer refused after the revoke",
      async () => {
        await tc.admin.updateApplication(model, "app", { config: { poke: Date.now() % 1_000_000 } });
        return (await events(record)).find((e) => e[0] === "app/0" && e[1] === "refused");
      },
      60_000,
      3000,
    );
    t.is(
      after.slice(2).join(" ").trim(),
      `secret-get: app/0 may not read ${uri}: it neither owns it nor was granted it`,
    );
    t.log((await events(record)).map((e) => e.join(" ")).join("\n"));
  },
);

test.serial(
  "rotation fires on the test schedule; its hook publishes a new revision, which the consumer follows",
  async (t) => {
    const record = await recordDir();
    const model = "rotation";
    await tc.admin.createModel(model);
    await tc.admin.deploy(model, {
      name: "db",
      operator: dbOp,
      units: 1,
      config: { "record-dir": record, rotate: "hourly" },
    });
    await tc.admin.deploy(model, { name: "app", operator: clientOp, units: 1, config: { "record-dir": record } });
    await tc.admin.integrate(model, "app", "db");
    const added = await eventOf(record, "db/0", "added");
    const first = await eventOf(record, "db/0", "rotated", 60_000);
    const second = await eventOf(record, "db/0", "rotated", 60_000, 1);
    t.not(first[2], added[3]);
    t.not(second[2], first[2]);
    // Each new revision reaches the consumer with secret-changed, and it reads it with --refresh.
    const changed = await eventOf(record, "app/0", "changed", 60_000);
    const rotated = (await events(record)).filter((e) => e[0] === "db/0" && e[1] === "rotated").map((e) => e[2]);
    t.true(rotated.includes(changed[2]), "the consumer read a rotated revision");
  },
);

test.serial("an expired revision runs the owner's secret-expired hook once", async (t) => {
  const record = await recordDir();
  const model = "expiry";
  await tc.admin.createModel(model);
  await tc.admin.deploy(model, {
    name: "db",
    operator: dbOp,
    units: 1,
    config: { "record-dir": record, expire: "5s" },
  });
  const added = await eventOf(record, "db/0", "added");
  const expired = await eventOf(record, "db/0", "expired", 60_000);
  t.deepEqual(expired.slice(2), [added[2], "1"]);
  await new Promise((r) => setTimeout(r, 5000));
  t.is((await events(record)).filter((e) => e[1] === "expired").length, 1);
});

test.serial("a failed hook's secret changes are not committed, and its tools' refusals repeat no value", async (t) => {
  const record = await recordDir();
  const model = "failing";
  await tc.admin.createModel(model);
  await tc.admin.deploy(model, {
    name: "db",
    operator: dbOp,
    units: 1,
    config: { "record-dir": record, "fail-once": true },
  });
  const discarded = (await eventOf(record, "db/0", "failed-add"))[2]!;
  const failure = await eventually(
    "db/0's failure shown",
    async () => (await tc.admin.showUnit(model, "db/0")).failure,
    30_000,
  );
  t.is(failure.hook, "leader-elected");
  t.regex(failure.output, /secret-add: "Bad_Key" is not a secret key/);
  t.false(failure.output.includes("do-not-show"), "the refused value is not in show-unit's output");
  // Retried (after 5 s), the hook adds the secret again: only that one exists.
  const added = (await eventOf(record, "db/0", "added", 60_000))[2]!;
  t.not(added, discarded);
  // The record is written during the hook; its commit comes after it ends.
  const secrets = await eventually(
    "the secret committed",
    async () => {
      const list = (await tc.admin.call(routes.listSecrets, { model })).secrets;
      return list.length > 0 ? list : undefined;
    },
    30_000,
  );
  t.deepEqual(
    secrets.map((s) => s.uri),
    [added],
  );
  const logs: DebugLogRecord[] = [];
  await tc.admin.debugLog(model, { replay: true, tail: false }, (r) => logs.push(r));
  t.true(logs.some((r) => r.message.includes("Bad_Key")));
  t.false(logs.some((r) => r.message.includes("do-not-show")));
});
