/**
 * Label selectors in their string form (`labelSelector=` on list and watch), with the grammar of
 * the "Labels and Selectors" concepts page: equality (`k=v`, `k==v`, `k!=v`) and set-based
 * (`k in (a,b)`, `k notin (a,b)`, `k`, `!k`) requirements, comma-separated, all ANDed. `!=` and
 * `notin` match objects without the key. Field selectors (`fieldSelector=`): `=`, `==`, `!=` on
 * `metadata.name`, `metadata.namespace` and the few fields a kind supports; any other field is a
 * 400 "field label not supported", as the real server answers.
 */
import { badRequest } from "./status";

type Requirement = { key: string; op: "in" | "notin" | "exists" | "!"; values: string[] };
export type LabelSelector = (labels: Record<string, string> | undefined) => boolean;

const KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** Splits on commas outside parentheses. */
function split(s: string): string[] {
  const out: string[] = [];
  let depth = 0,
    cur = "";
  for (const ch of s) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(cur);
      cur = "";
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

function requirement(raw: string): Requirement {
  const s = raw.trim();
  const fail = (why: string): never => {
    throw badRequest(`unable to parse requirement: ${JSON.stringify(s)}: ${why}`);
  };
  const checkKey = (k: string): string => (KEY.test(k) ? k : fail(`invalid label key "${k}"`));
  const checkValue = (v: string): string => (VALUE.test(v) ? v : fail(`invalid label value "${v}"`));
  let m = /^(!)?\s*([^\s!=(),]+)$/.exec(s);
  if (m) return { key: checkKey(m[2]!), op: m[1] ? "!" : "exists", values: [] };
  m = /^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/.exec(s);
  if (m) return { key: checkKey(m[1]!), op: m[2] === "!=" ? "notin" : "in", values: [checkValue(m[3]!)] };
  m = /^([^\s!=(),]+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(s);
  if (m) {
    const values = m[3]!.split(",").map((v) => checkValue(v.trim()));
    return { key: checkKey(m[1]!), op: m[2] as "in" | "notin", values };
  }
  return fail("expected k, !k, k=v, k==v, k!=v, k in (v1,v2) or k notin (v1,v2)");
}

/** Parses a label selector string; an empty one matches everything. */
export function parseLabelSelector(s: string | undefined | null): LabelSelector {
  if (!s || !s.trim()) return () => true;
  const reqs = split(s).map(requirement);
  return (labels) =>
    reqs.every((r) => {
      const has = labels !== undefined && Object.hasOwn(labels, r.key);
      const v = has ? labels![r.key]! : undefined;
      switch (r.op) {
        case "exists":
          return has;
        case "!":
          return !has;
        case "in":
          return has && r.values.includes(v!);
        case "notin":
          return !has || !r.values.includes(v!);
      }
    });
}

/** A structured `LabelSelector` (matchLabels, matchExpressions) as a StatefulSet's spec carries it. */
export function matchesSelector(
  sel:
    | {
        matchLabels?: Record<string, string>;
        matchExpressions?: { key: string; operator: string; values?: string[] }[];
      }
    | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (!sel) return false;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels?.[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = labels !== undefined && Object.hasOwn(labels, e.key);
    const ok =
      e.operator === "In"
        ? has && (e.values ?? []).includes(labels![e.key]!)
        : e.operator === "NotIn"
          ? !has || !(e.values ?? []).includes(labels![e.key]!)
          : e.operator === "Exists"
            ? has
            : e.operator === "DoesNotExist"
              ? !has
              : false;
    if (!ok) return false;
  }
  return true;
}

/** The string form of a structured selector (a Scale's `status.selector`). */
export function selectorString(
  sel:
    | {
        matchLabels?: Record<string, string>;
        matchExpressions?: { key: string; operator: string; values?: string[] }[];
      }
    | undefined,
): string {
  const parts = Object.entries(sel?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of sel?.matchExpressions ?? []) {
    if (e.operator === "In" || e.operator === "NotIn")
      parts.push(`${e.key} ${e.operator.toLowerCase()} (${(e.values ?? []).join(",")})`);
    else parts.push(e.operator === "Exists" ? e.key : `!${e.key}`);
  }
  return parts.join(",");
}

export type FieldSelector = (obj: Record<string, unknown>) => boolean;

/** Parses a field selector over the fields `supported` lists (path → value getter). */
export function parseFieldSelector(
  s: string | undefined | null,
  supported: Record<string, (o: Record<string, unknown>) => string | undefined>,
): FieldSelector {
  if (!s || !s.trim()) return () => true;
  const reqs = s.split(",").map((raw) => {
    const m = /^\s*([^!=\s]+)\s*(==|=|!=)\s*([^,]*?)\s*$/.exec(raw);
    if (!m) throw badRequest(`invalid selector: '${s}'; can't understand '${raw}'`);
    const get = Object.hasOwn(supported, m[1]!) ? supported[m[1]!] : undefined;
    if (!get) throw badRequest(`field label not supported: ${m[1]}`);
    return { get, neg: m[2] === "!=", value: m[3]! };
  });
  return (o) => reqs.every((r) => ((r.get(o) ?? "") === r.value) !== r.neg);
}
