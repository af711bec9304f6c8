/**
 * Credentials for substrates: stored sealed by a real local controller (bootstrapped by the CLI),
 * shown back only by what is not secret, used by models, and never found in plain text anywhere on
 * disk (the store's files, the controller's log, the client's config) or in any API answer.
 */
import test from "ava";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StewardError } from "../api";
import { ControllerClient } from "../api";
import { loadClientConfig } from "../cli";
import { Sealer } from "../controller";
import type { CliResult } from "./harness/cli";
import { bootstrapOnFreePort, cliRunner } from "./harness/cli";
import { killProcessesUnder } from "./harness/processes";

let home: string;
let steward: (...args: string[]) => Promise<CliResult>;
// Distinctive values: any copy of them in plain text is found by the scans below.
const awsSecret = `SECRET${randomBytes(15).toString("hex")}`;
const awsSecret2 = `SECRET${randomBytes(15).toString("hex")}`;
const vspherePassword = `PASSWORD${randomBytes(12).toString("hex")}`;
const sshKey = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const sshKeyLine = sshKey.split("\n")[1]!;
const secrets = [awsSecret, awsSecret2, vspherePassword, sshKeyLine];

test.before(async () => {
  home = await mkdtemp(join(tmpdir(), "steward-cred-"));
  steward = cliRunner(home, home);
  const boot = await bootstrapOnFreePort(steward, "cred");
  if (boot.code !== 0) throw new Error(`bootstrap failed: ${boot.stdout}${boot.stderr}`);
});
test.after.always(async () => {
  await steward?.("destroy-controller", "cred", "--yes", "--timeout", "20");
  await killProcessesUnder(home);
  await rm(home, { recursive: true, force: true });
});

const ok = (t: { is(a: unknown, b: unknown, m?: string): void }, r: CliResult): CliResult => {
  t.is(r.code, 0, r.stdout + r.stderr);
  return r;
};

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

test.serial(
  "credentials are added from files and the environment, listed without secrets, and used by models",
  async (t) => {
    const awsFile = join(home, "aws-credentials");
    await writeFile(
      awsFile,
      `[default]\naws_access_key_id = AKIAOTHER0000000000\naws_secret_access_key = nope\n\n[prod]\naws_access_key_id = AKIAEXAMPLE1234WXYZ\naws_secret_access_key = ${awsSecret}\n`,
    );
    ok(t, await steward("add-credential", "prod", "--substrate", "aws", "--file", awsFile, "--profile", "prod"));
    const again = ok(
      t,
      await steward("add-credential", "prod", "--substrate", "aws", "--file", awsFile, "--profile", "prod"),
    );
    t.regex(again.stdout, /already holds these values; nothing changed/);

    // Other values for an existing name are refused unless replaced on purpose.
    const env = { ...process.env };
    const fromEnv = cliRunner(home, home);
    process.env.AWS_ACCESS_KEY_ID = "AKIAEXAMPLE1234ABCD";
    process.env.AWS_SECRET_ACCESS_KEY = awsSecret2;
    try {
      const clash = await fromEnv("add-credential", "prod", "--substrate", "aws", "--from-env");
      t.is(clash.code, 1);
      t.regex(clash.stderr, /already exists with other values: give --replace/);
      ok(t, await fromEnv("add-credential", "staging", "--substrate", "aws", "--from-env"));
    } finally {
      process.env.AWS_ACCESS_KEY_ID = env.AWS_ACCESS_KEY_ID;
      process.env.AWS_SECRET_ACCESS_KEY = env.AWS_SECRET_ACCESS_KEY;
      if (env.AWS_ACCESS_KEY_ID === undefined) delete process.env.AWS_ACCESS_KEY_ID;
      if (env.AWS_SECRET_ACCESS_KEY === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
    }

    const vsFile = join(home, "vcenter.yaml");
    await writeFile(vsFile, `user: administrator@vsphere.local\npassword: ${vspherePassword}\n`);
    ok(t, await steward("add-credential", "lab", "--substrate", "vsphere", "--file", vsFile));
    const keyFile = join(home, "id_ed25519");
    await writeFile(keyFile, sshKey, { mode: 0o600 });
    ok(t, await steward("add-credential", "hosts", "--substrate", "ssh", "--file", keyFile, "--user", "root"));

    const listed = ok(t, await steward("credentials", "--format", "json"));
    const creds = JSON.parse(listed.stdout) as {
      name: string;
      substrate: string;
      attributes: Record<string, string>;
    }[];
    t.deepEqual(
      creds.map((c) => [c.name, c.substrate, c.attributes]),
      [
        ["hosts", "ssh", { user: "root" }],
        ["lab", "vsphere", { user: "administrator@vsphere.local" }],
        ["prod", "aws", { "access-key-id": "…WXYZ" }],
        ["staging", "aws", { "access-key-id": "…ABCD" }],
      ],
      "only what is not secret, identifiers masked",
    );
    const table = ok(t, await steward("credentials"));
    t.regex(table.stdout, /prod\s+aws\s+access-key-id=…WXYZ/);

    // A model names its credential; a credential for another substrate is refused.
    const wrong = await steward("add-model", "shop", "--substrate", "ssh", "--credential", "prod");
    t.is(wrong.code, 1);
    t.regex(wrong.stderr, /credential "prod" is for aws, but the model's substrate is ssh/);
    const missing = await steward("add-model", "shop", "--substrate", "ssh", "--credential", "nope");
    t.regex(missing.stderr, /credential "nope" does not exist: add it with steward add-credential nope/);
    ok(t, await steward("add-model", "shop", "--substrate", "ssh", "--credential", "hosts"));
    const models = JSON.parse(ok(t, await steward("models", "--format", "json")).stdout) as {
      name: string;
      credential?: string;
    }[];
    t.is(models.find((m) => m.name === "shop")?.credential, "hosts");
    t.deepEqual(
      (
        JSON.parse(ok(t, await steward("credentials", "--format", "json")).stdout) as {
          name: string;
          models: string[];
        }[]
      ).find((c) => c.name === "hosts")?.models,
      ["shop"],
    );

    // In use, it stays; once the model is gone it can go.
    const inUse = await steward("remove-credential", "hosts");
    t.is(inUse.code, 1);
    t.regex(inUse.stderr, /used by model shop: destroy it first/);
    ok(t, await steward("destroy-model", "shop", "--force", "--yes"));
    ok(t, await steward("remove-credential", "hosts"));
    t.regex((await steward("remove-credential", "hosts")).stderr, /credential "hosts" not found/);
  },
);

test.serial("bad credential input is refused with what is wrong, and nothing is stored", async (t) => {
  const f = join(home, "bad.json");
  await writeFile(f, JSON.stringify({ "access-key-id": "AKIA1", region: "eu-west-1" }));
  const r = await steward("add-credential", "bad", "--substrate", "aws", "--file", f);
  t.is(r.code, 1);
  t.regex(r.stderr, /attributes\.secret-access-key" is required for an aws credential/);
  t.regex(
    r.stderr,
    /attributes\.region" is not an attribute of an aws credential \(known: access-key-id, secret-access-key, session-token\)/,
  );
  const output = (r: CliResult): string => r.stdout + r.stderr;
  t.regex(output(await steward("add-credential", "bad", "--substrate", "aws")), /Give --file F or --from-env/);
  t.regex(
    output(await steward("add-credential", "bad", "--substrate", "gcp", "--file", f)),
    /--substrate.*ssh.*aws.*vsphere.*kubernetes/s,
  ); // the kinds that take a credential, in api/substrate-kinds.ts order
  t.regex(
    output(await steward("add-credential", "bad", "--substrate", "ssh", "--file", join(home, "absent"))),
    /cannot read .*absent/,
  );
  t.false((await steward("credentials")).stdout.includes("bad"));
});

test.serial("no secret is anywhere on disk or in an answer in plain text", async (t) => {
  const hits: string[] = [];
  for (const file of await filesUnder(home)) {
    if (/aws-credentials$|vcenter\.yaml$|id_ed25519$/.test(file)) continue; // the user's own input files
    const bytes = await readFile(file);
    for (const s of secrets) if (bytes.includes(s)) hits.push(`${file} holds ${s.slice(0, 10)}…`);
  }
  t.deepEqual(hits, [], "the store's files, the controller's log and the client's config hold no secret");
  const answers = [
    await steward("credentials", "--format", "json"),
    await steward("models", "--format", "json"),
    await steward("show-controller"),
    await steward("status", "--format", "json"),
  ];
  for (const a of answers) for (const s of secrets) t.false((a.stdout + a.stderr).includes(s));
});

test("a sealed value opens only for its purpose, with the same CA key, unaltered", (t) => {
  const key = generateKeyPairSync("ec", { namedCurve: "P-256" })
    .privateKey.export({ type: "pkcs8", format: "pem" })
    .toString();
  const a = Sealer.fromCaKey(key);
  const sealed = a.seal("credential/prod", "s3cret");
  t.false(sealed.includes("s3cret"));
  t.is(
    Sealer.fromCaKey(key).open("credential/prod", sealed),
    "s3cret",
    "another replica with the same CA key opens it",
  );
  t.throws(() => a.open("credential/other", sealed), { message: /does not open/ }, "copied under another name");
  const other = Sealer.fromCaKey(
    generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  );
  t.throws(() => other.open("credential/prod", sealed), { message: /does not open/ });
  const raw = Buffer.from(sealed.slice(3), "base64url");
  raw[raw.length - 20]! ^= 1;
  t.throws(() => a.open("credential/prod", `v1.${raw.toString("base64url")}`), { message: /does not open/ });
  t.throws(() => a.open("credential/prod", "v9.abc"), { message: /not in a format/ });
});

test.serial("only controller superusers can see, add or remove credentials", async (t) => {
  ok(t, await cliRunner(home, home, "bob-password-1\n")("add-user", "bob"));
  const entry = (await loadClientConfig(home)).controllers.cred!;
  const bob = new ControllerClient({
    addresses: entry.addresses,
    caCert: entry.caCert,
    user: "bob",
    password: "bob-password-1",
  });
  try {
    for (const attempt of [
      () => bob.listCredentials(),
      () => bob.putCredential("mine", "vsphere", { user: "u", password: "p" }),
      () => bob.removeCredential("prod"),
    ]) {
      const err = await t.throwsAsync<StewardError>(attempt());
      t.is(err?.code, "forbidden");
    }
  } finally {
    bob.close();
  }
  const names = (JSON.parse(ok(t, await steward("credentials", "--format", "json")).stdout) as { name: string }[]).map(
    (c) => c.name,
  );
  t.true(names.includes("prod") && !names.includes("mine"), "nothing was added or removed");
});
