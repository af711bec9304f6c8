/**
 * A release source served over HTTPS: `<url>/index.json` lists the versions
 * (`{"format": "steward-release-index/1", "releases": ["0.1.2", …]}`) and `<url>/<version>/` holds
 * each release's files, laid out as in a directory source. The controller copies each listed
 * release into a local mirror directory, whose releases are then verified exactly as a directory
 * source's are (release-source.ts): the mirror only fetches. A release's files are fetched only once
 * its manifest is signed by a trusted key and well formed, each no larger than the manifest says, so
 * a server (or whoever sits between) can make the controller download no more than a trusted
 * publisher signed; a release refused before that is mirrored as its manifest and signature alone,
 * for the verification to refuse it, saying why. Redirects are not followed.
 */
import { mkdir, readFile, readdir, rename, rm, writeFile } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import { request } from "node:https";
import { dirname, join } from "node:path";
import type { RefusedRelease } from "../../api";
import { signatureProblem } from "./release-keys";
import type { ReleaseManifest } from "./release-manifest";
import {
  MANIFEST,
  MAX_MANIFEST_BYTES,
  MAX_SIGNATURE_BYTES,
  RELEASE_VERSION,
  ReleaseRefused,
  SIGNATURE,
  manifestProblem,
} from "./release-manifest";

/** A body larger than the caller allows. */
class TooLarge extends Error {}

export const INDEX_FORMAT = "steward-release-index/1";
export const INDEX = "index.json";
const MAX_INDEX_BYTES = 1 << 20;
const MAX_INDEX_RELEASES = 1000;
/** The most one release may hold, all files together (a release's bundles are tens of MB). */
const MAX_RELEASE_BYTES = 512 << 20;
const TIMEOUT_MS = 30_000;

export interface HttpsSourceConfig {
  /** The source's base URL (`https://…/`), where index.json is. */
  url: string;
  /** A PEM file of the CAs trusted for it (default: the system's). */
  caFile?: string;
}

export class HttpsMirror {
  private readonly base: URL;
  private ca?: Promise<string | undefined>;

  /** `dir`: the local mirror, a directory source of its own (created as needed). */
  constructor(
    private readonly source: HttpsSourceConfig,
    private readonly dir: string,
    private readonly trusted: () => readonly string[],
  ) {
    this.base = new URL(source.url.endsWith("/") ? source.url : `${source.url}/`);
  }

  /**
   * Copies the releases the index lists that are not mirrored yet, and copies again those whose
   * manifest changed on the server (a publisher fixing a refused release), leaving alone the versions
   * in `skip` (held already, or refused a moment ago). Answers the releases refused as they were
   * fetched and what else went wrong: a release that could not be fetched is tried again at the next look.
   */
  async sync(skip: ReadonlySet<string>): Promise<{ problem?: string; refused: RefusedRelease[] }> {
    let versions: string[];
    try {
      versions = parseIndex(await this.get(INDEX, MAX_INDEX_BYTES));
    } catch (err) {
      return {
        problem: `the release index at ${this.base.origin} cannot be read: ${(err as Error).message}`,
        refused: [],
      };
    }
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const mirrored = new Set(await readdir(this.dir));
    const failed: string[] = [];
    const refused: RefusedRelease[] = [];
    for (const version of versions) {
      if (skip.has(version)) continue;
      try {
        const manifest = await this.get(`${version}/${MANIFEST}`, MAX_MANIFEST_BYTES);
        const local = await readFile(join(this.dir, version, MANIFEST)).catch(() => undefined);
        if (mirrored.has(version) && local?.equals(manifest)) continue;
        await this.copy(version, manifest);
      } catch (err) {
        if (err instanceof ReleaseRefused) refused.push({ version, reason: err.message });
        else failed.push(`${version} (${(err as Error).message})`);
      }
    }
    return {
      ...(failed.length ? { problem: `releases the index lists could not be fetched: ${failed.join("; ")}` } : {}),
      refused,
    };
  }

  /** Fetches release `version` into a directory of its own, renamed into place once whole. */
  private async copy(version: string, manifestBytes: Buffer): Promise<void> {
    const signature = await this.get(`${version}/${SIGNATURE}`, MAX_SIGNATURE_BYTES);
    const tmp = join(this.dir, `.fetching-${version}`);
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp, { mode: 0o700 });
    try {
      await writeFile(join(tmp, MANIFEST), manifestBytes);
      await writeFile(join(tmp, SIGNATURE), signature);
      const manifest = signedManifest(manifestBytes, signature, this.trusted(), version);
      for (const f of manifest?.files ?? []) {
        const content = await this.get(`${version}/${f.path}`, f.size).catch((err: Error) => {
          if (!(err instanceof TooLarge)) throw err;
          throw new ReleaseRefused(
            `release ${version} is refused: ${f.path} on the server is larger than the ${f.size} bytes its manifest says`,
          );
        });
        await mkdir(dirname(join(tmp, f.path)), { recursive: true });
        await writeFile(join(tmp, f.path), content);
      }
      await rm(join(this.dir, version), { recursive: true, force: true });
      await rename(tmp, join(this.dir, version));
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      throw err;
    }
  }

  /** The body of `rel` below the source's URL, refused past `max` bytes. */
  private async get(rel: string, max: number): Promise<Buffer> {
    this.ca ??= this.source.caFile
      ? readFile(this.source.caFile, "utf8").catch((err: NodeJS.ErrnoException) => {
          this.ca = undefined;
          throw new Error(`its CA file cannot be read (${err.code ?? err.message})`);
        })
      : Promise.resolve(undefined);
    const ca = await this.ca;
    const url = new URL(rel, this.base);
    return new Promise<Buffer>((resolve, reject) => {
      const req = request(url, { timeout: TIMEOUT_MS, ...(ca ? { ca } : {}) }, (res: IncomingMessage) => {
        if (res.statusCode !== 200) {
          res.resume();
          const where = res.headers.location ? ` to ${res.headers.location.slice(0, 200)} (give that URL instead)` : "";
          return reject(new Error(`${url.pathname}: HTTP ${res.statusCode}${where}`));
        }
        const parts: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > max) {
            reject(new TooLarge(`${url.pathname} is larger than ${max} bytes`));
            res.removeAllListeners("data");
            req.destroy();
            return;
          }
          parts.push(chunk);
        });
        res.on("end", () => resolve(Buffer.concat(parts)));
        res.on("error", reject);
      });
      req.on("timeout", () => req.destroy(new Error(`${url.pathname}: no answer within ${TIMEOUT_MS / 1000} s`)));
      req.on("error", (err: NodeJS.ErrnoException) =>
        reject(err.code ? new Error(`${url.pathname}: ${err.code}`) : err),
      );
      req.end();
    });
  }
}

/** The versions an index lists, or why it is not an index. */
function parseIndex(bytes: Buffer): string[] {
  let index: unknown;
  try {
    index = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw new Error(`${INDEX} is not JSON`);
  }
  const o = index as { format?: unknown; releases?: unknown };
  if (o?.format !== INDEX_FORMAT) throw new Error(`${INDEX}'s format is not ${INDEX_FORMAT}`);
  if (!Array.isArray(o.releases) || o.releases.length > MAX_INDEX_RELEASES)
    throw new Error(`${INDEX}'s releases is not a list of at most ${MAX_INDEX_RELEASES} versions`);
  const bad = o.releases.find((v) => typeof v !== "string" || !RELEASE_VERSION.test(v));
  if (bad !== undefined) throw new Error(`${INDEX} lists ${JSON.stringify(bad).slice(0, 60)}, not a version`);
  return o.releases as string[];
}

/**
 * The manifest, when it is signed by a trusted key, well formed, of `version` and within the size
 * bound: only then are its files fetched. Otherwise undefined (the verification says why).
 */
function signedManifest(
  bytes: Buffer,
  signature: Buffer,
  keys: readonly string[],
  version: string,
): ReleaseManifest | undefined {
  if (signatureProblem(bytes, signature.toString("utf8"), keys)) return undefined;
  let m: unknown;
  try {
    m = JSON.parse(bytes.toString("utf8"));
  } catch {
    return undefined;
  }
  if (manifestProblem(m)) return undefined;
  const manifest = m as ReleaseManifest;
  if (manifest.version !== version) return undefined;
  const total = manifest.files.reduce((n, f) => n + f.size, 0);
  if (total > MAX_RELEASE_BYTES)
    throw new ReleaseRefused(
      `release ${version} is refused: its manifest lists ${total} bytes of files, more than ${MAX_RELEASE_BYTES}`,
    );
  return manifest;
}
