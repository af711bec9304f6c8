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
import type { DebugLogRecord, StewardError } from "../api";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import type { CliResult } from "./harness/cli";
import { cliRunner } from "./harness/cli";
import { eventually } from "./harness/eventually";
import { rawRequest } from "./harness/http";

let tc: TestController;
let home: string;
let steward: (...args: string[]) => Promise<CliResult>;

test.before(async () => {
  tc = await startTestController();
  home = await mkdtemp(join(tmpdir(), "steward-fv-"));
  const entry = { addresses: tc.addresses, caCert: tc.caCert, user: "admin", password: tc.adminPassword };
  await writeFile(join(home, "controllers.json"), JSON.stringify({ current: "t", controllers: { t: entry } }), {
    mode: 0o600,
  });
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
  await writeFile(
    join(dir, "operator.yaml"),
    [
      "name: failer",
      'version: "1"',
      "summary: Fails install on request.",
      "config:",
      "  fail:",
      "    type: boolean",
      "    default: true",
      "    description: Fail install.",
      "",
    ].join("\n"),
  );
  await writeFile(
    join(dir, "dispatch"),
    [
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
    ].join("\n"),
  );
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
  t.deepEqual(
    Object.keys(shown).slice(Object.keys(shown).indexOf("agent"), Object.keys(shown).indexOf("agent") + 2),
    ["agent", "failure"],
    "the failure right under the status",
  );
  t.is((shown.failure as { hook: string }).hook, "install");

  // Fixed: the retry succeeds and the failure is no longer shown.
  await tc.admin.updateApplication("failing", "db", { config: { fail: false } });
  await tc.waitForUnits(
    "failing",
    (units) => units[0]?.workload.current === "active",
    "db/0 active after the retry",
    60_000,
  );
  t.is((await tc.admin.showUnit("failing", "db/0")).failure, undefined);
  const after = await steward("show-unit", "db/0", "-m", "failing");
  t.notRegex(after.stdout, /known-reason-42/);
});

/** Runs `steward debug-log … --no-tail` until its output satisfies `ok` (records arrive in batches). */
async function debugLogUntil(args: string[], ok: (out: string) => boolean, what: string): Promise<string> {
  let last = "";
  const found = await eventually(
    what,
    async () => {
      const r = await steward("debug-log", ...args, "--no-tail");
      if (r.code !== 0) throw new Error(`debug-log failed: ${r.stderr}`);
      last = r.stdout;
      return ok(r.stdout) ? r.stdout : undefined;
    },
    30_000,
    300,
  ).catch(() => last);
  return found;
}

test.serial(
  "debug-log shows the model's hook output and operator logs with their units, filtered by unit and level",
  async (t) => {
    await tc.admin.createModel("logs");
    const op = await tc.upload(await failingOperator());
    await tc.admin.deploy("logs", { name: "app", operator: op, units: 2, config: { fail: false } });
    await tc.waitForUnits(
      "logs",
      (units) => units.length === 2 && units.every((u) => u.workload.current === "active"),
      "2 units active",
    );

    const all = await debugLogUntil(
      ["-m", "logs", "--replay"],
      (o) => /stdout of start on app\/0/.test(o) && /stdout of start on app\/1/.test(o),
      "both units' start output",
    );
    for (const u of ["app/0", "app/1"]) {
      t.regex(all, new RegExp(`^${u} \\S+ INFO install: stdout of install on ${u}$`, "m"), `${u}'s hook output`);
      t.regex(all, new RegExp(`^${u} \\S+ WARNING install: operator says install$`, "m"), `${u}'s log tool line`);
    }
    t.regex(all, /^machine-\d+ \S+ INFO agent: connected to controller/m, "the agents' own lines");

    const one = await steward("debug-log", "-m", "logs", "--replay", "--no-tail", "--include", "app/1");
    t.is(one.code, 0, one.stderr);
    t.regex(one.stdout, /stdout of install on app\/1/);
    t.notRegex(one.stdout, /app\/0/);
    t.true(
      one.stdout
        .trim()
        .split("\n")
        .every((l) => l.startsWith("app/1 ")),
      one.stdout,
    );

    const excluded = await steward(
      "debug-log",
      "-m",
      "logs",
      "--replay",
      "--no-tail",
      "--include",
      "app",
      "--exclude",
      "app/0",
    );
    t.true(
      excluded.stdout
        .trim()
        .split("\n")
        .every((l) => l.startsWith("app/1 ")),
      excluded.stdout,
    );

    const warnings = await steward("debug-log", "-m", "logs", "--replay", "--no-tail", "--level", "warning");
    t.is(warnings.code, 0, warnings.stderr);
    t.regex(warnings.stdout, /operator says install/);
    t.notRegex(warnings.stdout, /stdout of/);
    t.true(
      warnings.stdout
        .trim()
        .split("\n")
        .every((l) => / (WARNING|ERROR) /.test(l)),
      warnings.stdout,
    );

    const recent = await steward("debug-log", "-m", "logs", "--no-tail", "--lines", "3");
    t.is(recent.stdout.trim().split("\n").length, 3, "--lines bounds the backlog");
  },
);

test("debug-log checks its arguments before connecting", async (t) => {
  // The model does not exist: an answer about the level proves nothing was asked of the controller.
  const level = await steward("debug-log", "-m", "no-such-model", "--level", "LOUD");
  t.is(level.code, 1);
  t.regex(level.stdout + level.stderr, /level must be one of DEBUG, INFO, WARNING, ERROR, got "LOUD"/);
  const entity = await steward("debug-log", "-m", "no-such-model", "--include", "Web/0");
  t.is(entity.code, 1);
  t.regex(entity.stdout + entity.stderr, /"Web\/0" is not a unit \(web\/0\), an application \(web\) or a machine/);
  const lines = await steward("debug-log", "-m", "no-such-model", "--lines", "-3");
  t.is(lines.code, 1);
  const missing = await steward("debug-log", "-m", "no-such-model", "--no-tail");
  t.is(missing.code, 1);
  t.regex(missing.stderr, /no-such-model/);
});

test("the log stream refuses users without read access (404, as for an unknown model) and bad queries (400)", async (t) => {
  await tc.admin.createModel("private-logs");
  await tc.admin.createUser("eve", "eve-password-1");
  const eve = tc.clientFor("eve", "eve-password-1");
  const denied = await t.throwsAsync(eve.debugLog("private-logs", { tail: false }, () => undefined));
  t.is((denied as StewardError).code, "not-found");
  t.is(denied!.message, 'model "private-logs" not found');
  await tc.admin.grant("private-logs", "eve", "read");
  await t.notThrowsAsync(eve.debugLog("private-logs", { tail: false }, () => undefined));

  const bad = await rawRequest(
    tc.addresses[0]!,
    tc.caCert,
    "GET",
    "/v1/models/private-logs/logs?level=LOUD&tail=false",
    undefined,
    { authorization: `Bearer ${await tc.admin.login()}` },
  );
  t.is(bad.status, 400);
  t.is(bad.body.code, "invalid-request");
  t.regex(bad.body.message ?? "", /query "level"/);
  const unknown = await rawRequest(
    tc.addresses[0]!,
    tc.caCert,
    "GET",
    "/v1/models/private-logs/logs?follow=1",
    undefined,
    { authorization: `Bearer ${await tc.admin.login()}` },
  );
  t.is(unknown.status, 400);
  t.regex(unknown.body.message ?? "", /unknown query "follow"/);
  const anonymous = await rawRequest(tc.addresses[0]!, tc.caCert, "GET", "/v1/models/private-logs/logs");
  t.is(anonymous.status, 401);
});

test.serial("a live debug-log receives a line logged after it connected", async (t) => {
  await tc.admin.createModel("live");
  const op = await tc.upload(await failingOperator());
  await tc.admin.deploy("live", { name: "web", operator: op, units: 1, config: { fail: false } });
  await tc.waitForUnits(
    "live",
    (units) => units[0]?.workload.current === "active" && units[0].agent.current === "idle",
    "web/0 active and idle",
  );
  await debugLogUntil(
    ["-m", "live", "--replay", "--include", "web/0"],
    (o) => /stdout of start on web\/0/.test(o),
    "start's output",
  );

  const abort = new AbortController();
  const seen: DebugLogRecord[] = [];
  let onRecord = (): void => undefined;
  const stream = tc.admin.debugLog(
    "live",
    { include: ["web/0"], lines: 1 },
    (r) => {
      seen.push(r);
      onRecord();
    },
    { signal: abort.signal },
  );
  // The first record is the backlog's: from then on the stream follows the model.
  await eventually("the backlog record", () => seen.length >= 1, 10_000, 50);
  await tc.admin.updateApplication("live", "web", { config: { fail: true } });
  const live = await eventually(
    "config-changed's output on the live stream",
    () => seen.find((r) => r.hook === "config-changed" && r.message === "stdout of config-changed on web/0"),
    30_000,
    50,
  );
  t.true(seen.indexOf(live) >= 1, "after the backlog");
  t.is(live.unit, "web/0");
  t.is(live.level, "INFO");
  t.is(live.source, "hook");
  abort.abort();
  await stream;
});
