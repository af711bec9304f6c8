/**
 * What is wrong with a command line, in one sentence: the nearest commands for a typo (`statsu` →
 * `status`), or which option or argument is missing, unknown or out of place. Clipanion's own
 * answers are "Command not found" (a missing required option included) followed by every command's
 * or the whole command's signature.
 */
import type { CommandSpec, OptionSpec } from "./command-spec";
import { optionDefinition } from "./command-spec";

/**
 * The candidates nearest to `word`, best first: those that start with it, contain it, or are a few
 * edits away (a swapped pair of letters counts as one edit).
 */
export function nearest(word: string, candidates: readonly string[], max = 3): string[] {
  const w = word.toLowerCase();
  const scored: { c: string; score: number }[] = [];
  for (const c of candidates) {
    const d = editDistance(w, c.toLowerCase());
    const near = d <= Math.max(1, Math.floor(Math.max(w.length, 1) / 3));
    if (near) scored.push({ c, score: d });
    else if (w.length >= 2 && c.startsWith(w)) scored.push({ c, score: 10 });
    else if (w.length >= 3 && c.includes(w)) scored.push({ c, score: 11 });
  }
  // A much closer match stands alone: one swapped pair (remove-unti) does not also suggest remove-user.
  const best = Math.min(...scored.map((s) => s.score));
  return scored
    .filter((s) => s.score <= best + 1)
    .sort((a, b) => a.score - b.score || a.c.length - b.c.length)
    .slice(0, max)
    .map((s) => s.c);
}

/** Edits (insert, delete, substitute, swap two neighbours) from `a` to `b` (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** "did you mean status?" / "did you mean status, show-unit or run?" */
export function didYouMean(options: string[]): string {
  if (options.length === 0) return "";
  const last = options[options.length - 1]!;
  return ` Did you mean ${options.length === 1 ? last : `${options.slice(0, -1).join(", ")} or ${last}`}?`;
}

/**
 * Why `args` (after the command's name) do not fit `spec`, or undefined when they seem to (then
 * the parser's own reason is all there is). Reads the line as clipanion does: `--name=value`,
 * `--name value`, bundled short flags (`-yf`), `--` ending the options.
 */
export function usageProblem(spec: CommandSpec, args: readonly string[]): string | undefined {
  const byName = new Map<string, OptionSpec>();
  for (const o of spec.options) for (const n of o.names) byName.set(n, o);
  const given = new Set<OptionSpec>();
  const positionals: string[] = [];
  let optionsEnded = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (optionsEnded || !/^-./.test(arg) || /^-\d/.test(arg)) {
      positionals.push(arg);
      continue;
    }
    if (arg === "--") {
      optionsEnded = true;
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    const option = byName.get(name);
    if (!option) {
      const bundle = /^-[a-zA-Z]{2,}$/.test(arg) ? [...arg.slice(1)].map((c) => byName.get(`-${c}`)) : [];
      if (bundle.length > 0 && bundle.every((o) => o && o.arity === 0)) {
        for (const o of bundle) given.add(o!);
        continue;
      }
      if (arg === "-h" || arg === "--help") continue;
      const names = spec.options.filter((o) => !o.hidden).flatMap((o) => o.names.filter((n) => n.startsWith("--")));
      return `unknown option ${name}.${didYouMean(nearest(name, names))}`;
    }
    given.add(option);
    if (option.arity === 0) {
      if (eq > 0) return `${name} is a flag and takes no value (got "${arg.slice(eq + 1)}")`;
      continue;
    }
    if (eq > 0) continue;
    const value = args[i + 1];
    if (value === undefined || (/^-./.test(value) && !/^-\d/.test(value)))
      return `${name} needs a value: ${optionDefinition(option).replace(/^-\w, /, "")}`;
    i += option.arity;
  }
  const missingOption = spec.options.find((o) => o.required && !given.has(o));
  if (missingOption) return `missing the required option ${optionDefinition(missingOption).replace(/^-\w, /, "")}`;
  const required = spec.positionals.filter((p) => p.required).length + (spec.rest?.required ?? 0);
  if (positionals.length < required) {
    const names = [
      ...spec.positionals.filter((p) => p.required).map((p) => p.name),
      ...Array<string>(spec.rest?.required ?? 0).fill(spec.rest?.name ?? ""),
    ];
    const missing = names.slice(positionals.length);
    return `missing ${missing.length === 1 ? "the argument" : "the arguments"} ${missing.map((n) => `<${n}>`).join(" ")}`;
  }
  if (!spec.rest && positionals.length > spec.positionals.length) {
    const extra = positionals.slice(spec.positionals.length);
    return `unexpected ${extra.length === 1 ? "argument" : "arguments"} ${extra.map((e) => JSON.stringify(e)).join(" ")}`;
  }
  return undefined;
}
