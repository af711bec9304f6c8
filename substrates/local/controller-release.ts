/**
 * Releases of a controller on this host (`steward upgrade-controller` on a local controller). A
 * local controller runs, until its first upgrade, from the installation that bootstrapped it; an
 * upgrade copies releases into its data directory, `releases/<version>/` (the build's
 * {@link RELEASE_DIRS}), and points the `current` symlink at one, switched atomically (a new link
 * renamed over the old). The release it ran before is kept there for a rollback.
 */
import { existsSync } from "node:fs";
import { cp, readdir, readFile, readlink, rename, rm, symlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { StewardError } from "../../api/core";
import { RELEASE_DIRS, controllerEntry, dataFiles } from "../controller-files";
import { readPidFile } from "./processes";

const RELEASES = "releases";
const CURRENT = "current";

/** The controller a local start runs: the current release's bundle, else this installation's controller. */
export function localControllerEntry(dataDir: string): string {
  const release = join(dataDir, CURRENT, "controller-bundle", "main.js");
  return existsSync(release) ? release : controllerEntry();
}

/** The version `current` points at, if the controller was ever upgraded. */
export async function currentLocalRelease(dataDir: string): Promise<string | undefined> {
  return readlink(join(dataDir, CURRENT)).then(
    (t) => basename(t),
    () => undefined,
  );
}

/**
 * The build directory the running controller runs from (`…/dist` or `releases/<version>`): its
 * entry point is on its command line, two levels below.
 */
export async function runningControllerBuild(dataDir: string): Promise<string> {
  const pid = await readPidFile(join(dataDir, dataFiles.pid));
  const cmdline = pid ? await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "") : "";
  const entry = cmdline.split("\0").find((a) => a.endsWith("main.js"));
  if (!entry)
    throw new StewardError(
      "unavailable",
      `the controller in ${dataDir} is not running (no live process in ${dataFiles.pid}): start it first (its supervisor restarts it; see ${join(dataDir, dataFiles.log)})`,
      { reason: "controller-not-running" },
    );
  return dirname(dirname(entry));
}

/** Copies a build's release directories to `releases/<version>` (replacing a copy that is not current). */
export async function stageLocalRelease(dataDir: string, build: string, version: string): Promise<void> {
  const target = join(dataDir, RELEASES, version);
  if ((await currentLocalRelease(dataDir)) === version && existsSync(target)) return;
  const missing = RELEASE_DIRS.filter((d) => d !== "dashboard" && !existsSync(join(build, d)));
  if (missing.length > 0)
    throw new StewardError(
      "invalid-request",
      `${build} lacks ${missing.join(", ")}: it is not a built Steward (npm run build makes them)`,
    );
  // Copied aside first, then renamed into place: a half-copied release is never a release.
  const staging = `${target}.staging`;
  await rm(staging, { recursive: true, force: true });
  for (const d of RELEASE_DIRS)
    if (existsSync(join(build, d))) await cp(join(build, d), join(staging, d), { recursive: true });
  await rm(target, { recursive: true, force: true });
  await rename(staging, target);
}

/** Deletes the releases other than `keep` (the current one and the one it replaced). */
export async function pruneLocalReleases(dataDir: string, keep: string[]): Promise<void> {
  for (const name of await readdir(join(dataDir, RELEASES)).catch(() => [] as string[])) {
    if (!keep.includes(name)) await rm(join(dataDir, RELEASES, name), { recursive: true, force: true });
  }
}

/** Points `current` at `releases/<version>` atomically. */
export async function switchLocalRelease(dataDir: string, version: string): Promise<void> {
  if (!existsSync(join(dataDir, RELEASES, version)))
    throw new StewardError("internal", `release ${version} is not staged in ${join(dataDir, RELEASES)}`);
  const next = join(dataDir, `${CURRENT}.next`);
  await rm(next, { force: true });
  await symlink(join(RELEASES, version), next);
  await rename(next, join(dataDir, CURRENT));
}
