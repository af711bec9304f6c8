/**
 * Steward as a package: the tarball `npm pack` makes from this build (size and file count, and how
 * much of it is the controller's bundle), and `npm install` of that tarball alone into an empty
 * project, offline from the npm cache with a lock taken from this repository's (wall time, packages
 * and bytes on disk), the median of `size` installs.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { writeOfflineProject } from "../test/harness/offline-lock";
import { median, report } from "./util";
import type { BenchOptions } from "./util";

const run = promisify(execFile);
/** A user's shell: none of the npm_* variables `npm run bench` sets for this repository, but its npm cache. */
const env = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) || /^npm_config_cache$/i.test(k)));

async function diskBytes(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += await diskBytes(p);
    else if (e.isFile()) total += (await stat(p)).size;
  }
  return total;
}

/** `size`: installs to take the median of (default 3). */
export async function benchPackage(o: BenchOptions = {}): Promise<void> {
  const installs = o.size ?? 3;
  const repo = join(__dirname, "..", "..");
  const work = await mkdtemp(join(tmpdir(), "steward-bench-package-"));
  try {
    const pack = await run("npm", ["pack", "--json", "--pack-destination", work], {
      cwd: repo,
      env: env(),
      maxBuffer: 64 << 20,
    });
    const packed = JSON.parse(pack.stdout.slice(pack.stdout.indexOf("[")))[0] as {
      filename: string;
      integrity: string;
      size: number;
      unpackedSize: number;
      files: { path: string; size: number }[];
    };
    const tarball = join(work, packed.filename);
    const bundle = packed.files
      .filter((f) => f.path.startsWith("dist/controller-bundle/") || f.path.startsWith("dist/agent-bundle/"))
      .reduce((s, f) => s + f.size, 0);
    const ms: number[] = [];
    let packages = 0;
    let bytes = 0;
    for (let i = 0; i < installs; i++) {
      const project = join(work, `project-${i}`);
      await mkdir(project);
      await writeOfflineProject({
        repo,
        project,
        tarball,
        tarballIntegrity: packed.integrity,
        manifest: { name: "empty", version: "1.0.0", private: true },
        fromRepo: {},
      });
      const t0 = performance.now();
      try {
        await run("npm", ["ci", "--offline", "--no-audit", "--no-fund", "--loglevel=error"], {
          cwd: project,
          env: env(),
          maxBuffer: 64 << 20,
        });
      } catch (e) {
        throw new Error(
          `npm ci --offline of the tarball failed: its packages come from the npm cache that \`npm ci\` in ${repo} filled (run that first).\n${(e as { stderr?: string }).stderr ?? e}`,
        );
      }
      ms.push(performance.now() - t0);
      const modules = join(project, "node_modules");
      packages = (await readdir(modules)).length;
      bytes = await diskBytes(modules);
    }
    report("Package (npm pack of this build; the tarball alone installed into an empty project, offline)", {
      "tarball (MB)": packed.size / 1e6,
      "files": String(packed.files.length),
      "unpacked (MB)": packed.unpackedSize / 1e6,
      "of which the controller and agent bundles (MB)": bundle / 1e6,
      [`npm ci --offline, wall (s; median of ${ms.length})`]: median(ms) / 1000,
      "node_modules entries (top level)": String(packages),
      "node_modules on disk (MB)": bytes / 1e6,
    });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
