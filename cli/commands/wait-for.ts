import { Command, Option, UsageError } from "clipanion";
import type { EntityKind, ModelStatus, UnitStatusView } from "../../api/core";
import {
  QUERY_DEFAULTS,
  StatusQuery,
  StewardError,
  applicationScope,
  isUnavailable,
  modelScope,
  table,
  unitScope,
} from "../../api/core";
import { ModelCommand } from "../base-command";
import { checkUnitName, DURATION_HELP, isDuration } from "../validators";

const KINDS: EntityKind[] = ["model", "application", "unit"];

export default class WaitForCommand extends ModelCommand {
  static override paths = [["wait-for"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "wait until a model, application or unit is ready (or a query of yours holds)",
    details: [
      "Follows the model's status as the controller pushes it (no polling) until the entity satisfies the query, as `juju wait-for` does; exits 0 then, or 1 at the timeout with the table of units that are not active/idle. An application or unit that does not exist yet is waited for.",
      "",
      'Without --query, ready means: a model\'s units all active/idle; an application active with every unit active/idle; a unit active/idle. A query is a boolean expression with ==, !=, <, <=, >, >=, &&, ||, !, parentheses, "strings", numbers and forEach(list, item => expression).',
      "",
      "Fields: a unit has name, application, machine, life, leader, address, workload-status, workload-message, agent-status, agent-message; an application has name, status, message, life, scale and units; a model has name, status, applications, units and machines (id, status, life, address).",
    ].join("\n"),
    examples: [
      ["Every unit of the current model active/idle", "$0 wait-for model demo"],
      [
        "An application at three units, all active",
        "$0 wait-for application web --query 'scale == 3 && forEach(units, u => u.workload-status == \"active\")'",
      ],
      [
        "A unit blocked, within a minute",
        "$0 wait-for unit db/0 --query 'workload-status == \"blocked\"' --timeout 1m",
      ],
    ],
  });

  kind = Option.String({ required: true, name: "model|application|unit" });
  name = Option.String({ required: true, name: "name" });
  query = Option.String("--query", { description: "When it counts as ready (default: active/idle, see above)" });
  timeout = Option.String("--timeout", "10m", {
    description: "How long to wait: " + DURATION_HELP,
    validator: isDuration(),
  });

  async run(): Promise<number> {
    if (!KINDS.includes(this.kind as EntityKind))
      throw new UsageError(`the first argument must be model, application or unit, got "${this.kind}"`);
    const kind = this.kind as EntityKind;
    if (kind === "unit") checkUnitName(this.name);
    if (kind === "application" && !/^[a-z][a-z0-9-]*$/.test(this.name))
      throw new UsageError(`"${this.name}" is not an application name`);
    const query = StatusQuery.parse(this.query ?? QUERY_DEFAULTS[kind], kind);
    const client = await this.connect();
    const model = kind === "model" ? this.name : await this.model();
    const what = `${kind} ${this.name}`;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), this.timeout);
    let last: ModelStatus | undefined;
    let satisfied = false;
    let failure: unknown;
    try {
      while (!abort.signal.aborted && !satisfied) {
        try {
          await client.watchStatus(
            model,
            (s) => {
              last = s;
              const scope = this.scopeOf(kind, s);
              try {
                if (scope && query.evaluate(scope)) {
                  satisfied = true;
                  abort.abort();
                }
              } catch (err) {
                // A query that cannot be evaluated on real values (`scale < "3"`) will not start to: stop.
                failure = err;
                abort.abort();
              }
            },
            abort.signal,
          );
        } catch (err) {
          // A replica going away breaks the stream: follow the next one; what is wrong with the query or the model, say.
          if (!StewardError.isInstance(err) || !isUnavailable(err)) {
            failure = err;
            break;
          }
          this.progress(`the status stream broke (${err.message}); following it again`);
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    } finally {
      clearTimeout(timer);
    }
    if (failure) throw failure;
    if (satisfied) {
      this.out(`${what} is ready${this.query ? ` (${this.query})` : ""}.`);
      return 0;
    }
    const missing = last && !this.scopeOf(kind, last) ? ` (${kind} ${this.name} does not exist)` : "";
    this.progress(
      `ERROR timed out after ${Math.round(this.timeout / 1000)} s waiting for ${what}${missing}: ${query.text}`,
    );
    const notReady = last
      ? this.unitsOf(kind, last).filter((u) => u.workload.current !== "active" || u.agent.current !== "idle")
      : [];
    if (notReady.length > 0)
      this.progress(
        table(
          ["Unit", "Workload", "Agent", "Message"],
          notReady.map((u) => [u.name, u.workload.current, u.agent.current, u.workload.message || u.agent.message]),
        ).trimEnd(),
      );
    return 1;
  }

  private scopeOf(kind: EntityKind, s: ModelStatus): ReturnType<typeof modelScope> | undefined {
    if (kind === "model") return modelScope(s);
    if (kind === "application") {
      const a = s.applications[this.name];
      return a ? applicationScope(a) : undefined;
    }
    const app = this.name.split("/")[0]!;
    const u = s.applications[app]?.units[this.name];
    return u ? unitScope(u, app) : undefined;
  }

  private unitsOf(kind: EntityKind, s: ModelStatus): UnitStatusView[] {
    const all = Object.values(s.applications).flatMap((a) => Object.values(a.units));
    if (kind === "model") return all;
    if (kind === "application") return all.filter((u) => u.name.startsWith(`${this.name}/`));
    return all.filter((u) => u.name === this.name);
  }
}
