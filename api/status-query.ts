/**
 * The query language of `steward wait-for` (Juju's `wait-for --query`): a boolean expression over
 * one model, application or unit as status shows it, e.g.
 *
 *   status == "active" && forEach(units, unit => unit.agent-status == "idle")
 *
 * Grammar: `||`, `&&`, `!`, comparisons (`== != < <= > >=`), parentheses, strings in double or
 * single quotes, numbers, `true`/`false`, fields (`scale`, `unit.workload-status`: a field name may
 * hold hyphens) and `forEach(list, name => expression)`, true when every item satisfies it. A query is
 * checked when parsed, against every field the entity has, so a typo is an error before any wait.
 */
import { StewardError } from "./errors";
import type { ApplicationStatusView, ModelStatus, UnitStatusView } from "./status";

export type EntityKind = "model" | "application" | "unit";
type Value = string | number | boolean | Scope | Scope[];
export interface Scope {
  [field: string]: Value;
}

type Node =
  | { k: "lit"; v: string | number | boolean }
  | { k: "path"; parts: string[]; at: number }
  | { k: "not"; e: Node }
  | { k: "bin"; op: string; a: Node; b: Node; at: number }
  | { k: "forEach"; list: Node; name: string; body: Node };

/** What each entity's fields are, and the default query that means "ready". */
export const QUERY_DEFAULTS: Record<EntityKind, string> = {
  model: 'forEach(units, unit => unit.workload-status == "active" && unit.agent-status == "idle")',
  application:
    'status == "active" && forEach(units, unit => unit.workload-status == "active" && unit.agent-status == "idle")',
  unit: 'workload-status == "active" && agent-status == "idle"',
};

export function unitScope(u: UnitStatusView, application: string): Scope {
  return {
    name: u.name,
    application,
    machine: u.machine,
    life: u.life,
    leader: u.leader,
    address: u.address ?? "",
    "workload-status": u.workload.current,
    "workload-message": u.workload.message,
    "agent-status": u.agent.current,
    "agent-message": u.agent.message,
  };
}

export function applicationScope(a: ApplicationStatusView): Scope {
  return {
    name: a.name,
    status: a.status.current,
    message: a.status.message,
    life: a.life,
    scale: a.scale,
    units: Object.values(a.units).map((u) => unitScope(u, a.name)),
  };
}

export function modelScope(s: ModelStatus): Scope {
  const applications = Object.values(s.applications).map(applicationScope);
  return {
    name: s.model.name,
    status: s.model.status.current,
    applications,
    units: applications.flatMap((a) => a.units as Scope[]),
    machines: Object.values(s.machines).map((m) => ({
      id: m.id,
      status: m.status.current,
      life: m.life,
      address: m.address,
    })),
  };
}

/** A scope with every field an entity of `kind` has (lists of one such item), to check queries against. */
function sampleScope(kind: EntityKind): Scope {
  const unit: Scope = {
    name: "",
    application: "",
    machine: "",
    life: "",
    leader: false,
    address: "",
    "workload-status": "",
    "workload-message": "",
    "agent-status": "",
    "agent-message": "",
  };
  const app: Scope = { name: "", status: "", message: "", life: "", scale: 0, units: [unit] };
  if (kind === "unit") return unit;
  if (kind === "application") return app;
  return {
    name: "",
    status: "",
    applications: [app],
    units: [unit],
    machines: [{ id: "", status: "", life: "", address: "" }],
  };
}

export class StatusQuery {
  private constructor(
    readonly text: string,
    private readonly root: Node,
  ) {}

  /** Parses `text` and checks every field it names exists on a `kind`; a mistake is a 400-style error naming where. */
  static parse(text: string, kind: EntityKind): StatusQuery {
    const q = new StatusQuery(text, new Parser(text).parse());
    q.evaluate(sampleScope(kind));
    return q;
  }

  evaluate(scope: Scope): boolean {
    const v = this.eval(this.root, scope);
    if (typeof v !== "boolean") throw this.error(`is ${describe(v)}, not true or false`, 0);
    return v;
  }

  private eval(n: Node, scope: Scope): Value {
    switch (n.k) {
      case "lit":
        return n.v;
      case "path": {
        let v: Value = scope;
        for (const [i, part] of n.parts.entries()) {
          const container: Value = v;
          if (typeof container !== "object" || Array.isArray(container) || !Object.hasOwn(container, part)) {
            const fields =
              typeof container === "object" && !Array.isArray(container)
                ? Object.keys(container).join(", ")
                : "none: it is not an item";
            throw this.error(
              `names "${n.parts.slice(0, i + 1).join(".")}", which is not a field here (fields: ${fields})`,
              n.at,
            );
          }
          v = (container as Scope)[part]!;
        }
        return v;
      }
      case "not": {
        const v = this.eval(n.e, scope);
        if (typeof v !== "boolean") throw this.error(`! needs true or false, not ${describe(v)}`, 0);
        return !v;
      }
      case "forEach": {
        const list = this.eval(n.list, scope);
        if (!Array.isArray(list))
          throw this.error(`forEach needs a list (units, applications, machines), not ${describe(list)}`, 0);
        return list.every((item) => {
          const v = this.eval(n.body, { ...scope, [n.name]: item as unknown as Value });
          if (typeof v !== "boolean") throw this.error(`forEach's expression is ${describe(v)}, not true or false`, 0);
          return v;
        });
      }
      case "bin": {
        if (n.op === "&&" || n.op === "||") {
          const a = this.eval(n.a, scope);
          if (typeof a !== "boolean")
            throw this.error(`${n.op} needs true or false on its left, not ${describe(a)}`, n.at);
          // Both sides are always evaluated, so a typo on the right is found even when the left decides.
          const b = this.eval(n.b, scope);
          if (typeof b !== "boolean")
            throw this.error(`${n.op} needs true or false on its right, not ${describe(b)}`, n.at);
          return n.op === "&&" ? a && b : a || b;
        }
        const a = this.eval(n.a, scope);
        const b = this.eval(n.b, scope);
        if (typeof a === "object" || typeof b === "object")
          throw this.error(
            `${n.op} compares values, not ${describe(typeof a === "object" ? a : b)} (use forEach, or a field such as unit.name)`,
            n.at,
          );
        switch (n.op) {
          case "==":
            return a === b;
          case "!=":
            return a !== b;
        }
        if (typeof a !== typeof b || typeof a === "boolean")
          throw this.error(`${n.op} compares two numbers or two strings, not ${describe(a)} and ${describe(b)}`, n.at);
        switch (n.op) {
          case "<":
            return a < b;
          case "<=":
            return a <= b;
          case ">":
            return a > b;
          default:
            return a >= b;
        }
      }
    }
  }

  private error(problem: string, at: number): StewardError {
    return queryError(this.text, at, problem);
  }
}

function describe(v: Value): string {
  return Array.isArray(v)
    ? "a list"
    : typeof v === "object"
      ? "an item"
      : typeof v === "string"
        ? `the string ${JSON.stringify(v)}`
        : String(v);
}

function queryError(text: string, at: number, problem: string): StewardError {
  return new StewardError(
    "invalid-request",
    `query ${JSON.stringify(text)}${at > 0 ? ` at character ${at + 1}` : ""}: ${problem}`,
    { details: { field: "query" } },
  );
}

/** A recursive-descent parser over the grammar in the header. */
class Parser {
  private i = 0;
  constructor(private readonly s: string) {}

  parse(): Node {
    if (this.s.length > 4096) throw queryError(this.s.slice(0, 40) + "…", 0, "is longer than 4096 characters");
    const n = this.or(0);
    this.space();
    if (this.i < this.s.length) throw this.fail(`unexpected "${this.s.slice(this.i, this.i + 10)}"`);
    return n;
  }

  private fail(problem: string): StewardError {
    return queryError(this.s, this.i, problem);
  }
  private space(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i]!)) this.i++;
  }
  private eat(tok: string): boolean {
    this.space();
    if (this.s.startsWith(tok, this.i)) {
      this.i += tok.length;
      return true;
    }
    return false;
  }

  private or(depth: number): Node {
    if (depth > 64) throw this.fail("nests too deep");
    let a = this.and(depth);
    for (let at = this.i; this.eat("||"); at = this.i) a = { k: "bin", op: "||", a, b: this.and(depth), at };
    return a;
  }

  private and(depth: number): Node {
    let a = this.not(depth);
    for (let at = this.i; this.eat("&&"); at = this.i) a = { k: "bin", op: "&&", a, b: this.not(depth), at };
    return a;
  }

  private not(depth: number): Node {
    this.space();
    if (this.s[this.i] === "!" && this.s[this.i + 1] !== "=") {
      this.i++;
      return { k: "not", e: this.not(depth + 1) };
    }
    return this.cmp(depth);
  }

  private cmp(depth: number): Node {
    const a = this.value(depth);
    this.space();
    const at = this.i;
    for (const op of ["==", "!=", "<=", ">=", "<", ">"])
      if (this.eat(op)) return { k: "bin", op, a, b: this.value(depth), at };
    return a;
  }

  private value(depth: number): Node {
    this.space();
    const c = this.s[this.i];
    if (c === undefined) throw this.fail("ends where a value was expected");
    if (c === "(") {
      this.i++;
      const n = this.or(depth + 1);
      if (!this.eat(")")) throw this.fail("expected )");
      return n;
    }
    if (c === '"' || c === "'") {
      const end = this.s.indexOf(c, this.i + 1);
      if (end < 0) throw this.fail("has a string that is never closed");
      const v = this.s.slice(this.i + 1, end);
      this.i = end + 1;
      return { k: "lit", v };
    }
    const num = /^-?\d+(\.\d+)?/.exec(this.s.slice(this.i));
    if (num) {
      this.i += num[0].length;
      return { k: "lit", v: Number(num[0]) };
    }
    const at = this.i;
    const word = /^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*/.exec(this.s.slice(this.i));
    if (!word) throw this.fail(`unexpected "${c}"`);
    this.i += word[0].length;
    if (word[0] === "true" || word[0] === "false") return { k: "lit", v: word[0] === "true" };
    if (word[0] === "forEach") {
      if (!this.eat("(")) throw this.fail("forEach needs (list, name => expression)");
      const list = this.value(depth + 1);
      if (!this.eat(",")) throw this.fail("forEach needs a comma after its list");
      this.space();
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.s.slice(this.i));
      if (!name) throw this.fail("forEach needs a name for each item, as in forEach(units, unit => …)");
      this.i += name[0].length;
      if (!this.eat("=>")) throw this.fail("forEach needs => after the item's name");
      const body = this.or(depth + 1);
      if (!this.eat(")")) throw this.fail("expected ) to close forEach");
      return { k: "forEach", list, name: name[0], body };
    }
    return { k: "path", parts: word[0].split("."), at };
  }
}
