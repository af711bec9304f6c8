/** Steward versions (MAJOR.MINOR.PATCH), as upgrades and migrations compare them. */
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

/** Whether `a` is older than `b` in major.minor (a patch apart is no matter); false when either does not parse. */
export function olderMinor(a: string, b: string): boolean {
  const [x, y] = [parseVersion(a), parseVersion(b)];
  return x !== undefined && y !== undefined && (x.major - y.major || x.minor - y.minor) < 0;
}
