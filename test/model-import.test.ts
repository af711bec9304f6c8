/**
 * What `import-model` accepts and refuses, through the CLI and the REST API of real controllers:
 * a format-1 file is upgraded (databags split from their versions, `unit-ports` renamed) and only
 * that model is written; malformed, truncated, oversized, future-version and prototype-polluting
 * documents get a 400 naming what is wrong, nothing is half-made, and the controller keeps answering.
 */
import test from "ava";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { CONTROLLER_TLS_NAME } from "../api";
import { saveClientConfig } from "../cli";
import { cliRunner } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { allReady, startTestController } from "./harness/controller";
import { recordDir, recorderVariant } from "./harness/operators";

type Doc = { format: string; version: number; source: { revision: number }; documents: Record<string, Record<string, unknown>>; versions: { revision: number; bags: Record<string, number> }; operators: Record<string, unknown> };

let a: TestController;
let b: TestController;
let steward: ReturnType<typeof cliRunner>;
let work: string;
let exported: Doc;

test.before(async () => {
  [a, b] = await Promise.all([startTestController(), startTestController()]);
  work = await mkdtemp(join(tmpdir(), "steward-imp-"));
  await saveClientConfig(work, { current: "a", controllers: {
    a: { addresses: a.addresses, caCert: a.caCert, user: "admin", password: a.adminPassword },
    b: { addresses: b.addresses, caCert: b.caCert, user: "admin", password: b.adminPassword },
  } });
  steward = cliRunner(work, work);
  // Two units of a peer application: unit and application databags, a leader, leader data, a port.
  const dir = await recorderVariant({ name: "peer", peers: { ring: "ring" } });
  await writeFile(join(dir, "dispatch"), (await readFile(join(dir, "dispatch"), "utf8")) + `
if [ "$hook" = "leader-elected" ]; then leader-set token="t-$me"; fi
if [ "$hook" = "start" ]; then open-port 9000/tcp; fi
if [ -n "\${STEWARD_RELATION_ID:-}" ] && [ "$(is-leader)" = "true" ]; then relation-set --app ring=from-$me; fi
`, { mode: 0o755 });
  await a.admin.createModel("src");
  await a.admin.deploy("src", { name: "peer", operator: await a.upload(dir), units: 2, config: { "record-dir": await recordDir(), "set-marker": true } });
  await a.waitForUnits("src", allReady(2), "2 units active", 60_000);
  const out = await steward("export-model", "src", "-o", "src.steward.gz");
  if (out.code !== 0) throw new Error(out.stderr);
  exported = JSON.parse(gunzipSync(await readFile(join(work, "src.steward.gz"))).toString("utf8")) as Doc;
  // Another model on the target, which no import may touch.
  await b.admin.createModel("bystander");
});
test.after.always(async () => { await Promise.all([a?.close(), b?.close()]); });

/** The same model in format 1: databags with their versions inline, ports under their store name. */
function toV1(doc: Doc): Record<string, unknown> {
  const documents: Record<string, Record<string, unknown>> = { ...doc.documents };
  const inline = (kind: string, key: (id: string) => string): void => {
    if (documents[kind]) documents[kind] = Object.fromEntries(Object.entries(documents[kind]).map(([id, data]) => [id, { data, version: doc.versions.bags[key(id)] }]));
  };
  inline("relation-data", (id) => id);
  inline("leader-data", (id) => `leader/${id}`);
  if (documents.ports) { documents["unit-ports"] = documents.ports; delete documents.ports; }
  const { versions: _, ...rest } = doc;
  return { ...rest, version: 1, documents };
}

const post = (body: unknown, query = ""): Promise<{ code?: string; message?: string }> =>
  b.admin.call("POST", `/v1/models/import${query}`, body).then((r) => r as { code?: string }, (e: unknown) => e as { code: string; message: string });

test.serial("a format-1 file is upgraded on import, and only that model is written", async (t) => {
  t.log(`export of a 2-unit model: ${gzipSync(JSON.stringify(exported)).length} bytes gzipped`);
  t.truthy(exported.documents.ports && exported.documents["relation-data"] && exported.documents["leader-data"]);
  const bystander = await b.admin.call<Doc>("GET", "/v1/models/bystander/export");
  await writeFile(join(work, "v1.steward.gz"), gzipSync(JSON.stringify(toV1(exported))));
  const r = await steward("import-model", "v1.steward.gz", "--name", "copy", "-c", "b");
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /Model "copy" .* imported: \d+ documents, 2 units \(upgraded from format version 1\)/);
  // Read back at once: the bags are served at the versions the file gave (agents compare them).
  const back = await b.admin.call<Doc>("GET", "/v1/models/copy/export");
  for (const [id, v] of Object.entries(exported.versions.bags)) t.is(back.versions.bags[id], v, `version of ${id}`);
  t.deepEqual(back.documents["relation-data"], exported.documents["relation-data"]);
  t.deepEqual(back.documents["leader-data"], exported.documents["leader-data"]);
  t.deepEqual(back.documents.ports, exported.documents.ports, "unit-ports became ports");
  t.is((back.documents.model![""] as { name: string }).name, "copy");
  const after = await b.admin.call<Doc>("GET", "/v1/models/bystander/export");
  t.deepEqual(after.documents, bystander.documents, "the other model is untouched");
});

test.serial("refusals name what is wrong, write nothing, and the controller keeps answering", async (t) => {
  const models = async (): Promise<string[]> => (await b.admin.listModels()).map((m) => m.name).sort();
  const before = await models();
  const fresh = (): Doc => JSON.parse(JSON.stringify({ ...exported, documents: { ...exported.documents, model: { "": { ...(exported.documents.model![""] as object), uuid: "11111111-2222-4333-8444-555555555555", name: "hostile" } } } })) as Doc;
  const cases: [string, unknown, RegExp][] = [
    ["an array", [1, 2], /not a JSON object/],
    ["another format", { ...fresh(), format: "juju" }, /"format" must be "steward-model"/],
    ["a future version", { ...fresh(), version: 99 }, /format version 99 is newer than this controller reads \(1 to 2\)/],
    ["a version that is not a number", { ...fresh(), version: "2" }, /"version" must be a whole number/],
    ["truncated: no documents", (() => { const d: Partial<Doc> = fresh(); delete d.documents; return d; })(), /"documents" must be an object/],
    ["no model", { ...fresh(), documents: { app: {} } }, /the model itself\) is missing/],
    ["an unknown kind", { ...fresh(), documents: { ...fresh().documents, secrets: {} } }, /unknown kind of document "secrets"/],
    ["presence (not exported)", { ...fresh(), documents: { ...fresh().documents, presence: { "0": {} } } }, /unknown kind of document "presence"/],
    ["an id reaching another key", { ...fresh(), documents: { ...fresh().documents, app: { "web/../../users/x": {} } } }, /id that is not valid for that kind/],
    ["a constructor key", { ...fresh(), documents: { ...fresh().documents, app: { peer: { constructor: { prototype: { polluted: true } } } } } }, /"constructor" .*not allowed/],
    ["a unit on a machine it does not carry", (() => { const d = fresh(); d.documents.machine = {}; return d; })(), /is on machine "\d+", which the export does not carry/],
    ["a leader that is not a unit", (() => { const d = fresh(); d.documents.leader = { peer: { unit: "other/0", since: "x" } }; return d; })(), /the leader of "peer" is not one of its units/],
    ["a bundle not matching its hash", (() => { const d = fresh(); const [h] = Object.keys(d.operators); d.operators[h!] = { files: [{ path: "x", content: "" }] }; return d; })(), /does not have the content its hash names|operator bundle/],
    ["a bad name", fresh(), /not a valid name|name/],
  ];
  for (const [what, body, message] of cases) {
    const res = await post(body, what === "a bad name" ? "?name=Not_A_Name!" : "");
    t.is(res.code, "invalid-request", what);
    t.regex(res.message ?? "", message, what);
  }
  t.is(({} as Record<string, unknown>).polluted, undefined, "Object.prototype untouched");
  // Raw bodies: a __proto__ key, broken JSON, and more than the limit.
  for (const [what, body, message] of [
    ["__proto__", `{"format":"steward-model","version":2,"__proto__":{"polluted":true}}`, /__proto__.{0,4} is not allowed/],
    ["broken JSON", JSON.stringify(fresh()).slice(0, 500), /not valid JSON/],
  ] as const) {
    const res = await raw(body);
    t.is(res.status, 400, what);
    t.regex(res.text, message, what);
  }
  const big = await raw(`{"format":"steward-model","pad":"${"x".repeat(65 * 1024 * 1024)}"}`);
  t.is(big.status, 400);
  t.regex(big.text, /too large/);
  // The uuid of a model already here, under a new name.
  const dup = await post(exported, "?name=dup");
  t.is(dup.code, "already-exists"); // "copy" kept the source's uuid
  t.regex(dup.message ?? "", /uuid .* already exists/);
  t.deepEqual(await models(), before, "nothing was half-made");
  t.truthy((await b.admin.status("bystander")).model.name);
});

/** A POST with a body sent as it is (the client would parse or refuse it first). */
async function raw(body: string): Promise<{ status: number; text: string }> {
  const token = await b.admin.login();
  const { request } = await import("node:https");
  const url = new URL(`https://${b.addresses[0]}/v1/models/import`);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", ca: b.caCert, servername: CONTROLLER_TLS_NAME, headers: { "content-type": "application/json", authorization: `Bearer ${token}` } }, (res) => {
      let text = "";
      res.on("data", (d: Buffer) => { text += d.toString(); });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

test.serial("export needs admin on the model, import a superuser", async (t) => {
  await a.admin.createUser("writer", "writer-password-1");
  // Not a local model: only superusers may write to those.
  await a.admin.createModel("plain", undefined, "manual");
  await a.admin.grant("plain", "writer", "write");
  const writer = a.clientFor("writer", "writer-password-1");
  const exp = await writer.call("GET", "/v1/models/plain/export").catch((e: unknown) => e as { code: string });
  t.is((exp as { code: string }).code, "forbidden");
  await a.admin.grant("plain", "writer", "admin");
  const doc = await writer.call<Doc>("GET", "/v1/models/plain/export");
  t.is(doc.version, 2);
  const imp = await writer.call("POST", "/v1/models/import?name=by-writer", doc).catch((e: unknown) => e as { code: string });
  t.is((imp as { code: string }).code, "forbidden");
});
