/**
 * Secrets (issue 33) against a real embedded store, below the API: what a hook's secret-* tools change
 * is applied with its commit (add by the leader only, set makes revisions, limits refused with their
 * reasons and nothing written), who may read (owner side, granted over a live relation, granted by a
 * user; not once the relation ended, never another application), a consumer tracking a revision, a
 * user secret's untracked revisions pruned, the agent view's secrets (the same text from both
 * builders), the values sealed at rest, and rotation falling due on a short schedule, again while the
 * owner sets no new revision.
 */
import test from "ava";
import { generateKeyPairSync } from "node:crypto";
import { join } from "node:path";
import type { AgentView, SecretChange, StewardError, UnitSecretView } from "../api";
import { SECRET_LIMITS, newSecretId, readOperatorDir, secretUri } from "../api";
import type { SecretDoc } from "../controller";
import {
  AgentViewRound,
  KIND,
  MAX_VALUE_BYTES,
  RelationOps,
  Sealer,
  SecretOps,
  SecretSchedule,
  StateOps,
  buildAgentView,
  keys,
} from "../controller";
import { operatorsDir } from "./harness/controller";
import { pgRelation, putRelation, storeWithCache } from "./harness/state";

const sealerKey = () =>
  generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();

/** A model with db (db/0 leads, db/1), app (app/0) integrated with db as relation 0, and other (other/0). */
async function setup(t: { teardown(fn: () => Promise<void> | void): void }, opts: { rotateSeconds?: number } = {}) {
  const { store, cache } = await storeWithCache(t, "secrets");
  const ops = new StateOps(store);
  const sealer = Sealer.fromCaKey(sealerKey());
  const secrets = new SecretOps(store, sealer, opts);
  const relations = new RelationOps(store, undefined, secrets);
  const m = await ops.models.create("admin", "m");
  const uuid = m.uuid;
  const { bundle } = await readOperatorDir(join(operatorsDir, "motd"));
  const hash = (await ops.operators.upload(bundle, { quotaBytes: 1 << 30 })).doc.hash;
  for (const [name, units] of [
    ["db", 2],
    ["app", 1],
    ["other", 1],
  ] as const)
    await ops.applications.deploy(uuid, { name, operator: hash, units });
  await store.put(keys.leader(uuid, "db"), JSON.stringify({ unit: "db/0", since: "2026-01-01T00:00:00Z", lease: "x" }));
  await putRelation(store, uuid, 0, pgRelation("db", "app"));
  await cache.catchUp();
  const idx = () => cache.models.get(uuid)!;
  const machineOf = (unit: string) => idx().units.get(unit)!.machine;
  /** Commits a hook of `unit` that made `changes`, and waits for the cache to see it. */
  const commit = async (unit: string, changes: SecretChange[]) => {
    const rev = await relations.commitHook(uuid, machineOf(unit), {
      unit,
      relations: [],
      enterScope: [],
      secrets: changes,
    });
    await cache.waitForRevision(rev);
  };
  const secret = (uri: string): SecretDoc | undefined => idx().secrets.get(uri.slice("secret:".length));
  /** What the view of `unit`'s machine says of its secrets. */
  const viewOf = (unit: string): UnitSecretView[] | undefined =>
    buildAgentView(cache, idx(), machineOf(unit), []).units.find((u) => u.name === unit)?.secrets;
  const newUri = () => secretUri(newSecretId((n) => new Uint8Array(n).map(() => Math.floor(Math.random() * 256))));
  return { store, cache, ops, sealer, secrets, relations, uuid, idx, commit, secret, viewOf, machineOf, newUri };
}

test("the leader adds an application's secret, sets revisions; values are sealed at rest and open for the owner", async (t) => {
  const s = await setup(t);
  const uri = s.newUri();
  const follower = await t.throwsAsync<StewardError>(
    s.commit("db/1", [{ op: "add", uri, owner: "application", content: { password: "hunter2-follower" } }]),
  );
  t.is(follower?.code, "forbidden");
  t.regex(follower!.message, /db\/1 is not the leader of db/);
  t.is(s.secret(uri), undefined, "a refused commit writes nothing");

  await s.commit("db/0", [
    { op: "add", uri, owner: "application", label: "creds", rotate: "daily", content: { password: "hunter2-first" } },
  ]);
  const doc = s.secret(uri)!;
  t.deepEqual(
    [doc.owner, doc.latest, doc.label, doc.rotate],
    [{ kind: "application", app: "db" }, 1, "creds", "daily"],
  );
  t.truthy(doc.nextRotateAt);
  t.deepEqual(await s.secrets.values(s.uuid, doc.id, 1), { password: "hunter2-first" });

  // Set by a follower: refused; by the leader: a new revision.
  await t.throwsAsync(s.commit("db/1", [{ op: "set", uri, content: { password: "x-follower" } }]), {
    message: /only the leader may set/,
  });
  await s.commit("db/0", [{ op: "set", uri, content: { password: "hunter2-second" } }]);
  t.is(s.secret(uri)!.latest, 2);
  t.deepEqual(await s.secrets.values(s.uuid, doc.id, 2), { password: "hunter2-second" });
  // The same values again (a config-changed hook setting what it set before) make no revision.
  await s.commit("db/0", [{ op: "set", uri, content: { password: "hunter2-second" }, description: "kept" }]);
  t.deepEqual([s.secret(uri)!.latest, s.secret(uri)!.description], [2, "kept"]);

  // What an export carries of it (the metadata) passes the strict schema an import checks.
  const checked = KIND.secret.schema!.safeParse(s.secret(uri));
  t.true(checked.success, JSON.stringify(checked.error?.issues));

  // Nothing in the store holds a value in the clear.
  const all = (await s.store.range("/")).kvs.map((kv) => kv.value).join("\n");
  t.false(all.includes("hunter2"), "values are sealed at rest");
  // A sealed revision copied under another revision does not open.
  const sealed = (await s.store.get(keys.secretRevision(s.uuid, doc.id, 1)))!.value;
  await s.store.put(keys.secretRevision(s.uuid, doc.id, 2), sealed);
  await t.throwsAsync(s.secrets.values(s.uuid, doc.id, 2), { message: /does not open/ });
});

test("limits are refused with their reasons, and nothing of the commit is written", async (t) => {
  const s = await setup(t);
  const uri = s.newUri();
  const big = await t.throwsAsync<StewardError>(
    s.commit("db/0", [{ op: "add", uri, owner: "unit", content: { blob: "x".repeat(SECRET_LIMITS.contentBytes) } }]),
  );
  t.is(big?.reason, "secret-too-large");
  t.is(big?.code, "quota-exceeded");
  t.false(big!.message.includes("xxxx"), "the refusal does not carry the value");
  const keysTooMany = Object.fromEntries(Array.from({ length: SECRET_LIMITS.keys + 1 }, (_, i) => [`key${i}`, "v"]));
  t.is(
    (await t.throwsAsync<StewardError>(s.commit("db/0", [{ op: "add", uri, owner: "unit", content: keysTooMany }])))
      ?.reason,
    "secret-too-large",
  );
  const badKey = await t.throwsAsync<StewardError>(
    s.commit("db/0", [{ op: "add", uri, owner: "unit", content: { A: "v" } }]),
  );
  t.is(badKey?.code, "invalid-request");
  t.is(s.secret(uri), undefined);

  await s.commit("db/0", [{ op: "add", uri, owner: "unit", content: { token: "t0" } }]);
  // Revisions up to the limit in one commit, then one more is refused (and the whole commit with it).
  const sets: SecretChange[] = Array.from({ length: SECRET_LIMITS.revisions - 1 }, (_, i) => ({
    op: "set" as const,
    uri,
    content: { token: `t${i + 1}` },
  }));
  await s.commit("db/0", sets);
  t.is(s.secret(uri)!.revisions.length, SECRET_LIMITS.revisions);
  const full = await t.throwsAsync<StewardError>(
    s.commit("db/0", [
      { op: "set", uri, description: "not applied either" },
      { op: "set", uri, content: { token: "one-too-many" } },
    ]),
  );
  t.is(full?.reason, "secret-revisions-full");
  t.is(s.secret(uri)!.description, undefined, "the commit's other changes were not applied");
  // Removing an old revision makes room.
  await s.commit("db/0", [
    { op: "remove", uri, revision: 1 },
    { op: "set", uri, content: { token: "room-now" } },
  ]);
  t.is(s.secret(uri)!.latest, SECRET_LIMITS.revisions + 1);
  t.is(await s.store.get(keys.secretRevision(s.uuid, s.secret(uri)!.id, 1)), undefined, "its content went too");
});

test("who may read: owner side, a grant over a live relation, not another application, not once the relation ended", async (t) => {
  const s = await setup(t);
  const uri = s.newUri();
  await s.commit("db/0", [
    { op: "add", uri, owner: "application", label: "db-pass", content: { password: "pw1" } },
    { op: "grant", uri, relationId: 0 },
  ]);
  t.deepEqual(s.secret(uri)!.grants, [{ app: "app", relationId: 0 }]);
  // Views: the leader manages it, the follower reads it, app/0 is granted it, other/0 sees nothing.
  t.deepEqual(s.viewOf("db/0"), [{ uri, label: "db-pass", owner: true, latest: 1 }]);
  t.deepEqual(s.viewOf("db/1"), [{ uri, label: "db-pass", latest: 1 }]);
  t.deepEqual(s.viewOf("app/0"), [{ uri, latest: 1 }]);
  t.is(s.viewOf("other/0"), undefined);

  // Tracking: the consumer names it with its own label; another application may not.
  await s.commit("app/0", [{ op: "track", uri, revision: 1, label: "database" }]);
  t.deepEqual(s.viewOf("app/0"), [{ uri, label: "database", latest: 1, tracked: 1 }]);
  t.true(KIND.secret.schema!.safeParse(s.secret(uri)).success, "grants and consumers pass the import's schema");
  const stranger = await t.throwsAsync<StewardError>(s.commit("other/0", [{ op: "track", uri, revision: 1 }]));
  t.is(stranger?.reason, "secret-not-readable");
  t.is(stranger?.code, "forbidden");
  // A grant by another application's unit, over a relation it is not in: refused.
  await t.throwsAsync(s.commit("other/0", [{ op: "grant", uri, relationId: 0 }]), { message: /does not own/ });

  // A new revision: the consumer still tracks 1 until it moves; the owner sees 1 as not obsolete while tracked.
  await s.commit("db/0", [{ op: "set", uri, content: { password: "pw2" } }]);
  t.deepEqual(s.viewOf("app/0"), [{ uri, label: "database", latest: 2, tracked: 1 }]);
  t.deepEqual(s.viewOf("db/0"), [{ uri, label: "db-pass", owner: true, latest: 2 }]);
  await s.commit("app/0", [{ op: "track", uri, revision: 2 }]);
  t.deepEqual(s.viewOf("app/0"), [{ uri, label: "database", latest: 2, tracked: 2 }], "its label stays");
  t.deepEqual(s.viewOf("db/0"), [{ uri, label: "db-pass", owner: true, latest: 2, obsolete: [1] }]);
  // The owner removes the obsolete revision (its secret-remove hook).
  await s.commit("db/0", [{ op: "remove", uri, revision: 1 }]);
  t.deepEqual(s.viewOf("db/0"), [{ uri, label: "db-pass", owner: true, latest: 2 }]);

  // The relation ends: the grant ends with it (at once for reads, before any clean-up).
  await putRelation(s.store, s.uuid, 0, pgRelation("db", "app"), "dying");
  await s.cache.catchUp();
  t.is(s.viewOf("app/0"), undefined);
  const ended = await t.throwsAsync<StewardError>(s.commit("app/0", [{ op: "track", uri, revision: 2 }]));
  t.is(ended?.reason, "secret-not-readable");
  // Once every unit has left it the relation goes, and the grant made over it with it.
  t.true(await s.relations.finishRelation(s.uuid, 0));
  await s.cache.catchUp();
  t.deepEqual(s.secret(uri)!.grants, []);

  // A unit-owned secret: only that unit sees it (as in Juju), and only it manages it.
  const mine = s.newUri();
  await s.commit("db/1", [{ op: "add", uri: mine, owner: "unit", content: { k01: "v" } }]);
  t.deepEqual(
    s.viewOf("db/1")?.find((v) => v.uri === mine),
    { uri: mine, owner: true, latest: 1 },
  );
  t.is(
    s.viewOf("db/0")?.find((v) => v.uri === mine),
    undefined,
  );
  await t.throwsAsync(s.commit("db/0", [{ op: "remove", uri: mine }]), { message: /does not own/ });
  await s.commit("db/1", [{ op: "remove", uri: mine }]);
  t.is(s.secret(mine), undefined);
});

test("user secrets: add (again is a no-op), update makes revisions, untracked old ones are pruned, grants to applications", async (t) => {
  const s = await setup(t);
  const added = await s.secrets.addUserSecret(s.uuid, "admin", { name: "api-key", values: { key: "k-one" } });
  t.true(added.created);
  const again = await s.secrets.addUserSecret(s.uuid, "admin", { name: "api-key", values: { key: "k-one" } });
  t.deepEqual([again.created, again.uri, again.secretRevision], [false, added.uri, 1]);
  await t.throwsAsync(s.secrets.addUserSecret(s.uuid, "admin", { name: "api-key", values: { key: "k-other" } }), {
    message: /already exists with other values/,
  });
  await s.cache.waitForRevision(added.revision);
  t.deepEqual(s.secret(added.uri)!.createdBy, "admin");

  const granted = await s.secrets.grantApps(s.uuid, "api-key", ["app"], true);
  await s.cache.waitForRevision(granted.revision);
  t.deepEqual(s.viewOf("app/0"), [{ uri: added.uri, latest: 1 }]);
  t.is(s.viewOf("db/0"), undefined);
  await t.throwsAsync(s.secrets.grantApps(s.uuid, "api-key", ["nope"], true), { message: /application "nope"/ });

  // The consumer tracks 1; an update makes 2; 1 stays while tracked, and goes once app/0 moves on.
  await s.commit("app/0", [{ op: "track", uri: added.uri, revision: 1 }]);
  t.true(
    KIND.secret.schema!.safeParse(s.secret(added.uri)).success,
    "a user secret's metadata passes the import's schema",
  );
  const same = await s.secrets.updateUserSecret(s.uuid, "api-key", { values: { key: "k-one" } });
  t.is(same.secretRevision, 1, "the same values make no revision");
  const up = await s.secrets.updateUserSecret(s.uuid, added.uri, { values: { key: "k-two" }, description: "d" });
  await s.cache.waitForRevision(up.revision);
  t.deepEqual(
    s.secret(added.uri)!.revisions.map((r) => r.revision),
    [1, 2],
  );
  await s.commit("app/0", [{ op: "track", uri: added.uri, revision: 2 }]);
  t.deepEqual(
    s.secret(added.uri)!.revisions.map((r) => r.revision),
    [2],
    "revision 1, tracked by nobody, was pruned",
  );
  t.is(await s.store.get(keys.secretRevision(s.uuid, s.secret(added.uri)!.id, 1)), undefined);
  // Revision 2 went once app/0 moved to 3; 3 stays while app/0 tracks it.
  await s.secrets.updateUserSecret(s.uuid, "api-key", { values: { key: "k-three" } });
  await s.commit("app/0", [{ op: "track", uri: added.uri, revision: 3 }]);
  const u4 = await s.secrets.updateUserSecret(s.uuid, "api-key", { values: { key: "k-four" } });
  await s.cache.waitForRevision(u4.revision);
  t.deepEqual(
    s.secret(added.uri)!.revisions.map((r) => r.revision),
    [3, 4],
  );

  // Operators' secrets are not the users' to change; units cannot change users' secrets.
  const op = s.newUri();
  await s.commit("db/0", [{ op: "add", uri: op, owner: "unit", content: { key: "v1" } }]);
  await t.throwsAsync(s.secrets.updateUserSecret(s.uuid, op, { description: "x" }), { message: /operator's secret/ });
  await t.throwsAsync(s.commit("app/0", [{ op: "set", uri: added.uri, content: { key: "x" } }]), {
    message: /does not own/,
  });

  const revoked = await s.secrets.grantApps(s.uuid, "api-key", ["app"], false);
  await s.cache.waitForRevision(revoked.revision);
  t.is(s.viewOf("app/0"), undefined);
  await s.cache.waitForRevision((await s.secrets.removeUserSecret(s.uuid, "api-key")).revision);
  t.is(s.secret(added.uri), undefined);
  t.deepEqual((await s.store.range(keys.secretRevisionsOf(s.uuid, s.secret(op)!.id))).kvs.length, 1);
  t.deepEqual((await s.store.range(keys.secretRevisionsOf(s.uuid, added.uri.slice(7)))).kvs, []);
});

test("the agent view's secrets: the same text from both builders, and only where the model has secrets", async (t) => {
  const s = await setup(t);
  const round0 = new AgentViewRound(s.cache, ["10.0.0.1:17070"], 60);
  for (const u of ["db/0", "app/0"]) {
    const text = round0.text(s.idx(), s.machineOf(u));
    t.false(text.includes('"secrets"'), "no field in a model without secrets");
  }
  const a = s.newUri();
  const b = s.newUri();
  const soon = new Date(Date.now() + 3_600_000).toISOString();
  const past = new Date(Date.now() + 2000).toISOString();
  await s.commit("db/0", [
    { op: "add", uri: a, owner: "application", label: "a", content: { one: "1" }, expireAt: past, rotate: "hourly" },
    { op: "set", uri: a, content: { one: "2" }, expireAt: soon },
    { op: "grant", uri: a, relationId: 0, unit: "app/0" },
    { op: "add", uri: b, owner: "unit", label: "b", content: { two: "2" } },
  ]);
  await s.commit("app/0", [{ op: "track", uri: a, revision: 1, label: "theirs" }]);
  // Seen alike by every unit of an application (the round's shared text), but its leader's: an
  // application's secret granted to app over the relation, and a user's granted to app.
  const c = s.newUri();
  await s.commit("db/0", [
    { op: "add", uri: c, owner: "application", label: 'c "quoted" \u2028', content: { three: "3" } },
    { op: "set", uri: c, content: { three: "4" } },
    { op: "grant", uri: c, relationId: 0 },
  ]);
  await s.commit("db/1", [{ op: "track", uri: c, revision: 2 }]);
  await s.commit("app/0", [{ op: "track", uri: c, revision: 1, label: "c-theirs" }]);
  const user = await s.secrets.addUserSecret(s.uuid, "admin", { name: "token", values: { token: "t1" } });
  await s.cache.waitForRevision((await s.secrets.grantApps(s.uuid, "token", ["app"], true)).revision);
  await s.commit("app/0", [{ op: "track", uri: user.uri, revision: 1 }]);
  await new Promise((r) => setTimeout(r, 2100));
  const now = Date.now();
  const round = new AgentViewRound(s.cache, ["10.0.0.1:17070"], 60, now);
  const machines = new Set([...s.idx().units.values()].map((u) => u.machine));
  for (const machine of machines)
    t.is(
      round.text(s.idx(), machine),
      JSON.stringify(buildAgentView(s.cache, s.idx(), machine, ["10.0.0.1:17070"], 60, now)),
    );
  const view = JSON.parse(round.text(s.idx(), s.machineOf("db/0"))) as AgentView;
  const db0 = view.units.find((u) => u.name === "db/0")!.secrets!;
  t.deepEqual(
    db0.find((v) => v.uri === a),
    { uri: a, label: "a", owner: true, latest: 2, expired: [1] },
    "the owner sees revision 1's expiry (revision 1 is tracked by app/0, so not obsolete)",
  );
  t.deepEqual(
    db0.find((v) => v.uri === b),
    { uri: b, label: "b", owner: true, latest: 1 },
  );
  const unitView = (unit: string) =>
    (JSON.parse(round.text(s.idx(), s.machineOf(unit))) as AgentView).units.find((u) => u.name === unit)!.secrets!;
  t.deepEqual(
    db0.find((v) => v.uri === c),
    { uri: c, label: 'c "quoted" \u2028', owner: true, latest: 2 },
    "the leader manages it (revision 1 is tracked by app/0, so not obsolete)",
  );
  t.deepEqual(
    unitView("db/1").find((v) => v.uri === c),
    { uri: c, label: 'c "quoted" \u2028', latest: 2, tracked: 2 },
  );
  t.deepEqual(
    unitView("app/0").filter((v) => v.uri === c || v.uri === user.uri),
    [
      { uri: c, label: "c-theirs", latest: 2, tracked: 1 },
      { uri: user.uri, latest: 1, tracked: 1 },
    ].sort((x, y) => x.uri.localeCompare(y.uri)),
  );
  // A grant whose relation ended shows nothing.
  await s.cache.waitForRevision(await putRelation(s.store, s.uuid, 0, pgRelation("db", "app"), "dying"));
  const after = new AgentViewRound(s.cache, ["10.0.0.1:17070"], 60, now);
  for (const machine of machines)
    t.is(
      after.text(s.idx(), machine),
      JSON.stringify(buildAgentView(s.cache, s.idx(), machine, ["10.0.0.1:17070"], 60, now)),
    );
  t.deepEqual(
    (JSON.parse(after.text(s.idx(), s.machineOf("app/0"))) as AgentView).units[0]!.secrets!.map((v) => v.uri),
    [user.uri],
  );
});

test("rotation falls due on the short schedule, and again while the owner sets no new revision", async (t) => {
  const s = await setup(t, { rotateSeconds: 1 });
  const uri = s.newUri();
  // The schedule runs on a clock the test moves (a loaded machine may take seconds between two lines).
  let clock = Date.now();
  await s.commit("db/0", [{ op: "add", uri, owner: "application", rotate: "monthly", content: { pass: "p1" } }]);
  const schedule = new SecretSchedule(s.store, 1, () => new Date(clock));
  const passAt = async (at: number): Promise<string | undefined> => {
    clock = at;
    await schedule.pass(s.cache);
    await s.cache.catchUp();
    return s.viewOf("db/0")?.[0]?.rotateDue;
  };
  t.is(await passAt(clock), undefined, "not due yet");
  // Past the 1 s interval (counted from the commit, which came after the clock was read).
  const first = (await passAt(Date.now() + 1500))!;
  t.is(first, new Date(clock).toISOString(), "due when the schedule saw it");
  t.is(s.viewOf("db/1")?.[0]?.rotateDue, undefined, "only the owner (the leader) is told");
  t.is(await passAt(clock + 500), first, "not due again before the retry interval");
  // The rotate hook set no new revision: due again after the retry, with a later time (so the hook runs again).
  const again = (await passAt(clock + 1000))!;
  t.true(again > first);
  // A new revision ends it, and the next rotation is a whole interval away.
  await s.commit("db/0", [{ op: "set", uri, content: { pass: "p2" } }]);
  t.is(s.viewOf("db/0")?.[0]?.rotateDue, undefined);
  t.true(Date.parse(s.secret(uri)!.nextRotateAt!) > Date.now());
});

test("secrets of a removed owner go, and consumers, grants and user secrets' revisions only removed units tracked", async (t) => {
  const s = await setup(t);
  const owned = s.newUri();
  const shared = s.newUri();
  await s.commit("db/1", [{ op: "add", uri: owned, owner: "unit", content: { kk1: "v" } }]);
  await s.commit("db/0", [
    { op: "add", uri: shared, owner: "application", content: { kk2: "v" } },
    { op: "grant", uri: shared, relationId: 0 },
  ]);
  await s.commit("app/0", [{ op: "track", uri: shared, revision: 1 }]);
  // A user secret app/0 tracks at revision 1, updated to 2: 1 stays while app/0 tracks it.
  const user = await s.secrets.addUserSecret(s.uuid, "admin", { name: "token", values: { token: "t1" } });
  await s.cache.waitForRevision((await s.secrets.grantApps(s.uuid, "token", ["app"], true)).revision);
  await s.commit("app/0", [{ op: "track", uri: user.uri, revision: 1 }]);
  await s.cache.waitForRevision(
    (await s.secrets.updateUserSecret(s.uuid, "token", { values: { token: "t2" } })).revision,
  );
  t.deepEqual(
    s.secret(user.uri)!.revisions.map((r) => r.revision),
    [1, 2],
  );
  // db/1 and app/0 go, and relation 0.
  await s.store.txn({
    success: [
      { type: "delete", key: keys.unit(s.uuid, "db/1") },
      { type: "delete", key: keys.unit(s.uuid, "app/0") },
      { type: "delete", key: keys.relation(s.uuid, 0) },
    ],
  });
  await s.cache.catchUp();
  await new SecretSchedule(s.store).pass(s.cache);
  await s.cache.catchUp();
  t.is(s.secret(owned), undefined, "a unit's secret goes with the unit");
  t.deepEqual((await s.store.range(keys.secretRevisionsOf(s.uuid, owned.slice(7)))).kvs, [], "with its content");
  t.deepEqual(s.secret(shared)!.consumers, {});
  t.deepEqual(s.secret(shared)!.grants, []);
  t.deepEqual(
    s.secret(user.uri)!.revisions.map((r) => r.revision),
    [2],
    "the user secret's revision only the removed unit tracked is pruned",
  );
  t.deepEqual(s.secret(user.uri)!.grants, [{ app: "app" }], "a grant to an application still there stays");
  t.is(await s.store.get(keys.secretRevision(s.uuid, user.uri.slice(7), 1)), undefined);
});

test("a secret's metadata is bounded: consumers' labels count against it, a write past it is refused before anything is written", async (t) => {
  const s = await setup(t);
  // The bound leaves room under the store's value limit for what only the controller adds.
  t.true(SECRET_LIMITS.metadataBytes + 256 * 1024 < MAX_VALUE_BYTES);
  const uri = s.newUri();
  const id = uri.slice("secret:".length);
  await s.commit("db/0", [
    { op: "add", uri, owner: "application", content: { password: "p" } },
    { op: "grant", uri, relationId: 0 },
  ]);
  const stored = async () => (await s.store.get(keys.secret(s.uuid, id)))!;
  /** Stores the secret with as many more consumers (units that read it before) as fit in `target` bytes, each with a 128-character label. */
  const withConsumers = async (target: number) => {
    const doc = JSON.parse((await stored()).value) as SecretDoc;
    const label = "l".repeat(SECRET_LIMITS.labelChars);
    for (let i = 0; ; i++) {
      doc.consumers[`a-long-application-name-of-forty-chars-x/${i}`] = { revision: 1, label };
      if (Buffer.byteLength(JSON.stringify(doc)) <= target) continue;
      delete doc.consumers[`a-long-application-name-of-forty-chars-x/${i}`];
      break;
    }
    // To the byte: a description fills what one more consumer would not.
    delete doc.description;
    doc.description = "d".repeat(target - Buffer.byteLength(JSON.stringify(doc)) - ',"description":""'.length);
    t.is(Buffer.byteLength(JSON.stringify(doc)), target);
    await s.cache.waitForRevision(await s.store.put(keys.secret(s.uuid, id), JSON.stringify(doc)));
    return doc;
  };
  // Thousands of consumers with the longest labels: what the bound is for.
  const near = await withConsumers(SECRET_LIMITS.metadataBytes - 60);
  t.true(Object.keys(near.consumers).length > 4000, `${Object.keys(near.consumers).length} consumers`);
  const before = (await stored()).modRevision;

  // app/0 reading it with a 128-character label would pass the bound: refused, with what takes the room.
  const long = await t.throwsAsync<StewardError>(
    s.commit("app/0", [{ op: "track", uri, revision: 1, label: "m".repeat(SECRET_LIMITS.labelChars) }]),
  );
  t.is(long?.reason, "secret-metadata-full");
  t.is(long?.code, "quota-exceeded");
  t.regex(
    long!.message,
    /metadata would be \d+ bytes .* more than the 1048576 a secret may hold \(consumers: \d+, grants: 1, revisions: 1\): consumers' labels count against it/,
  );
  t.is((await stored()).modRevision, before, "nothing was written");
  t.false("app/0" in s.secret(uri)!.consumers);
  // Without a label it fits.
  await s.commit("app/0", [{ op: "track", uri, revision: 1 }]);
  t.deepEqual(s.secret(uri)!.consumers["app/0"], { revision: 1 });
  t.true((await stored()).value.length <= SECRET_LIMITS.metadataBytes);

  // A document already past the bound (written before it existed) may still shrink, not grow.
  await withConsumers(SECRET_LIMITS.metadataBytes + 1000);
  await t.throwsAsync(s.commit("app/0", [{ op: "track", uri, revision: 1, label: "grows-it" }]), {
    message: /metadata would be/,
  });
  await s.commit("db/0", [{ op: "revoke", uri, relationId: 0 }]);
  t.deepEqual(s.secret(uri)!.grants, []);
});
