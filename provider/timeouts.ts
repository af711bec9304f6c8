import type * as pulumi from "@pulumi/pulumi";

const UNIT_SECONDS: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001 };

/**
 * Whole seconds (rounded up) in a duration as `customTimeouts` takes them (Go's syntax: `"30m"`,
 * `"1h30m"`, `"90s"`); undefined when absent. A malformed one is an error naming the option.
 */
export function durationSeconds(duration: string | undefined, option: string): number | undefined {
  if (duration === undefined || duration === "") return undefined;
  const parts = [...duration.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== duration) {
    throw new Error(`customTimeouts.${option}: "${duration}" is not a duration such as "30m", "1h30m" or "90s"`);
  }
  return Math.ceil(parts.reduce((s, p) => s + Number(p[1]) * UNIT_SECONDS[p[2]!]!, 0));
}

/**
 * What a resource waits for, in seconds: its own `…TimeoutSeconds` argument when given, else the
 * first of `options` set in `customTimeouts` (the engine does not pass those to a dynamic provider,
 * so the resource carries them as an input), else `fallback`.
 */
export function waitSeconds(
  explicit: pulumi.Input<number> | undefined,
  opts: pulumi.CustomResourceOptions | undefined,
  options: ("create" | "update" | "delete")[],
  fallback: number,
): pulumi.Input<number> {
  if (explicit !== undefined) return explicit;
  for (const o of options) {
    const s = durationSeconds(opts?.customTimeouts?.[o], o);
    if (s !== undefined) return s;
  }
  return fallback;
}
