/**
 * export-model and import-model of a model that holds secrets (issue 33), through the CLI between two
 * real controllers: the export is refused without a passphrase, and with one writes each value
 * sealed to it (none in the file); the import is refused without it or with a wrong one, writing
 * nothing, and with it the values reveal on the other controller as they were.
 */
import test from "ava";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { routes } from "../api";
import type { ModelExport } from "../controller";
import { exportForReader } from "../controller";
import type { cliRunner } from "./harness/cli";
import { cliOnControllers } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";

let a: TestController;
let b: TestController;
let work: string;
let steward: ReturnType<typeof cliRunner>;
const TOKEN = `export-token-${Math.random().toString(36).slice(2, 10)}`;

test.before(async () => {
  [a, b] = await Promise.all([startTestController(), startTestController()]);
  work = await mkdtemp(join(tmpdir(), "steward-exp-sec-"));
  steward = await cliOnControllers(work, { a, b });
  await writeFile(join(work, "pass"), "a long export passphrase\n");
  await writeFile(join(work, "wrong"), "not the export passphrase\n");
});
test.after.always(async () => {
  await b?.close();
  await a?.close();
  await rm(work, { recursive: true, force: true });
});

test("a model with secrets exports only sealed to a passphrase, and imports only with it", async (t) => {
  await a.admin.createModel("keep");
  await a.admin.call(routes.addSecret, { model: "keep" }, { name: "api", values: { token: TOKEN } });

  const refused = await steward("export-model", "keep", "-o", "keep.gz");
  t.is(refused.code, 1);
  t.regex(refused.stderr, /holds 1 secret revision.*passphrase/);

  const out = await steward("export-model", "keep", "-o", "keep.gz", "--passphrase-file", "pass");
  t.is(out.code, 0, out.stderr);
  const text = gunzipSync(await readFile(join(work, "keep.gz"))).toString("utf8");
  t.false(text.includes(TOKEN), "no value in the file");
  t.false(text.includes(Buffer.from(TOKEN).toString("base64").replace(/=+$/, "")));
  t.regex(text, /"sealing":\{"kind":"passphrase"/);

  const noPass = await steward("import-model", "keep.gz", "-c", "b");
  t.is(noPass.code, 1);
  t.regex(noPass.stderr, /an export passphrase is needed/);
  const wrong = await steward("import-model", "keep.gz", "-c", "b", "--passphrase-file", "wrong");
  t.is(wrong.code, 1);
  t.regex(wrong.stderr, /wrong passphrase for this model export's secrets/);
  t.deepEqual(await b.admin.listModels(), [], "nothing imported");

  const imported = await steward("import-model", "keep.gz", "-c", "b", "--passphrase-file", "pass");
  t.is(imported.code, 0, imported.stderr);
  t.like(await b.admin.call(routes.showSecret, { model: "keep", secret: "api" }, undefined, { reveal: "true" }), {
    content: { revision: 1, values: { token: TOKEN } },
  });
});

test("a tampered secrets section is refused whole: content missing, moved to another revision, stray, or not sealed for transfer", async (t) => {
  await a.admin.createModel("tamper");
  await a.admin.call(routes.addSecret, { model: "tamper" }, { name: "one", values: { token: "first-value" } });
  await a.admin.call(routes.updateSecret, { model: "tamper", secret: "one" }, { values: { token: "second-value" } });
  await a.admin.call(routes.addSecret, { model: "tamper" }, { name: "two", values: { token: "other-value" } });
  const pass = "a long export passphrase";
  const doc = (await a.admin.call(routes.exportModelSealed, { model: "tamper" }, { passphrase: pass })) as unknown as {
    secrets: { sealing: unknown; revisions: Record<string, string> };
  };
  const refs = Object.keys(doc.secrets.revisions).sort();
  t.is(refs.length, 2, "each revision travels (a user secret's untracked older one was pruned)");
  const variant = (f: (d: typeof doc) => void): unknown => {
    const d = structuredClone(doc);
    f(d);
    return { passphrase: pass, export: d };
  };
  const cases: [string, unknown, RegExp][] = [
    ["missing", variant((d) => delete d.secrets.revisions[refs[0]!]), /has no content/],
    [
      "moved",
      variant((d) => {
        [d.secrets.revisions[refs[0]!], d.secrets.revisions[refs[1]!]] = [
          d.secrets.revisions[refs[1]!]!,
          d.secrets.revisions[refs[0]!]!,
        ];
      }),
      /does not open/,
    ],
    ["stray", variant((d) => (d.secrets.revisions["0123456789abcdefghij/1"] = "t1.abc")), /no secret lists/],
    ["own key", variant((d) => (d.secrets.sealing = { kind: "controller" })), /secrets.sealing/],
  ];
  for (const [what, body, message] of cases) {
    const err = await t.throwsAsync(b.admin.call(routes.importModel, {}, body as never), undefined, what);
    t.regex(err!.message, message, what);
  }
  t.false(
    (await b.admin.listModels()).some((m) => m.name === "tamper"),
    "nothing imported",
  );

  // A reader of format 4 or before has no secrets: refused (a migration to one fails, saying so); and
  // nothing leaves still sealed with the controller's own key.
  const written = doc as unknown as ModelExport;
  t.throws(() => exportForReader(written, 4), { message: /the model has secrets .*upgrade it first/ });
  t.throws(() => exportForReader({ ...written, secrets: { ...doc.secrets, sealing: { kind: "controller" } } }, 5), {
    message: /must be sealed for its reader/,
  });
  await b.admin.call(routes.importModel, {}, variant(() => undefined) as never);
  t.like(await b.admin.call(routes.showSecret, { model: "tamper", secret: "one" }, undefined, { reveal: "true" }), {
    content: { revision: 2, values: { token: "second-value" } },
  });
});
