/** `steward wait-for`'s query language: parsing, checking fields before any wait, and evaluating against status. */
import test from "ava";
import type { ModelStatus, StewardError, UnitStatusView } from "../api";
import { QUERY_DEFAULTS, StatusQuery, applicationScope, modelScope, unitScope } from "../api";

const since = "2026-11-24T00:00:00Z";
const unit = (name: string, workload: string, agent: string, leader = false): UnitStatusView => ({
  name,
  machine: "0",
  leader,
  life: "alive",
  ports: [],
  workload: { current: workload as "active", message: `${workload} msg`, since },
  agent: { current: agent as "idle", message: "", since },
});
const status = (units: UnitStatusView[], appStatus = "active"): ModelStatus => ({
  model: { name: "m", uuid: "u", controller: "c", status: { current: "available", message: "", since }, revision: 1 },
  applications: {
    web: {
      name: "web",
      operator: { hash: "h", name: "web", version: "1" },
      status: { current: appStatus as "active", message: "", since },
      version: "",
      life: "alive",
      scale: units.length,
      units: Object.fromEntries(units.map((u) => [u.name, u])),
      config: {},
    },
  },
  machines: {},
  integrations: [],
  timestamp: since,
});
const problem = (text: string, kind: "model" | "application" | "unit"): string => {
  try {
    StatusQuery.parse(text, kind);
    return "accepted";
  } catch (err) {
    return (err as StewardError).message;
  }
};

test("the default queries mean active/idle, for each kind of entity", (t) => {
  const ready = status([unit("web/0", "active", "idle", true), unit("web/1", "active", "idle")]);
  const busy = status([unit("web/0", "active", "idle", true), unit("web/1", "active", "executing")]);
  t.true(StatusQuery.parse(QUERY_DEFAULTS.model, "model").evaluate(modelScope(ready)));
  t.false(StatusQuery.parse(QUERY_DEFAULTS.model, "model").evaluate(modelScope(busy)));
  t.true(
    StatusQuery.parse(QUERY_DEFAULTS.application, "application").evaluate(applicationScope(ready.applications.web!)),
  );
  const blocked = status([unit("web/0", "active", "idle", true)], "blocked");
  t.false(
    StatusQuery.parse(QUERY_DEFAULTS.application, "application").evaluate(applicationScope(blocked.applications.web!)),
    "units ready, the application not",
  );
  t.true(
    StatusQuery.parse(QUERY_DEFAULTS.unit, "unit").evaluate(unitScope(ready.applications.web!.units["web/1"]!, "web")),
  );
  t.false(
    StatusQuery.parse(QUERY_DEFAULTS.unit, "unit").evaluate(unitScope(busy.applications.web!.units["web/1"]!, "web")),
  );
  t.true(StatusQuery.parse(QUERY_DEFAULTS.model, "model").evaluate(modelScope(status([]))), "an empty model is ready");
});

test("queries: comparisons, boolean logic, forEach over lists, fields with hyphens", (t) => {
  const s = applicationScope(
    status([unit("web/0", "active", "idle", true), unit("web/1", "blocked", "idle")]).applications.web!,
  );
  const q = (text: string): boolean => StatusQuery.parse(text, "application").evaluate(s);
  t.true(q("scale == 2 && scale >= 2 && scale < 3 && !(scale > 2)"));
  t.true(q('name == "web" || false'));
  t.false(q('forEach(units, u => u.workload-status == "active")'));
  t.true(q("forEach(units, u => u.agent-status == 'idle')"));
  t.true(q("!forEach(units, u => u.leader)"));
  t.true(q('forEach(units, u => u.leader || u.workload-message == "blocked msg")'));
  t.true(q('"a" < "b"'));
});

test("mistakes are found when the query is parsed, each naming where and what", (t) => {
  t.regex(
    problem("scale == 3", "unit"),
    /names "scale", which is not a field here \(fields: name, application, machine, life, leader, address, workload-status/,
  );
  t.regex(
    problem("forEach(units, u => u.workload == 'active')", "application"),
    /names "u.workload", which is not a field here \(fields: name, application/,
  );
  t.regex(problem('status == "active" &&', "application"), /at character 22: ends where a value was expected/);
  t.regex(problem('status == "active', "application"), /has a string that is never closed/);
  t.regex(problem("forEach(units u => true)", "model"), /forEach needs a comma/);
  t.regex(problem("scale", "application"), /is 0, not true or false/);
  t.regex(problem("units == 2", "application"), /compares values, not a list/);
  t.regex(problem('scale < "3"', "application"), /compares two numbers or two strings/);
  t.regex(problem("constructor == 1", "unit"), /names "constructor", which is not a field/, "no prototype fields");
  t.regex(problem("(".repeat(100) + "true" + ")".repeat(100), "unit"), /nests too deep/);
  t.regex(problem("status == 'a' ) ", "application"), /unexpected "\) "/);
});
