/**
 * Config values are bounded (per value and per application) and refused with 400 naming the key and
 * the limit; data too large for the store is refused naming what the user sent, never a store key.
 */
import test from "ava";
import type { Bundle, StewardError } from "../api";
import { CONFIG_TOTAL_LIMIT_BYTES, CONFIG_VALUE_LIMIT_BYTES, MAX_OPERATOR_YAML_BYTES } from "../api";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";

let tc: TestController;
/** An operator with six string options, enough to pass the per-application total with values under the per-value limit. */
let wide: string;
test.before(async () => {
  tc = await startTestController();
  await tc.admin.createModel("m");
  const options = ["a", "b", "c", "d", "e", "f"]
    .map((k) => `  ${k}: { type: string, default: "", description: option ${k} }`)
    .join("\n");
  wide = (await tc.admin.uploadOperator(bundle(`name: wide\nversion: "1"\nconfig:\n${options}\n`))).hash;
});
test.after.always(async () => {
  await tc?.close();
});

function bundle(operatorYaml: string): Bundle {
  return {
    files: [
      { path: "operator.yaml", mode: 0o644, content: Buffer.from(operatorYaml).toString("base64") },
      { path: "hooks/install", mode: 0o755, content: Buffer.from("#!/bin/sh\nexit 0\n").toString("base64") },
    ],
  };
}

test("a config value over the per-value limit is refused at deploy and at update, naming the key and the limit", async (t) => {
  const huge = "x".repeat(900 * 1024);
  const atDeploy = await t.throwsAsync<StewardError>(
    tc.admin.deploy("m", { name: "w1", operator: wide, units: 0, config: { a: huge } }),
  );
  t.is(atDeploy?.code, "config-invalid");
  t.regex(
    atDeploy!.message,
    new RegExp(
      `config "a" of w1: is ${900 * 1024} bytes long; a config value may be at most ${CONFIG_VALUE_LIMIT_BYTES} bytes`,
    ),
  );
  const created = await t.throwsAsync<StewardError>(tc.admin.getApplication("m", "w1"));
  t.is(created?.code, "not-found", "nothing was deployed");

  await tc.admin.deploy("m", { name: "w2", operator: wide, units: 0, config: { a: "small" } });
  const atUpdate = await t.throwsAsync<StewardError>(
    tc.admin.updateApplication("m", "w2", { config: { b: "y".repeat(CONFIG_VALUE_LIMIT_BYTES + 1) } }),
  );
  t.is(atUpdate?.code, "config-invalid");
  t.regex(atUpdate!.message, /config "b" of w2: .* at most 65536 bytes/);
  t.is((await tc.admin.getApplication("m", "w2")).config.a, "small");
  // Multi-byte characters count as bytes, not characters.
  const wideChars = await t.throwsAsync<StewardError>(
    tc.admin.updateApplication("m", "w2", { config: { c: "é".repeat(CONFIG_VALUE_LIMIT_BYTES / 2 + 1) } }),
  );
  t.is(wideChars?.code, "config-invalid");
  // At the limit is fine.
  await tc.admin.updateApplication("m", "w2", { config: { c: "z".repeat(CONFIG_VALUE_LIMIT_BYTES) } });
});

test("config values over the per-application total are refused naming the limit and the largest keys", async (t) => {
  const v = "v".repeat(60 * 1024);
  await tc.admin.deploy("m", { name: "w3", operator: wide, units: 0, config: { a: v, b: v, c: v } });
  const err = await t.throwsAsync<StewardError>(tc.admin.updateApplication("m", "w3", { config: { d: v, e: v } }));
  t.is(err?.code, "config-invalid");
  t.regex(
    err!.message,
    new RegExp(
      `config of w3 would be \\d+ bytes in all; an application's config may hold at most ${CONFIG_TOTAL_LIMIT_BYTES} bytes`,
    ),
  );
  t.regex(err!.message, /"d"|"e"|"a"/);
  const unchanged = (await tc.admin.getApplication("m", "w3")).config;
  t.is(unchanged.a, v);
  t.is(unchanged.d, "", "nothing was changed");
  const atDeploy = await t.throwsAsync<StewardError>(
    tc.admin.deploy("m", { name: "w4", operator: wide, units: 0, config: { a: v, b: v, c: v, d: v, e: v } }),
  );
  t.is(atDeploy?.code, "config-invalid");
  t.regex(atDeploy!.message, /at most 262144 bytes/);
});

test("metadata too large for the store is refused naming operator.yaml, not a store key", async (t) => {
  // operator.yaml's own size limit (checked before parsing) refuses it before the store's would.
  const description = "d".repeat(1600 * 1024);
  const err = await t.throwsAsync<StewardError>(
    tc.admin.uploadOperator(bundle(`name: chatty\nversion: "1"\ndescription: ${description}\n`)),
  );
  t.is(err?.code, "operator-invalid");
  t.regex(err!.message, new RegExp(`operator\\.yaml.*it may be at most ${MAX_OPERATOR_YAML_BYTES} bytes`));
  t.false(/\/(operators|blobs|models)\//.test(err!.message), err!.message);
});
