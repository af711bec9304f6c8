/**
 * User secrets through the `steward` CLI against a real local controller (issue 33): added from
 * arguments, a file and standard input; listed and shown without values; revealed to their creator and
 * a superuser only; updated to revision 2; granted and revoked; removed; wrong arguments refused with
 * what to fix and never a value. And the end to end: a user secret granted to an application is read
 * through its config option of type secret by its operator, which moves to a new revision on
 * secret-changed (the fixture reports a hash of the token, never the token).
 */
import test from "ava";
import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SecretInfo, StewardError } from "../api";
import type { ClientConfig } from "../cli";
import { saveClientConfig } from "../cli";
import type { CliResult } from "./harness/cli";
import { cliRunner } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { fixturesDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";

let tc: TestController;
let dir: string;
test.before(async () => {
  tc = await startTestController();
  // Not a local model: writes there need a superuser, and carol and bob are writers. The end to end
  // test runs its units in a local model of its own, as admin.
  await tc.admin.createModel("m", undefined, "ssh");
  await tc.admin.createModel("live");
  dir = await mkdtemp(join(tmpdir(), "steward-cli-secrets-"));
  for (const user of ["carol", "bob"]) {
    await tc.admin.createUser(user, `${user}-password`, false);
    await tc.admin.grant("m", user, "write");
  }
});
test.after.always(async () => {
  await tc?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The CLI as `user` (admin is a superuser), in model m, reading `stdin` when given. */
async function as(user: string, stdin?: string): Promise<(...args: string[]) => Promise<CliResult>> {
  const home = join(dir, `home-${user}`);
  const password = user === "admin" ? tc.adminPassword : `${user}-password`;
  const cfg: ClientConfig = {
    current: "t",
    controllers: { t: { addresses: tc.addresses, caCert: tc.caCert, user, password, currentModel: "m" } },
  };
  await saveClientConfig(home, cfg);
  return cliRunner(home, dir, stdin);
}

const PASSWORD = "pw-Xq81-never-shown";
const TLS_KEY = "tls-key-7be0-never-shown";
const TOKEN_1 = "token-one-5fa3-never-shown";
const TOKEN_2 = "token-two-c9d1-never-shown";
const VALUES = [PASSWORD, TLS_KEY, TOKEN_1, TOKEN_2];
const hashOf = (v: string): string => createHash("sha256").update(v).digest("hex").slice(0, 16);

/** No value in what a command printed (its standard output and error). */
function noValues(t: { false(v: boolean, m?: string): void }, r: CliResult, what: string): void {
  for (const v of VALUES) t.false((r.stdout + r.stderr).includes(v), `${what} printed a value`);
}

test.serial(
  "add from arguments, a file and standard input; list and show print no value; reveal for its creator and a superuser only",
  async (t) => {
    const carol = await as("carol");
    const fromArgs = await carol("add-secret", "db-creds", "username=admin", `password=${PASSWORD}`);
    t.is(fromArgs.code, 0, fromArgs.stderr);
    t.regex(fromArgs.stdout, /^secret:[0-9a-v]{20}\n$/);
    t.regex(fromArgs.stderr, /steward grant-secret db-creds APP/);
    noValues(t, fromArgs, "add-secret");

    await writeFile(join(dir, "tls.yaml"), `key: ${TLS_KEY}\ncert: |\n  -----BEGIN CERTIFICATE-----\n  abc\n`);
    const fromFile = await carol("add-secret", "tls", "--file", "tls.yaml", "--description", "the web TLS pair");
    t.is(fromFile.code, 0, fromFile.stderr);
    const fromStdin = await (await as("carol", `token=${TOKEN_1}\n`))("add-secret", "api-token", "-");
    t.is(fromStdin.code, 0, fromStdin.stderr);
    const uri = fromStdin.stdout.trim();

    const list = await carol("secrets");
    t.is(list.code, 0, list.stderr);
    t.regex(list.stdout, /^URI\s+Name\s+Owner\s+Revision\s+Rotation\s+Readers\s+Tracking/);
    t.regex(list.stdout, new RegExp(`^${uri}\\s+api-token\\s+model\\s+1\\s+never\\s+-\\s+-\\s*$`, "m"));
    noValues(t, list, "secrets");
    const json = JSON.parse((await carol("secrets", "--format", "json")).stdout) as SecretInfo[];
    t.deepEqual(json.map((s) => s.name).sort(), ["api-token", "db-creds", "tls"]);
    noValues(t, await carol("secrets", "--format", "yaml"), "secrets --format yaml");

    const show = await carol("show-secret", "tls");
    t.is(show.code, 0, show.stderr);
    t.regex(show.stdout, /^name: tls$/m);
    t.regex(show.stdout, /^description: the web TLS pair$/m);
    t.regex(show.stdout, /^owner: model$/m);
    t.notRegex(show.stdout, /content|values/);
    noValues(t, show, "show-secret");
    t.regex((await carol("show-secret", uri)).stdout, /^name: api-token$/m, "by uri as by name");

    const revealed = await carol("show-secret", "db-creds", "--reveal", "--format", "json");
    t.is(revealed.code, 0, revealed.stderr);
    t.deepEqual((JSON.parse(revealed.stdout) as { content: unknown }).content, {
      revision: 1,
      values: { username: "admin", password: PASSWORD },
    });
    const tls = JSON.parse((await carol("show-secret", "tls", "--reveal", "--format", "json")).stdout) as {
      content: { values: Record<string, string> };
    };
    t.deepEqual(tls.content.values, { key: TLS_KEY, cert: "-----BEGIN CERTIFICATE-----\nabc\n" });

    // Bob may write to the model, but did not make it and is no superuser: metadata yes, values no.
    const bob = await as("bob");
    t.is((await bob("show-secret", "db-creds")).code, 0);
    const refused = await bob("show-secret", "db-creds", "--reveal");
    t.is(refused.code, 1);
    t.regex(refused.stderr, /^ERROR /);
    noValues(t, refused, "a refused reveal");
    const admin = await as("admin");
    const bySuperuser = await admin("show-secret", "db-creds", "--reveal");
    t.is(bySuperuser.code, 0, bySuperuser.stderr);
    t.regex(bySuperuser.stdout, new RegExp(`password: ${PASSWORD}`));
  },
);

test.serial(
  "update makes revision 2 (a new name or description alone does not), revision 1 is pruned; remove the secret",
  async (t) => {
    const carol = await as("carol");
    t.is((await carol("add-secret", "rotating", "token=first-value")).code, 0);
    const updated = await carol("update-secret", "rotating", "token=second-value");
    t.is(updated.code, 0, updated.stderr);
    t.regex(updated.stdout, /is at revision 2\./);
    t.notRegex(updated.stdout + updated.stderr, /second-value/);
    const renamed = await carol("update-secret", "rotating", "--name", "renamed", "--description", "moved on");
    t.is(renamed.code, 0, renamed.stderr);
    t.regex(renamed.stdout, /still revision 2/);
    const info = await tc.admin.showSecret("m", "renamed");
    t.like(info, { name: "renamed", description: "moved on", latestRevision: 2 });
    const shown = JSON.parse((await carol("show-secret", "renamed", "--reveal", "--format", "json")).stdout) as {
      content: unknown;
    };
    t.deepEqual(shown.content, { revision: 2, values: { token: "second-value" } });

    // Revision 1 went by itself (no unit tracks it and it is not the latest: pruned, as Juju does).
    const pruned = await carol("remove-secret", "renamed", "--revision", "1");
    t.is(pruned.code, 1);
    t.regex(pruned.stderr, /^ERROR .*revision 1/m);
    t.deepEqual(
      (await tc.admin.showSecret("m", "renamed")).revisions.map((r) => r.revision),
      [2],
    );
    const removed = await carol("remove-secret", "renamed");
    t.is(removed.code, 0, removed.stderr);
    t.regex(removed.stdout, /Removed secret renamed\./);
    const gone = await carol("show-secret", "renamed");
    t.is(gone.code, 1);
    t.regex(gone.stderr, /^ERROR .*renamed/m);
    t.false((await carol("secrets")).stdout.includes("renamed"));
  },
);

test.serial(
  "wrong arguments: unknown secret, bad key or name, no values, 64 KiB + 1 refused naming the limit; no value echoed",
  async (t) => {
    const carol = await as("carol");
    const cases: [string[], RegExp][] = [
      [["show-secret", "no-such"], /^ERROR .*no-such/m],
      [["update-secret", "no-such", "token=abc"], /^ERROR .*no-such/m],
      [["grant-secret", "no-such", "web"], /^ERROR .*no-such/m],
      [
        ["add-secret", "bad-key", `Token_X=${PASSWORD}`],
        /"Token_X" is not a secret key: use 3 to 64 lower-case letters/,
      ],
      [["add-secret", "Bad_Name", "token=abc"], /"Bad_Name" is not a secret name/],
      [["add-secret", "lonely", PASSWORD], /value argument 1 is not key=value, key#file=PATH or -/],
      [["add-secret", "empty"], /give the secret's values: key=value or key#file=PATH arguments, --file F, or -/],
      [["update-secret", "db-creds"], /give new values .*, --name or --description/],
      [["show-secret", "not a ref"], /is not a secret's name .* or its uri \(secret:<20 characters>\)/],
      [["remove-secret", "db-creds", "--revision", "0"], /invalid value for --revision/],
      [["secrets", "--format", "xml"], /--format must be tabular, json or yaml/],
      [["grant-secret", "db-creds", "Web_App"], /"Web_App" is not an application name/],
      [
        ["add-secret", "huge", `token=${PASSWORD}${"x".repeat(64 * 1024 - 5 - PASSWORD.length + 1)}`],
        /a secret's content may be at most 65536 bytes \(64 KiB\); this one is 65537/,
      ],
    ];
    for (const [args, want] of cases) {
      const r = await carol(...args);
      t.is(r.code, 1, args.join(" "));
      t.regex(r.stderr, want, args.join(" "));
      noValues(t, r, args[0]!);
    }
    // The controller holds to the same limit whatever a client checks (the CLI refused before sending).
    const err = await tc.admin.addSecret("m", "huge", { token: "x".repeat(64 * 1024) }).then(
      () => undefined,
      (e: StewardError) => e,
    );
    t.is(err?.reason, "secret-too-large");
    t.regex(err?.message ?? "", /64 KiB/);
  },
);

test.serial(
  "a user secret granted to an application is read through its config option of type secret, and again at revision 2",
  async (t) => {
    t.timeout(300_000);
    const admin = await as("admin");
    const live = (...args: string[]): Promise<CliResult> => admin(...args, "-m", "live");
    const added = await (await as("admin", `token=${TOKEN_1}\n`))("add-secret", "payments", "-", "-m", "live");
    t.is(added.code, 0, added.stderr);
    const uri = added.stdout.trim();
    const op = await tc.upload(join(fixturesDir, "operators", "api-client"));
    await tc.admin.deploy("live", { name: "shop", operator: op, units: 1 });
    await tc.waitForUnits(
      "live",
      (units) => units.some((u) => u.name === "shop/0" && u.workload.message === "set api-key to a secret's uri"),
      "shop/0 to ask for its api-key",
      90_000,
    );
    // Not a uri: refused by type; a uri of no secret of the model: refused too.
    const bad = await live("config", "shop", "api-key=payments");
    t.is(bad.code, 1);
    t.regex(bad.stderr, /must be a secret's uri, secret:<20 characters>/);
    const unknown = await live("config", "shop", "api-key=secret:0000000000000000000v");
    t.is(unknown.code, 1);
    t.regex(unknown.stderr, /this model has no secret secret:0000000000000000000v \(steward secrets lists them/);
    const granted = await live("grant-secret", "payments", "shop");
    t.is(granted.code, 0, granted.stderr);
    t.regex(granted.stdout, new RegExp(`shop may read payments \\(${uri}\\)`));
    t.is((await live("config", "shop", `api-key=${uri}`)).code, 0);
    await tc.waitForUnits(
      "live",
      (units) => units.some((u) => u.name === "shop/0" && u.workload.message === `token sha256 ${hashOf(TOKEN_1)}`),
      "shop/0 to read the token",
      90_000,
    );
    // status-set acts at once; the tracked revision is recorded with the hook's commit, a moment later.
    const trackingFirst = new RegExp(`^${uri}\\s+payments\\s+model\\s+1\\s+never\\s+shop\\s+1: shop/0\\s*$`, "m");
    const list = await eventually(
      "shop/0 tracking revision 1",
      async () => {
        const r = await live("secrets");
        return trackingFirst.test(r.stdout) ? r : undefined;
      },
      30_000,
      500,
    );
    t.regex(list.stdout, trackingFirst);

    // A new revision: the unit gets secret-changed and moves to it; the list says who tracks which.
    const updated = await (await as("admin", `token=${TOKEN_2}\n`))("update-secret", "payments", "-", "-m", "live");
    t.is(updated.code, 0, updated.stderr);
    await tc.waitForUnits(
      "live",
      (units) => units.some((u) => u.name === "shop/0" && u.workload.message === `token sha256 ${hashOf(TOKEN_2)}`),
      "shop/0 to read revision 2",
      90_000,
    );
    const tracked = await eventually(
      "shop/0 tracking revision 2",
      async () => {
        const r = await live("secrets");
        return new RegExp(`\\s2\\s+never\\s+shop\\s+2: shop/0\\s*$`, "m").test(r.stdout) ? r : undefined;
      },
      30_000,
      500,
    );
    noValues(t, tracked, "secrets");
    const status = await live("status", "--format", "json");
    noValues(t, status, "status");

    const revoked = await live("revoke-secret", "payments", "shop");
    t.is(revoked.code, 0, revoked.stderr);
    t.regex(revoked.stdout, /shop may no longer read payments/);
    t.regex((await live("secrets")).stdout, new RegExp(`^${uri}\\s+payments\\s+model\\s+2\\s+never\\s+-`, "m"));
  },
);
