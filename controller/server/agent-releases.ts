/**
 * The agent releases a controller serves for `steward upgrade-model`: its own release's agent
 * bundle, and the signed releases held in the store (controller/releases/release-source.ts verifies
 * and holds them; every replica serves them, whether or not its host has the source). A release is
 * served as an operator bundle is (api/operator.ts Bundle), under its content hash: the hash goes to
 * agents in their view, and they check the download against it.
 */
import { readFile, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { AgentReleaseInfo, Bundle, RefusedRelease, ReleaseKeys } from "../../api";
import { STEWARD_VERSION, StewardError, bundleHash } from "../../api";
import { RELEASE_VERSION } from "../releases/release-manifest";
import type { ReleaseSource } from "../releases/release-source";
import { distrusted } from "../releases/release-source";
import type { ReleaseDoc, ReleaseKeysDoc, ReleaseOps, StateCache } from "../state";

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
      /** The keys controller.json trusts: those trusted until a superuser changes them (cache.releaseKeys). */
      bootstrapKeys: readonly string[];
      source?: ReleaseSource;
    },
  ) {}

  /** The keys trusted now. */
  trusted(): readonly string[] {
    return this.o.cache.releaseKeys?.keys ?? this.o.bootstrapKeys;
  }

  /** The keys trusted now, and who changed them last (none: controller.json's). */
  async keys(): Promise<ReleaseKeys> {
    return keysOf(await this.o.ops.keys(), this.o.bootstrapKeys);
  }

  /**
   * Trusts more keys, or fewer: releases held that a key no longer trusted signed stop being
   * served (and are listed as refused, saying so) until it is trusted again.
   */
  async changeKeys(change: { trust?: string[]; distrust?: string[] }, by: string): Promise<ReleaseKeys> {
    const doc = await this.o.ops.changeKeys(
      this.o.bootstrapKeys,
      { trust: change.trust ?? [], distrust: change.distrust ?? [] },
      by,
    );
    return keysOf(doc, this.o.bootstrapKeys);
  }

  /** Every release held, its own first; with a source, looked at first (so one just copied in is listed). */
  async list(): Promise<{ releases: AgentReleaseInfo[]; refused: RefusedRelease[]; problem?: string }> {
    const look = await this.o.source?.look();
    const own = (await this.ownRelease()).info;
    const docs = await this.o.ops.all();
    const stored = docs.filter((d) => !distrusted(d, this.trusted())).map(infoOf);
    // A replica without the source answers what the leader's last look recorded.
    const found = look ?? this.o.cache.releaseSource;
    const refused = [...(found?.refused ?? [])];
    for (const d of docs) {
      const why = distrusted(d, this.trusted());
      if (why && !refused.some((r) => r.version === d.version)) refused.push({ version: d.version, reason: why });
    }
    return {
      releases: [own, ...stored.filter((r) => r.version !== own.version)],
      refused,
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
    const untrusted = doc ? distrusted(doc, this.trusted()) : undefined;
    if (doc && untrusted)
      throw new StewardError("not-found", `this controller serves no agent release ${doc.version}: ${untrusted}`, {
        reason: "agent-release-unknown",
        details: { version: doc.version },
      });
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

const keysOf = (doc: ReleaseKeysDoc | undefined, bootstrap: readonly string[]): ReleaseKeys =>
  doc ? { keys: doc.keys, changed: { by: doc.changedBy, at: doc.changedAt } } : { keys: [...bootstrap] };

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
