/**
 * The agent releases a controller holds for `steward upgrade-model`: its own release's agent
 * bundle, and those given to it (a directory holding an agent bundle's files, main.js first). Each
 * is read once, on first use, and served as an operator bundle is (api/operator.ts Bundle), under
 * its content hash: the hash goes to agents in their view, and they check the download against it.
 */
import { readFile, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { AgentReleaseInfo, Bundle } from "../../api";
import { STEWARD_VERSION, StewardError, bundleHash } from "../../api";
import { bundleVersion } from "../../substrates";

interface HeldRelease {
  info: AgentReleaseInfo;
  bundle: Bundle;
}

export class AgentReleases {
  private loaded?: Promise<Map<string, HeldRelease>>;

  /** `own`: the directory of this controller's agent bundle; `given`: those of other releases. */
  constructor(private readonly o: { own: string; given: readonly string[] }) {}

  async list(): Promise<AgentReleaseInfo[]> {
    return [...(await this.held()).values()].map((r) => r.info);
  }

  /** The release of `version`, or a not-found naming those held. */
  async get(version: string): Promise<HeldRelease> {
    const held = await this.held();
    const r = held.get(version);
    if (!r)
      throw new StewardError(
        "not-found",
        `this controller holds no agent release ${version.slice(0, 40)} (it holds ${[...held.keys()].join(", ")})`,
        { reason: "agent-release-unknown", details: { version: version.slice(0, 40) } },
      );
    return r;
  }

  private held(): Promise<Map<string, HeldRelease>> {
    this.loaded ??= this.load().catch((err: unknown) => {
      this.loaded = undefined;
      throw err;
    });
    return this.loaded;
  }

  private async load(): Promise<Map<string, HeldRelease>> {
    const out = new Map<string, HeldRelease>();
    out.set(STEWARD_VERSION, await readRelease(this.o.own, STEWARD_VERSION, true));
    for (const dir of this.o.given) {
      const version = await bundleVersion(join(dir, "main.js"));
      if (!out.has(version)) out.set(version, await readRelease(dir, version, false));
    }
    return out;
  }
}

/** The regular files of an agent bundle's directory (not below it: a bundle is flat). */
async function readRelease(dir: string, version: string, own: boolean): Promise<HeldRelease> {
  const files: Bundle["files"] = [];
  for (const name of (await readdir(dir)).sort()) {
    const st = await stat(join(dir, name));
    if (!st.isFile() || !name.endsWith(".js")) continue;
    files.push({ path: name, mode: st.mode & 0o755, content: (await readFile(join(dir, name))).toString("base64") });
  }
  if (!files.some((f) => f.path === "main.js"))
    throw new StewardError("internal", `${dir} holds no agent bundle (main.js): npm run build makes it`);
  const bundle = { files };
  return { info: { version, hash: bundleHash(bundle), own }, bundle };
}
