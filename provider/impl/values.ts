/**
 * Values as they cross the dynamic-provider wire: the unknown sentinel of a preview, plain JSON
 * (no `undefined`, which the SDK cannot encode), and comparison by meaning rather than by text.
 */

/** What the engine sends for a value not known until apply (preview). */
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

export const isUnknown = (v: unknown): boolean => v === UNKNOWN;

/** A deep copy holding only what JSON holds: `undefined` dropped, so the SDK can encode it. */
export function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Config maps equal by value and type (1 and "1" differ), whatever their key order. */
export function sameConfig(a: Record<string, unknown> | undefined, b: Record<string, unknown> | undefined): boolean {
  const x = a ?? {},
    y = b ?? {};
  const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
  for (const k of keys) if (!Object.is(x[k], y[k])) return false;
  return true;
}

/** Arrays equal as sets (order means nothing: addresses, machine placement). */
export function sameSet(a: readonly unknown[] | undefined, b: readonly unknown[] | undefined): boolean {
  const x = new Set((a ?? []).map((v) => JSON.stringify(v))),
    y = new Set((b ?? []).map((v) => JSON.stringify(v)));
  return x.size === y.size && [...x].every((v) => y.has(v));
}

/** Deep equality of plain values, object key order ignored. */
export function sameValue(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object")
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(v) ?? "undefined";
}
