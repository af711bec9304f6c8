/**
 * Another Steward release for upgrade tests: this build, copied (hard links, cheap) with its version
 * changed wherever the build holds it (the compiled api/versions.js and every bundle), so its CLI, its
 * controller bundle and its health answers all say the new version, as a real patch release would.
 * `broken` gives it a controller that exits before serving (a release that fails its health gate);
 * `brokenAgent` an agent that exits as it starts (a release that never reports, so agents go back);
 * `hangingAgent` one that busy-loops as it starts: it never reports and never dies, and blocks the
 * main thread of the process that loaded it. `storeFormat` makes an older release's store format
 * (with a lower `version`: the release before a store migration).
 */
import { execFile } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, symlink, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { STEWARD_VERSION, STORE_FORMAT } from "../../api";
import { signRelease } from "../../controller";

const run = promisify(execFile);
const DIST = join(__dirname, "..", "..");
const VERSIONED = ["api/versions.js", "controller-bundle/main.js", "cli-bundle/main.js", "agent-bundle/main.js"];

export interface Release {
  dir: string;
  version: string;
  /** Runs this release's `steward` (a separate process, as a user would) with STEWARD_HOME `home`. */
  steward(home: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  close(): Promise<void>;
}

/** `bump`: "patch" (0.1.0 → 0.1.1, or `by` more), "minor" (→ 0.2.0); or exactly `version` (older ones too). */
export async function makeRelease(o: {
  bump?: "patch" | "minor";
  by?: number;
  version?: string;
  broken?: boolean;
  brokenAgent?: boolean;
  hangingAgent?: boolean;
  /** The store format the release writes and reads up to (api STORE_FORMAT): lower for an older release's. */
  storeFormat?: number;
  env?: NodeJS.ProcessEnv;
}): Promise<Release> {
  const [major, minor, patch] = STEWARD_VERSION.split(".").map(Number) as [number, number, number];
  const version =
    o.version ?? (o.bump === "patch" ? `${major}.${minor}.${patch + (o.by ?? 1)}` : `${major}.${minor + 1}.0`);
  const root = await mkdtemp(join(tmpdir(), "steward-release-"));
  const dist = join(root, "dist");
  await run("cp", ["-al", DIST, dist]);
  // dist/cli/main.js finds its dependencies as an installed package does: in node_modules above it.
  await symlink(join(DIST, "..", "node_modules"), join(root, "node_modules"));
  const from = `STEWARD_VERSION = ${JSON.stringify(STEWARD_VERSION)};`;
  for (const rel of VERSIONED) {
    const path = join(dist, rel);
    let text = await readFile(path, "utf8");
    if (!text.includes(from)) throw new Error(`${rel} does not hold ${from}: the release harness needs updating`);
    text = text.replace(from, `STEWARD_VERSION = ${JSON.stringify(version)};`);
    if (o.storeFormat !== undefined) {
      const format = `STORE_FORMAT = ${STORE_FORMAT};`;
      if (!text.includes(format)) throw new Error(`${rel} does not hold ${format}: the release harness needs updating`);
      text = text.replace(format, `STORE_FORMAT = ${o.storeFormat};`);
    }
    if (o.broken && rel === "controller-bundle/main.js") {
      // Still answers `main.js version`; dies when started to serve.
      text = text.replace(
        /^(#!.*\n)?/,
        (shebang) =>
          `${shebang}if (process.argv.includes("--data-dir") && !process.argv.includes("init")) { process.stderr.write("this release is broken on purpose (test)\\n"); process.exit(3); }\n`,
      );
    }
    if (o.brokenAgent && rel === "agent-bundle/main.js") {
      // Still answers `main.js version`; dies when started (or loaded by another release's entry) to run.
      text = text.replace(
        /^(#!.*\n)?/,
        (shebang) =>
          `${shebang}if (process.argv.includes("--dir")) { process.stderr.write("this agent release is broken on purpose (test)\\n"); process.exit(3); }\n`,
      );
    }
    if (o.hangingAgent && rel === "agent-bundle/main.js") {
      // Still answers `main.js version`; started to run (or loaded by another release's entry), it never returns.
      text = text.replace(
        /^(#!.*\n)?/,
        (shebang) =>
          `${shebang}if (process.argv.includes("--dir") && require("node:worker_threads").isMainThread) for (;;);\n`,
      );
    }
    // A hard link shares its content with this build: a new file, not a write through the link.
    await unlink(path);
    await writeFile(path, text);
  }
  return {
    dir: dist,
    version,
    async steward(home, ...args) {
      const env = {
        ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("STEWARD_"))),
        ...o.env,
        STEWARD_HOME: home,
      };
      return run(process.execPath, [join(dist, "cli", "main.js"), ...args], { env, maxBuffer: 16 << 20 }).then(
        ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
        (err: { code?: number; stdout?: string; stderr?: string }) => ({
          code: typeof err.code === "number" ? err.code : 1,
          stdout: err.stdout ?? "",
          stderr: err.stderr ?? "",
        }),
      );
    },
    async close() {
      await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * Puts `r`'s agent bundle (its .js files) into the release source `source` as a signed release
 * directory, `<version>/agent-bundle/`, manifest and signature beside it: what a publisher's source
 * holds. `version` signs it as another version (the directory is named after it). Returns the directory.
 */
export async function publishAgentRelease(
  r: Release,
  source: string,
  privateKeyPem: string,
  version = r.version,
): Promise<string> {
  const dir = join(source, version);
  await mkdir(join(dir, "agent-bundle"), { recursive: true });
  for (const name of await readdir(join(r.dir, "agent-bundle")))
    if (name.endsWith(".js")) await copyFile(join(r.dir, "agent-bundle", name), join(dir, "agent-bundle", name));
  await signRelease(dir, version, privateKeyPem);
  return dir;
}
