/**
 * The parts of the EC2 Query API the fake EC2's resources share (fake-ec2.ts for instances and
 * images, fake-ec2-volumes.ts for EBS volumes), written from "Making API requests using the Query
 * format" and the EC2 API Reference's "Filtering" and "Pagination" sections: list and structure
 * parameters (`Name.N`, `Name.N.Field`), `Filter.N.Name`/`Filter.N.Value.M` with `*` and `?`
 * wildcards and `tag:<key>`, `MaxResults`/`NextToken` paging, and errors with EC2's codes.
 */
import { randomBytes } from "node:crypto";

/** An error as EC2 answers it: its code (`<Code>`), message and HTTP status. */
export class Ec2Error extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

/** XML-escapes text. */
export const esc = (s: string): string => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
/** 17 hex digits: the tail of every current EC2 resource id (`i-…`, `vol-…`, `r-…`). */
export const hex17 = (): string => randomBytes(9).toString("hex").slice(0, 17);

/** `Name.1`, `Name.2`… in index order. */
export function list(p: Record<string, string>, name: string): string[] {
  return Object.entries(p)
    .flatMap(([k, v]) => {
      const m = new RegExp(`^${name}\\.(\\d+)$`).exec(k);
      return m ? [[Number(m[1]), v] as const] : [];
    })
    .sort((a, b) => a[0] - b[0])
    .map(([, v]) => v);
}

/** `Name.N.Field…` grouped by N, in index order, each with its fields relative to `Name.N.`. */
export function structs(p: Record<string, string>, name: string): Record<string, string>[] {
  const groups = new Map<number, Record<string, string>>();
  for (const [k, v] of Object.entries(p)) {
    const m = new RegExp(`^${name}\\.(\\d+)\\.(.+)$`).exec(k);
    if (m) groups.set(Number(m[1]), { ...groups.get(Number(m[1])), [m[2]!]: v });
  }
  return [...groups.entries()].sort((a, b) => a[0] - b[0]).map(([, g]) => g);
}

/** EC2 filter values: `*` matches any run of characters, `?` exactly one. */
export function wildcard(v: string): RegExp {
  return new RegExp(
    `^${v
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*")
      .replace(/\?/g, ".")}$`,
    "s",
  );
}

/**
 * `found` narrowed by the request's `Filter.N`: each filter keeps what has a value matching one of
 * its values (wildcards allowed); `tag:<key>` matches a tag's value, the others through `fields`.
 * An unknown filter name is InvalidParameterValue, as EC2 answers it.
 */
export function filtered<T extends { tags: Record<string, string> }>(
  found: T[],
  p: Record<string, string>,
  fields: ReadonlyMap<string, (x: T) => string[]>,
): T[] {
  for (const f of structs(p, "Filter")) {
    const name = f.Name ?? "";
    const values = list(f, "Value").map(wildcard);
    const tagKey = name.startsWith("tag:") ? name.slice(4) : undefined;
    const field =
      tagKey !== undefined ? (x: T) => (Object.hasOwn(x.tags, tagKey) ? [x.tags[tagKey]!] : []) : fields.get(name);
    if (!field) throw new Ec2Error("InvalidParameterValue", `The filter '${name}' is invalid`);
    found = found.filter((x) => field(x).some((v) => values.some((re) => re.test(v))));
  }
  return found;
}

/**
 * One page of `found` as `MaxResults` (from `min` to `max`) and `NextToken` ask, and the token of
 * the next page. `idsParam` names the id list parameter, which EC2 refuses beside MaxResults.
 */
export function paged<T>(
  found: T[],
  p: Record<string, string>,
  o: { min: number; max: number; idsGiven: boolean; idsParam: string },
): { page: T[]; next: string } {
  let start = 0,
    end = found.length;
  if (p.MaxResults !== undefined) {
    if (o.idsGiven)
      throw new Ec2Error(
        "InvalidParameterCombination",
        `The parameter ${o.idsParam} cannot be used with the parameter maxResults`,
      );
    const max = Number(p.MaxResults);
    if (!Number.isInteger(max) || max < o.min || max > o.max)
      throw new Ec2Error(
        "InvalidParameterValue",
        `Value ( ${p.MaxResults} ) for parameter maxResults is invalid. Expecting a value between ${o.min} and ${o.max}.`,
      );
    if (p.NextToken !== undefined) {
      start = Number(
        Buffer.from(p.NextToken, "base64url")
          .toString()
          .replace(/^offset:/, ""),
      );
      if (!Number.isInteger(start) || start < 0 || start > found.length)
        throw new Ec2Error("InvalidPaginationToken", "The specified pagination token is not valid or is expired.");
    }
    end = Math.min(found.length, start + max);
  }
  const next = end < found.length ? `<nextToken>${Buffer.from(`offset:${end}`).toString("base64url")}</nextToken>` : "";
  return { page: found.slice(start, end), next };
}

/** `true`/`false` parameters; anything else is InvalidParameterValue. Undefined when not given. */
export function bool(p: Record<string, string>, name: string): boolean | undefined {
  const v = p[name];
  if (v === undefined) return undefined;
  if (v !== "true" && v !== "false")
    throw new Ec2Error("InvalidParameterValue", `Invalid value '${v}' for ${name}: expecting true or false`);
  return v === "true";
}

/** A whole-number parameter; anything else is InvalidParameterValue. Undefined when not given. */
export function int(p: Record<string, string>, name: string): number | undefined {
  const v = p[name];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(n))
    throw new Ec2Error("InvalidParameterValue", `Invalid value '${v}' for ${name}: expecting an integer`);
  return n;
}
