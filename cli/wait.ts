/** Parsing durations given on the command line. */
import { StewardError } from "../api/core";

/** Parses durations like `90`, `90s`, `5m`, `1h` into milliseconds. */
export function parseDuration(text: string, what: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new StewardError("invalid-request", `${what} "${text}" is not a duration such as 90s, 5m or 1h`);
  const n = Number(m[1]);
  return n * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? "s"] ?? 1000);
}
