/**
 * What every mapping section of operator.yaml (`actions:`, `storage:`, `containers:`) checks before
 * its entries: that it is a mapping, and that it holds no more entries than an operator may declare.
 * `fail(path, problem)` throws the operator format's error naming the field and its line.
 */

/** Throws the operator format's error for the field at `path`. */
export type FormatFail = (path: (string | number)[], problem: string) => never;

/** The entries of section `section` (none when absent), or `fail` saying it is no mapping of `shape` or holds over `max` `noun`. */
export function sectionEntries(
  raw: unknown,
  section: string,
  o: { shape: string; noun: string; max: number },
  fail: FormatFail,
): [string, unknown][] {
  if (raw === undefined || raw === null) return [];
  if (typeof raw !== "object" || Array.isArray(raw)) return fail([section], `must be a mapping of ${o.shape}`);
  const entries = Object.entries(raw as Record<string, unknown>);
  if (entries.length > o.max)
    fail([section], `declares ${entries.length} ${o.noun}; an operator may declare at most ${o.max}`);
  return entries;
}
