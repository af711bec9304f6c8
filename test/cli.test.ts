/**
 * The `steward` CLI end to end: a controller bootstrapped as a real process, then every command a
 * user types, with exit codes and output asserted.
 */
import test from "ava";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { parse } from "yaml";
import type { ModelStatus } from "../api";
import { COMMAND_NAMES, allCommands } from "../cli";
import type { CliResult } from "./harness/cli";
import { cliRunner } from "./harness/cli";
import { eventually } from "./harness/eventually";
import { killProcessesUnder } from "./harness/processes";

const repo = join(__dirname, "..", "..");
let home: string;
let steward: (...args: string[]) => Promise<CliResult>;

test.before(async () => {
  home = await mkdtemp(join(tmpdir(), "steward-cli-"));
  steward = cliRunner(home, repo);
  const boot = await steward("bootstrap", "t1", "--port", String(20000 + Math.floor(Math.random() * 20000)));
  if (boot.code !== 0) throw new Error(`bootstrap failed: ${boot.stdout}${boot.stderr}`);
});
test.after.always(async () => {
  await steward?.("destroy-controller", "t1", "--yes", "--timeout", "20");
  await killProcessesUnder(home);
  await rm(home, { recursive: true, force: true });
});

const noStack = (t: { false(v: boolean, m?: string): void }, r: CliResult): void =>
  t.false(/\n\s+at .+\(.*:\d+:\d+\)/.test(r.stdout + r.stderr), `no stack trace expected:\n${r.stdout}${r.stderr}`);

test.serial("bootstrap registers the controller and makes it current", async (t) => {
  const r = await steward("controllers", "--format", "json");
  t.is(r.code, 0);
  const list = JSON.parse(r.stdout) as { name: string; current: boolean; reachable: boolean }[];
  t.deepEqual(
    list.map((c) => [c.name, c.current, c.reachable]),
    [["t1", true, true]],
  );
  const again = await steward("bootstrap", "t1");
  t.is(again.code, 1);
  t.regex(again.stderr, /controller "t1" already exists/);
  noStack(t, again);
});

test.serial("deploy, scale, configure and remove through the CLI", async (t) => {
  t.is((await steward("add-model", "cli")).code, 0);
  const deploy = await steward(
    "deploy",
    "operators/motd",
    "board",
    "-n",
    "2",
    "--config",
    "message=from the cli",
    "--wait",
    "--timeout",
    "60s",
  );
  t.is(deploy.code, 0, deploy.stderr);
  t.regex(deploy.stdout, /Deployed "board" \(motd 1\.0\.0\) with 2 units: board\/0, board\/1/);
  t.regex(deploy.stderr, /Uploading operator motd/);

  const tab = await steward("status");
  t.is(tab.code, 0);
  t.regex(tab.stdout, /^App\s+Version\s+Status\s+Scale\s+Operator\s+Rev\s+Message$/m);
  t.regex(tab.stdout, /^board\s+1\.0\.0\s+active\s+2\s+motd\s+1\s+motd: from the cli$/m, "Rev: the operator revision");
  t.regex(tab.stdout, /^board\/0\*?\s+active\s+idle\s+\d+/m);

  const json = JSON.parse((await steward("status", "--format", "json")).stdout) as ModelStatus;
  t.deepEqual(Object.keys(json.applications.board!.units).sort(), ["board/0", "board/1"]);
  const yaml = parse((await steward("status", "--format", "yaml")).stdout) as ModelStatus;
  t.is(yaml.applications.board!.status.current, "active");

  // Filters: the controller sends only the unit asked for (and its machine).
  const one = JSON.parse((await steward("status", "board/1", "--format", "json")).stdout) as ModelStatus;
  t.deepEqual(Object.keys(one.applications.board!.units), ["board/1"]);
  t.deepEqual(Object.keys(one.machines), [one.applications.board!.units["board/1"]!.machine]);
  const oneTab = await steward("status", "board/1");
  t.regex(oneTab.stdout, /^board\/1\*?\s+active/m);
  t.notRegex(oneTab.stdout, /^board\/0/m);
  const typo = await steward("status", "bord");
  t.is(typo.code, 1);
  t.regex(typo.stderr, /bord/);
  noStack(t, typo);

  t.is((await steward("config", "board", "uppercase=true")).code, 0);
  const cfg = JSON.parse((await steward("config", "board", "--format", "json")).stdout) as Record<string, unknown>;
  t.is(cfg.uppercase, true, "text 'true' became a boolean");
  const wrong = await steward("config", "board", "uppercase=perhaps");
  t.is(wrong.code, 1);
  t.regex(wrong.stderr, /^ERROR config "uppercase" of board: must be true or false/m);
  noStack(t, wrong);
  t.is(
    (JSON.parse((await steward("config", "board", "--format", "json")).stdout) as Record<string, unknown>).uppercase,
    true,
    "nothing changed",
  );

  t.is((await steward("add-unit", "board")).code, 0);
  const machines = await steward("machines", "--format", "json");
  t.is((JSON.parse(machines.stdout) as unknown[]).length, 3);
  const scaled = await steward("remove-unit", "board", "--num-units", "2");
  t.is(scaled.code, 0, scaled.stderr);
  t.deepEqual(
    scaled.stdout.trim().split("\n"),
    ["Removing board/2.", "Removing board/1."],
    "the highest-numbered units, highest first",
  );
  const tooMany = await steward("remove-unit", "board", "-n", "5");
  t.is(tooMany.code, 1);
  t.regex(tooMany.stdout + tooMany.stderr, /board has 1 unit not already being removed; cannot remove 5/);
  t.is((await steward("remove-application", "board")).code, 0);
  t.is((await steward("destroy-model", "cli", "--yes", "--timeout", "60s")).code, 0);
  const models = await steward("models", "--format", "json");
  t.deepEqual(JSON.parse(models.stdout), []);
});

test.serial("apply converges a model file and diff reports drift with exit code 2", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-mf-"));
  const file = join(dir, "model.yaml");
  await writeFile(
    file,
    `model: declared\napplications:\n  board:\n    operator: ${join(repo, "operators", "motd")}\n    units: 1\n    config:\n      message: declared\n`,
  );
  const before = await steward("diff", file);
  t.is(before.code, 2);
  t.regex(before.stdout, /\+ create model declared/);
  const apply = await steward("apply", file, "--yes", "--timeout", "60s");
  t.is(apply.code, 0, apply.stderr);
  t.regex(apply.stdout, /Model "declared" matches/);
  const inSync = await steward("diff", file);
  t.is(inSync.code, 0);
  t.regex(inSync.stdout, /in sync/);
  // Drift made by hand shows up, and apply puts it back.
  await steward("add-unit", "board", "-m", "declared");
  await steward("config", "board", "message=by hand", "-m", "declared");
  const drift = await steward("diff", file);
  t.is(drift.code, 2);
  t.regex(drift.stdout, /~ board: config message "by hand" -> "declared"/);
  t.regex(drift.stdout, /~ board: remove board\/1 \(2 -> 1\)/);
  t.is((await steward("apply", file, "--yes", "--timeout", "60s")).code, 0);
  t.is((await steward("diff", file)).code, 0);
  const noYes = await steward("apply", file);
  t.is(noYes.code, 0, "in sync: nothing to confirm");
  await steward("destroy-model", "declared", "--yes", "--timeout", "60s");
});

test.serial("model file mistakes are errors naming the line", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-mf-"));
  const cases: [string, RegExp][] = [
    [
      `applications:\n  web:\n    operator: ${join(repo, "operators", "motd")}\n    unitz: 2\n`,
      /model\.yaml:4: applications\.web\.unitz: is not a known field/,
    ],
    [
      `applications:\n  web:\n    operator: ${join(repo, "operators", "motd")}\n    units: many\n`,
      /model\.yaml:4: applications\.web\.units: must be a whole number/,
    ],
    [
      `applications:\n  web:\n    operator: ${join(repo, "operators", "motd")}\n    config:\n      message: 3\n      colour: red\n`,
      /model\.yaml:5: applications\.web\.config\.message: must be a string/,
    ],
    [`aplications: {}\n`, /model\.yaml:1: aplications: is not a known section/],
    [`applications:\n  web:\n    units: 1\n`, /model\.yaml:2: applications\.web\.operator: is required/],
  ];
  for (const [text, expected] of cases) {
    const file = join(dir, "model.yaml");
    await writeFile(file, text);
    const r = await steward("diff", file, "-m", "whatever");
    t.is(r.code, 1, text);
    t.regex(r.stderr, expected);
    noStack(t, r);
  }
});

test.serial(
  "actions through the CLI: hello-http's restart, and cluster-secret's rotate-secret picked up by every peer",
  async (t) => {
    t.is((await steward("add-model", "ops")).code, 0);
    const web = await steward("deploy", "operators/hello-http", "web", "-m", "ops", "--wait", "--timeout", "90s");
    t.is(web.code, 0, web.stderr);
    const cluster = await steward(
      "deploy",
      "operators/cluster-secret",
      "cluster",
      "-n",
      "3",
      "-m",
      "ops",
      "--wait",
      "--timeout",
      "120s",
    );
    t.is(cluster.code, 0, cluster.stderr);

    const restart = await steward("run", "web/0", "restart", "-m", "ops");
    t.is(restart.code, 0, restart.stderr);
    t.regex(restart.stderr, /^Running operation (\d+) with 1 task\n {2}- task (\d+) on web\/0$/m);
    const { results, log } = parse(restart.stdout) as { results: { url: string; port: string }; log: string[] };
    t.regex(results.url, new RegExp(`^http://[^/]+:${results.port}/$`));
    t.regex(log.at(-1)!, /restarted$/);
    const webStatus = JSON.parse(
      (await steward("status", "web/0", "-m", "ops", "--format", "json")).stdout,
    ) as ModelStatus;
    t.is(webStatus.applications.web!.units["web/0"]!.workload.message, `serving on ${results.url}`);
    const taskId = /task (\d+) on web\/0/.exec(restart.stderr)![1]!;
    const shown = parse((await steward("show-task", taskId, "-m", "ops")).stdout) as {
      status: string;
      action: string;
      params: Record<string, unknown>;
    };
    t.deepEqual([shown.status, shown.action, shown.params], ["completed", "restart", { delay: 0 }]);

    const bad = await steward("run", "web/0", "restart", "delay=soon", "-m", "ops");
    t.is(bad.code, 1);
    t.regex(bad.stderr, /parameter "delay" of action restart \(web\) must be a whole number, got the string "soon"/);
    const noAction = await steward("run", "web/0", "-m", "ops");
    t.is(noAction.code, 1);
    noStack(t, noAction);

    const before = JSON.parse(
      (await steward("status", "cluster", "-m", "ops", "--format", "json")).stdout,
    ) as ModelStatus;
    const units = Object.values(before.applications.cluster!.units);
    const follower = units.find((u) => !u.leader)!.name;
    const onFollower = await steward("run", follower, "rotate-secret", "-m", "ops");
    t.is(onFollower.code, 1);
    t.regex(
      onFollower.stderr,
      new RegExp(`task \\d+ on ${follower} failed: only the leader rotates the secret: run it on cluster/leader`),
    );
    const rotate = await steward("run", "cluster/leader", "rotate-secret", "-m", "ops");
    t.is(rotate.code, 0, rotate.stderr);
    const hash = (parse(rotate.stdout) as { results: Record<string, string> }).results["secret-hash"]!;
    t.regex(hash, /^[0-9a-f]{12}$/);
    t.false(
      units.some((u) => u.workload.message.includes(hash)),
      "a new secret",
    );
    const agreed = await eventually(
      "every unit agrees on the new secret",
      async () => {
        const s = JSON.parse(
          (await steward("status", "cluster", "-m", "ops", "--format", "json")).stdout,
        ) as ModelStatus;
        const messages = Object.values(s.applications.cluster!.units).map((u) => u.workload.message);
        return messages.every((m) => m.startsWith(`3/3 units agree on secret ${hash}`)) ? messages : undefined;
      },
      30_000,
    );
    t.is(agreed.length, 3);
    const ops = await steward("operations", "-m", "ops");
    t.regex(ops.stdout, /^\d+\s+completed\s+rotate-secret\s/m);
    t.regex(ops.stdout, /^\d+\s+failed\s+rotate-secret\s/m);
    t.regex(ops.stdout, /^\d+\s+completed\s+restart\s/m);
    t.is((await steward("destroy-model", "ops", "--yes")).code, 0);
  },
);

test.serial(
  "wait-for follows status until a query holds, and show-status-log tells how a unit got there",
  async (t) => {
    t.is((await steward("add-model", "waits")).code, 0);
    // Waiting for an application that does not exist yet: it is deployed while the wait runs.
    const waiting = steward("wait-for", "application", "later", "-m", "waits", "--timeout", "90s");
    const deploy = await steward("deploy", "operators/motd", "later", "-m", "waits");
    t.is(deploy.code, 0, deploy.stderr);
    const waited = await waiting;
    t.is(waited.code, 0, waited.stderr);
    t.regex(waited.stdout, /^application later is ready\.$/m);
    t.is((await steward("wait-for", "model", "waits", "--timeout", "30s")).code, 0);
    const one = await steward(
      "wait-for",
      "unit",
      "later/0",
      "-m",
      "waits",
      "--query",
      'leader && workload-message != ""',
    );
    t.is(one.code, 0, one.stderr);

    const never = await steward(
      "wait-for",
      "unit",
      "later/0",
      "-m",
      "waits",
      "--query",
      'workload-status == "blocked"',
      "--timeout",
      "2s",
    );
    t.is(never.code, 1);
    t.regex(never.stderr, /timed out after 2 s waiting for unit later\/0: workload-status == "blocked"/);
    const typo = await steward("wait-for", "unit", "later/0", "-m", "waits", "--query", "scale == 1");
    t.is(typo.code, 1);
    t.regex(typo.stderr, /names "scale", which is not a field here/);
    const missing = await steward("wait-for", "application", "ghost", "-m", "waits", "--timeout", "2s");
    t.is(missing.code, 1);
    t.regex(missing.stderr, /\(application ghost does not exist\)/);
    const badKind = await steward("wait-for", "machine", "0", "-m", "waits");
    t.is(badKind.code, 1);
    noStack(t, badKind);

    const log = await steward("show-status-log", "later/0", "-m", "waits");
    t.is(log.code, 0, log.stderr);
    t.regex(log.stdout, /^Time\s+Type\s+Status\s+Message$/m);
    t.regex(log.stdout, /^\S+Z\s+agent\s+executing\s+running install hook$/m);
    t.regex(log.stdout, /^\S+Z\s+workload\s+active\s+motd: /m);
    t.regex(log.stdout.trim().split("\n").at(-1)!, /agent\s+idle|workload\s+active/);
    const json = JSON.parse(
      (await steward("show-status-log", "later/0", "-m", "waits", "--format", "json", "-n", "2")).stdout,
    ) as unknown[];
    t.is(json.length, 2);
    t.is((await steward("show-status-log", "later/9", "-m", "waits")).code, 1);
    t.is((await steward("destroy-model", "waits", "--yes")).code, 0);
  },
);

test("wrong arguments are a usage error with exit code 1 and no stack trace", async (t) => {
  for (const args of [
    ["deploy"],
    ["status", "--format", "xml"],
    ["add-unit", "web", "-n", "zero"],
    ["frobnicate"],
    ["remove-unit", "not-a-unit"],
  ]) {
    const r = await steward(...args);
    t.is(r.code, 1, args.join(" "));
    t.true(/Usage Error|Unknown Syntax Error|ERROR/.test(r.stdout + r.stderr), args.join(" "));
    noStack(t, r);
  }
});

test("every command has a description, details or examples in its --help", async (t) => {
  const commands = allCommands();
  // The lazy loader finds a command by its name: each file's one path is its name.
  t.deepEqual(
    commands.map((c) => c.paths),
    COMMAND_NAMES.map((n) => [[n]]),
  );
  for (const c of commands) {
    const path = c.paths![0]!;
    const r = await steward(...path, "--help");
    t.is(r.code, 0, path.join(" "));
    t.truthy(c.usage?.description, path.join(" "));
    t.true((c.usage?.examples?.length ?? 0) > 0, `${path.join(" ")} has examples`);
    t.regex(r.stdout, /Examples/, path.join(" "));
  }
  const top = await steward("--help");
  for (const c of commands)
    t.regex(top.stdout, new RegExp(`^  ${c.paths![0]!.join(" ")}\\s`, "m"), c.paths![0]!.join(" "));
});
