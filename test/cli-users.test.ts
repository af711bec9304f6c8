/**
 * `steward logout`, `change-password` and `revoke` through the CLI runner, against a real
 * controller; passwords only ever come from standard input.
 */
import test from "ava";
import { X509Certificate } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import type { StewardError } from "../api";
import type { ClientConfig, ControllerEntry } from "../cli";
import { saveClientConfig } from "../cli";
import { cliRunner } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { rawRequest } from "./harness/http";

const repo = join(__dirname, "..", "..");
let tc: TestController;
let dir: string;
test.before(async () => {
  tc = await startTestController();
  await tc.admin.createModel("m");
  dir = await mkdtemp(join(tmpdir(), "steward-cli-users-"));
});
test.after.always(async () => {
  await tc?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A STEWARD_HOME whose current controller is the test controller, as `user`. */
async function homeFor(
  name: string,
  entry: Partial<ControllerEntry> & { user: string; password: string },
): Promise<string> {
  const home = join(dir, name);
  const cfg: ClientConfig = {
    current: "t",
    controllers: { t: { addresses: tc.addresses, caCert: tc.caCert, ...entry } },
  };
  await saveClientConfig(home, cfg);
  return home;
}
const storedEntry = async (home: string): Promise<ControllerEntry> =>
  (JSON.parse(await readFile(join(home, "controllers.json"), "utf8")) as ClientConfig).controllers.t!;
const tokenWorks = async (token: string): Promise<boolean> =>
  (await rawRequest(tc.addresses[0]!, tc.caCert, "GET", "/v1/models", undefined, { authorization: `Bearer ${token}` }))
    .status === 200;

async function addUser(name: string, password: string): Promise<void> {
  await tc.admin.createUser(name, password, false);
  await tc.admin.grant("m", name, "read");
}

test("steward logout revokes the stored token and forgets the credentials", async (t) => {
  await addUser("lou", "lou-password");
  const token = await tc.clientFor("lou", "lou-password").login();
  const home = await homeFor("lou", { user: "lou", password: "lou-password", token });
  const steward = cliRunner(home, repo);
  t.is((await steward("models")).code, 0);
  const r = await steward("logout");
  t.is(r.code, 0, r.stdout + r.stderr);
  t.regex(r.stdout, /Logged out of "t"/);
  t.false(await tokenWorks(token));
  const entry = await storedEntry(home);
  t.is(entry.token, undefined);
  t.is(entry.password, undefined);
  const after = await steward("models");
  t.is(after.code, 1);
  t.regex(after.stderr, /log in/);
});

test("steward logout refuses to forget a generated admin password without --force", async (t) => {
  const token = await tc.clientFor("admin", tc.adminPassword).login();
  const home = await homeFor("admin-generated", {
    user: "admin",
    password: tc.adminPassword,
    generatedPassword: true,
    token,
  });
  const steward = cliRunner(home, repo);
  const r = await steward("logout");
  t.is(r.code, 1);
  t.regex(r.stdout + r.stderr, /generated at bootstrap .* --force/);
  t.true(await tokenWorks(token), "nothing was revoked");
  t.is((await steward("logout", "--force")).code, 0);
  t.false(await tokenWorks(token));
});

test("steward change-password reads the new password from stdin, ends old tokens and logs in again", async (t) => {
  await addUser("cpw", "cpw-password");
  const oldToken = await tc.clientFor("cpw", "cpw-password").login();
  const home = await homeFor("cpw", { user: "cpw", password: "cpw-password", token: oldToken });
  const r = await cliRunner(home, repo, "cpw-new-password\n")("change-password");
  t.is(r.code, 0, r.stdout + r.stderr);
  t.regex(r.stdout, /Password of cpw changed/);
  t.false(await tokenWorks(oldToken));
  const entry = await storedEntry(home);
  t.is(entry.password, "cpw-new-password");
  t.true(await tokenWorks(entry.token!));
  t.is((await cliRunner(home, repo)("models")).code, 0);
  const tooShort = await cliRunner(home, repo, "short\n")("change-password");
  t.is(tooShort.code, 1);
  t.regex(tooShort.stdout + tooShort.stderr, /at least 8 characters/);
});

test("steward change-password USER lets a superuser reset another's password, not a plain user", async (t) => {
  await addUser("reset-me", "reset-me-password");
  await addUser("plain", "plain-password");
  const victimToken = await tc.clientFor("reset-me", "reset-me-password").login();
  const plainHome = await homeFor("plain", { user: "plain", password: "plain-password" });
  const refused = await cliRunner(plainHome, repo, "hijacked-password\n")("change-password", "reset-me");
  t.is(refused.code, 1);
  t.regex(refused.stderr, /superuser/);
  t.true(await tokenWorks(victimToken));
  const adminHome = await homeFor("admin", { user: "admin", password: tc.adminPassword });
  const r = await cliRunner(adminHome, repo, "reset-me-new-password\n")("change-password", "reset-me");
  t.is(r.code, 0, r.stdout + r.stderr);
  t.false(await tokenWorks(victimToken));
  const err = await t.throwsAsync<StewardError>(tc.clientFor("reset-me", "reset-me-password").login());
  t.is(err?.code, "unauthorized");
  t.truthy(await tc.clientFor("reset-me", "reset-me-new-password").login());
  t.is((await storedEntry(adminHome)).password, tc.adminPassword, "the admin's own stored password is unchanged");
});

test("steward revoke USER MODEL takes away access; revoking again says there is none", async (t) => {
  await addUser("rev", "rev-password");
  const rev = tc.clientFor("rev", "rev-password");
  t.truthy(await rev.status("m"));
  const adminHome = await homeFor("admin-revoke", { user: "admin", password: tc.adminPassword });
  const steward = cliRunner(adminHome, repo);
  const r = await steward("revoke", "rev", "m");
  t.is(r.code, 0, r.stdout + r.stderr);
  t.regex(r.stdout, /Revoked rev's access to m/);
  const err = await t.throwsAsync<StewardError>(rev.status("m"));
  t.is(err?.code, "not-found", "without access the model is answered as unknown");
  const again = await steward("revoke", "rev", "m");
  t.is(again.code, 1);
  t.regex(again.stderr, /user "rev" has no access to this model/);
});

test("the controller's layout is a superuser's: others get its name, version, addresses and CA fingerprint, from the API and show-controller", async (t) => {
  await addUser("viewer", "viewer-password");
  const fingerprint = new X509Certificate(tc.caCert).fingerprint256;
  const token = await tc.clientFor("viewer", "viewer-password").login();
  const r = await rawRequest(tc.addresses[0]!, tc.caCert, "GET", "/v1/controller", undefined, {
    authorization: `Bearer ${token}`,
  });
  t.is(r.status, 200);
  t.deepEqual(Object.keys(r.body).sort(), ["addresses", "caFingerprint", "name", "uuid", "version"]);
  t.is(r.body.caFingerprint, fingerprint);
  t.deepEqual(r.body.addresses, tc.addresses);
  const full = await tc.admin.controllerInfo();
  t.is(full.caFingerprint, fingerprint);
  t.true(full.cluster.members.length > 0 && full.replicas.length > 0, "a superuser sees the cluster");
  await t.throwsAsync(tc.clientFor("viewer", "viewer-password").controllerInfo(), {
    message: /only a controller superuser sees the controller's replicas/,
  });

  const viewer = cliRunner(await homeFor("viewer", { user: "viewer", password: "viewer-password" }), repo);
  const shown = await viewer("show-controller");
  t.is(shown.code, 0, shown.stderr);
  t.true(shown.stdout.includes(`CA fingerprint (SHA-256): ${fingerprint}`), shown.stdout);
  t.true(shown.stdout.includes(tc.addresses[0]!));
  t.notRegex(shown.stdout, /Quorum keeper|Spare hosts/);
  const admin = cliRunner(await homeFor("admin-show", { user: "admin", password: tc.adminPassword }), repo);
  const whole = await admin("show-controller");
  t.is(whole.code, 0, whole.stderr);
  t.regex(whole.stdout, /Quorum keeper: /);
});
