/**
 * The action format without a controller: `actions:` in operator.yaml (each problem named with its
 * field and line), the bundle's `actions/` executables, parameter checking and coercion, and what an
 * action's tools build (nested results, bounds, the report).
 */
import test from "ava";
import type { ActionSpec, Bundle, StewardError } from "../api";
import { TASK_LIMITS, checkActionParams, parseOperatorYaml, validateBundle } from "../api";
import { ActionRun } from "../agent";
import { operatorYamlWith, yamlProblem as problem } from "./harness/operators";

const yaml = operatorYamlWith("actions");

test("operator.yaml: actions are read with their parameters; mistakes name the field and line", (t) => {
  const meta = parseOperatorYaml(
    yaml(
      "  backup:\n    description: Back up.\n    params:\n      dest: { type: string, minLength: 1 }\n      keep: { type: integer, minimum: 1, default: 3 }\n    required: [dest]\n  noop:\n",
    ),
  );
  t.deepEqual(meta.actions?.backup, {
    description: "Back up.",
    params: {
      dest: { type: "string", description: "", minLength: 1 },
      keep: { type: "integer", description: "", minimum: 1, default: 3 },
    },
    required: ["dest"],
    additionalProperties: false,
  });
  t.deepEqual(meta.actions?.noop, { description: "", params: {}, required: [], additionalProperties: false });
  t.false(
    "actions" in parseOperatorYaml(`name: op\nversion: "1"\n`),
    "no actions: no field, as metadata stored before actions",
  );
  t.regex(problem(yaml("  Backup: {}\n")), /operator.yaml:4: "actions.Backup" is not a valid action name/);
  t.regex(
    problem(yaml("  b:\n    params:\n      n: { type: int }\n")),
    /"actions.b.params.n.type" must be one of string, integer, number, boolean/,
  );
  t.regex(
    problem(yaml("  b:\n    params:\n      n: { type: integer, default: x }\n")),
    /"actions.b.params.n.default" must be a whole number, got the string "x"/,
  );
  t.regex(
    problem(yaml("  b:\n    params:\n      n: { type: string, minimum: 1 }\n")),
    /"actions.b.params.n.minimum" applies to integer and number parameters/,
  );
  t.regex(
    problem(yaml("  b:\n    params:\n      n: { type: string, enum: [a, 2] }\n")),
    /"actions.b.params.n.enum.1" must be a string/,
  );
  t.regex(
    problem(yaml("  b:\n    required: [x]\n")),
    /"actions.b.required" names "x", which is not one of the action's params/,
  );
  t.regex(problem(yaml("  b:\n    timeout: 5\n")), /"actions.b.timeout" is not a known action field/);
  t.regex(
    problem(yaml("  b:\n    params:\n      n: { type: object }\n")),
    /must be one of string, integer, number, boolean/,
  );
});

test("bundles: each declared action needs an executable in actions/ (or a dispatch), and actions/ holds nothing else", (t) => {
  const file = (path: string, content: string, mode = 0o755): Bundle["files"][number] => ({
    path,
    mode,
    content: Buffer.from(content).toString("base64"),
  });
  const meta = file("operator.yaml", yaml("  go: {}\n"), 0o644);
  const hook = file("hooks/install", "#!/bin/sh\n");
  const refused = (files: Bundle["files"]): string => {
    try {
      validateBundle({ files });
      return "accepted";
    } catch (err) {
      return (err as StewardError).message;
    }
  };
  t.is(refused([meta, hook, file("actions/go", "#!/bin/sh\n")]), "accepted");
  t.is(refused([meta, file("dispatch", "#!/bin/sh\n")]), "accepted", "dispatch runs actions too");
  t.regex(refused([meta, hook]), /actions\/go: is missing: action "go" is declared/);
  t.regex(
    refused([meta, hook, file("actions/go", "x", 0o644)]),
    /actions\/go: is not executable \(chmod \+x actions\/go\)/,
  );
  t.regex(
    refused([meta, hook, file("actions/go", "x"), file("actions/stop", "x")]),
    /actions\/stop: is not an action declared in operator.yaml \(declared: go\)/,
  );
  t.regex(
    refused([meta, hook, file("actions/go", "x"), file("actions/lib/x", "x")]),
    /must hold only action executables/,
  );
});

test("parameters: defaults filled, command-line text read in the declared type, everything else refused by name", (t) => {
  const spec: ActionSpec = {
    description: "",
    required: ["n"],
    additionalProperties: false,
    params: {
      n: { type: "integer", description: "", minimum: 0 },
      f: { type: "number", description: "" },
      on: { type: "boolean", description: "", default: false },
      s: { type: "string", description: "", default: "x" },
    },
  };
  t.deepEqual(checkActionParams("app", "a", spec, { n: "4", f: "2.5", on: "true" }), {
    n: 4,
    f: 2.5,
    on: true,
    s: "x",
  });
  t.deepEqual(
    checkActionParams("app", "a", spec, { n: 0, s: "5" }),
    { n: 0, s: "5", on: false },
    "a string parameter keeps digits as text",
  );
  const bad = (params: Record<string, unknown>): string => {
    try {
      checkActionParams("app", "a", spec, params);
      return "accepted";
    } catch (err) {
      return (err as StewardError).message;
    }
  };
  t.regex(bad({}), /parameter "n" of action a \(app\) is required/);
  t.regex(bad({ n: -1 }), /"n" .* must be at least 0, got -1/);
  t.regex(bad({ n: 1.5 }), /"n" .* must be a whole number/);
  t.regex(bad({ n: 1, on: "yes" }), /"on" .* must be true or false, got the string "yes"/);
  t.regex(bad({ n: 1, x: 1 }), /"x" .* is not a parameter it takes/);
  t.regex(bad({ n: 1, s: "y".repeat(70_000) }), /parameters of action a are \d+ bytes as JSON; at most 65536/);
  t.deepEqual(checkActionParams("app", "a", { ...spec, additionalProperties: true }, { n: 1, extra: "ok" }), {
    n: 1,
    extra: "ok",
    on: false,
    s: "x",
  });
});

test("an action's results nest dotted keys, refuse reserved, clashing and oversized ones whole, and end in a bounded report", (t) => {
  const run = new ActionRun({ id: 5, action: "backup", params: { dest: "/x" } });
  t.is(run.set({ "backup.path": "/x/1", "backup.size": "10", done: "yes" }), undefined);
  t.regex(run.set({ "backup.path.inner": "x" }) ?? "", /would replace the value already set at path/);
  t.regex(run.set({ backup: "flat" }) ?? "", /would replace the values already set under it/);
  t.regex(run.set({ stdout: "x" }) ?? "", /reserved/);
  t.regex(run.set({ "Bad Key": "x" }) ?? "", /is not a valid key/);
  t.regex(run.set({ ok: "1", big: "z".repeat(TASK_LIMITS.resultsBytes) }) ?? "", /at most 65536 are kept/);
  for (let i = 0; i < TASK_LIMITS.logEntries + 20; i++) run.log(`line ${i}`);
  const report = run.report("db/0", 0, "o".repeat(TASK_LIMITS.outputChars + 10));
  t.deepEqual(report.results, { backup: { path: "/x/1", size: "10" }, done: "yes" }, "refused sets changed nothing");
  t.is(report.status, "completed");
  t.is(report.log.length, TASK_LIMITS.logEntries);
  t.regex(report.log.at(-1)!.message, /21 more action-log lines not kept/);
  t.is(report.output.length, TASK_LIMITS.outputChars);
  run.fail("");
  t.deepEqual([run.report("db/0", 0, "").status, run.report("db/0", 0, "").message], ["failed", "action-fail called"]);
  const crashed = new ActionRun({ id: 6, action: "x", params: {} }).report("db/0", 2, "");
  t.deepEqual([crashed.status, crashed.message, crashed.exitCode], ["failed", "exit status 2", 2]);
});
