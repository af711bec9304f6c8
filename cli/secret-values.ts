/**
 * Where `add-secret` and `update-secret` take a secret's values from: `key=value` arguments (which
 * land in shell history and the process list, so help steers people to the others), `key#file=PATH`
 * (the file's content, as it is), `--file F` (a YAML or JSON map) and `-` (standard input: key=value
 * lines or a YAML or JSON map). Nothing here ever repeats a value: errors name keys, files and line
 * numbers, never content (a YAML or JSON parser's own message quotes the text, so it is not passed on).
 */
import { UsageError } from "clipanion";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type * as Yaml from "yaml";
import { NAME_PATTERN, SECRET_NAME_PATTERN, secretContentProblem, secretIdOf } from "../api/core";
import type { StewardContext } from "./context";
import { readAll } from "./read-password";

/** What a command's help says about the sources (shared by add-secret and update-secret): one paragraph, one line. */
export const VALUE_SOURCES_HELP =
  "Values come from arguments `key=value` or `key#file=PATH` (the file's whole content, as it is), from `--file F` (a YAML or JSON map of key to value), or from standard input with `-` (`key=value` lines, or a YAML or JSON map); several may be given, each key once. Values on the command line land in your shell's history and, while the command runs, in the host's process list: prefer a file or standard input for anything that matters. Keys are 3 to 64 lower-case letters, digits and single hyphens, starting with a letter; a secret holds at most 64 keys and 64 KiB. No command prints a value back except `show-secret --reveal`.";

/** Reads the values `items` and `file` name; undefined when neither names any. */
export async function readSecretValues(
  ctx: StewardContext,
  items: readonly string[],
  file: string | undefined,
): Promise<Record<string, string> | undefined> {
  if (items.length === 0 && file === undefined) return undefined;
  const out: Record<string, string> = {};
  const put = (key: string, value: string, from: string): void => {
    if (Object.prototype.hasOwnProperty.call(out, key)) throw new UsageError(`key "${key}" is given twice (${from})`);
    out[key] = value;
  };
  let stdinRead = false;
  for (const [i, item] of items.entries()) {
    if (item === "-") {
      if (stdinRead) throw new UsageError("- (standard input) may be given once");
      stdinRead = true;
      const text = await readAll(ctx.stdin);
      for (const [k, v] of Object.entries(parseValuesText(text, "standard input"))) put(k, v, "standard input");
      continue;
    }
    const fileRef = /^([^=#]+)#file=(.+)$/s.exec(item);
    if (fileRef) {
      const path = resolve(ctx.cwd, fileRef[2]!.replace(/^~(?=\/)/, ctx.env.HOME ?? "~"));
      const content = await readFile(path, "utf8").catch(() => {
        throw new UsageError(`${fileRef[1]}#file: cannot read ${path}`);
      });
      put(fileRef[1]!, content, `${fileRef[1]}#file`);
      continue;
    }
    const eq = item.indexOf("=");
    // Without "=" the word may be a value typed alone: say where it is, never what it is.
    if (eq <= 0)
      throw new UsageError(
        `value argument ${i + 1} is not key=value, key#file=PATH or - (standard input); it is not shown here, in case it is a secret`,
      );
    put(item.slice(0, eq), item.slice(eq + 1), "arguments");
  }
  if (file !== undefined) {
    const path = resolve(ctx.cwd, file.replace(/^~(?=\/)/, ctx.env.HOME ?? "~"));
    const text = await readFile(path, "utf8").catch(() => {
      throw new UsageError(`--file: cannot read ${path}`);
    });
    for (const [k, v] of Object.entries(parseValuesText(text, path))) put(k, v, path);
  }
  const problem = secretContentProblem(out);
  if (problem) throw new UsageError(problem);
  return out;
}

/**
 * A map of values from text: JSON (`{…}`), `key=value` lines (blank lines and `#` comments skipped),
 * or a YAML map. Values must be strings (numbers and booleans are taken as their text).
 */
export function parseValuesText(text: string, where: string): Record<string, string> {
  const trimmed = text.trim();
  if (trimmed === "") throw new UsageError(`${where} holds no values`);
  let parsed: unknown;
  if (trimmed.startsWith("{")) {
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      throw new UsageError(
        `${where} is not a valid JSON map (the parser's message would quote it, so it is not shown)`,
      );
    }
  } else if (isKeyValueLines(trimmed)) {
    const out: Record<string, string> = {};
    for (const line of text.split(/\r?\n/)) {
      if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
      const eq = line.indexOf("=");
      const key = line.slice(0, eq).trim();
      if (Object.prototype.hasOwnProperty.call(out, key)) throw new UsageError(`${where}: key "${key}" is given twice`);
      out[key] = line.slice(eq + 1);
    }
    return out;
  } else {
    try {
      parsed = (require("yaml") as typeof Yaml).parse(trimmed);
    } catch (e) {
      const line = (e as { linePos?: { line: number }[] }).linePos?.[0]?.line;
      throw new UsageError(
        `${where} is not key=value lines, YAML or JSON${line !== undefined ? ` (YAML error on line ${line})` : ""}`,
      );
    }
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    throw new UsageError(`${where} must hold a map of key to value (key=value lines, YAML or JSON)`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (typeof v === "string") out[k] = v;
    else if (typeof v === "number" || typeof v === "boolean") out[k] = String(v);
    else throw new UsageError(`${where}: the value of "${k}" must be text, not ${v === null ? "null" : typeof v}`);
  }
  return out;
}

/** Every line that is not blank or a comment starts `key=` with a key of letters, digits and hyphens. */
function isKeyValueLines(text: string): boolean {
  return text
    .split(/\r?\n/)
    .filter((l) => l.trim() !== "" && !l.trimStart().startsWith("#"))
    .every((l) => /^\s*[A-Za-z][A-Za-z0-9_-]*\s*=/.test(l));
}

/** A secret named by its name or `secret:<id>`, as the routes take it; refused with the rule otherwise. */
export function secretRef(text: string): string {
  if (SECRET_NAME_PATTERN.test(text) || (text.startsWith("secret:") && secretIdOf(text) !== undefined)) return text;
  throw new UsageError(
    `"${text.slice(0, 80)}" is not a secret's name (lower-case letters, digits and hyphens) or its uri (secret:<20 characters>)`,
  );
}

/** A secret's name for add-secret or update-secret --name. */
export function secretName(text: string): string {
  if (SECRET_NAME_PATTERN.test(text)) return text;
  throw new UsageError(
    `"${text.slice(0, 80)}" is not a secret name: use lower-case letters, digits and hyphens, starting with a letter, at most 63 characters`,
  );
}

/** Application names for grant-secret and revoke-secret. */
export function appNames(names: readonly string[]): string[] {
  for (const n of names)
    if (!NAME_PATTERN.test(n) || n.length > 63) throw new UsageError(`"${n.slice(0, 80)}" is not an application name`);
  return [...new Set(names)];
}

/**
 * Whether a console line carries values on its command line (`add-secret x key=value`): such lines
 * are kept out of the console's saved history.
 */
export function carriesSecretValues(line: string): boolean {
  const words = line.trim().split(/\s+/);
  const at = words[0] === "steward" ? 1 : 0;
  return (
    (words[at] === "add-secret" || words[at] === "update-secret") &&
    words.slice(at + 1).some((w) => /^[^-][^=]*=/.test(w) && !w.includes("#file="))
  );
}
