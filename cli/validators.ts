/**
 * Validators for command-line values (typanion, which clipanion runs while parsing): a bad value
 * is refused with a usage error before `execute()` starts, so a command never changes anything and
 * then complains about an argument.
 */
import { UsageError } from "clipanion";
import * as t from "typanion";
import { parseLeadershipLease } from "../api/core";
import { parseDuration } from "./wait";

/** What every `--timeout` and other duration option accepts, for help texts. */
export const DURATION_HELP = "a duration such as 90s, 5m or 1h (a bare number is seconds)";

/** A duration (`90s`, `5m`, `1h`, `250ms`, or a bare number of seconds), coerced to milliseconds. */
export function isDuration(): t.StrictValidator<unknown, number> {
  return t.makeValidator<unknown, number>({
    test: (value, state): value is number => {
      if (typeof value === "number") return true;
      let ms: number;
      try {
        ms = parseDuration(String(value), "value");
      } catch {
        return fail(state, `Expected ${DURATION_HELP} (got ${JSON.stringify(value)})`);
      }
      if (!state?.coercions || !state.coercion) return fail(state, "Unbound coercion result");
      state.coercions.push([state.p ?? ".", state.coercion.bind(null, ms)]);
      return true;
    },
  });
}

/** A leadership lease (`10s`, `1m`, a bare number of seconds; 5 s to 1 h), coerced to whole seconds. */
export function isLeadershipLease(): t.StrictValidator<unknown, number> {
  return t.makeValidator<unknown, number>({
    test: (value, state): value is number => {
      const parsed = parseLeadershipLease(value);
      if (!parsed.ok) return fail(state, parsed.message);
      if (typeof value === "number") return true;
      if (!state?.coercions || !state.coercion) return fail(state, "Unbound coercion result");
      state.coercions.push([state.p ?? ".", state.coercion.bind(null, parsed.seconds)]);
      return true;
    },
  });
}

/** Records why a value was refused, as typanion's own predicates do (its helper is not exported). */
function fail(state: t.ValidationState | undefined, message: string): false {
  state?.errors?.push(`${state.p ?? "."}: ${message}`);
  return false;
}

/** A whole number from `min` to `max` (inclusive), coerced from its text. */
export function isWholeNumber(min: number, max = Number.MAX_SAFE_INTEGER): t.StrictValidator<unknown, number> {
  return t.cascade(t.isNumber(), [t.isInteger(), t.isInInclusiveRange(min, max)]);
}

/** A TCP port. */
export function isPort(): t.StrictValidator<unknown, number> {
  return isWholeNumber(1, 65535);
}

/** Refuses what is not a unit name (`web/0`), before anything is asked of the controller. */
export function checkUnitName(text: string): void {
  if (!/^[a-z][a-z0-9-]*\/\d+$/.test(text)) throw new UsageError(`"${text}" is not a unit name such as web/0`);
}
