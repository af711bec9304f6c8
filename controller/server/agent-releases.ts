/**
 * The agent releases a controller holds for `steward upgrade-model`: its own release's agent
 * bundle, and the signed releases in its release source (a directory of `<version>/` release
 * directories, each verified against the keys it trusts: controller/releases). The source is looked
 * at on every use and each version verified once; a release is served as an operator bundle is
 * (api/operator.ts Bundle), from the verified bytes, under its content hash: the hash goes to agents
 * in their view, and they check the download against it. A release of the source that fails its
 * verification is listed as refused, with why, never served, and verified again a minute later.
 */
import { readFile, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { AgentReleaseInfo, Bundle, RefusedRelease } from "../../api";
import { STEWARD_VERSION, StewardError, bundleHash } from "../../api";
import { ReleaseRefused, verifyRelease } from "../releases/release-manifest";

/** Where a release keeps its agent bundle. */
const AGENT_DIR = "agent-bundle";
/** How long a refused release is left alone before it is verified again. */
const RETRY_REFUSED_MS = 60_000;

interface HeldRelease {
  info: AgentReleaseInfo;
  bundle: Bundle;
}

export class AgentReleases {
  /** Its own release: read once. */
  private own?: Promise<HeldRelease>;
  /** The source's releases verified so far, and those refused: each version is verified once. */
  private readonly verified = new Map<string, HeldRelease>();
  private readonly refusedReleases = new Map<string, RefusedRelease & { at: number }>();
  private scanning?: Promise<void>;

  /**
   * `own`: the directory of this controller's agent bundle; `source`: where signed releases are,
   * and the public keys trusted to sign them.
   */
  constructor(
    private readonly o: {
      own: string;
      source?: { dir: string; keys: readonly string[] };
    },
  ) {}

  async list(): Promise<AgentReleaseInfo[]> {
    return [...(await this.held()).values()].map((r) => r.info);
  }

  /** The source's releases that failed verification, each with why. */
  async refused(): Promise<RefusedRelease[]> {
    await this.held();
    return [...this.refusedReleases.values()].map(({ version, reason }) => ({ version, reason }));
  }

  /** The release of `version`, or a not-found naming those held. */
  async get(version: string): Promise<HeldRelease> {
    const held = await this.held();
    const r = held.get(version);
    if (!r)
      throw new StewardError(
        "not-found",
        `this controller holds no agent release ${version.slice(0, 40)} (it holds ${[...held.keys()].join(", ")})${
          this.refusedReleases.has(version) ? `; ${this.refusedReleases.get(version)!.reason}` : ""
        }`,
        { reason: "agent-release-unknown", details: { version: version.slice(0, 40) } },
      );
    return r;
  }

  /** Everything held: the source is looked at again on every use, so a release put there is seen at once. */
  private async held(): Promise<Map<string, HeldRelease>> {
    this.own ??= readRelease(this.o.own, STEWARD_VERSION).catch((err: unknown) => {
      this.own = undefined;
      throw err;
    });
    const own = await this.own;
    // One scan at a time: requests arriving meanwhile share it.
    this.scanning ??= this.scanSource().finally(() => (this.scanning = undefined));
    await this.scanning;
    return new Map([[STEWARD_VERSION, own], ...this.verified]);
  }

  private async scanSource(): Promise<void> {
    if (!this.o.source) return;
    const { dir, keys } = this.o.source;
    const versions = await readdir(dir).catch((err: Error) => {
      throw new StewardError("internal", `the release source ${dir} cannot be read: ${err.message}`);
    });
    // A name starting with "." is a release still being copied in (it is renamed into place when whole).
    for (const version of versions.filter((v) => !v.startsWith(".")).sort()) {
      if (version === STEWARD_VERSION || this.verified.has(version)) continue;
      // A refused one is looked at again after a while: it may have been fixed, or been half copied.
      if (Date.now() - (this.refusedReleases.get(version)?.at ?? 0) < RETRY_REFUSED_MS) continue;
      try {
        this.verified.set(version, await verifiedAgentRelease(join(dir, version), version, keys));
        this.refusedReleases.delete(version);
      } catch (err) {
        if (!(err instanceof ReleaseRefused)) throw err;
        this.refusedReleases.set(version, { version: version.slice(0, 40), reason: err.message, at: Date.now() });
      }
    }
  }
}

/** The agent bundle of a signed release (its agent-bundle/ files), once the release is verified. */
async function verifiedAgentRelease(dir: string, version: string, keys: readonly string[]): Promise<HeldRelease> {
  // Named by version only: the refusal is shown to users, who need not learn the controller's paths.
  const { files } = await verifyRelease(dir, keys, {
    version,
    label: `release ${version}`,
    keep: (p) => /^agent-bundle\/[^/]+\.js$/.test(p),
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
  return { info: { version, hash: bundleHash(bundle), own: false }, bundle };
}

/** This controller's own agent bundle: the regular files of its directory (not below it: a bundle is flat). */
async function readRelease(dir: string, version: string): Promise<HeldRelease> {
  const files: Bundle["files"] = [];
  for (const name of (await readdir(dir)).sort()) {
    const st = await stat(join(dir, name));
    if (!st.isFile() || !name.endsWith(".js")) continue;
    files.push({ path: name, mode: st.mode & 0o755, content: (await readFile(join(dir, name))).toString("base64") });
  }
  if (!files.some((f) => f.path === "main.js"))
    throw new StewardError("internal", `${dir} holds no agent bundle (main.js): npm run build makes it`);
  const bundle = { files };
  return { info: { version, hash: bundleHash(bundle), own: true }, bundle };
}
