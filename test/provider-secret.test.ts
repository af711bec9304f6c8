/**
 * The Pulumi `Secret` (issue 33), through the real Pulumi SDK and its dynamic-provider process against
 * a real local controller: check refuses bad values naming the field and never the value; a secret used
 * in an Application's config option of type secret is granted to it and read by its operator; the state,
 * as the engine would write it, holds no value in the clear (values an encrypted input, a salted hash
 * as an encrypted output); new values are an update making a new revision the units move to; a revision
 * made by hand and a grant revoked by hand show on refresh and the next up puts them back; a Secret
 * left out of the program is removed.
 */
import test from "ava";
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { StewardError } from "../api";
import { Application, Model, Secret } from "../provider";
import { fixturesDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { providerTestBed } from "./harness/provider-bed";

const bed = providerTestBed(test, { controllers: 1 });
const { engine, connection } = bed;
const apiClient = join(fixturesDir, "operators", "api-client");
const TOKEN_1 = "tok-1-c0ffee-d00d-4b1d";
const TOKEN_2 = "tok-2-feed-face-9e77";
const hashOf = (v: string): string => createHash("sha256").update(v).digest("hex").slice(0, 16);

function program(token: string): () => void {
  return () => {
    const model = new Model("vault", { connection: connection() });
    // A second application the Secret grants by name (it exists before the Secret: its name is an output).
    const watcher = new Application("watcher", { model, operator: apiClient, units: 0, waitFor: "none" });
    const secret = new Secret("api-token", {
      model,
      values: { token },
      description: "the payments token",
      grants: [watcher.name],
    });
    new Application("client", { model, operator: apiClient, config: { "api-key": secret.uri }, timeoutSeconds: 120 });
  };
}

const clientMessage = async (): Promise<string | undefined> =>
  (await bed.controller.admin.status("vault")).applications.client?.units["client/0"]?.workload.message;

test.serial("check refuses bad names and values naming the field, never the value; nothing is created", async (t) => {
  const r = await engine.up(() => {
    const model = new Model("bad", { connection: connection() });
    new Secret("Bad_Name", { model, values: { token: TOKEN_1 } });
    new Secret("bad-key", { model, values: { Token_X: TOKEN_1 } });
    new Secret("too-large", { model, values: { token: TOKEN_1 + "x".repeat(64 * 1024) } });
    new Secret("empty", { model, values: {} });
  });
  const message = r.errors.map((e) => e.message).join("\n");
  t.regex(message, /name: "Bad_Name" must be lower-case letters, digits and hyphens/);
  t.regex(message, /values: "Token_X" is not a secret key/);
  t.regex(message, /values: a secret's content may be at most 65536 bytes \(64 KiB\)/);
  t.regex(message, /values: a secret needs at least one key=value/);
  t.false(message.includes(TOKEN_1), "no value in the failures");
  t.deepEqual(
    r.created.filter((n) => n !== "bad"),
    [],
  );
  await engine.destroy();
});

test.serial(
  "a secret in an Application's config is granted to it and read by its operator; the state holds no value in the clear; new values are a new revision; drift shows on refresh",
  async (t) => {
    t.timeout(420_000);
    const first = await engine.up(program(TOKEN_1));
    t.deepEqual(first.errors, []);
    t.deepEqual(first.created.sort(), ["api-token", "client", "vault", "watcher"]);
    const stored = engine.get("api-token")!;
    const uri = stored.outputs.uri as string;
    t.regex(uri, /^secret:[0-9a-v]{20}$/);
    const info = await bed.controller.admin.showSecret("vault", "api-token");
    t.like(info, { uri, name: "api-token", owner: "model", latestRevision: 1, description: "the payments token" });
    t.deepEqual(info.grants.map((g) => g.app).sort(), ["client", "watcher"], "the Application granted itself");
    t.deepEqual(stored.outputs.readers, ["watcher"], "as the Secret saw them when made: client granted itself after");
    t.deepEqual(stored.outputs.grants, ["watcher"]);
    t.is(await clientMessage(), `token sha256 ${hashOf(TOKEN_1)}`, "the operator read the token through its config");
    t.deepEqual((await bed.controller.admin.revealSecret("vault", "api-token")).content.values, { token: TOKEN_1 });

    // What the engine would write: the values only as an encrypted input, never an output.
    const state = engine.persistedState();
    for (const leak of [TOKEN_1, Buffer.from(TOKEN_1).toString("base64"), hashOf(TOKEN_1)])
      t.false(state.includes(leak), `the state holds no ${leak}`);
    t.true(
      stored.secretInputs.some((p) => p === "values" || p.startsWith("values.")),
      "values are a secret input",
    );
    t.false("values" in stored.outputs, "values are no output");
    t.true(stored.secretOutputs.includes("valuesHash"), "the hash is encrypted too");
    t.false(engine.serializedProviders.get("api-token")!.includes(TOKEN_1), "nor in the serialized provider");

    const again = await engine.up(program(TOKEN_1));
    t.deepEqual([again.created, again.updated, again.replaced], [[], [], []], "the same values: no change");

    // New values: an update (never a replace: the uri stays), revision 2, which the unit moves to.
    const changed = await engine.up(program(TOKEN_2));
    t.deepEqual(changed.errors, []);
    t.deepEqual([changed.updated, changed.replaced], [["api-token"], []]);
    t.is(engine.get("api-token")!.outputs.uri, uri);
    t.is(engine.get("api-token")!.outputs.revision, 2);
    await eventually(
      "secret-changed: client/0 reads revision 2",
      async () => (await clientMessage()) === `token sha256 ${hashOf(TOKEN_2)}`,
      60_000,
    );
    t.false(engine.persistedState().includes(TOKEN_2));

    // By hand: new values (revision 3) and watcher's grant revoked; refresh shows both, the next up undoes them.
    await bed.controller.admin.updateSecret("vault", "api-token", { values: { token: "set-by-hand-1234" } });
    await bed.controller.admin.revokeSecret("vault", "api-token", ["watcher"]);
    const { drifted } = await engine.refresh();
    const props = drifted.find((d) => d.name === "api-token")?.properties ?? [];
    t.true(props.includes("revision") && props.includes("valuesHash"), props.join(", "));
    t.true(props.includes("grants") && props.includes("readers"), props.join(", "));
    const back = await engine.up(program(TOKEN_2));
    t.deepEqual(back.errors, []);
    t.true(back.updated.includes("api-token"));
    const after = await bed.controller.admin.revealSecret("vault", "api-token");
    t.deepEqual(after.content.values, { token: TOKEN_2 }, "the program's values again");
    t.is(after.latestRevision, 4);
    t.deepEqual(after.grants.map((g) => g.app).sort(), ["client", "watcher"]);
  },
);

test.serial("a Secret left out of the program is removed from the model", async (t) => {
  t.timeout(300_000);
  if (!engine.get("api-token")) await engine.up(program(TOKEN_1));
  // The Secret and the Application using it go; the model and watcher stay.
  const r = await engine.up(() => {
    const model = new Model("vault", { connection: connection() });
    new Application("watcher", { model, operator: apiClient, units: 0, waitFor: "none" });
  });
  t.deepEqual(r.errors, []);
  t.deepEqual(r.deleted.sort(), ["api-token", "client"]);
  const gone = await bed.controller.admin.showSecret("vault", "api-token").then(
    () => undefined,
    (e: StewardError) => e,
  );
  t.is(gone?.code, "not-found");
  t.deepEqual((await bed.controller.admin.listSecrets("vault")).secrets, []);
  await engine.destroy();
});
