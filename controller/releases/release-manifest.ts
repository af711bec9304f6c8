/**
 * A release directory: the bundles (controller-bundle/, agent-bundle/, cli-bundle/, dashboard/…),
 * `manifest.json` listing every file with its size and SHA-256, and `manifest.sig`, the publisher's
 * ed25519 signature over the manifest's bytes (release-keys.ts). A controller uses a release only
 * once its signature is by a key it trusts and every file matches the manifest; a file the manifest
 * does not list, or a link, refuses the release (nothing unsigned is ever served), and what was
 * checked is what is used: the verified bytes are returned, not read again.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { lstat, readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ReleaseSignature } from "./release-keys";
import { signManifest, signatureProblem } from "./release-keys";

export const MANIFEST_FORMAT = "steward-release/1";
export const MANIFEST = "manifest.json";
export const SIGNATURE = "manifest.sig";
/** A manifest larger than this is not read (a release has tens of files). */
export const MAX_MANIFEST_BYTES = 1 << 20;
/** A signature file larger than this is not read. */
export const MAX_SIGNATURE_BYTES = 4096;
const MAX_FILES = 10_000;
export const RELEASE_VERSION = /^\d{1,6}\.\d{1,6}\.\d{1,6}(-[0-9A-Za-z.-]{1,40})?$/;

/** Relative, `/`-separated, plain names: no `.` or `..` segment, nothing a shell or URL would read twice. */
const PATH = /^(?!.*(^|\/)\.\.?(\/|$))[A-Za-z0-9._-]{1,100}(\/[A-Za-z0-9._-]{1,100}){0,8}$/;
const SHA256 = /^[0-9a-f]{64}$/;

export interface ReleaseFile {
  path: string;
  size: number;
  sha256: string;
}

export interface ReleaseManifest {
  format: typeof MANIFEST_FORMAT;
  version: string;
  /** When it was signed (ISO 8601). */
  created: string;
  files: ReleaseFile[];
}

/** A release refused, and why (the message names the release and what failed). */
export class ReleaseRefused extends Error {}

/** Every regular file below `dir` but the manifest and its signature, as relative paths; links are refused. */
async function filesBelow(dir: string, sub = ""): Promise<string[]> {
  const out: string[] = [];
  for (const name of (await readdir(join(dir, sub))).sort()) {
    const rel = sub ? `${sub}/${name}` : name;
    if (!sub && (name === MANIFEST || name === SIGNATURE)) continue;
    const st = await lstat(join(dir, rel));
    if (st.isDirectory()) out.push(...(await filesBelow(dir, rel)));
    else if (st.isFile()) out.push(rel);
    else throw new ReleaseRefused(`${rel} is a link or special file: a release holds regular files only`);
  }
  return out;
}

export const sha256 = (b: Buffer): string => createHash("sha256").update(b).digest("hex");

async function sha256Of(path: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest("hex");
}

/** Writes `dir`'s manifest (every file below it) for `version`, signed with `privateKeyPem`. */
export async function signRelease(dir: string, version: string, privateKeyPem: string): Promise<ReleaseManifest> {
  if (!RELEASE_VERSION.test(version)) throw new Error(`"${version}" is not a release version (MAJOR.MINOR.PATCH)`);
  const files: ReleaseFile[] = [];
  for (const path of await filesBelow(dir)) {
    if (!PATH.test(path)) throw new Error(`${path}: a release's file names are letters, digits, ".", "_" and "-"`);
    const content = await readFile(join(dir, path));
    files.push({ path, size: content.length, sha256: sha256(content) });
  }
  const manifest: ReleaseManifest = { format: MANIFEST_FORMAT, version, created: new Date().toISOString(), files };
  const bytes = Buffer.from(JSON.stringify(manifest, null, 2) + "\n");
  const sig: ReleaseSignature = signManifest(bytes, privateKeyPem);
  await writeFile(join(dir, MANIFEST), bytes);
  await writeFile(join(dir, SIGNATURE), JSON.stringify(sig) + "\n");
  return manifest;
}

/** Why `m` is not a manifest, or undefined. */
export function manifestProblem(m: unknown): string | undefined {
  if (typeof m !== "object" || m === null) return "manifest.json is not a JSON object";
  const o = m as Partial<ReleaseManifest>;
  if (o.format !== MANIFEST_FORMAT)
    return `manifest.json's format is ${JSON.stringify(o.format)}, not ${MANIFEST_FORMAT}`;
  if (typeof o.version !== "string" || !RELEASE_VERSION.test(o.version))
    return "manifest.json's version is not MAJOR.MINOR.PATCH";
  if (!Array.isArray(o.files) || o.files.length > MAX_FILES)
    return `manifest.json's files is not a list of at most ${MAX_FILES}`;
  const seen = new Set<string>();
  for (const f of o.files as Partial<ReleaseFile>[]) {
    if (typeof f?.path !== "string" || !PATH.test(f.path))
      return `manifest.json lists a file named ${JSON.stringify(f?.path).slice(0, 80)}: not a plain relative path`;
    if (seen.has(f.path)) return `manifest.json lists ${f.path} twice`;
    seen.add(f.path);
    if (!Number.isSafeInteger(f.size) || (f.size as number) < 0)
      return `manifest.json's size of ${f.path} is not a byte count`;
    if (typeof f.sha256 !== "string" || !SHA256.test(f.sha256))
      return `manifest.json's sha256 of ${f.path} is not 64 hex digits`;
  }
  return undefined;
}

export interface VerifiedRelease {
  manifest: ReleaseManifest;
  /** The SHA-256 of manifest.json's bytes: what was signed, so what names this release exactly. */
  manifestSha256: string;
  /** The trusted key that signed it. */
  signedBy: string;
  /** The verified bytes of the files `keep` asked for, by path. */
  files: Map<string, Buffer>;
}

/**
 * Verifies the release in `dir` against the keys trusted (and, when given, that it is `version`);
 * throws {@link ReleaseRefused} naming the release and what failed.
 */
export async function verifyRelease(
  dir: string,
  trusted: readonly string[],
  o: { version?: string; keep?: (path: string) => boolean; label?: string } = {},
): Promise<VerifiedRelease> {
  const name = o.label ?? (o.version ? `release ${o.version} (${dir})` : `the release in ${dir}`);
  const refuse = (why: string): never => {
    throw new ReleaseRefused(`${name} is refused: ${why}`);
  };
  const read = async (file: string, max: number): Promise<Buffer> => {
    const st = await lstat(join(dir, file)).catch(() => undefined);
    if (!st?.isFile())
      return refuse(
        `it has no ${file}: a release is signed (steward releases are made with their manifest and signature)`,
      );
    if (st.size > max) return refuse(`${file} is ${st.size} bytes, more than ${max}`);
    return readFile(join(dir, file));
  };
  const manifestBytes = await read(MANIFEST, MAX_MANIFEST_BYTES);
  const signature = (await read(SIGNATURE, MAX_SIGNATURE_BYTES)).toString("utf8");
  const bad = signatureProblem(manifestBytes, signature, trusted);
  if (bad) refuse(bad);
  let parsed: unknown;
  try {
    parsed = JSON.parse(manifestBytes.toString("utf8"));
  } catch {
    refuse("manifest.json is not JSON");
  }
  const problem = manifestProblem(parsed);
  if (problem) refuse(problem);
  const manifest = parsed as ReleaseManifest;
  if (o.version && manifest.version !== o.version) refuse(`its manifest says it is version ${manifest.version}`);
  const listed = new Map(manifest.files.map((f) => [f.path, f]));
  let present: string[];
  try {
    present = await filesBelow(dir);
  } catch (err) {
    return refuse(err instanceof ReleaseRefused ? err.message : `cannot list its files: ${(err as Error).message}`);
  }
  const unlisted = present.filter((p) => !listed.has(p));
  if (unlisted.length) refuse(`it holds files its manifest does not list: ${unlisted.slice(0, 5).join(", ")}`);
  const files = new Map<string, Buffer>();
  for (const f of manifest.files) {
    const path = join(dir, f.path);
    const size = (await lstat(path).catch(() => undefined))?.size;
    if (size === undefined) return refuse(`${f.path}, which its manifest lists, is missing`);
    if (size !== f.size) refuse(`${f.path} is ${size} bytes, its manifest says ${f.size}`);
    // Only the files kept are held in memory; the others are hashed as they are read.
    const content = o.keep?.(f.path) ? await readFile(path) : undefined;
    const sum = content ? sha256(content) : await sha256Of(path);
    if (sum !== f.sha256)
      refuse(
        `${f.path} has SHA-256 ${sum.slice(0, 16)}…, its manifest says ${f.sha256.slice(0, 16)}… (changed after signing)`,
      );
    if (content) files.set(f.path, content);
  }
  const signedBy = (JSON.parse(signature) as ReleaseSignature).key;
  return { manifest, manifestSha256: sha256(manifestBytes), signedBy, files };
}
