/** What `bootstrap` (several hosts) and `enable-ha` share: the replica-count rule, settings, and following the growth. */
import { UsageError } from "clipanion";

/** Refuses replica counts other than 1, 3, 5 and 7, saying why. */
export function checkReplicaCount(n: number, what: string, given = String(n)): void {
  if ([1, 3, 5, 7].includes(n)) return;
  const why =
    Number.isInteger(n) && n % 2 === 0
      ? "an even number of voters tolerates no more failures than one fewer"
      : n > 7
        ? "etcd advises at most 7 voters"
        : "a cluster needs an odd number of voters";
  throw new UsageError(`${what} must be 1, 3, 5 or 7, not "${given}": ${why}`);
}

/** `--replace-after` (milliseconds, as validated) as the API takes it (whole seconds), or nothing when not given. */
export function replaceAfterSetting(ms: number | undefined): { replaceAfterSeconds?: number } {
  return ms !== undefined ? { replaceAfterSeconds: Math.round(ms / 1000) } : {};
}
