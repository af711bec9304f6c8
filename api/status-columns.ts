/**
 * The status document's compact wire form (`GET …/status?format=columns`): each application's
 * units and the machines go as column tables instead of one object per row. At 10,000 units the
 * plain document is 4.2 MiB whose JSON.parse alone costs a client ~45 ms; as columns it is about a
 * quarter of that and parses, expanded back into the same objects, in a few milliseconds.
 * {@link expandStatusColumns} gives back exactly the document {@link statusToColumns} was given.
 */
import { StewardError } from "./errors";
import type { ModelStatus } from "./status";

/** A record of similar objects as columns: `values[j][i]` is leaf `paths[j]` of row `keys[i]`, null where absent. */
export interface ColumnTable {
  $columns: { keys: string[]; paths: string[][]; values: unknown[][] };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Names that would reach a prototype when used as a property path. */
const UNSAFE = new Set(["__proto__", "constructor", "prototype"]);

/**
 * The leaves of `row` (arrays are leaves; nested objects are walked). Undefined means the row
 * cannot be a table row: a null or an empty object would not come back from the columns as it was.
 */
function leaves(
  row: unknown,
  prefix: string[] = [],
  out: [string[], unknown][] = [],
): [string[], unknown][] | undefined {
  if (!isPlainObject(row)) return undefined;
  const entries = Object.entries(row);
  if (entries.length === 0) return undefined;
  for (const [k, v] of entries) {
    if (v === undefined) continue;
    if (v === null || UNSAFE.has(k)) return undefined;
    if (isPlainObject(v)) {
      if (!leaves(v, [...prefix, k], out)) return undefined;
    } else out.push([[...prefix, k], v]);
  }
  return out;
}

/** `record` as a column table, or itself when it has no rows or a row that a table would not keep exactly. */
export function toColumnTable<T>(record: Record<string, T>): Record<string, T> | ColumnTable {
  const keys = Object.keys(record);
  if (keys.length === 0 || keys.some((k) => UNSAFE.has(k))) return record;
  const paths: string[][] = [];
  const values: unknown[][] = [];
  const slot = new Map<string, number>();
  const stack: string[] = [];
  for (let i = 0; i < keys.length; i++) {
    const row = record[keys[i]!];
    // Most rows have the columns already known, in order: filled without building their paths.
    const fast = isPlainObject(row) ? fillKnown(row, paths, values, i, stack, { j: 0 }) : UNENCODABLE;
    if (fast === UNENCODABLE) return record;
    if (fast === UNKNOWN_COLUMN && !fillNew(row, paths, values, slot, i)) return record;
    for (const column of values) if (column.length === i) column.push(null);
  }
  return { $columns: { keys, paths, values } };
}

const FILLED = 0;
const UNKNOWN_COLUMN = 1;
const UNENCODABLE = 2;

/**
 * Writes row `i`'s leaves into the known columns, which must hold them in the row's order (columns
 * the row lacks are skipped and padded later). UNKNOWN_COLUMN when a leaf has no column after the
 * previous one: the row then goes through {@link fillNew}.
 */
function fillKnown(
  o: Record<string, unknown>,
  paths: string[][],
  values: unknown[][],
  i: number,
  stack: string[],
  at: { j: number },
): number {
  let any = false;
  for (const k in o) {
    const v = o[k];
    if (v === undefined) continue;
    any = true;
    if (v === null || UNSAFE.has(k)) return UNENCODABLE;
    stack.push(k);
    const r = isPlainObject(v) ? fillKnown(v, paths, values, i, stack, at) : place(v, paths, values, i, stack, at);
    stack.pop();
    if (r !== FILLED) return r;
  }
  return any ? FILLED : UNENCODABLE;
}

function place(
  v: unknown,
  paths: string[][],
  values: unknown[][],
  i: number,
  stack: string[],
  at: { j: number },
): number {
  for (let j = at.j; j < paths.length; j++) {
    const p = paths[j]!;
    if (p.length !== stack.length || p.some((seg, d) => seg !== stack[d])) continue;
    values[j]![i] = v;
    at.j = j + 1;
    return FILLED;
  }
  return UNKNOWN_COLUMN;
}

/** Row `i` by its paths, adding the columns it brings; false when it cannot be a table row. */
function fillNew(row: unknown, paths: string[][], values: unknown[][], slot: Map<string, number>, i: number): boolean {
  if (slot.size !== paths.length) for (const [j, p] of paths.entries()) slot.set(p.join("\u0000"), j);
  const found = leaves(row);
  if (!found) return false;
  let previous = -1;
  for (const [path, value] of found) {
    const id = path.join("\u0000");
    let j = slot.get(id);
    if (j === undefined) {
      // A leaf first seen in a later row goes after its predecessor in that row, so key order survives.
      j = previous + 1;
      for (const [other, n] of slot) if (n >= j) slot.set(other, n + 1);
      slot.set(id, j);
      paths.splice(j, 0, path);
      values.splice(j, 0, new Array<unknown>(i).fill(null));
    }
    values[j]![i] = value;
    previous = j;
  }
  return true;
}

const malformed = (why: string): never => {
  throw new StewardError("internal", `the controller sent a malformed status table (${why})`);
};

/** The record a {@link toColumnTable} made; anything that is not a table is returned as it is. */
export function fromColumnTable<T>(x: Record<string, T> | ColumnTable): Record<string, T> {
  if (!isPlainObject(x) || !("$columns" in x)) return x as Record<string, T>;
  const { keys, paths, values } = ((x as unknown as ColumnTable).$columns ?? {}) as Partial<ColumnTable["$columns"]>;
  if (!Array.isArray(keys) || !Array.isArray(paths) || !Array.isArray(values) || values.length !== paths.length)
    return malformed("shape");
  for (const p of paths)
    if (!Array.isArray(p) || p.length === 0 || p.some((s) => typeof s !== "string" || UNSAFE.has(s)))
      return malformed("path");
  for (const c of values) if (!Array.isArray(c) || c.length !== keys.length) return malformed("column length");
  for (const key of keys) if (typeof key !== "string" || UNSAFE.has(key)) return malformed("key");
  // Column by column: each loop stores one property name, which V8 keeps fast (row by row, every
  // store site saw every name and the expansion took twice as long).
  const n = keys.length;
  const rows: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) rows.push({});
  for (let j = 0; j < paths.length; j++) {
    const p = paths[j]!;
    const column = values[j]!;
    const last = p[p.length - 1]!;
    if (p.length === 1) {
      for (let i = 0; i < n; i++) if (column[i] !== null) rows[i]![last] = column[i];
      continue;
    }
    if (p.length === 2) {
      const parent = p[0]!;
      for (let i = 0; i < n; i++) {
        if (column[i] === null) continue;
        const row = rows[i]!;
        ((row[parent] ??= {}) as Record<string, unknown>)[last] = column[i];
      }
      continue;
    }
    for (let i = 0; i < n; i++) {
      const v = column[i];
      if (v === null) continue;
      let o = rows[i]!;
      for (let s = 0; s < p.length - 1; s++) {
        let next = o[p[s]!] as Record<string, unknown> | undefined;
        if (next === undefined) o[p[s]!] = next = {};
        o = next;
      }
      o[last] = v;
    }
  }
  const out: Record<string, T> = {};
  for (let i = 0; i < n; i++) out[keys[i]!] = rows[i] as T;
  return out;
}

/** The status document with its units and machines as column tables. */
export function statusToColumns(s: ModelStatus): unknown {
  const applications: Record<string, unknown> = {};
  for (const [name, app] of Object.entries(s.applications))
    applications[name] = { ...app, units: toColumnTable(app.units) };
  return { ...s, applications, machines: toColumnTable(s.machines) };
}

/** A status document as the controller sent it, plain or with column tables, as plain objects. */
export function expandStatusColumns(wire: unknown): ModelStatus {
  const s = wire as ModelStatus;
  if (!isPlainObject(s) || !isPlainObject(s.applications)) return s;
  for (const app of Object.values(s.applications)) if (isPlainObject(app)) app.units = fromColumnTable(app.units);
  s.machines = fromColumnTable(s.machines);
  return s;
}
