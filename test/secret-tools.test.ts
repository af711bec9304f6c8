/**
 * The secret tools' argument handling and limits (issue 33), over the agent's real per-hook
 * HookSecrets; the controller's secret.get/secret.info answers are stood in for here (the real path,
 * hooks and all, is secrets.test.ts).
 */
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import type { SecretChange, UnitSecretView, UnitView } from "../api";
import { SECRET_LIMITS, StewardError } from "../api";
import { HookSecrets, runTool } from "../agent";
import type { HookContext } from "../agent";

const OWNED = "secret:0123456789abcdefghij";
const GRANTED = "secret:klmnopqrstuv01234567";
const VALUE = "hunter2-sekrit";

/** A hook of `web/0` whose controller holds OWNED (revision 2, web's own) and GRANTED (revisions 1-3, tracked at 1). */
function context(over: { leader?: boolean; secrets?: UnitSecretView[]; noSecrets?: boolean; refuse?: boolean } = {}) {
  const calls: { method: string; params: Record<string, unknown> }[] = [];
  const view: UnitView = {
    name: "web/0",
    app: "web",
    life: "alive",
    operator: { hash: "h", name: "op", version: "1" },
    config: {},
    leader: over.leader ?? true,
    leaderKnown: true,
    leaderSettingsVersion: 0,
    relations: [
      {
        id: 4,
        endpoint: "db",
        interface: "pg",
        role: "provider",
        remoteApp: "client",
        life: "alive",
        remoteUnits: { "client/0": 1 },
        remoteAppVersion: 0,
      },
    ],
    secrets: over.secrets ?? [
      { uri: OWNED, owner: true, latest: 2, label: "admin" },
      { uri: GRANTED, latest: 3, tracked: 1, label: "theirs" },
    ],
  };
  const call = async <T>(method: string, params: unknown): Promise<T> => {
    const p = params as Record<string, unknown>;
    calls.push({ method, params: p });
    if (over.refuse)
      throw new StewardError("forbidden", `web/0 may not read ${String(p.uri)}`, { reason: "secret-not-readable" });
    if (method === "secret.info") return { uri: p.uri, owner: "application:web", latestRevision: 2 } as T;
    const revision = p.uri === OWNED ? 2 : p.which === "latest" ? 3 : 1;
    return { uri: p.uri, revision, values: { password: `${VALUE}-${revision}` } } as T;
  };
  const secrets = new HookSecrets("web/0", () => view, call);
  const ctx: HookContext = {
    unit: "web/0",
    hook: "install",
    view: () => view,
    workloadStatus: () => ({ status: "active", message: "" }),
    setWorkloadStatus: async () => undefined,
    setAppStatus: async () => undefined,
    setVersion: async () => undefined,
    log: () => undefined,
    isLeader: async () => over.leader ?? true,
    leaderGet: async () => ({}),
    leaderSet: async () => undefined,
    relationGet: async () => ({}),
    relationSet: () => undefined,
    openPort: () => undefined,
    closePort: () => undefined,
    openedPorts: () => [],
    readiness: () => ({ ready: true, reason: "", source: "workload" as const }),
    setReadiness: async () => undefined,
    ...(over.noSecrets ? {} : { secrets }),
  };
  return { ctx, calls, pending: (): SecretChange[] => secrets.pending() ?? [] };
}

test("secret-add prints a new uri and buffers the secret; the hook reads it back and lists it at once", async (t) => {
  const { ctx, calls, pending } = context();
  const r = await runTool(ctx, "secret-add", ["--label", "db", "--rotate", "hourly", `password=${VALUE}`, "user=app"]);
  t.is(r.code, 0, r.stderr);
  const uri = r.stdout!.trim();
  t.regex(uri, /^secret:[0-9a-v]{20}$/);
  t.deepEqual(pending(), [
    { op: "add", uri, owner: "application", content: { password: VALUE, user: "app" }, label: "db", rotate: "hourly" },
  ]);
  t.is((await runTool(ctx, "secret-get", [uri, "password"])).stdout, `${VALUE}\n`);
  t.is((await runTool(ctx, "secret-get", ["--label", "db", "user"])).stdout, "app\n");
  t.deepEqual(JSON.parse((await runTool(ctx, "secret-get", [uri, "--format", "json"])).stdout!), {
    password: VALUE,
    user: "app",
  });
  t.deepEqual((await runTool(ctx, "secret-ids", [])).stdout!.trim().split("\n").sort(), [OWNED, uri].sort());
  t.like(JSON.parse((await runTool(ctx, "secret-info-get", [uri])).stdout!), {
    uri,
    label: "db",
    owner: "application:web",
    latestRevision: 1,
    rotate: "hourly",
  });
  t.deepEqual(calls, [], "nothing reached the controller: it all goes with the commit");
  const dup = await runTool(ctx, "secret-add", ["--label", "db", "a-key=1"]);
  t.is(dup.code, 1);
  t.regex(dup.stderr!, /already has a secret labelled "db"/);
});

test("an application's secret needs the leader; a unit's does not", async (t) => {
  const { ctx, pending } = context({ leader: false });
  const r = await runTool(ctx, "secret-add", ["password=x"]);
  t.is(r.code, 1);
  t.regex(r.stderr!, /only the leader of web may add an application's secret \(use --owner unit/);
  t.is((await runTool(ctx, "secret-add", ["--owner", "unit", "password=x"])).code, 0);
  t.like(pending()[0], { op: "add", owner: "unit" });
  t.is((await runTool(ctx, "secret-add", ["--owner", "model", "password=x"])).code, 2);
});

test("content beyond the limits is refused before anything is buffered, naming the limit and no value", async (t) => {
  const { ctx, calls, pending } = context();
  const big = await runTool(ctx, "secret-add", [`blob=${"x".repeat(SECRET_LIMITS.contentBytes)}`]);
  t.is(big.code, 1);
  t.regex(big.stderr!, /at most 65536 bytes \(64 KiB\)/);
  const many = await runTool(
    ctx,
    "secret-add",
    Array.from({ length: SECRET_LIMITS.keys + 1 }, (_, i) => `key${i}=v`),
  );
  t.is(many.code, 1);
  t.regex(many.stderr!, /at most 64 keys; this one has 65/);
  const badKey = await runTool(ctx, "secret-add", [`Pass_Word=${VALUE}`]);
  t.is(badKey.code, 1);
  t.regex(badKey.stderr!, /"Pass_Word" is not a secret key/);
  const notKv = await runTool(ctx, "secret-add", ["user=a", VALUE]);
  t.is(notKv.code, 2);
  t.regex(notKv.stderr!, /value argument 2 is not key=value or key#file=PATH\nusage: secret-add/);
  const flagLike = await runTool(ctx, "secret-add", [`-${VALUE}`]);
  t.is(flagLike.code, 2);
  t.regex(flagLike.stderr!, /argument 1 is not a flag it takes \(--owner, --label/);
  const setBig = await runTool(ctx, "secret-set", [OWNED, `blob=${"y".repeat(70_000)}`]);
  t.is(setBig.code, 1);
  for (const r of [big, many, badKey, notKv, flagLike, setBig]) t.false(r.stderr!.includes(VALUE.slice(0, 8)));
  t.false(big.stderr!.includes("xxxxxxxx") || setBig.stderr!.includes("yyyyyyyy"));
  t.deepEqual(pending(), []);
  t.deepEqual(calls, []);
});

test("values come from key#file=PATH relative to the hook's directory and from --file (YAML or JSON)", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "secret-tools-"));
  await writeFile(join(dir, "tls.key"), "-----BEGIN KEY-----\nabc\n");
  await writeFile(join(dir, "creds.yaml"), "user: app\npassword: from-yaml\nport: 5432\n");
  await writeFile(join(dir, "huge"), Buffer.alloc(SECRET_LIMITS.contentBytes + 1, 65));
  const { ctx, pending } = context();
  const r = await runTool(ctx, "secret-add", ["--file", "creds.yaml", "tls-key#file=tls.key", "user=override"], {
    cwd: dir,
  });
  t.is(r.code, 0, r.stderr);
  t.like(pending()[0], {
    content: { user: "override", password: "from-yaml", port: "5432", "tls-key": "-----BEGIN KEY-----\nabc\n" },
  });
  const huge = await runTool(ctx, "secret-add", ["blob#file=huge"], { cwd: dir });
  t.is(huge.code, 1);
  t.regex(huge.stderr!, /huge \(the value of blob\) is 65537 bytes: a secret's content may be at most 65536 bytes/);
  const missing = await runTool(ctx, "secret-add", ["blob#file=nope"], { cwd: dir });
  t.is(missing.code, 1);
  t.regex(missing.stderr!, /cannot read nope \(the value of blob\): ENOENT/);
  const piped = await runTool(ctx, "secret-set", [OWNED, "--file", "-"], { stdin: `password: ${VALUE}\n` });
  t.is(piped.code, 0, piped.stderr);
  t.like(pending()[1], { op: "set", uri: OWNED, content: { password: VALUE } });
  const garbled = await runTool(ctx, "secret-set", [OWNED, "--file", "-"], { stdin: `password: [${VALUE}\n` });
  t.is(garbled.code, 1);
  t.is(garbled.stderr, "secret-set: the standard input is not YAML or JSON\n");
  await writeFile(join(dir, "list.json"), "[1,2]");
  t.regex((await runTool(ctx, "secret-add", ["--file", "list.json"], { cwd: dir })).stderr!, /must hold a map/);
});

test("--expire takes a time or a duration and --rotate a policy; anything else is misuse", async (t) => {
  const { ctx, pending } = context();
  const before = Date.now();
  t.is((await runTool(ctx, "secret-add", ["--expire", "2h", "a-key=1"])).code, 0);
  const at = Date.parse((pending()[0] as { expireAt: string }).expireAt);
  t.true(at >= before + 7_200_000 && at <= Date.now() + 7_200_000);
  for (const args of [
    ["--expire", "tomorrow"],
    ["--expire", "2001-01-01T00:00:00Z"],
    ["--rotate", "fortnightly"],
  ]) {
    const r = await runTool(ctx, "secret-add", [...args, "a-key=1"]);
    t.is(r.code, 2, args.join(" "));
    t.regex(r.stderr!, /usage: secret-add/);
  }
});

test("secret-set publishes a revision the owner reads back in the same hook; only the owner may set", async (t) => {
  const { ctx, calls, pending } = context();
  t.is((await runTool(ctx, "secret-get", [OWNED, "password"])).stdout, `${VALUE}-2\n`);
  t.is((await runTool(ctx, "secret-set", [OWNED, "password=new-one"])).code, 0);
  t.is((await runTool(ctx, "secret-get", ["--label", "admin", "password"])).stdout, "new-one\n");
  t.is((await runTool(ctx, "secret-set", ["--label", "admin", "--rotate", "daily"])).code, 0);
  t.is((await runTool(ctx, "secret-set", [OWNED, "--label", "root"])).code, 0);
  t.deepEqual(pending(), [
    { op: "set", uri: OWNED, content: { password: "new-one" } },
    { op: "set", uri: OWNED, rotate: "daily" },
    { op: "set", uri: OWNED, label: "root" },
  ]);
  t.is(calls.length, 1, "only the first read asked the controller");
  const theirs = await runTool(ctx, "secret-set", [GRANTED, "password=x"]);
  t.is(theirs.code, 1);
  t.regex(theirs.stderr!, /web\/0 does not manage secret:klmnopqrstuv01234567: only its owner does/);
  t.is((await runTool(ctx, "secret-set", [OWNED])).code, 2);
});

test("a consumer reads its tracked revision, --peek the latest without tracking it, --refresh the latest and tracks it", async (t) => {
  const { ctx, calls, pending } = context();
  t.is((await runTool(ctx, "secret-get", [GRANTED, "password"])).stdout, `${VALUE}-1\n`);
  t.is((await runTool(ctx, "secret-get", ["--label", "theirs", "password"])).stdout, `${VALUE}-1\n`);
  t.is(calls.length, 1, "a second read in the hook answers the same revision without asking again");
  t.deepEqual(pending(), [], "it tracks revision 1 already: nothing to record");
  t.is((await runTool(ctx, "secret-get", [GRANTED, "--peek", "password"])).stdout, `${VALUE}-3\n`);
  t.deepEqual(pending(), []);
  t.is((await runTool(ctx, "secret-get", [GRANTED, "--refresh", "password"])).stdout, `${VALUE}-3\n`);
  t.deepEqual(pending(), [{ op: "track", uri: GRANTED, revision: 3 }]);
  // After the refresh the hook reads what it moved to; naming it keeps that revision.
  t.is((await runTool(ctx, "secret-get", [GRANTED, "--label", "db-creds"])).stdout, `password: ${VALUE}-3\n`);
  t.deepEqual(pending(), [{ op: "track", uri: GRANTED, revision: 3, label: "db-creds" }]);
  t.deepEqual(
    calls.map((c) => c.params.which),
    ["tracked", "latest", "latest"],
  );
  const nokey = await runTool(ctx, "secret-get", [GRANTED, "user"]);
  t.is(nokey.code, 1);
  t.regex(nokey.stderr!, /has no key "user" \(keys: password\)/);
  t.is((await runTool(ctx, "secret-get", [GRANTED, "--peek", "--refresh"])).code, 2);
});

test("a first read of a secret the view does not list asks the controller, and its refusal fails the tool", async (t) => {
  const { ctx, pending } = context({ secrets: [], refuse: true });
  const r = await runTool(ctx, "secret-get", [GRANTED]);
  t.is(r.code, 1);
  t.regex(r.stderr!, /^secret-get: web\/0 may not read secret:klmnopqrstuv01234567/);
  t.deepEqual(pending(), []);
  const byLabel = await runTool(ctx, "secret-get", ["--label", "nope"]);
  t.is(byLabel.code, 1);
  t.regex(byLabel.stderr!, /knows no secret labelled "nope"/);
  t.is((await runTool(ctx, "secret-get", ["secret:short"])).code, 2);
});

test("secret-grant and secret-revoke name one of the unit's relations and a unit on its other side", async (t) => {
  const { ctx, pending } = context();
  t.is((await runTool(ctx, "secret-grant", [OWNED, "--relation", "4"])).code, 0);
  t.is((await runTool(ctx, "secret-grant", [OWNED, "-r", "db:4", "--unit", "client/0"])).code, 0);
  t.is((await runTool(ctx, "secret-revoke", ["--label", "admin", "--relation", "4"])).code, 0);
  t.deepEqual(pending(), [
    { op: "grant", uri: OWNED, relationId: 4 },
    { op: "grant", uri: OWNED, relationId: 4, unit: "client/0" },
    { op: "revoke", uri: OWNED, relationId: 4 },
  ]);
  const unknown = await runTool(ctx, "secret-grant", [OWNED, "--relation", "9"]);
  t.is(unknown.code, 1);
  t.regex(unknown.stderr!, /relation 9 does not exist for web\/0 \(known: db:4\)/);
  t.regex(
    (await runTool(ctx, "secret-grant", [OWNED, "--relation", "4", "--unit", "other/0"])).stderr!,
    /not a unit of client/,
  );
  t.is((await runTool(ctx, "secret-grant", [OWNED])).code, 2);
  t.is((await runTool(ctx, "secret-grant", [GRANTED, "--relation", "4"])).code, 1, "only its owner grants it");
});

test("secret-remove drops a secret or one revision; the removed secret is gone for the rest of the hook", async (t) => {
  const { ctx, pending } = context();
  t.is((await runTool(ctx, "secret-remove", [OWNED, "--revision", "1"])).code, 0);
  t.is((await runTool(ctx, "secret-remove", [OWNED, "--revision", "one"])).code, 2);
  t.is((await runTool(ctx, "secret-remove", [OWNED])).code, 0);
  t.deepEqual(pending(), [
    { op: "remove", uri: OWNED, revision: 1 },
    { op: "remove", uri: OWNED },
  ]);
  t.is((await runTool(ctx, "secret-ids", [])).stdout, "");
});

test("outside a hook the secret tools refuse, and each answers --help", async (t) => {
  const { ctx } = context({ noSecrets: true });
  const r = await runTool(ctx, "secret-add", ["a-key=1"]);
  t.is(r.code, 1);
  t.regex(r.stderr!, /only from a hook or an action/);
  for (const tool of [
    "secret-add",
    "secret-set",
    "secret-get",
    "secret-info-get",
    "secret-ids",
    "secret-grant",
    "secret-revoke",
    "secret-remove",
  ]) {
    const help = await runTool(ctx, tool, ["--help"]);
    t.is(help.code, 0);
    t.true(help.stdout!.startsWith(`usage: ${tool}`));
  }
});
