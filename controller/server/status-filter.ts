/**
 * The status route's filter: `?application=web,db&unit=web/0&machine=0` (each a comma-separated
 * list, all optional), as `steward status web web/0 0` sends it. What it selects is
 * {@link selectStatus}'s business; here only the words are checked. `?format=` picks the wire form.
 */
import type { StatusFilter } from "../../api";
import { MachineId, Name, StewardError } from "../../api";

const UNIT_PATTERN = /^(.+)\/([0-9]+)$/;

function list(query: Record<string, unknown>, field: string): string[] {
  const v = query[field];
  if (v === undefined) return [];
  if (typeof v !== "string")
    throw new StewardError("invalid-request", `query "${field}" must be given once, as a comma-separated list`, {
      details: { field },
    });
  return v.split(",").filter((x) => x !== "");
}

function refuse(field: string, value: string, rule: string): never {
  throw new StewardError("invalid-request", `query "${field}": "${value}" is not ${rule}`, { details: { field } });
}

export function statusFilter(query: unknown): StatusFilter {
  const q = (query ?? {}) as Record<string, unknown>;
  const applications = list(q, "application");
  const units = list(q, "unit");
  const machines = list(q, "machine");
  for (const a of applications)
    if (!Name.safeParse(a).success) refuse("application", a, "an application name such as web");
  for (const u of units) {
    const m = UNIT_PATTERN.exec(u);
    if (!m || !Name.safeParse(m[1]).success) refuse("unit", u, "a unit name such as web/0");
  }
  for (const m of machines)
    if (!MachineId.safeParse(m).success) refuse("machine", m, "a machine number such as 0 or 12");
  return { applications, units, machines };
}

/** `?format=columns`: the compact form the API client reads (units and machines as column tables); plain JSON otherwise. */
export function statusForm(query: unknown): "plain" | "columns" {
  const v = ((query ?? {}) as Record<string, unknown>).format;
  if (v === undefined || v === "plain") return "plain";
  if (v === "columns") return "columns";
  throw new StewardError("invalid-request", `query "format" must be "plain" or "columns" (got ${JSON.stringify(v)})`, {
    details: { field: "format" },
  });
}
