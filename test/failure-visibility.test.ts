/**
 * A failed hook's reason reaches the user without a shell on the machine: `show-unit` shows the last
 * lines of its output, and `debug-log` streams the model's agent and hook logs. A real controller
 * with real agent processes; the CLI run in-process against it.
 */
import test from "ava";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { parse } from "yaml";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import type { CliResult } from "./harness/cli";
import { cliRunner } from "./harness/cli";

let tc: TestController;
let home: string;
let steward: (...args: string[]) => Promise<CliResult>;

test.before(async () => {
  tc = await startTestController();
  home = await mkdtemp(join(tmpdir(), "steward-fv-"));
  const entry = { addresses: tc.addresses, caCert: tc.caCert, user: "admin", password: tc.adminPassword };
  await writeFile(join(home, "controllers.json"), JSON.stringify({ current: "t", controllers: { t: entry } }), { mode: 0o600 });
  steward = cliRunner(home, home);
});
test.after.always(async () => {
  await tc?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

/**
 * An operator whose install prints 30 numbered lines, an escape sequence and a known reason, then
 * fails with status 3 while its `fail` option is true. Every hook also logs through the `log` tool.
 */
async function failingOperator(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "steward-op-"));
  await writeFile(join(dir, "operator.yaml"), [
    "name: failer", 'version: "1"', "summary: Fails install on request.",
    "config:", "  fail:", "    type: boolean", "    default: true", "    description: Fail install.", "",
  ].join("\n"));
  await writeFile(join(dir, "dispatch"), [
    "#!/bin/sh",
    'hook="${STEWARD_DISPATCH_PATH#hooks/}"',
    'echo "stdout of $hook on $STEWARD_UNIT_NAME"',
    'log --level WARNING "operator says $hook"',
    'if [ "$hook" = install ] && [ "$(config-get fail)" = true ]; then',
    '  i=1; while [ $i -le 30 ]; do echo "progress line $i"; i=$((i + 1)); done',
    "  printf 'screen \\033[2Jwiped\\n' >&2",
    '  echo "cannot reach the database: known-reason-42" >&2',
    "  exit 3",
    "fi",
    'case "$hook" in start|config-changed|update-status) status-set active ready ;; esac',
    "",
  ].join("\n"));
  await chmod(join(dir, "dispatch"), 0o755);
  return dir;
}

test("show-unit shows the failed hook and the last lines of its output while the unit is in error", async (t) => {
  await tc.admin.createModel("failing");
  const op = await tc.upload(await failingOperator());
  await tc.admin.deploy("failing", { name: "db", operator: op, units: 1 });
  await tc.waitForUnits("failing", (units) => units[0]?.agent.current === "error", "db/0 in error");

  const api = await tc.admin.showUnit("failing", "db/0");
  t.is(api.failure?.hook, "install");
  const lines = api.failure!.output.split("\n");
  t.is(lines.length, 20, "the last 20 lines");
  t.is(lines[lines.length - 1], "(exit status 3)");
  t.true(lines.includes("cannot reach the database: known-reason-42"));
  t.true(lines.includes("progress line 30"));
  t.false(lines.includes("progress line 5"), "older lines are cut");
  t.false(/[\x00-\x09\x0b-\x1f]/.test(api.failure!.output), "no control characters");
  t.true(lines.includes("screen [2Jwiped"));

  const r = await steward("show-unit", "db/0", "-m", "failing");
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /known-reason-42/);
  const shown = (parse(r.stdout) as Record<string, Record<string, unknown>>)["db/0"]!;
  t.deepEqual(Object.keys(shown).slice(Object.keys(shown).indexOf("agent"), Object.keys(shown).indexOf("agent") + 2), ["agent", "failure"], "the failure right under the status");
  t.is((shown.failure as { hook: string }).hook, "install");

  // Fixed: the retry succeeds and the failure is no longer shown.
  await tc.admin.updateApplication("failing", "db", { config: { fail: false } });
  await tc.waitForUnits("failing", (units) => units[0]?.workload.current === "active", "db/0 active after the retry", 60_000);
  t.is((await tc.admin.showUnit("failing", "db/0")).failure, undefined);
  const after = await steward("show-unit", "db/0", "-m", "failing");
  t.notRegex(after.stdout, /known-reason-42/);
});
