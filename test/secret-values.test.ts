/**
 * A secret's values as the CLI takes them, without a controller: from arguments, `key#file=`, `--file`
 * (YAML, JSON) and standard input (key=value lines, YAML, JSON); refusals that never repeat a value;
 * the config option type `secret` (operator.yaml and values); the web console taking no values; the
 * console keeping lines with values out of its saved history.
 */
import test from "ava";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Readable } from "node:stream";
import type { Bundle } from "../api";
import { checkConfigValue, parseOperatorYaml, validateBundle } from "../api";
import type { StewardContext } from "../cli";
import { carriesSecretValues, parseValuesText, readSecretValues, restrictedRefusal } from "../cli";
import { operatorYamlWith, yamlProblem } from "./harness/operators";

let dir: string;
test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), "steward-secret-values-"));
});
test.after.always(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const ctx = (stdin = ""): StewardContext =>
  ({
    stdin: Readable.from([stdin]),
    stdout: new PassThrough(),
    stderr: new PassThrough(),
    env: { HOME: dir },
    cwd: dir,
  }) as unknown as StewardContext;

/** The usage error's message, or "accepted" with the values. */
async function refusal(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => "accepted",
    (e: Error) => e.message,
  );
}

const SECRET = "s3cr3t-Value-9f2";

test("values from arguments, key#file=, --file (YAML and JSON) and standard input (lines, YAML, JSON) merge", async (t) => {
  await writeFile(join(dir, "cert.pem"), "-----BEGIN CERT-----\nabc\n");
  await writeFile(join(dir, "more.yaml"), "port: 5432\nhost: db.example\n");
  await writeFile(join(dir, "more.json"), '{"region": "eu"}');
  t.deepEqual(
    await readSecretValues(
      ctx("token=a=b\n# a comment\n\npassword=" + SECRET + "\n"),
      ["user=admin", "cert#file=cert.pem", "-"],
      "more.yaml",
    ),
    {
      user: "admin",
      cert: "-----BEGIN CERT-----\nabc\n",
      token: "a=b",
      password: SECRET,
      port: "5432",
      host: "db.example",
    },
    "a file's content is taken as it is; the first = splits key from value",
  );
  t.deepEqual(await readSecretValues(ctx('{"token": "x1y"}'), ["-"], "more.json"), { token: "x1y", region: "eu" });
  t.deepEqual(await readSecretValues(ctx("token: |\n  two\n  lines\n"), ["-"], undefined), { token: "two\nlines\n" });
  t.is(await readSecretValues(ctx(), [], undefined), undefined, "nothing given: no values");
});

test("refusals name the argument, key, file or line and never a value", async (t) => {
  const cases: [Promise<unknown>, RegExp][] = [
    [readSecretValues(ctx(), [SECRET], undefined), /value argument 1 is not key=value, key#file=PATH or -/],
    [readSecretValues(ctx(), ["token=a", `token=${SECRET}`], undefined), /key "token" is given twice/],
    [readSecretValues(ctx(), ["Bad_Key=" + SECRET], undefined), /"Bad_Key" is not a secret key/],
    [readSecretValues(ctx(), ["ab=" + SECRET], undefined), /"ab" is not a secret key/],
    [readSecretValues(ctx(), ["token#file=missing.txt"], undefined), /token#file: cannot read .*missing\.txt/],
    [readSecretValues(ctx(), [], "nope.yaml"), /--file: cannot read .*nope\.yaml/],
    [readSecretValues(ctx(`{"token": "${SECRET}",}`), ["-"], undefined), /standard input is not a valid JSON map/],
    [
      readSecretValues(ctx(`token: [${SECRET}\n`), ["-"], undefined),
      /standard input is not key=value lines, YAML or JSON/,
    ],
    [readSecretValues(ctx(`- ${SECRET}\n`), ["-"], undefined), /must hold a map of key to value/],
    [
      readSecretValues(ctx(`token:\n  nested: ${SECRET}\n`), ["-"], undefined),
      /the value of "token" must be text, not object/,
    ],
    [readSecretValues(ctx(""), ["-"], undefined), /standard input holds no values/],
    [readSecretValues(ctx("a=1"), ["-", "-"], undefined), /- \(standard input\) may be given once/],
    [
      readSecretValues(ctx(), ["token=" + "x".repeat(64 * 1024 - 5 + 1)], undefined),
      /at most 65536 bytes \(64 KiB\); this one is 65537/,
    ],
  ];
  for (const [p, want] of cases) {
    const message = await refusal(p);
    t.regex(message, want);
    t.false(message.includes(SECRET), `no value in: ${message}`);
  }
  t.is(
    await refusal(readSecretValues(ctx(), ["token=" + "x".repeat(64 * 1024 - 5)], undefined)),
    "accepted",
    "64 KiB exactly",
  );
});

test("parseValuesText: key=value lines, YAML and JSON; numbers and booleans as their text", (t) => {
  t.deepEqual(
    parseValuesText("a-key = v1\nother=v=2\n", "f"),
    { "a-key": " v1", other: "v=2" },
    "a value is kept as typed",
  );
  t.deepEqual(parseValuesText("n: 3\nok: true\n", "f"), { n: "3", ok: "true" });
  t.deepEqual(parseValuesText('{"n": 3}', "f"), { n: "3" });
});

test("config option type secret: declared without a default, its value a secret uri", (t) => {
  const yaml = operatorYamlWith("config");
  const meta = parseOperatorYaml(yaml("  api-key:\n    type: secret\n    description: The token.\n"));
  t.deepEqual(meta.config["api-key"], { type: "secret", description: "The token." });
  t.regex(
    yamlProblem(yaml("  api-key:\n    type: secret\n    default: secret:0123456789abcdefghij\n")),
    /"config.api-key.default" a secret option has no default/,
  );
  t.regex(yamlProblem(yaml("  k:\n    type: password\n")), /must be one of string, int, float, boolean, secret/);
  t.is(checkConfigValue("secret", "secret:0123456789abcdefghij"), undefined);
  for (const bad of [
    "0123456789abcdefghij",
    "secret:short",
    "secret:0123456789ABCDEFGHIJ",
    "secret:0123456789abcdefghiz",
    7,
  ])
    t.regex(checkConfigValue("secret", bad) ?? "", /must be a secret's uri, secret:<20 characters>/, String(bad));
});

test("an operator may have hooks/secret-changed and the other secret hooks as files", (t) => {
  const file = (path: string, content: string, mode = 0o755): Bundle["files"][number] => ({
    path,
    mode,
    content: Buffer.from(content).toString("base64"),
  });
  const meta = file("operator.yaml", 'name: op\nversion: "1"\n', 0o644);
  for (const hook of ["secret-changed", "secret-rotate", "secret-expired", "secret-remove"])
    t.is(validateBundle({ files: [meta, file(`hooks/${hook}`, "#!/bin/sh\n")] }).name, "op", hook);
});

test("the web console takes no values (they would pass through the controller host) and no key#file or stdin", (t) => {
  for (const words of [
    ["add-secret", "x", "token=abc"],
    ["add-secret", "x", "token#file=/etc/shadow"],
    ["update-secret", "x", "-"],
    ["add-secret", "x", "--file", "v.yaml"],
  ])
    t.regex(restrictedRefusal(words) ?? "", /needs the steward CLI on your own machine/, words.join(" "));
  t.is(restrictedRefusal(["update-secret", "x", "--description", "the payments token"]), undefined);
  t.is(restrictedRefusal(["update-secret", "x", "--name=y"]), undefined);
  for (const name of ["secrets", "show-secret", "grant-secret", "revoke-secret", "remove-secret"])
    t.is(restrictedRefusal([name, "x"]), undefined, name);
});

test("the console keeps lines that give values out of its saved history", (t) => {
  t.true(carriesSecretValues("add-secret api token=abc"));
  t.true(carriesSecretValues("steward update-secret api token=abc --description d"));
  t.false(carriesSecretValues("add-secret api --file v.yaml"));
  t.false(carriesSecretValues("add-secret api token#file=v.txt"));
  t.false(carriesSecretValues("update-secret api --name=other"));
  t.false(carriesSecretValues("config web greeting=hi"));
});
