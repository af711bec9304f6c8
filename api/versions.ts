/** Steward versions (MAJOR.MINOR.PATCH), as upgrades and migrations compare them, and which work together. */

/** This build's version: what the CLI, the controller and the agent say they are. */
export const STEWARD_VERSION = "0.1.0";

/**
 * The format of the store this build writes: the shape of every kind of document it holds. A
 * controller of this build upgrades an older store to it in place (its leader migrates the
 * documents once every replica runs a build that reads this format), and a store of a newer format
 * than its own is one a build refuses to start on rather than misread.
 */
export const STORE_FORMAT = 2;
/** The oldest store format this build reads (and migrates from): a store older still goes by model migration. */
export const OLDEST_STORE_FORMAT = 1;

/** Whether a store of `format` is one this build reads (absent: written before formats were reported, 1). */
export const readsStoreFormat = (format = 1): boolean => format >= OLDEST_STORE_FORMAT && format <= STORE_FORMAT;

/** Why this build cannot run on a store of `format` (naming both and what to run instead), or undefined. */
export function storeFormatProblem(format: number): string | undefined {
  if (readsStoreFormat(format)) return undefined;
  const reads = `this release (${STEWARD_VERSION}) reads store formats ${OLDEST_STORE_FORMAT} to ${STORE_FORMAT}`;
  if (format > STORE_FORMAT)
    return `the store is at format ${format}, written by a newer release, and ${reads}: run the release the controller was upgraded to (steward upgrade-controller with that release's steward resumes an upgrade)`;
  return `the store is at format ${format}, older than ${reads}: upgrade through an intermediate release, or move the models to a new controller by migration`;
}

export interface Version {
  major: number;
  minor: number;
  patch: number;
}

export function parseVersion(v: string): Version | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(v);
  return m ? { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) } : undefined;
}

/** Negative when `a` is older than `b`; both must parse. */
export function compareVersions(a: string, b: string): number {
  const [x, y] = [parseVersion(a)!, parseVersion(b)!];
  return x.major - y.major || x.minor - y.minor || x.patch - y.patch;
}

/** Whether only the patch number differs: what an in-place upgrade may change. */
export function samePatchLine(a: string, b: string): boolean {
  const [x, y] = [parseVersion(a)!, parseVersion(b)!];
  return x.major === y.major && x.minor === y.minor;
}

/** Whether `to` is the next minor version after `from` in the same major (0.1.4 → 0.2.0 or 0.2.3). */
export function nextMinor(from: string, to: string): boolean {
  const [x, y] = [parseVersion(from)!, parseVersion(to)!];
  return x.major === y.major && y.minor === x.minor + 1;
}

/** Whether `a` is older than `b` in major.minor (a patch apart is no matter); false when either does not parse. */
export function olderMinor(a: string, b: string): boolean {
  const [x, y] = [parseVersion(a), parseVersion(b)];
  return x !== undefined && y !== undefined && (x.major - y.major || x.minor - y.minor) < 0;
}

/** Who talks to a controller: a client (the CLI, the Pulumi provider, scripts) or a machine's or pod's agent. */
export type ControllerPeer = "client" | "agent";

/**
 * The compatibility window, the one policy both sides enforce: a client works with controllers one
 * minor version older or newer; an agent works with a controller of its own minor version or one
 * newer (a controller is upgraded before its agents, never after). Patch versions never matter;
 * different major versions never work together. Returns why `theirs` (the peer's version) and
 * `controller` cannot work together, naming both and what to upgrade, or undefined when they can.
 */
export function versionProblem(peer: ControllerPeer, theirs: string, controller: string): string | undefined {
  const [p, c] = [parseVersion(theirs), parseVersion(controller)];
  const who = peer === "client" ? "client" : "agent";
  if (!p) return `the ${who} sent version "${theirs.slice(0, 40)}", which is not MAJOR.MINOR.PATCH`;
  if (!c) return `the controller sent version "${controller.slice(0, 40)}", which is not MAJOR.MINOR.PATCH`;
  const line = (v: Version, minor: number): string => `${v.major}.${minor}`;
  const pair = `${who} ${theirs} and controller ${controller}`;
  if (p.major !== c.major)
    return `${pair} differ in major version, and those never work together: use a ${who} of ${c.major}.${c.minor}`;
  const ahead = p.minor - c.minor;
  if (peer === "client") {
    if (ahead > 1)
      return `${pair} are ${ahead} minor versions apart (clients work with controllers at most one apart): use a client of ${line(c, c.minor)} or ${line(c, c.minor + 1)}, or upgrade the controller`;
    if (ahead < -1)
      return `${pair} are ${-ahead} minor versions apart (clients work with controllers at most one apart): upgrade the client to ${line(c, c.minor - 1)} or later`;
    return undefined;
  }
  if (ahead > 0)
    return `${pair}: an agent may not be newer than its controller (upgrade the controller first, then the agents)`;
  if (ahead < -1)
    return `${pair}: an agent works with a controller at most one minor version newer; upgrade the agent to ${line(c, c.minor - 1)} or later`;
  return undefined;
}
