/**
 * A second person, end to end with two homes against a real controller: the admin's `add-user`
 * prints a registration string; `register` in an empty home pins the CA by the string's fingerprint,
 * sets the password and logs in, after which `whoami` and `models` work there. A string works once
 * (also when two registrations race), expires, and is refused for a wrong fingerprint, damaged or
 * oversized, without harming the controller; wrong secrets are throttled like failed logins.
 * `add-controller` records a controller by fingerprint; `disable-user` ends a live session on every
 * replica at once; `remove-user` takes the user and their access away. Pending registrations are in
 * controller backups (their secrets only as hashes) and never in a model's export.
 */
import test from "ava";
import { X509Certificate } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StewardError } from "../api";
import { ControllerClient, decodeRegistration, encodeRegistration } from "../api";
import { KIND, openBackup, parseSnapshot } from "../controller";
import type { BackupRecord } from "../controller";
import type { ClientConfig } from "../cli";
import { saveClientConfig } from "../cli";
import type { CliResult } from "./harness/cli";
import { cliRunner } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { rawRequest } from "./harness/http";

const repo = join(__dirname, "..", "..");
let tc: TestController;
let dir: string;
let admin: (...args: string[]) => Promise<CliResult>;
let homes = 0;

test.before(async () => {
  tc = await startTestController();
  await tc.admin.createModel("m");
  dir = await mkdtemp(join(tmpdir(), "steward-register-"));
  const adminHome = join(dir, "admin");
  const cfg: ClientConfig = {
    current: "test",
    controllers: { test: { addresses: tc.addresses, caCert: tc.caCert, user: "admin", password: tc.adminPassword } },
  };
  await saveClientConfig(adminHome, cfg);
  admin = cliRunner(adminHome, repo);
});
test.after.always(async () => {
  await tc?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A new, empty home (another person's machine). */
const newHome = (): string => join(dir, `home-${++homes}`);
const stored = async (home: string): Promise<ClientConfig> =>
  JSON.parse(await readFile(join(home, "controllers.json"), "utf8")) as ClientConfig;
const ok = (t: { is: (a: unknown, b: unknown, m?: string) => void }, r: CliResult): CliResult => {
  t.is(r.code, 0, r.stdout + r.stderr);
  return r;
};

/** `add-user NAME --format json` as the admin: the registration string. */
async function addUser(t: Parameters<typeof ok>[0], name: string, ...flags: string[]): Promise<string> {
  const r = ok(t, await admin("add-user", name, "--format", "json", ...flags));
  return (JSON.parse(r.stdout) as { registration: string }).registration;
}

test("add-user prints a registration string; register in a second home pins the CA, logs in, and whoami and models work there", async (t) => {
  const shown = ok(t, await admin("add-user", "alice"));
  t.regex(shown.stdout, /User alice added\. Send alice this string; it works once, until \d{4}-/);
  const text = /steward register (\S+)/.exec(shown.stdout)?.[1];
  t.truthy(text, shown.stdout);
  const reg = decodeRegistration(text!);
  t.like(reg, { controller: "test", user: "alice", addresses: tc.addresses });
  t.is(reg.caFingerprint, new X509Certificate(tc.caCert).fingerprint256);
  ok(t, await admin("grant", "alice", "read", "m"));
  t.is((await admin("users", "--format", "json")).code, 0);
  const pending = JSON.parse((await admin("users", "--format", "json")).stdout) as { name: string; state: string }[];
  t.is(pending.find((u) => u.name === "alice")?.state, "pending");
  // Until she registers, no password logs alice in.
  await t.throwsAsync(tc.clientFor("alice", "guessed-password").login());

  const home = newHome();
  const r = ok(t, await cliRunner(home, repo, "alice-password-1\n")("register", "--password-stdin", text!));
  t.regex(r.stdout, /Registered as alice on controller "test", which is now the current controller/);
  const cfg = await stored(home);
  t.is(cfg.current, "test");
  t.is(cfg.controllers.test!.caCert.trim(), tc.caCert.trim(), "the CA fetched is the controller's");
  t.is(cfg.controllers.test!.user, "alice");
  t.truthy(cfg.controllers.test!.token);
  const alice = cliRunner(home, repo);
  const me = ok(t, await alice("whoami"));
  t.regex(me.stdout, /Controller: +test/);
  t.regex(me.stdout, /User: +alice\n/);
  t.is((JSON.parse(ok(t, await alice("whoami", "--format", "json")).stdout) as { user: string }).user, "alice");
  t.regex(ok(t, await alice("models")).stdout, /\bm\b/);
  const self = ok(t, await alice("show-user", "--format", "json"));
  t.like(JSON.parse(self.stdout), { name: "alice", superuser: false, state: "registered", createdBy: "admin" });
  t.deepEqual((JSON.parse(self.stdout) as { models: unknown }).models, [{ name: "m", access: "read" }]);
  // Another user is a superuser's to see.
  const other = await alice("show-user", "admin");
  t.is(other.code, 1);
  t.regex(other.stderr, /not found|does not exist/i);
  const listed = await alice("users");
  t.is(listed.code, 1);
  t.regex(listed.stderr, /superuser/);
  t.truthy(await tc.clientFor("alice", "alice-password-1").login(), "the chosen password logs in");

  // The string works once: another home using it again is told so, and alice's password stands.
  const again = await cliRunner(newHome(), repo, "mallory-password\n")("register", "--password-stdin", text!);
  t.is(again.code, 1);
  t.regex(again.stderr, /already used .*it works once/);
  t.truthy(await tc.clientFor("alice", "alice-password-1").login());
  const adminView = JSON.parse(ok(t, await admin("show-user", "alice", "--format", "json")).stdout) as {
    state: string;
  };
  t.is(adminView.state, "registered");
});

test("two registrations with the same string at once: exactly one wins", async (t) => {
  const text = await addUser(t, "racer");
  const [a, b] = await Promise.all([
    cliRunner(newHome(), repo, "racer-password-a\n")("register", "--password-stdin", text),
    cliRunner(newHome(), repo, "racer-password-b\n")("register", "--password-stdin", text),
  ]);
  t.deepEqual([a.code, b.code].sort(), [0, 1], a.stderr + b.stderr);
  const loser = a.code === 0 ? b : a;
  t.regex(loser.stderr, /already used/);
  const winner = a.code === 0 ? "racer-password-a" : "racer-password-b";
  t.truthy(await tc.clientFor("racer", winner).login());
});

test("an expired string is refused by the controller; --reissue gives a new one that works", async (t) => {
  const text = await addUser(t, "late", "--expires", "1s");
  await new Promise((r) => setTimeout(r, 1500));
  const home = newHome();
  const r = await cliRunner(home, repo, "late-password-1\n")("register", "--password-stdin", text);
  t.is(r.code, 1);
  t.regex(r.stderr, /expired at .*add-user late --reissue/);
  // The client refuses locally by the string's date; the controller by its own record: change the date to reach it.
  const stale = decodeRegistration(text);
  const forged = encodeRegistration({ ...stale, expiresAt: new Date(Date.now() + 3600_000).toISOString() });
  const server = await cliRunner(home, repo, "late-password-1\n")("register", "--password-stdin", forged);
  t.is(server.code, 1);
  t.regex(server.stderr, /expired at/);
  const listed = JSON.parse(ok(t, await admin("users", "--format", "json")).stdout) as {
    name: string;
    state: string;
  }[];
  t.is(listed.find((u) => u.name === "late")?.state, "expired");
  const fresh = await addUser(t, "late", "--reissue");
  ok(t, await cliRunner(home, repo, "late-password-1\n")("register", "--password-stdin", fresh));
  const refused = await admin("add-user", "late", "--reissue");
  t.is(refused.code, 1);
  t.regex(refused.stderr, /already registered/);
  const exists = await admin("add-user", "late");
  t.is(exists.code, 1);
  t.regex(exists.stderr, /already exists/);
});

test("a wrong CA fingerprint is refused naming both, and nothing is sent or recorded", async (t) => {
  const text = await addUser(t, "careful");
  const reg = decodeRegistration(text);
  const wrongFp = "AB:".repeat(31) + "AB";
  const home = newHome();
  const r = await cliRunner(home, repo, "careful-password\n")(
    "register",
    "--password-stdin",
    encodeRegistration({ ...reg, caFingerprint: wrongFp }),
  );
  t.is(r.code, 1);
  t.true(r.stderr.includes(wrongFp), r.stderr);
  t.true(r.stderr.includes(reg.caFingerprint), r.stderr);
  await t.throwsAsync(readFile(join(home, "controllers.json")), undefined, "nothing recorded");
  // The secret was not spent: the genuine string still works.
  ok(t, await cliRunner(home, repo, "careful-password\n")("register", "--password-stdin", text));
});

test("malformed, damaged and oversized strings get a clear error; hostile bodies leave the controller up; wrong secrets are throttled", async (t) => {
  const home = newHome();
  const steward = cliRunner(home, repo, "whatever-password\n");
  const text = await addUser(t, "target");
  for (const bad of ["not a string!", "eyJ2IjoxfQ", text.slice(0, text.length / 2), "A".repeat(5000), ""]) {
    const r = await steward("register", "--password-stdin", bad);
    t.is(r.code, 1, bad.slice(0, 20));
    t.regex(r.stderr + r.stdout, /not a registration string/, bad.slice(0, 20));
  }
  const post = (body: string): ReturnType<typeof rawRequest> =>
    rawRequest(tc.addresses[0]!, tc.caCert, "POST", "/v1/register", body);
  for (const body of [
    "{",
    "[]",
    JSON.stringify({ user: "target", secret: "x".repeat(10_000), password: "pw-password" }),
    JSON.stringify({ user: "../admin", secret: "abc", password: "pw-password" }),
    JSON.stringify({ user: "target", secret: "abc", password: "pw-password", extra: 1 }),
  ]) {
    const res = await post(body);
    t.is(res.status, 400, body.slice(0, 40));
  }
  // Wrong secrets for one user: refused alike, then throttled (429) as failed logins are (20 per user by default).
  const statuses: number[] = [];
  for (let i = 0; i < 24; i++) {
    const res = await post(JSON.stringify({ user: "target", secret: `wrong${i}`, password: "pw-password" }));
    statuses.push(res.status);
    if (res.status === 401) t.is(res.body.reason, "registration-refused");
  }
  t.true(statuses.includes(401) && statuses.at(-1) === 429, statuses.join(","));
  // A user that does not exist is answered as a wrong secret is.
  const ghost = await post(JSON.stringify({ user: "ghost", secret: "abc", password: "pw-password" }));
  t.is(ghost.status, 401);
  t.is(ghost.body.reason, "registration-refused");
  t.is((await rawRequest(tc.addresses[0]!, tc.caCert, "GET", "/v1/health")).status, 200, "the controller is up");
});

test("add-controller records a controller by its CA fingerprint, refusing a wrong one; then login works", async (t) => {
  await tc.admin.createUser("bob", "bob-password-1");
  const fp = new X509Certificate(tc.caCert).fingerprint256;
  const home = newHome();
  const steward = cliRunner(home, repo, "bob-password-1\n");
  const wrong = await steward("add-controller", "lab", tc.addresses[0]!, "--ca-fingerprint", "00".repeat(32));
  t.is(wrong.code, 1);
  t.true(wrong.stderr.includes(fp), wrong.stderr);
  const r = ok(
    t,
    await steward("add-controller", "lab", tc.addresses[0]!, "--ca-fingerprint", fp.replace(/:/g, "").toLowerCase()),
  );
  t.regex(r.stdout, /Controller "lab" recorded/);
  t.is((await stored(home)).controllers.lab!.caCert.trim(), tc.caCert.trim());
  const noUser = await steward("login", "--password-stdin");
  t.is(noUser.code, 1);
  ok(t, await steward("login", "-u", "bob", "--password-stdin"));
  t.regex(ok(t, await steward("whoami")).stdout, /User: +bob/);
});

test("disable-user ends a live session at once and refuses logins until enable-user; not yourself", async (t) => {
  const text = await addUser(t, "dora");
  const home = newHome();
  ok(t, await cliRunner(home, repo, "dora-password-1\n")("register", "--password-stdin", text));
  const dora = cliRunner(home, repo);
  ok(t, await dora("whoami"));
  ok(t, await admin("grant", "dora", "read", "m"));
  // Without the stored password, the disabled token is all dora's client has.
  const cfg = await stored(home);
  delete cfg.controllers.test!.password;
  await saveClientConfig(home, cfg);
  // A live status watch on her token, open when she is disabled.
  const watcher = new ControllerClient({
    addresses: tc.addresses,
    caCert: tc.caCert,
    token: cfg.controllers.test!.token!,
  });
  t.teardown(() => watcher.close());
  let opened!: () => void;
  const open = new Promise<void>((resolve) => (opened = resolve));
  const stop = new AbortController();
  t.teardown(() => stop.abort());
  const ended = watcher
    .watchStatus("m", () => opened(), stop.signal)
    .then(
      () => undefined,
      (err: StewardError) => err,
    );
  await open;
  const r = ok(t, await admin("disable-user", "dora"));
  t.regex(r.stdout, /dora disabled/);
  const closed = await ended;
  t.is(closed?.code, "unauthorized", "her open watch is closed");
  const cut = await dora("whoami");
  t.is(cut.code, 1);
  t.regex(cut.stderr, /dora is disabled/);
  const login = await cliRunner(home, repo, "dora-password-1\n")("login", "--password-stdin");
  t.is(login.code, 1);
  t.regex(login.stderr, /disabled/);
  t.like(JSON.parse(ok(t, await admin("show-user", "dora", "--format", "json")).stdout), { disabled: true });
  t.regex(ok(t, await admin("disable-user", "dora")).stdout, /already disabled/);
  ok(t, await admin("enable-user", "dora"));
  ok(t, await cliRunner(home, repo, "dora-password-1\n")("login", "--password-stdin"));
  ok(t, await dora("whoami"));
  const self = await admin("disable-user", "admin");
  t.is(self.code, 1);
  t.regex(self.stderr, /cannot disable yourself/);
});

test.serial("two superusers disabling each other at once never leave the controller without one", async (t) => {
  await tc.admin.createUser("su-a", "su-a-password", true);
  await tc.admin.createUser("su-b", "su-b-password", true);
  const a = tc.clientFor("su-a", "su-a-password");
  const b = tc.clientFor("su-b", "su-b-password");
  await Promise.all([a.login(), b.login()]);
  // With admin disabled, su-a and su-b are the only enabled superusers.
  await a.setUserDisabled("admin", true);
  try {
    const results = await Promise.allSettled([a.setUserDisabled("su-b", true), b.setUserDisabled("su-a", true)]);
    const fulfilled = results.filter((r) => r.status === "fulfilled");
    t.is(fulfilled.length, 1, JSON.stringify(results));
    for (const r of results)
      if (r.status === "rejected")
        t.regex((r.reason as StewardError).message, /last enabled superuser|disabled/, String(r.reason));
  } finally {
    // Whichever is still enabled puts everyone back.
    for (const c of [a, b]) {
      try {
        for (const u of ["admin", "su-a", "su-b"]) await c.setUserDisabled(u, false).catch(() => undefined);
      } catch {
        /* this one was disabled */
      }
    }
  }
  t.false((await tc.admin.listUsers()).some((u) => u.disabled && u.name.startsWith("su-")));
});

test("remove-user takes the user, their tokens and access away; the name can be reused without the old access", async (t) => {
  const text = await addUser(t, "gone");
  ok(t, await admin("grant", "gone", "read", "m"));
  const home = newHome();
  ok(t, await cliRunner(home, repo, "gone-password-1\n")("register", "--password-stdin", text));
  const gone = cliRunner(home, repo);
  ok(t, await gone("models"));
  const unconfirmed = await admin("remove-user", "gone");
  t.is(unconfirmed.code, 1);
  t.regex(unconfirmed.stderr + unconfirmed.stdout, /--yes/);
  ok(t, await admin("remove-user", "gone", "--yes"));
  t.is((await gone("models")).code, 1);
  const listed = JSON.parse(ok(t, await admin("users", "--format", "json")).stdout) as { name: string }[];
  t.false(listed.some((u) => u.name === "gone"));
  ok(t, await admin("add-user", "gone", "--format", "json"));
  const shown = JSON.parse(ok(t, await admin("show-user", "gone", "--format", "json")).stdout) as { models: unknown };
  t.deepEqual(shown.models, [], "a new user of the name inherits nothing");
  const self = await admin("remove-user", "admin", "--yes");
  t.is(self.code, 1);
  t.regex(self.stderr, /cannot remove yourself/);
  const missing = await admin("remove-user", "nobody-here", "--yes");
  t.is(missing.code, 1);
});

test("a pending registration is in controller backups (as its hash only) and never in a model's export", async (t) => {
  const text = await addUser(t, "backed");
  const { secret } = decodeRegistration(text);
  t.not(KIND.registration.exported, true, "controller-wide: not exported with a model");
  const passphrase = "a passphrase of some length";
  const made = await tc.admin.call<{ record: BackupRecord }>("POST", "/v1/backups", { passphrase });
  const parts: Buffer[] = [];
  for (let i = 0; i < made.record.chunks; i++)
    parts.push(
      Buffer.from(
        (await tc.admin.call<{ data: string }>("GET", `/v1/backups/${made.record.id}?part=${i}`)).data,
        "base64",
      ),
    );
  const snap = parseSnapshot((await openBackup(Buffer.concat(parts), passphrase)).plain);
  const kv = snap.kvs.find((k) => k.key === "/registrations/backed");
  t.truthy(kv, "the registration is in the backup");
  t.regex(kv!.value, /"secretHash":"[0-9a-f]{64}"/);
  t.false(
    snap.kvs.some((k) => k.value.includes(secret)),
    "the secret itself is nowhere in the store",
  );
});
