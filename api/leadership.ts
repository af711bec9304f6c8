/**
 * Unit leadership's lease, per application (DESIGN.md §5): how long a claim lasts. Agents renew at
 * half of it, so a leader is guaranteed leadership for half the lease after any successful claim.
 * A database primary wants it short (fast failover), most operators keep the default. Given in
 * seconds or as a duration (`10s`, `1m`); browser-safe, shared by the API, the CLI and the provider,
 * and free of zod (its request schema is in schemas.ts), so the agent's bundle stays small.
 */
export const LEADERSHIP_LEASE = {
  /** What an application without its own lease gets (Juju's 60 s claim, 30 s guarantee). */
  defaultSeconds: 60,
  /** Below this, a renewal every 2.5 s and a store round trip leave too little margin (Juju: 5 s too). */
  minSeconds: 5,
  /** An hour: a leader whose agent died holds on that long at worst. */
  maxSeconds: 3600,
} as const;

const UNIT_SECONDS: Record<string, number> = { h: 3600, m: 60, s: 1 };

/**
 * A lease in whole seconds from a number of seconds or a duration (`90s`, `5m`, `1h`, `1m30s`, a bare
 * number being seconds), or why it is not one: the message names the minimum and maximum.
 */
export function parseLeadershipLease(value: unknown): { ok: true; seconds: number } | { ok: false; message: string } {
  const range = `from ${LEADERSHIP_LEASE.minSeconds}s to ${LEADERSHIP_LEASE.maxSeconds}s (1h)`;
  let seconds: number;
  if (typeof value === "number") seconds = value;
  else if (typeof value === "string") {
    const text = value.trim();
    const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(h|m|s)?/g)];
    if (
      parts.length === 0 ||
      parts.map((p) => p[0]).join("") !== text ||
      (parts.length > 1 && parts.some((p) => p[2] === undefined))
    )
      return { ok: false, message: `"${value}" is not a duration such as 10s or 1m; a leadership lease is ${range}` };
    seconds = parts.reduce((s, p) => s + Number(p[1]) * UNIT_SECONDS[p[2] ?? "s"]!, 0);
  } else return { ok: false, message: `must be a number of seconds or a duration such as 10s; ${range}` };
  if (!Number.isFinite(seconds) || !Number.isInteger(seconds))
    return {
      ok: false,
      message: `must be a whole number of seconds (got ${String(value)}); a leadership lease is ${range}`,
    };
  if (seconds < LEADERSHIP_LEASE.minSeconds)
    return {
      ok: false,
      message: `${seconds}s is too short: the minimum leadership lease is ${LEADERSHIP_LEASE.minSeconds}s (${range})`,
    };
  if (seconds > LEADERSHIP_LEASE.maxSeconds)
    return {
      ok: false,
      message: `${seconds}s is too long: the maximum leadership lease is ${LEADERSHIP_LEASE.maxSeconds}s (${range})`,
    };
  return { ok: true, seconds };
}

/** `10s`, `1m`, `1m30s`: how status and the CLI show a lease. */
export function formatLeaseSeconds(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${h ? `${h}h` : ""}${m ? `${m}m` : ""}${s || (!h && !m) ? `${s}s` : ""}`;
}
