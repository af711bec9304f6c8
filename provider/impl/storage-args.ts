/**
 * The Application's `storage` argument (issue 32): `{data: {pool?, size?, count?}}` as a program
 * writes it (sizes as `"10G"` or MiB, parsed as `deploy --storage` parses them), checked against the
 * operator, sent as the controller's storage requests, and read back so that `pulumi refresh` shows
 * a directive changed outside the program. A change applies to units added after it (Juju's storage
 * directives); nothing here ever replaces an application, which would destroy its data.
 */
import { formatSizeMiB, parseSizeMiB } from "../../api/core";
import type { Failures } from "./checks";
import { isUnknown } from "./values";

/** One store as the program gives it: each part optional (the operator's and substrate's defaults). */
export interface StorageArg {
  pool?: string;
  /** `"10G"`, `"512M"`, or MiB. */
  size?: string | number;
  count?: number;
}
export type StorageArgs = Record<string, StorageArg>;
/**
 * What the controller gives each new unit of a store (api's StorageDirectiveView). Spelled out here,
 * as is the part of the operator read below: the published declarations must not reach the api
 * index, and through it zod.
 */
export interface StorageDirective {
  pool: string;
  /** MiB */
  size: number;
  count: number;
}
/** What of an operator's metadata the checks read. */
interface StoresOf {
  name: string;
  storage?: Record<string, { minimumSize: number; count: { min: number; max: number } }>;
}
/** What the controller is sent: sizes in MiB. */
type Requests = Record<string, { pool?: string; size?: number; count?: number }>;

const FIELDS = ["pool", "size", "count"] as const;

/** Adds a failure, naming the field, for each part of `storage` that the operator `meta` refuses. */
export function checkStorageArgs(f: Failures, storage: unknown, meta: StoresOf | undefined): void {
  if (storage === undefined || isUnknown(storage)) return;
  if (typeof storage !== "object" || storage === null || Array.isArray(storage))
    return f.add("storage", 'must map each store to {pool, size, count}, such as {data: {size: "10G"}}');
  for (const [name, arg] of Object.entries(storage as Record<string, unknown>)) {
    const at = `storage.${name}`;
    if (isUnknown(arg)) continue;
    const spec = meta?.storage?.[name];
    if (meta && !spec) {
      f.add(at, `operator ${meta.name} declares no storage "${name}" (it declares: ${storeNames(meta)})`);
      continue;
    }
    if (typeof arg !== "object" || arg === null || Array.isArray(arg)) {
      f.add(at, "must be {pool, size, count}, each optional");
      continue;
    }
    const a = arg as Record<string, unknown>;
    f.unknownKeys(at, a, FIELDS);
    if (a.pool !== undefined && !isUnknown(a.pool) && (typeof a.pool !== "string" || !/^[a-z][a-z0-9-]*$/.test(a.pool)))
      f.add(`${at}.pool`, `must be a pool name such as local or ebs, not ${JSON.stringify(a.pool)}`);
    if (a.size !== undefined && !isUnknown(a.size)) {
      const mib = typeof a.size === "string" || typeof a.size === "number" ? parseSizeMiB(a.size) : undefined;
      if (mib === undefined)
        f.add(
          `${at}.size`,
          `must be a size such as "512M" or "10G", or a number of MiB, not ${JSON.stringify(a.size)}`,
        );
      else if (spec && mib < spec.minimumSize)
        f.add(
          `${at}.size`,
          `${formatSizeMiB(mib)} is below the operator's minimum-size ${formatSizeMiB(spec.minimumSize)}`,
        );
    }
    if (a.count !== undefined && !isUnknown(a.count)) {
      const min = spec?.count.min ?? 0;
      const max = spec?.count.max ?? 64;
      if (typeof a.count !== "number" || !Number.isInteger(a.count) || a.count < min || a.count > max)
        f.add(`${at}.count`, `must be a whole number from ${min} to ${max} (the operator's multiple.range)`);
    }
  }
}

const storeNames = (meta: StoresOf): string => Object.keys(meta.storage ?? {}).join(", ") || "none";

/** The program's storage as the controller's requests (sizes in MiB). */
export function storageRequests(storage: StorageArgs | undefined): Requests {
  const out: Requests = {};
  for (const [name, a] of Object.entries(storage ?? {})) {
    const size = a.size !== undefined ? parseSizeMiB(a.size) : undefined;
    out[name] = {
      ...(a.pool !== undefined ? { pool: a.pool } : {}),
      ...(size !== undefined ? { size } : {}),
      ...(a.count !== undefined ? { count: a.count } : {}),
    };
  }
  return out;
}

/** Whether two programs' storage mean the same (`"1G"` and 1024 do). */
export function sameStorage(a: StorageArgs | undefined, b: StorageArgs | undefined): boolean {
  return canonical(storageRequests(a)) === canonical(storageRequests(b));
}

const canonical = (r: Requests): string =>
  JSON.stringify(
    Object.keys(r)
      .sort()
      .map((k) => [k, r[k]!.pool ?? null, r[k]!.size ?? null, r[k]!.count ?? null]),
  );

/**
 * What an update sends for the program's change from `olds` to `news`: the parts it gives, and for a
 * size or count it no longer gives, the operator's default again (a pool left out stays as it is).
 */
export function storageChange(
  olds: StorageArgs | undefined,
  news: StorageArgs | undefined,
  meta: StoresOf,
): Requests | undefined {
  if (sameStorage(olds, news)) return undefined;
  const change = storageRequests(news);
  for (const [name, old] of Object.entries(storageRequests(olds))) {
    const spec = meta.storage?.[name];
    if (!spec) continue;
    const now = (change[name] ??= {});
    if (old.size !== undefined && now.size === undefined) now.size = spec.minimumSize;
    if (old.count !== undefined && now.count === undefined) now.count = spec.count.min;
  }
  return change;
}

/**
 * The program's storage as a read reports it: unchanged while the controller's directives are those
 * recorded at the last create or update; where one differs (changed outside the program), that part
 * as the controller has it, so refresh shows the drift.
 */
export function observedStorage(
  program: StorageArgs | undefined,
  recorded: Record<string, StorageDirective> | undefined,
  observed: Record<string, StorageDirective>,
): StorageArgs | undefined {
  if (!recorded) return program;
  let out: StorageArgs | undefined = program;
  for (const name of new Set([...Object.keys(recorded), ...Object.keys(observed)])) {
    const was = recorded[name];
    const now = observed[name];
    for (const field of FIELDS) {
      if (was?.[field] === now?.[field]) continue;
      out = { ...(out ?? {}) };
      const value = now?.[field];
      const entry: StorageArg = { ...(out[name] ?? {}) };
      if (value === undefined) delete entry[field];
      else if (field === "size") entry.size = formatSizeMiB(value as number);
      else (entry as Record<string, unknown>)[field] = value;
      out[name] = entry;
    }
  }
  return out;
}
