/**
 * Operator uploads as a hostile user would try them: who may upload, bounds on operator.yaml, the
 * content hash's encoding, paths that would escape or confuse the operator directory, and the
 * quota and collection of stored operators.
 */
import test from "ava";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bundle, BundleFileEntry, StewardError } from "../api";
import { bundleHash, readOperatorDir } from "../api";
import { unpackBundle } from "../agent";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { rawRequest } from "./harness/http";

let tc: TestController;
let token: string;
let motd: Bundle;
test.before(async () => {
  tc = await startTestController();
  token = await tc.admin.login();
  await tc.admin.createModel("m");
  motd = (await readOperatorDir(join(operatorsDir, "motd"))).bundle;
});
test.after.always(async () => {
  await tc?.close();
});

const b64 = (text: string | Buffer): string => Buffer.from(text).toString("base64");
const upload = (bundle: unknown) =>
  rawRequest(tc.addresses[0]!, tc.caCert, "POST", "/v1/operators", JSON.stringify(bundle), {
    authorization: `Bearer ${token}`,
  });
/** motd with operator.yaml replaced by `yaml`. */
const withYaml = (yaml: string): Bundle => ({
  files: motd.files.map((f) => (f.path === "operator.yaml" ? { ...f, content: b64(yaml) } : f)),
});
/** motd plus `extra` files. */
const withFiles = (...extra: BundleFileEntry[]): Bundle => ({ files: [...motd.files, ...extra] });

test("uploading an operator needs write access to some model", async (t) => {
  await tc.admin.createUser("nobody", "nobody-password", false);
  const nobody = tc.clientFor("nobody", "nobody-password");
  const refused = await t.throwsAsync<StewardError>(nobody.uploadOperator(motd));
  t.is(refused?.code, "forbidden");
  t.regex(refused!.message, /user nobody has write access to no model; uploading an operator needs write access/);
  // Not a local model: only superusers may write to those.
  await tc.admin.createModel("shared", undefined, "manual");
  await tc.admin.grant("shared", "nobody", "read");
  t.is(
    (await t.throwsAsync<StewardError>(nobody.uploadOperator(motd)))?.code,
    "forbidden",
    "read access is not enough",
  );
  await tc.admin.grant("shared", "nobody", "write");
  t.regex((await nobody.uploadOperator(motd)).hash, /^v2-[0-9a-f]{64}$/);
});

test("an operator.yaml nested too deep is refused with 400 naming the limit, and the controller keeps answering", async (t) => {
  const deep = withYaml(`name: motd\nversion: "1"\nsummary: ${"[".repeat(100_000)}${"]".repeat(100_000)}\n`);
  const dashes = withYaml(`name: motd\nversion: "1"\nsummary: ${"- ".repeat(100_000)}x\n`);
  // Several at once with a health check sent beside them, which must be answered too.
  const [a, b, c, health] = await Promise.all([
    upload(deep),
    upload(dashes),
    upload(deep),
    rawRequest(tc.addresses[0]!, tc.caCert, "GET", "/v1/health"),
  ]);
  for (const r of [a, b, c]) {
    t.is(r.status, 400);
    t.is(r.body.code, "operator-invalid");
    t.regex(r.body.message!, /operator\.yaml: nests deeper than 64 levels \(the operator\.yaml nesting limit\)/);
  }
  t.is(health.status, 200);
  t.true(health.body.ok);
});

test("the reported 1.9 MiB million-deep operator.yaml is refused by its size, before parsing", async (t) => {
  const r = await upload(
    withYaml(`name: motd\nversion: "1"\nsummary: ${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}\n`),
  );
  t.is(r.status, 400);
  t.regex(
    r.body.message!,
    /operator\.yaml: is \d+ bytes; it may be at most 262144 bytes \(the operator\.yaml size limit\)/,
  );
});

test("an alias bomb in operator.yaml is refused with 400 naming the alias limit", async (t) => {
  // Each level doubles: 2^20 nodes from 40 aliases (under the count bound: the expansion guard catches it).
  const levels = Array.from({ length: 20 }, (_, i) => `l${i + 1}: &l${i + 1} [*l${i}, *l${i}]`).join("\n");
  const r = await upload(withYaml(`name: motd\nversion: "1"\nl0: &l0 [x, x]\n${levels}\n`));
  t.is(r.status, 400);
  t.is(r.body.code, "operator-invalid");
  t.regex(r.body.message!, /the operator\.yaml alias limit/);
  const many = Array.from({ length: 70 }, (_, i) => `k${i}: *a`).join("\n");
  const r2 = await upload(withYaml(`name: motd\nversion: "1"\nbase: &a x\n${many}\n`));
  t.is(r2.status, 400);
  t.regex(r2.body.message!, /at most 64 alias uses/);
});

/** The first hash format, kept here to show the collision it allowed. */
function legacyBundleHash(bundle: Bundle): string {
  const h = createHash("sha256");
  for (const f of [...bundle.files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    h.update(`${f.path}\0${(f.mode & 0o777).toString(8)}\0`);
    h.update(Buffer.from(f.content, "base64"));
    h.update("\0");
  }
  return h.digest("hex");
}

test("two bundles that shared a hash under the old encoding have different hashes, and both upload as themselves", async (t) => {
  // One file `a` whose content spells a second file's framing, against the two files it mimics.
  const merged = withFiles({ path: "a", mode: 0o644, content: b64("1\x00b\x00644\x002") });
  const split = withFiles({ path: "a", mode: 0o644, content: b64("1") }, { path: "b", mode: 0o644, content: b64("2") });
  t.is(legacyBundleHash(merged), legacyBundleHash(split), "the old encoding could not tell them apart");
  t.not(bundleHash(merged), bundleHash(split));
  const [m, s] = [await upload(merged), await upload(split)];
  t.is(m.status, 201);
  t.is(s.status, 201);
  t.is(m.body.hash, bundleHash(merged));
  t.is(s.body.hash, bundleHash(split));
});

test("an old-format hash is refused with a message saying to re-upload", async (t) => {
  const old = legacyBundleHash(motd);
  const deploy = await t.throwsAsync<StewardError>(tc.admin.deploy("m", { name: "old", operator: old, units: 0 }));
  t.is(deploy?.code, "invalid-request");
  t.regex(deploy!.message, /operator hash format v1 is no longer accepted: re-upload from the directory/);
  const get = await rawRequest(tc.addresses[0]!, tc.caCert, "GET", `/v1/operators/${old}`, undefined, {
    authorization: `Bearer ${token}`,
  });
  t.is(get.status, 400);
  t.is(get.body.message, "operator hash format v1 is no longer accepted: re-upload from the directory");
});

test("bundles with paths that are not plain relative paths are refused naming the path", async (t) => {
  const file = (path: string): BundleFileEntry => ({ path, mode: 0o644, content: b64("x") });
  const cases: [BundleFileEntry[], RegExp][] = [
    [[file("lib/a\0.sh")], /lib\/a\\u0000\.sh: contains a control character \(such as NUL\)/],
    [[file("/etc/motd")], /\/etc\/motd: is an absolute path/],
    [[file("lib/../../escape")], /lib\/\.\.\/\.\.\/escape: is not a plain relative path/],
    [[file("lib"), file("lib/helper.sh")], /lib: is a file, but lib\/helper\.sh needs a directory of that name/],
  ];
  for (const [extra, message] of cases) {
    const r = await upload(withFiles(...extra));
    t.is(r.status, 400, extra[0]!.path);
    t.is(r.body.code, "operator-invalid");
    t.regex(r.body.message!, message);
  }
});

test("a path with a part longer than agents can write (255 bytes) is refused at upload naming it; 255 bytes upload and unpack", async (t) => {
  const file = (path: string): BundleFileEntry => ({ path, mode: 0o644, content: b64("x") });
  const dir = await mkdtemp(join(tmpdir(), "steward-long-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const long of [`lib/${"a".repeat(300)}`, `${"d".repeat(256)}/x.sh`, `lib/${"é".repeat(128)}`]) {
    const r = await upload(withFiles(file(long)));
    t.is(r.status, 400, long);
    t.is(r.body.code, "operator-invalid");
    t.true(r.body.message!.startsWith(`${long}: has a part of `), r.body.message);
    t.regex(r.body.message!, /at most 255 bytes: shorten it/);
    // The agent refuses it by the same rule, before writing anything.
    await t.throwsAsync(unpackBundle(withFiles(file(long)), join(dir, "refused")), { message: /at most 255 bytes/ });
  }
  // The longest part an agent's file system holds is accepted, and an agent writes it.
  const longest = withFiles(file(`lib/${"b".repeat(255)}`), file(`${"é".repeat(127)}/x`));
  const r = await upload(longest);
  t.true(r.status === 201 || r.status === 200, JSON.stringify(r.body));
  await unpackBundle(longest, join(dir, "unpacked"));
  t.is(await readFile(join(dir, "unpacked", "lib", "b".repeat(255)), "utf8"), "x");
});

test.serial(
  "stored operators have a quota, and operators no application uses are deleted after a grace period",
  async (t) => {
    const quotaBytes = 400 * 1024;
    const own = await startTestController({ operators: { quotaBytes, unusedGraceSeconds: 3 } });
    t.teardown(() => own.close());
    await own.admin.createModel("q");
    const payload = (bytes: number): BundleFileEntry => ({
      path: "payload.bin",
      mode: 0o644,
      content: randomBytes(bytes).toString("base64"),
    });
    // Uploaded then deployed at once: the grace period keeps it until the deploy uses it.
    const used = (await own.admin.uploadOperator(motd)).hash;
    await own.admin.deploy("q", { name: "kept", operator: used, units: 0 });
    const unused = (await own.admin.uploadOperator(withFiles(payload(150 * 1024)))).hash;
    const big = withFiles(payload(200 * 1024));

    const refused = await t.throwsAsync<StewardError>(own.admin.uploadOperator(big));
    t.is(refused?.code, "quota-exceeded");
    t.is(refused?.httpStatus, 413);
    t.regex(refused!.message, /over the operator quota of 409600 bytes/);
    t.regex(refused!.message, /operators\.quotaBytes in controller\.json/);

    await eventually(
      "the unused operator to be deleted",
      async () => !(await own.admin.hasOperator(unused)),
      30_000,
      250,
    );
    t.true(await own.admin.hasOperator(used), "an operator an application uses stays");
    t.is((await own.admin.uploadOperator(big)).created, true, "the space it took is free again");

    await own.admin.removeApplication("q", "kept");
    await eventually(
      "the operator of the removed application to be deleted",
      async () => !(await own.admin.hasOperator(used)),
      30_000,
      250,
    );
  },
);
