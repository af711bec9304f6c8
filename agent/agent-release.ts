/**
 * A machine agent's move to another release (`steward upgrade-model`), the agent's half. The
 * release the controller names is downloaded, its content hash checked, and unpacked beside the
 * running one (`agent-releases/<version>/`); once no hook runs it is chosen in `agent-release.json`
 * and the agent exits. Whatever keeps it running (systemd, the local provisioner) starts the
 * installed entry again, which loads the chosen release (main.ts). The new release is on trial
 * until it has logged in and reported: a watchdog in the entry that loaded it, and a second boot
 * that finds the trial still open (the new agent died), put the previous release back and record
 * why, for the controller to show. The agent's directory, and with it every unit's hook state, is
 * the same whichever release runs.
 */
import { access, mkdir, readFile, readdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Bundle } from "../api/core";
import { StewardError, bundleHash } from "../api/core";
import { unpackBundle } from "./operators";

export const RELEASE_STATE_FILE = "agent-release.json";
const RELEASES_DIR = "agent-releases";

/** A release on trial: started, not yet confirmed by a login of its own. */
export interface ReleaseTrial {
  version: string;
  attempt: number;
  /** How many times an entry loaded it: a second load means the first died before it reported. */
  boots: number;
  /** ISO time by which it must have reported. */
  deadline: string;
}

/** A move that was undone, and why: reported to the controller until another attempt is made. */
export interface ReleaseFailure {
  version: string;
  attempt: number;
  message: string;
}

/** What `agent-release.json` holds. Absent `current`/`previous`: the installed entry itself. */
export interface ReleaseState {
  current?: string;
  previous?: string;
  trial?: ReleaseTrial;
  failed?: ReleaseFailure;
}

export async function readReleaseState(dir: string): Promise<ReleaseState> {
  const text = await readFile(join(dir, RELEASE_STATE_FILE), "utf8").catch(() => undefined);
  return text ? (JSON.parse(text) as ReleaseState) : {};
}

/** Written whole and renamed into place: a crash leaves the old choice or the new one, never half. */
async function writeReleaseState(dir: string, state: ReleaseState): Promise<void> {
  const path = join(dir, RELEASE_STATE_FILE);
  await writeFile(`${path}.new`, JSON.stringify(state, null, 2) + "\n", { mode: 0o600 });
  await rename(`${path}.new`, path);
}

/** The entry script of staged release `version`. */
export const releaseEntry = (dir: string, version: string): string => join(dir, RELEASES_DIR, version, "main.js");

/** What this process is to run: another release's entry (with how long its trial has left), or itself. */
export interface ReleaseChoice {
  entry?: string;
  version?: string;
  /** The chosen release is on trial: milliseconds until the watchdog takes it back. */
  trialLeftMs?: number;
  /** A rollback made now, to log. */
  rolledBack?: ReleaseFailure;
}

/**
 * Decides, as the agent starts, which release runs. `own` is the version of the code deciding: the
 * chosen release decides again once loaded, and runs itself.
 */
export async function chooseRelease(dir: string, own: string, now = Date.now()): Promise<ReleaseChoice> {
  let state = await readReleaseState(dir);
  let rolledBack: ReleaseFailure | undefined;
  const trial = state.trial;
  if (trial && state.current === trial.version && trial.version !== own) {
    const why =
      trial.boots >= 1
        ? `the agent of ${trial.version} stopped before it reported to the controller`
        : now >= Date.parse(trial.deadline)
          ? `the agent of ${trial.version} did not report to the controller by ${trial.deadline}`
          : !(await exists(releaseEntry(dir, trial.version)))
            ? `release ${trial.version} is missing from ${join(dir, RELEASES_DIR)}`
            : undefined;
    if (why) {
      rolledBack = {
        version: trial.version,
        attempt: trial.attempt,
        message: `${why}; went back to the release before`,
      };
      state = rollBackState(state, rolledBack);
    } else state = { ...state, trial: { ...trial, boots: trial.boots + 1 } };
    await writeReleaseState(dir, state);
  }
  const chosen = state.current;
  const withRollback = rolledBack ? { rolledBack } : {};
  if (!chosen || chosen === own) return withRollback;
  if (!(await exists(releaseEntry(dir, chosen)))) return withRollback;
  return {
    entry: releaseEntry(dir, chosen),
    version: chosen,
    ...(state.trial?.version === chosen ? { trialLeftMs: Math.max(0, Date.parse(state.trial.deadline) - now) } : {}),
    ...withRollback,
  };
}

function rollBackState(state: ReleaseState, failed: ReleaseFailure): ReleaseState {
  return { ...(state.previous ? { current: state.previous } : {}), failed };
}

/**
 * The watchdog's act: when `version` is still on trial, the previous release is chosen again and
 * true returned (the caller exits, to be started on it).
 */
export async function rollBackIfOnTrial(dir: string, version: string): Promise<boolean> {
  const state = await readReleaseState(dir);
  if (state.trial?.version !== version || state.current !== version) return false;
  await writeReleaseState(
    dir,
    rollBackState(state, {
      version,
      attempt: state.trial.attempt,
      message: `the agent of ${version} did not report to the controller by ${state.trial.deadline}; went back to the release before`,
    }),
  );
  return true;
}

/** Called once this agent logged in and reported: its trial, if it is on one, is over. */
export async function confirmRelease(dir: string, own: string): Promise<ReleaseTrial | undefined> {
  const state = await readReleaseState(dir);
  if (state.trial?.version !== own) return undefined;
  const { trial: _, ...rest } = state;
  await writeReleaseState(dir, rest);
  return state.trial;
}

/**
 * Puts release `version` beside the running one, fetched by `fetch` and checked against `hash`
 * (the content hash the controller's view named). Nothing that runs changes; a staged copy of the
 * same content is kept.
 */
export async function stageRelease(
  dir: string,
  version: string,
  hash: string,
  fetch: () => Promise<Bundle>,
): Promise<void> {
  if (!/^\d+\.\d+\.\d+$/.test(version))
    throw new StewardError("invalid-request", `agent release "${version.slice(0, 40)}" is not MAJOR.MINOR.PATCH`);
  const target = join(dir, RELEASES_DIR, version);
  const marker = join(target, ".hash");
  if ((await readFile(marker, "utf8").catch(() => "")) === hash) return;
  const bundle = await fetch();
  const got = bundleHash(bundle);
  if (got !== hash)
    throw new StewardError(
      "invalid-request",
      `agent release ${version} arrived with content ${got}, not the ${hash} the controller named: refusing to run it`,
      { reason: "agent-release-mismatch" },
    );
  const tmp = `${target}.tmp-${process.pid}`;
  await mkdir(join(dir, RELEASES_DIR), { recursive: true, mode: 0o700 });
  await rm(tmp, { recursive: true, force: true });
  try {
    await unpackBundle(bundle, tmp);
    await writeFile(join(tmp, ".hash"), hash);
    await rm(target, { recursive: true, force: true });
    await rename(tmp, target);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Chooses staged release `version` for the next start, on trial for `trialMs`; the release chosen
 * now (the one running) is kept as the one to go back to.
 */
export async function chooseForNextStart(
  dir: string,
  o: { version: string; attempt: number; trialMs: number; now?: number },
): Promise<void> {
  const state = await readReleaseState(dir);
  const deadline = new Date((o.now ?? Date.now()) + o.trialMs).toISOString();
  await writeReleaseState(dir, {
    current: o.version,
    ...(state.current ? { previous: state.current } : {}),
    trial: { version: o.version, attempt: o.attempt, boots: 0, deadline },
  });
}

/** Records that release `failed.version` could not be moved to (staging it failed), for the controller to show. */
export async function recordReleaseFailure(dir: string, failed: ReleaseFailure): Promise<void> {
  await writeReleaseState(dir, { ...(await readReleaseState(dir)), failed });
}

/** Releases staged but neither chosen nor kept to go back to (an older release after a later upgrade). */
export async function pruneReleases(dir: string): Promise<void> {
  const state = await readReleaseState(dir);
  const keep = new Set([state.current, state.previous].filter((v): v is string => !!v));
  for (const name of await readdir(join(dir, RELEASES_DIR)).catch(() => [] as string[]))
    if (!keep.has(name)) await rm(join(dir, RELEASES_DIR, name), { recursive: true, force: true });
}

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );
