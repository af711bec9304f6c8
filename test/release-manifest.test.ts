/**
 * Signed releases (controller/releases): a release directory signed with an ed25519 key verifies
 * against that key, and every way of changing it afterwards, signing it with another key, or
 * listing a path outside it is refused with a message that names what failed. The controller's
 * release source (AgentReleases) serves only verified releases, lists the refused ones with why,
 * and sees a release put there later at once. controller.json's release settings are checked.
 */
import test from "ava";
import { execFile } from "node:child_process";
import { appendFile, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { STEWARD_VERSION } from "../api";
import {
  AgentReleases,
  ReleaseOps,
  ReleaseRefused,
  ReleaseSource,
  createCertificateAuthority,
  generateReleaseKey,
  issueServerCertificate,
  readControllerConfig,
  releaseKeyProblem,
  signManifest,
  signRelease,
  verifyRelease,
} from "../controller";
import { AGENT_BUNDLE } from "../substrates";
import { eventually } from "./harness/eventually";
import { storeWithCache } from "./harness/state";

const run = promisify(execFile);
const key = generateReleaseKey();
const other = generateReleaseKey();

/** A small release: two bundles' files, signed as `version` with `pem`. */
async function release(root: string, version: string, pem = key.privateKeyPem): Promise<string> {
  const dir = join(root, version);
  await mkdir(join(dir, "agent-bundle"), { recursive: true });
  await mkdir(join(dir, "controller-bundle"), { recursive: true });
  await writeFile(join(dir, "agent-bundle", "main.js"), `console.log("agent ${version}");\n`);
  await writeFile(join(dir, "agent-bundle", "tool-client.js"), "module.exports = {};\n");
  await writeFile(join(dir, "controller-bundle", "main.js"), `console.log("controller ${version}");\n`);
  await signRelease(dir, version, pem);
  return dir;
}

let root: string;
test.before(async () => {
  root = await mkdtemp(join(tmpdir(), "steward-releases-"));
});
test.after.always(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

const refusal = async (p: Promise<unknown>): Promise<string> => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ReleaseRefused)) throw new Error(`expected a refusal, got ${String(err)}`);
  return err.message;
};

test("a signed release verifies against its key; the files asked for are the verified bytes", async (t) => {
  const dir = await release(join(root, "ok"), "0.2.0");
  const v = await verifyRelease(dir, [key.publicKey], { version: "0.2.0", keep: (p) => p.startsWith("agent-bundle/") });
  t.is(v.manifest.version, "0.2.0");
  t.deepEqual(
    v.manifest.files.map((f) => f.path),
    ["agent-bundle/main.js", "agent-bundle/tool-client.js", "controller-bundle/main.js"],
  );
  t.deepEqual([...v.files.keys()], ["agent-bundle/main.js", "agent-bundle/tool-client.js"]);
  t.is(v.files.get("agent-bundle/main.js")!.toString(), 'console.log("agent 0.2.0");\n');
});

test("a file changed after signing, the manifest changed, another key, or files added or missing: refused, saying which", async (t) => {
  const base = join(root, "bad");
  const sameSize = await release(base, "0.2.1");
  const f = join(sameSize, "agent-bundle", "main.js");
  await writeFile(f, (await readFile(f, "utf8")).replace("agent", "AGENT"));
  t.regex(
    await refusal(verifyRelease(sameSize, [key.publicKey])),
    /agent-bundle\/main\.js has SHA-256 [0-9a-f]{16}…, its manifest says [0-9a-f]{16}… \(changed after signing\)/,
  );

  const longer = await release(base, "0.2.2");
  await appendFile(join(longer, "controller-bundle", "main.js"), "evil();\n");
  t.regex(
    await refusal(verifyRelease(longer, [key.publicKey])),
    /controller-bundle\/main\.js is \d+ bytes, its manifest says \d+/,
  );

  const edited = await release(base, "0.2.3");
  const m = join(edited, "manifest.json");
  await writeFile(m, (await readFile(m, "utf8")).replace('"0.2.3"', '"0.2.9"'));
  t.regex(await refusal(verifyRelease(edited, [key.publicKey])), /its signature does not match manifest\.json/);

  const foreign = await release(base, "0.2.4", other.privateKeyPem);
  t.regex(
    await refusal(verifyRelease(foreign, [key.publicKey], { version: "0.2.4" })),
    new RegExp(
      `release 0\\.2\\.4 \\(.*\\) is refused: it is signed by ${other.publicKey}, which this controller does not trust \\(trusted: ${key.publicKey}\\)`,
    ),
  );
  await t.notThrowsAsync(verifyRelease(foreign, [key.publicKey, other.publicKey]), "trusted once its key is listed");

  const added = await release(base, "0.2.5");
  await writeFile(join(added, "agent-bundle", "extra.js"), "steal();\n");
  t.regex(
    await refusal(verifyRelease(added, [key.publicKey])),
    /holds files its manifest does not list: agent-bundle\/extra\.js/,
  );

  const linked = await release(base, "0.2.6");
  await symlink("/etc/passwd", join(linked, "agent-bundle", "passwd.js"));
  t.regex(await refusal(verifyRelease(linked, [key.publicKey])), /agent-bundle\/passwd\.js is a link or special file/);

  const missing = await release(base, "0.2.7");
  await rm(join(missing, "agent-bundle", "tool-client.js"));
  t.regex(
    await refusal(verifyRelease(missing, [key.publicKey])),
    /agent-bundle\/tool-client\.js, which its manifest lists, is missing/,
  );

  const unsigned = await release(base, "0.2.8");
  await rm(join(unsigned, "manifest.sig"));
  t.regex(await refusal(verifyRelease(unsigned, [key.publicKey])), /it has no manifest\.sig/);

  const renamed = await release(base, "0.2.10");
  t.regex(
    await refusal(verifyRelease(renamed, [key.publicKey], { version: "0.3.0" })),
    /its manifest says it is version 0\.2\.10/,
  );
});

test("a manifest signed by a trusted key is still checked: a path out of the release, or a wrong hash field, is refused", async (t) => {
  const dir = join(root, "hostile", "0.4.0");
  await mkdir(dir, { recursive: true });
  for (const path of ["../../etc/passwd", "/etc/passwd", "a/./b", "a//b", "x\nb"]) {
    const manifest = Buffer.from(
      JSON.stringify({
        format: "steward-release/1",
        version: "0.4.0",
        created: new Date().toISOString(),
        files: [{ path, size: 1, sha256: "0".repeat(64) }],
      }),
    );
    await writeFile(join(dir, "manifest.json"), manifest);
    await writeFile(join(dir, "manifest.sig"), JSON.stringify(signManifest(manifest, key.privateKeyPem)));
    t.regex(
      await refusal(verifyRelease(dir, [key.publicKey])),
      /manifest\.json lists a file named .*: not a plain relative path/,
      path,
    );
  }
  const manifest = Buffer.from(
    JSON.stringify({
      format: "steward-release/1",
      version: "0.4.0",
      created: "",
      files: [{ path: "a.js", size: 1, sha256: "zz" }],
    }),
  );
  await writeFile(join(dir, "manifest.json"), manifest);
  await writeFile(join(dir, "manifest.sig"), JSON.stringify(signManifest(manifest, key.privateKeyPem)));
  t.regex(await refusal(verifyRelease(dir, [key.publicKey])), /sha256 of a\.js is not 64 hex digits/);
  await writeFile(join(dir, "manifest.sig"), "not json");
  t.regex(await refusal(verifyRelease(dir, [key.publicKey])), /manifest\.sig is not JSON/);
});

test("public keys are checked, and controller.json's release settings with them", async (t) => {
  t.is(releaseKeyProblem(key.publicKey), undefined);
  t.regex(releaseKeyProblem("ssh-ed25519 AAAA")!, /is not an ed25519 public key \(ed25519:<43 base64url characters>\)/);
  t.regex(releaseKeyProblem("ed25519:short")!, /does not hold 32 bytes of key/);
  const dataDir = join(root, "controller");
  await mkdir(dataDir, { recursive: true });
  const write = (releases: unknown) =>
    writeFile(
      join(dataDir, "controller.json"),
      JSON.stringify({ name: "c", listen: { host: "127.0.0.1", port: 0 }, store: { backend: "embedded" }, releases }),
    );
  await write({ source: "/srv/releases", keys: ["ed25519:nope"] });
  await t.throwsAsync(readControllerConfig(dataDir), {
    message: /controller\.json: releases: keys: "ed25519:nope" does not hold 32 bytes/,
  });
  await write({ source: "/srv/releases" });
  await t.throwsAsync(readControllerConfig(dataDir), { message: /releases: a source needs keys/ });
  await write({ source: "relative/dir", keys: [key.publicKey] });
  await t.throwsAsync(readControllerConfig(dataDir), { message: /source must be the absolute path/ });
  await write({ source: "http://releases.example/", keys: [key.publicKey] });
  await t.throwsAsync(readControllerConfig(dataDir), {
    message: /source must be the absolute path of a directory of releases, or the https:\/\/ URL of a release index/,
  });
  await write({ source: "/srv/releases", keys: [key.publicKey], caFile: "/etc/ca.pem" });
  await t.throwsAsync(readControllerConfig(dataDir), { message: /caFile is for an https:\/\/ source/ });
  await write({ source: "/srv/releases", keys: [key.publicKey], pollSeconds: 0.5 });
  await t.throwsAsync(readControllerConfig(dataDir), {
    message: /pollSeconds must be a whole number of seconds from 1 to 86400/,
  });
  await write({ source: "/srv/releases", keys: [key.publicKey] });
  t.deepEqual((await readControllerConfig(dataDir)).releases, { source: "/srv/releases", keys: [key.publicKey] });
});

test("the release source: verified releases are held in the store and served by every replica, refused ones listed with why, a new one seen at once", async (t) => {
  const { store, cache } = await storeWithCache(t, "releases");
  const source = join(root, "source");
  await release(source, "0.1.50");
  await release(source, "0.1.51", other.privateKeyPem);
  await mkdir(join(source, ".0.1.53-copying"), { recursive: true }); // a release still being copied in
  const ops = new ReleaseOps(store);
  const own = dirname(AGENT_BUNDLE.main);
  const look = new ReleaseSource({ dir: source, keys: [key.publicKey] }, ops);
  // One replica has the source; another, on a host without it, shares only the store.
  const withSource = new AgentReleases({ own, ops, cache, bootstrapKeys: [key.publicKey], source: look });
  const without = () => new AgentReleases({ own, ops, cache, bootstrapKeys: [key.publicKey] });
  const listed = await withSource.list();
  t.deepEqual(
    listed.releases.map((r) => [r.version, r.own]),
    [
      [STEWARD_VERSION, true],
      ["0.1.50", false],
    ],
  );
  t.deepEqual(
    listed.refused.map((r) => r.version),
    ["0.1.51"],
  );
  t.notRegex(listed.refused[0]!.reason, new RegExp(root), "no path of the controller's in what users see");
  const served = await withSource.get("0.1.50");
  t.deepEqual(served.bundle.files.map((f) => f.path).sort(), ["main.js", "tool-client.js"]);
  t.deepEqual(
    (await without().get("0.1.50")).bundle,
    served.bundle,
    "the replica without the source serves the same bytes",
  );
  await t.throwsAsync(withSource.get("0.1.51"), {
    message: /holds no agent release 0\.1\.51 .*; release 0\.1\.51 is refused: it is signed by/,
  });
  // What the leader's look recorded is what a replica without the source lists.
  await ops.recordSource(await look.look());
  await eventually("the record in the cache", async () => (cache.releaseSource ? true : undefined), 5000, 20);
  t.deepEqual(
    (await without().list()).refused.map((r) => r.version),
    ["0.1.51"],
  );
  t.deepEqual(cache.releases.get("0.1.50")?.hash, served.info.hash);

  // Held releases outlive their copy in the source; a different release under a held version is refused.
  await rm(join(source, "0.1.50"), { recursive: true });
  t.deepEqual((await without().get("0.1.50")).bundle, served.bundle);
  await release(source, "0.1.50");
  await appendFile(join(source, "0.1.50", "agent-bundle", "main.js"), "// a second build under the same version\n");
  await signRelease(join(source, "0.1.50"), "0.1.50", key.privateKeyPem);
  await release(source, "0.1.52");
  const again = await withSource.list();
  t.true(
    again.releases.some((r) => r.version === "0.1.52"),
    "a release put in the source later is held at once",
  );
  t.regex(
    again.refused.find((r) => r.version === "0.1.50")?.reason ?? "",
    /release 0\.1\.50 in the source is not the release 0\.1\.50 this controller holds .*: a version is never replaced/,
  );
  t.deepEqual((await without().get("0.1.50")).bundle, served.bundle, "the release held is still the one served");
  const gone = await new ReleaseSource({ dir: join(root, "no-such-source"), keys: [key.publicKey] }, ops).look();
  t.is(gone.problem, "the release source cannot be read (ENOENT)");
});

test("an HTTPS source: releases its index lists are fetched, only once signed by a trusted key, and verified as a directory's", async (t) => {
  const { store } = await storeWithCache(t, "https-releases");
  const served = join(root, "served");
  await release(served, "0.1.70");
  await release(served, "0.1.71", other.privateKeyPem);
  await release(served, "0.1.72");
  await appendFile(join(served, "0.1.72", "agent-bundle", "main.js"), "// changed on the server after signing\n");
  await writeFile(
    join(served, "index.json"),
    JSON.stringify({ format: "steward-release-index/1", releases: ["0.1.70", "0.1.71", "0.1.72"] }),
  );
  const ca = await createCertificateAuthority("release-server");
  const cert = await issueServerCertificate(ca, ["127.0.0.1"]);
  const asked: string[] = [];
  let missingIndex = false;
  const server = createHttpsServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
    asked.push(req.url!);
    const path = join(served, decodeURIComponent(req.url!));
    if (missingIndex || !path.startsWith(served)) return void res.writeHead(404).end();
    readFile(path).then(
      (b) => res.writeHead(200).end(b),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const caFile = join(root, "release-ca.pem");
  await writeFile(caFile, ca.certPem);
  const ops = new ReleaseOps(store);
  const source = (o: { caFile?: string }) =>
    new ReleaseSource({ dir: join(root, "mirror"), keys: [key.publicKey], https: { url, ...o } }, ops);

  const untrusting = await source({}).look();
  t.regex(
    untrusting.problem ?? "",
    /the release index at https:\/\/127\.0\.0\.1:\d+ cannot be read: \/index\.json: [A-Z_]+/,
  );
  t.deepEqual(untrusting.held, [], "nothing is fetched from a server whose certificate is not trusted");

  const look = await source({ caFile }).look();
  t.is(look.problem, undefined);
  t.deepEqual(look.held, ["0.1.70"]);
  t.deepEqual(
    look.refused.map((r) => r.version),
    ["0.1.71", "0.1.72"],
  );
  t.regex(
    look.refused[0]!.reason,
    /release 0\.1\.71 is refused: it is signed by ed25519:\S+, which this controller does not trust/,
  );
  t.regex(
    look.refused[1]!.reason,
    /release 0\.1\.72 is refused: agent-bundle\/main\.js on the server is larger than the \d+ bytes its manifest says/,
  );
  t.deepEqual(
    asked.filter((p) => p.startsWith("/0.1.71/")).sort(),
    ["/0.1.71/manifest.json", "/0.1.71/manifest.sig"],
    "no file of a release signed by an untrusted key is downloaded",
  );
  const bundle = await ops.bundle((await ops.find("0.1.70"))!);
  t.is(
    Buffer.from(bundle.files.find((f) => f.path === "main.js")!.content, "base64").toString(),
    'console.log("agent 0.1.70");\n',
  );

  missingIndex = true;
  const gone = await source({ caFile }).look();
  t.regex(gone.problem ?? "", /cannot be read: \/index\.json: HTTP 404/);
  t.true((await ops.versions()).includes("0.1.70"), "what was held stays held");
});

test("the publisher's tool makes a key and signs a release that a controller trusting its key accepts", async (t) => {
  const dir = join(root, "tool");
  await mkdir(join(dir, "0.5.0", "agent-bundle"), { recursive: true });
  await writeFile(join(dir, "0.5.0", "agent-bundle", "main.js"), "console.log(1);\n");
  const tool = (...args: string[]) =>
    run(process.execPath, [join(__dirname, "..", "controller", "releases", "release-tool.js"), ...args]).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
  const keygen = await tool("keygen", join(dir, "key.pem"));
  t.is(keygen.code, 0, keygen.stderr);
  const publicKey = keygen.stdout.trim();
  t.is(releaseKeyProblem(publicKey), undefined);
  t.is((await stat(join(dir, "key.pem"))).mode & 0o777, 0o600);
  const again = await tool("keygen", join(dir, "key.pem"));
  t.is(again.code, 1);
  t.regex(again.stderr, /key\.pem exists: a key is never overwritten/);
  const signed = await tool("sign", join(dir, "0.5.0"), "0.5.0", "--key", join(dir, "key.pem"));
  t.is(signed.code, 0, signed.stderr);
  t.regex(signed.stdout, /signed release 0\.5\.0: 1 files/);
  await t.notThrowsAsync(verifyRelease(join(dir, "0.5.0"), [publicKey], { version: "0.5.0" }));
  const wrong = await tool("sign", join(dir, "0.5.0"));
  t.is(wrong.code, 2);
  t.regex(wrong.stdout, /release-tool sign DIR VERSION --key KEY\.pem/);
});
