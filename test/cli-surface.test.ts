/**
 * The CLI's own surface, as a newcomer meets it: help that names every option's value, a typo that
 * suggests the command meant, usage errors that say what is missing, `status` coloured on a
 * terminal only (a real pseudo-terminal through util-linux `script`), the operator revision in
 * status moving on refresh, `status --watch` with filters, and `config APP KEY`.
 */
import test from "ava";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { execFile, spawn } from "node:child_process";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ModelStatus } from "../api";
import { COMMAND_NAMES, nearest, withHeartbeat } from "../cli";
import type { CliResult } from "./harness/cli";
import { bootstrapOnFreePort, cliRunner } from "./harness/cli";
import { eventually } from "./harness/eventually";
import { killProcessesUnder } from "./harness/processes";

const repo = join(__dirname, "..", "..");
const main = join(repo, "dist", "cli", "main.js");
let home: string;
let work: string;
let steward: (...args: string[]) => Promise<CliResult>;
const children: ChildProcessWithoutNullStreams[] = [];

test.before(async () => {
  home = await mkdtemp(join(tmpdir(), "steward-surface-"));
  work = await mkdtemp(join(tmpdir(), "steward-surface-ops-"));
  steward = cliRunner(home, repo);
});
test.after.always(async () => {
  for (const c of children) c.kill("SIGKILL");
  await steward?.("destroy-controller", "surface", "--yes", "--timeout", "20");
  await killProcessesUnder(home);
  await rm(home, { recursive: true, force: true });
  await rm(work, { recursive: true, force: true });
});

/** The CLI as its own process, its standard output a pseudo-terminal (`script`) or a pipe. */
function runReal(
  args: string[],
  o: { tty: boolean; env?: Record<string, string> },
): Promise<{ code: number; stdout: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, STEWARD_HOME: home };
  delete env.FORCE_COLOR;
  delete env.NO_COLOR;
  Object.assign(env, o.env);
  const quoted = [process.execPath, main, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  const [file, argv] = o.tty ? ["script", ["-qec", quoted, "/dev/null"]] : [process.execPath, [main, ...args]];
  return new Promise((resolve) => {
    execFile(file, argv, { env, cwd: repo }, (err, stdout) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout }),
    );
  });
}

const ESC = "\u001b[";

test("help names every option's value: no #0 anywhere, -m, --model <name>, --timeout <duration>", async (t) => {
  const top = await steward("help");
  t.is(top.code, 0);
  t.notRegex(top.stdout, /#\d/);
  // One line per command, and a few for categories and usage.
  t.true(top.stdout.split("\n").length < COMMAND_NAMES.length + 30, "the command list is one line per command");
  for (const name of COMMAND_NAMES) t.regex(top.stdout, new RegExp(`^  ${name}\\s`, "m"), name);
  for (const name of COMMAND_NAMES) {
    const r = await steward(name, "--help");
    t.is(r.code, 0, name);
    t.notRegex(r.stdout, /#\d/, name);
    // Every option that takes a value shows one, by name.
    for (const line of r.stdout.split("\n").filter((l) => /^ {2}-/.test(l)))
      t.regex(line, /^ {2}(-\w, )?--?[\w-]+( <[^>]+>)*\s{2,}/, `${name}: ${line}`);
  }
  const status = await steward("help", "status");
  const options = status.stdout.slice(status.stdout.indexOf("Options"), status.stdout.indexOf("Details"));
  t.is(
    options,
    [
      "Options",
      "",
      "  -c, --controller <name>    Controller to use (default: the current one; env STEWARD_CONTROLLER)",
      "  -m, --model <name>         Model to use (default: the current one; env STEWARD_MODEL)",
      "  --format <format>          tabular, json or yaml",
      "  --watch                    Keep showing status as it changes",
      "  -h, --help                 Show this help",
      "",
      "",
    ].join("\n"),
  );
  t.regex(status.stdout, /^\$ steward status \[options\] \[application\|unit\|machine\.\.\.\]$/m);
  const deploy = await steward("deploy", "--help");
  t.regex(deploy.stdout, /^ {2}--timeout <duration> {2,}/m);
  t.regex(deploy.stdout, /^ {2}-n, --num-units <n> {2,}/m);
  t.regex(deploy.stdout, /^ {2}--config <key=value> {2,}/m);
});

test("a typo suggests the nearest commands in two lines and exits 1", async (t) => {
  const typo = await steward("statsu");
  t.is(typo.code, 1);
  t.is(typo.stdout, "");
  t.is(typo.stderr, 'ERROR unknown command "statsu". Did you mean status?\n"steward help" lists the commands.\n');
  t.regex((await steward("dploy")).stderr, /Did you mean deploy\?/);
  t.regex((await steward("help", "statsu")).stderr, /Did you mean status\?/);
  t.regex((await steward("remove-unti")).stderr, /Did you mean remove-unit\?/);
  const far = await steward("frobnicate");
  t.is(far.code, 1);
  t.is(far.stderr, 'ERROR unknown command "frobnicate".\n"steward help" lists the commands.\n');
});

test("nearest: typos, swapped letters and prefixes find the command; nothing near finds nothing", (t) => {
  t.deepEqual(nearest("statsu", COMMAND_NAMES), ["status"]);
  t.deepEqual(nearest("deploy", COMMAND_NAMES).slice(0, 1), ["deploy"]);
  t.deepEqual(nearest("modles", COMMAND_NAMES), ["models"]);
  t.deepEqual(
    nearest("remove-unti", COMMAND_NAMES),
    ["remove-unit"],
    "a far match does not ride along with a near one",
  );
  t.true(nearest("show", COMMAND_NAMES).every((n) => n.startsWith("show-")));
  t.deepEqual(nearest("xyzzy", COMMAND_NAMES), []);
});

test("a long operation that goes quiet says it is still at its step, with the time so far", async (t) => {
  const lines: string[] = [];
  const result = await withHeartbeat(
    (l) => lines.push(l),
    "Connecting to h1 over SSH",
    async (progress) => {
      await new Promise((r) => setTimeout(r, 2600));
      progress("Connected to root@h1");
      return 7;
    },
    { quietMs: 1000 },
  );
  t.is(result, 7);
  t.is(lines[0], "Connecting to h1 over SSH");
  t.true(lines.length >= 3, lines.join("\n"));
  t.regex(lines[1]!, /^ {2}… still connecting to h1 over SSH \(\d+ s so far\)$/);
  t.is(lines.at(-1), "Connected to root@h1");
});

test("a usage error says which option or argument is missing or wrong, then points at steward help CMD", async (t) => {
  const cases: [string[], RegExp][] = [
    [["deploy"], /^ERROR missing the argument <operator-dir>$/m],
    [["export-model", "m"], /^ERROR missing the required option --output <file>$/m],
    [["add-model", "m", "--substrat", "local"], /^ERROR unknown option --substrat\. Did you mean --substrate\?$/m],
    [["deploy", "./op", "--timeout"], /^ERROR --timeout needs a value: --timeout <duration>$/m],
    [["integrate", "a", "b", "c"], /^ERROR unexpected argument "c"$/m],
    [["add-unit", "web", "-n", "zero"], /^ERROR invalid value for -n: expected a number \(got "zero"\)$/m],
  ];
  for (const [args, message] of cases) {
    const r = await steward(...args);
    t.is(r.code, 1, args.join(" "));
    t.is(r.stdout, "", args.join(" "));
    t.regex(r.stderr, message, args.join(" "));
    t.regex(r.stderr, new RegExp(`^Usage: steward ${args[0]} \\[options\\]`, "m"), args.join(" "));
    t.regex(r.stderr, new RegExp(`^See "steward help ${args[0]}" for its options and examples\\.$`, "m"));
    t.true(r.stderr.split("\n").length <= 4, `a few lines, not the signature: ${r.stderr}`);
  }
  // A usage error a command finds itself: on standard error, with the same pointer.
  const format = await steward("status", "--format", "xml");
  t.is(format.code, 1);
  t.regex(format.stderr, /^ERROR .*xml/m);
  t.regex(format.stderr, /^See "steward help status"/m);
});

test.serial(
  "on a real controller: colour on a terminal only, the operator revision, watch with filters, config APP KEY",
  async (t) => {
    const boot = await bootstrapOnFreePort(steward, "surface");
    t.is(boot.code, 0, boot.stdout + boot.stderr);
    t.is((await steward("add-model", "look")).code, 0);
    const op = join(work, "motd");
    await cp(join(repo, "operators", "motd"), op, { recursive: true });
    const deploy = await steward("deploy", op, "board", "-n", "2", "--wait", "--timeout", "90s");
    t.is(deploy.code, 0, deploy.stdout + deploy.stderr);

    // Colour: green active on a pseudo-terminal; none through a pipe; none with NO_COLOR; FORCE_COLOR through a pipe.
    const onTty = await runReal(["status"], { tty: true });
    t.is(onTty.code, 0, onTty.stdout);
    t.true(onTty.stdout.includes(`${ESC}32mactive${ESC}0m`), JSON.stringify(onTty.stdout));
    t.true(onTty.stdout.includes(`${ESC}32midle${ESC}0m`));
    t.regex(onTty.stdout.replace(/\u001b\[[0-9;]*m/g, ""), /^board\/0\*?\s+active\s+idle\s/m, "columns still line up");
    const piped = await runReal(["status"], { tty: false });
    t.is(piped.code, 0);
    t.false(piped.stdout.includes(ESC), JSON.stringify(piped.stdout));
    t.regex(piped.stdout, /^board\s+1\.0\.0\s+active\s+2\s+motd\s+1\s/m, "Rev is the operator revision, 1 at deploy");
    const noColour = await runReal(["status"], { tty: true, env: { NO_COLOR: "1" } });
    t.false(noColour.stdout.includes(ESC));
    t.regex(noColour.stdout, /active/);
    const forced = await runReal(["status"], { tty: false, env: { FORCE_COLOR: "1" } });
    t.true(forced.stdout.includes(`${ESC}32mactive`));

    // config APP KEY: the value alone.
    t.is((await steward("config", "board", "message=hello there")).code, 0);
    const one = await steward("config", "board", "message");
    t.is(one.code, 0, one.stderr);
    t.is(one.stdout, "hello there\n");
    t.is((await steward("config", "board", "uppercase")).stdout, "false\n", "a default");
    t.is((await steward("config", "board", "uppercase", "--format", "json")).stdout, "false\n");
    const unknown = await steward("config", "board", "mesage");
    t.is(unknown.code, 1);
    t.regex(unknown.stderr, /board has no config option "mesage" \(options: message, uppercase\)/);

    // status --watch with a filter: only board/1 is shown, and a change shows again.
    const watch = spawn(process.execPath, [main, "status", "board/1", "--watch", "--format", "json"], {
      env: { ...process.env, STEWARD_HOME: home },
      cwd: repo,
    });
    children.push(watch);
    let out = "";
    watch.stdout.on("data", (d: Buffer) => (out += d.toString()));
    let err = "";
    watch.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const docs = (): ModelStatus[] =>
      out
        .split(/^---$/m)
        .filter((d) => d.trim())
        .flatMap((d) => {
          try {
            return [JSON.parse(d) as ModelStatus];
          } catch {
            return [];
          }
        });
    await eventually("the first filtered view", async () => docs().length >= 1, 30_000);
    t.deepEqual(Object.keys(docs()[0]!.applications.board!.units), ["board/1"], err);
    t.is((await steward("config", "board", "message=changed")).code, 0);
    await eventually(
      "a view with the change",
      async () => docs().some((d) => d.applications.board?.config.message === "changed"),
      30_000,
    );
    t.true(
      docs().every((d) => Object.keys(d.applications.board!.units).join() === "board/1"),
      "every view is filtered",
    );
    watch.kill("SIGINT");
    t.is(err, "");

    // The revision: a refresh with changed content makes it 2; one with the same content leaves it.
    const yaml = join(op, "operator.yaml");
    await writeFile(yaml, (await readFile(yaml, "utf8")).replace("Keeps a message", "Keeps the message"));
    const refresh = await steward("refresh", "board", "--path", op, "--wait", "--timeout", "90s");
    t.is(refresh.code, 0, refresh.stdout + refresh.stderr);
    const after = JSON.parse((await steward("status", "--format", "json")).stdout) as ModelStatus;
    t.is(after.applications.board!.operator.revision, 2);
    t.regex((await steward("status")).stdout, /^board\s+1\.0\.0\s+\w+\s+2\s+motd\s+2\s/m, "Rev shows the refresh");
    t.is((await steward("refresh", "board", "--path", op)).code, 0);
    const same = JSON.parse((await steward("status", "--format", "json")).stdout) as ModelStatus;
    t.is(same.applications.board!.operator.revision, 2, "the same content is no new revision");
  },
);
