/**
 * A controller's release source: a directory holding one signed release directory per version
 * (release-manifest.ts). A look verifies each version the store does not hold yet against the keys
 * the controller trusts and holds it in the store (state/release-ops.ts), so every replica serves
 * it, including replicas whose host has no copy of the source. The leader looks every poll
 * interval and records what it refused; a replica also looks when asked for a release it does not
 * hold, so one copied in is usable at once. Nothing found is ever applied on its own.
 */
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import type { Bundle, RefusedRelease } from "../../api";
import { STEWARD_VERSION } from "../../api";
import type { ReleaseDoc, ReleaseOps } from "../state";
import type { HttpsSourceConfig } from "./https-mirror";
import { HttpsMirror } from "./https-mirror";
import { MANIFEST, ReleaseRefused, sha256, verifyRelease } from "./release-manifest";

/** Where a release keeps its agent bundle. */
export const AGENT_DIR = "agent-bundle";
/** How long a refused release is left alone before it is verified again (it may have been half copied). */
const RETRY_REFUSED_MS = 60_000;

export interface ReleaseSourceConfig {
  /** The directory of releases; for an HTTPS source, the local mirror of it. */
  dir: string;
  /** The public keys (`ed25519:…`) trusted to sign releases. */
  keys: readonly string[];
  /** An HTTPS source, copied into `dir` before each look (https-mirror.ts). */
  https?: HttpsSourceConfig;
}

/** What one look did (`held`: the versions it verified and held) and found wrong: releases refused, each with why, or why the source could not be read. */
export interface SourceLook {
  held: string[];
  refused: RefusedRelease[];
  problem?: string;
}

export class ReleaseSource {
  private readonly refusedAt = new Map<string, RefusedRelease & { at: number }>();
  private looking?: Promise<SourceLook>;
  private keysSeen?: string;
  private readonly mirror?: HttpsMirror;

  /** `trusted`: the keys trusted now (a superuser may change them: `steward release-keys`); default `config.keys`. */
  constructor(
    private readonly config: ReleaseSourceConfig,
    private readonly ops: ReleaseOps,
    private readonly trusted: () => readonly string[] = () => config.keys,
  ) {
    if (config.https) this.mirror = new HttpsMirror(config.https, config.dir, trusted);
  }

  /** One look at the source; callers arriving while one runs share it. */
  look(): Promise<SourceLook> {
    this.looking ??= this.lookOnce().finally(() => (this.looking = undefined));
    return this.looking;
  }

  private async lookOnce(): Promise<SourceLook> {
    // Keys changed since the last look: what they refused may verify now, at once.
    const keys = this.trusted().join(",");
    if (keys !== this.keysSeen) this.refusedAt.clear();
    this.keysSeen = keys;
    const held = new Map((await this.ops.all()).map((d) => [d.version, d]));
    const recentlyRefused = [...this.refusedAt.values()].filter((r) => Date.now() - r.at < RETRY_REFUSED_MS);
    const synced = await this.mirror?.sync(new Set([...held.keys(), ...recentlyRefused.map((r) => r.version)]));
    const fetching = synced?.problem;
    // Refused as they were fetched (a file larger than its manifest says): not mirrored, so not verified below.
    for (const r of synced?.refused ?? []) this.refusedAt.set(r.version, { ...r, at: Date.now() });
    let names: string[];
    try {
      names = await readdir(this.config.dir);
    } catch (err) {
      // Named by its error code only: those who read it need not learn the controller's paths.
      return {
        held: [],
        refused: this.stillRefused(new Set()),
        problem: fetching ?? `the release source cannot be read (${code(err)})`,
      };
    }
    // A name starting with "." is a release still being copied in (renamed into place when whole).
    const versions = names.filter((v) => !v.startsWith(".") && v !== STEWARD_VERSION).sort();
    const newlyHeld: string[] = [];
    for (const version of versions) {
      if (Date.now() - (this.refusedAt.get(version)?.at ?? 0) < RETRY_REFUSED_MS) continue;
      const doc = held.get(version);
      const why = doc
        ? (distrusted(doc, this.trusted()) ?? (await this.replacedInSource(doc)))
        : await this.holdFromSource(version);
      if (why) {
        this.refusedAt.set(version, { version: version.slice(0, 40), reason: why, at: Date.now() });
        continue;
      }
      this.refusedAt.delete(version);
      if (!doc) newlyHeld.push(version);
    }
    // Those refused as they were fetched are not in the mirror, but still in the source.
    const present = new Set([
      ...versions,
      ...(synced ? [...recentlyRefused, ...synced.refused].map((r) => r.version) : []),
    ]);
    return { held: newlyHeld, refused: this.stillRefused(present), ...(fetching ? { problem: fetching } : {}) };
  }

  /** Verifies release `version` and holds it; answers why it was refused, if it was. */
  private async holdFromSource(version: string): Promise<string | undefined> {
    let release: Awaited<ReturnType<typeof verifiedAgentRelease>>;
    try {
      release = await verifiedAgentRelease(join(this.config.dir, version), version, this.trusted());
    } catch (err) {
      if (err instanceof ReleaseRefused) return err.message;
      return `release ${version.slice(0, 40)} cannot be read (${code(err)})`;
    }
    const doc = await this.ops.hold(version, release.bundle, release.signed);
    return doc.manifest === release.signed.manifest ? undefined : replaced(doc);
  }

  /**
   * Why the source's copy of held release `doc` is refused: it was signed again (its manifest is not
   * the one held), so what users read in the source is not what is served. Its files are not read
   * again: what is held was verified, and is what is served.
   */
  private async replacedInSource(doc: ReleaseDoc): Promise<string | undefined> {
    const manifest = await readFile(join(this.config.dir, doc.version, MANIFEST)).catch(() => undefined);
    if (!manifest || sha256(manifest) === doc.manifest) return undefined;
    return replaced(doc);
  }

  /** The refusals of versions still in the source (`present`; all of them when it could not be read). */
  private stillRefused(present: Set<string>): RefusedRelease[] {
    for (const v of this.refusedAt.keys()) if (present.size && !present.has(v)) this.refusedAt.delete(v);
    return [...this.refusedAt.values()]
      .map(({ version, reason }) => ({ version, reason }))
      .sort((a, b) => a.version.localeCompare(b.version));
  }
}

/** Why held release `doc` is no longer served: the key that signed it is no longer trusted. */
export function distrusted(doc: ReleaseDoc, trusted: readonly string[]): string | undefined {
  // Releases held before their signer was recorded were verified against the keys trusted then.
  if (!doc.signedBy || trusted.includes(doc.signedBy)) return undefined;
  return `release ${doc.version} is signed by ${doc.signedBy}, which this controller no longer trusts (steward release-keys)`;
}

const replaced = (doc: ReleaseDoc): string =>
  `release ${doc.version} in the source is not the release ${doc.version} this controller holds (signed ${doc.signedAt}): a version is never replaced, publish the change as a new version`;

/** The agent bundle of a signed release (its agent-bundle/ files), once the release is verified. */
async function verifiedAgentRelease(
  dir: string,
  version: string,
  keys: readonly string[],
): Promise<{ bundle: Bundle; signed: { at: string; by: string; manifest: string } }> {
  // Named by version only: the refusal is shown to users, who need not learn the controller's paths.
  const { manifest, manifestSha256, signedBy, files } = await verifyRelease(dir, keys, {
    version,
    label: `release ${version}`,
    keep: (p) => new RegExp(`^${AGENT_DIR}/[^/]+\\.js$`).test(p),
  });
  if (!files.has(`${AGENT_DIR}/main.js`))
    throw new ReleaseRefused(`release ${version} is refused: it has no agent bundle`);
  const bundle: Bundle = {
    files: [...files].map(([path, content]) => ({
      path: path.slice(AGENT_DIR.length + 1),
      mode: 0o644,
      content: content.toString("base64"),
    })),
  };
  return { bundle, signed: { at: manifest.created, by: signedBy, manifest: manifestSha256 } };
}

function code(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? "unreadable";
}
