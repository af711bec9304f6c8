/**
 * The agent releases a controller serves for `steward upgrade-model`: its own release's agent
 * bundle, and the signed releases held in the store (controller/releases/release-source.ts verifies
 * and holds them; every replica serves them, whether or not its host has the source). A release is
 * served as an operator bundle is (api/operator.ts Bundle), under its content hash: the hash goes to
 * agents in their view, and they check the download against it.
 */
import { readFile, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { AgentReleaseInfo, Bundle, RefusedRelease } from "../../api";
import { STEWARD_VERSION, StewardError, bundleHash } from "../../api";
import { RELEASE_VERSION } from "../releases/release-manifest";
import type { ReleaseSource } from "../releases/release-source";
import type { ReleaseDoc, ReleaseOps, StateCache } from "../state";

/** How many stored releases' files are kept in memory (each an agent bundle, under 1 MB). */
const KEPT_BUNDLES = 4;

interface HeldRelease {
  info: AgentReleaseInfo;
  bundle: Bundle;
}

export class AgentReleases {
  /** Its own release: read once. */
  private own?: Promise<HeldRelease>;
  /** Stored releases' files read lately, by version (a version's content never changes). */
  private readonly kept = new Map<string, HeldRelease>();

  /**
   * `own`: the directory of this controller's agent bundle; `ops`: the releases held in the store;
   * `source`: this replica's look at the release source, when its configuration names one.
   */
  constructor(
    private readonly o: {
      own: string;
      ops: ReleaseOps;
      cache: StateCache;
      source?: ReleaseSource;
    },
  ) {}

  /** Every release held, its own first; with a source, looked at first (so one just copied in is listed). */
  async list(): Promise<{ releases: AgentReleaseInfo[]; refused: RefusedRelease[]; problem?: string }> {
    const look = await this.o.source?.look();
    const own = (await this.ownRelease()).info;
    const stored = (await this.o.ops.all()).map(infoOf);
    // A replica without the source answers what the leader's last look recorded.
    const found = look ?? this.o.cache.releaseSource;
    return {
      releases: [own, ...stored.filter((r) => r.version !== own.version)],
      refused: found?.refused ?? [],
      ...(found?.problem ? { problem: found.problem } : {}),
    };
  }

  /** The release of `version`, or a not-found naming those held (and why it was refused, if it was). */
  async get(version: string): Promise<HeldRelease> {
    const own = await this.ownRelease();
    if (version === own.info.version) return own;
    let doc = await this.o.ops.find(version);
    let look;
    // Only a name a release could have sends this replica to its source (a look may fetch over HTTPS).
    if (!doc && this.o.source && RELEASE_VERSION.test(version)) {
      look = await this.o.source.look();
      doc = await this.o.ops.find(version);
    }
    if (!doc) {
      const refused = (look ?? this.o.cache.releaseSource)?.refused.find((r) => r.version === version.slice(0, 40));
      const held = [own.info.version, ...(await this.o.ops.versions())];
      throw new StewardError(
        "not-found",
        `this controller holds no agent release ${version.slice(0, 40)} (it holds ${held.join(", ")})${refused ? `; ${refused.reason}` : ""}`,
        { reason: "agent-release-unknown", details: { version: version.slice(0, 40) } },
      );
    }
    return this.read(doc);
  }

  private async read(doc: ReleaseDoc): Promise<HeldRelease> {
    const kept = this.kept.get(doc.version);
    if (kept?.info.hash === doc.hash) return kept;
    const release = { info: infoOf(doc), bundle: await this.o.ops.bundle(doc) };
    this.kept.set(doc.version, release);
    if (this.kept.size > KEPT_BUNDLES) this.kept.delete(this.kept.keys().next().value!);
    return release;
  }

  private ownRelease(): Promise<HeldRelease> {
    this.own ??= readOwnRelease(this.o.own, STEWARD_VERSION).catch((err: unknown) => {
      this.own = undefined;
      throw err;
    });
    return this.own;
  }
}

const infoOf = (d: ReleaseDoc): AgentReleaseInfo => ({ version: d.version, hash: d.hash, own: false });

/** This controller's own agent bundle: the regular files of its directory (not below it: a bundle is flat). */
async function readOwnRelease(dir: string, version: string): Promise<HeldRelease> {
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
