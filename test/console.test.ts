/**
 * The console (`steward` with no arguments) driven through a real pseudo-terminal (util-linux
 * `script`), as a person types: tab completion of commands and names, quoting, `use` for this
 * console only, Ctrl-C cancelling a running command without leaving, history kept across sessions;
 * then piped input, and the shell completion scripts run by a real bash.
 */
import test from "ava";
import { spawn, execFile } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { lineWords, loadClientConfig, saveClientConfig, splitWords } from "../cli";
import { cliRunner } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { allReady, operatorsDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";

const cliMain = join(__dirname, "..", "cli", "main.js");
let tc: TestController;
let home: string;

test.before(async () => {
  tc = await startTestController();
  home = await mkdtemp(join(tmpdir(), "steward-console-"));
  await saveClientConfig(home, {
    current: "t",
    controllers: { t: { addresses: tc.addresses, caCert: tc.caCert, user: "admin", password: tc.adminPassword } },
  });
  await tc.admin.createModel("con");
  await tc.admin.deploy("con", { name: "board", operator: await tc.upload(join(operatorsDir, "motd")), units: 1 });
  await tc.waitForUnits("con", allReady(1), "board active");
});
test.after.always(async () => {
  await tc?.close();
});

/** A console on a pseudo-terminal: what it printed so far (escape sequences removed), keys to type, and its end. */
function terminal(): {
  screen: () => string;
  type: (keys: string) => void;
  waitFor: (what: RegExp, timeoutMs?: number) => Promise<void>;
  exited: Promise<number>;
} {
  // `exec`: script runs the command through $SHELL -c; a shell left waiting (dash, CI's /bin/sh)
  // would itself die of the Ctrl-C the console survives, and script would report that death.
  const p = spawn("script", ["-qfec", `exec ${process.execPath} ${cliMain}`, "/dev/null"], {
    env: { ...process.env, SHELL: "/bin/sh", STEWARD_HOME: home, TERM: "xterm", STEWARD_MODEL: "" },
  });
  let out = "";
  p.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const screen = (): string => out.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "");
  return {
    screen,
    type: (keys) => {
      p.stdin.write(keys);
    },
    waitFor: (what, timeoutMs = 20_000) =>
      eventually(`the console to show ${what}`, () => what.test(screen()), timeoutMs).then(() => undefined),
    exited: new Promise((resolve) => p.once("exit", (code) => resolve(code ?? -1))),
  };
}

test.serial("a person at the console: completion, quoting, use, Ctrl-C, history across sessions", async (t) => {
  const c = terminal();
  await c.waitFor(/steward t> $/);
  c.type("use con\r");
  await c.waitFor(/using model con in this console\nsteward t:con> $/);
  // tab completes the command, then the application's name (board and board/0 share "board").
  c.type("sta\t");
  await c.waitFor(/steward t:con> status $/);
  c.type("bo\t");
  await c.waitFor(/steward t:con> status board$/);
  c.type("\r");
  await c.waitFor(/^board\/0\*?\s+active\s+idle/m);
  // Words are split as a shell splits them: the quoted query is one argument.
  c.type("wait-for unit board/0 --query 'workload-status == \"active\"' --timeout 20s\r");
  await c.waitFor(/unit board\/0 is ready \(workload-status == "active"\)/);
  // Ctrl-C cancels a command that runs until stopped, and the console stays.
  c.type("debug-log --replay\r");
  await c.waitFor(/board\/0 .*INFO/);
  c.type("\u0003");
  await c.waitFor(/\^C[\s\S]*steward t:con> $/);
  c.type("show-unit board/0 --format json\r");
  await c.waitFor(/"name": "board\/0"/);
  c.type("exit\r");
  t.is(await c.exited, 0);
  const cfg = await loadClientConfig(home);
  t.is(cfg.controllers.t!.currentModel, undefined, "use changed the model for that console only");
  const history = (await readFile(join(home, "console-history"), "utf8")).trim().split("\n");
  t.deepEqual(history.slice(0, 2), ["use con", "status board"]);
  t.is(history.at(-1), "exit");
  t.is((await stat(join(home, "console-history"))).mode & 0o777, 0o600);

  // The next session finds the history: the up arrow brings back the last line (exit), which ends it.
  const again = terminal();
  await again.waitFor(/steward t> $/);
  again.type("\u001b[A");
  await again.waitFor(/steward t> exit$/);
  again.type("\r");
  t.is(await again.exited, 0);
});

test.serial("piped input runs each line; a failing one makes the exit code 1", async (t) => {
  const steward = cliRunner(
    home,
    tmpdir(),
    "use con\nstatus board --format json\n\n# a comment\nno-such-command\nuse nope\n",
  );
  const r = await steward();
  t.is(r.code, 1);
  t.regex(r.stdout, /"board\/0"/);
  t.regex(r.stderr, /ERROR unknown command "no-such-command"/);
  t.regex(r.stderr, /ERROR model "nope" does not exist \(models: con\)/);
  const ok = await cliRunner(home, tmpdir(), "status board -m con\n")();
  t.is(ok.code, 0, ok.stderr);
});

test.serial("shell completion: the bash script, run by bash, completes commands, options and names", async (t) => {
  const bin = join(home, "bin");
  await mkdir(bin, { recursive: true });
  await writeFile(join(bin, "steward"), `#!/bin/sh\nexec '${process.execPath}' '${cliMain}' "$@"\n`);
  await chmod(join(bin, "steward"), 0o755);
  const steward = cliRunner(home, tmpdir());
  const script = (await steward("completion", "bash")).stdout;
  t.regex(script, /complete -o default -F _steward steward/);
  const complete = async (words: string[]): Promise<string[]> => {
    const setup = `source /dev/stdin <<'EOS'\n${script}\nEOS\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _steward; printf '%s\\n' "\${COMPREPLY[@]}"`;
    const { stdout } = await promisify(execFile)("bash", ["-c", setup], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, STEWARD_HOME: home },
    });
    return stdout.split("\n").filter(Boolean);
  };
  t.deepEqual(await complete(["steward", "remove-"]), [
    "remove-application",
    "remove-credential",
    "remove-integration",
    "remove-machine",
    "remove-secret",
    "remove-storage",
    "remove-storage-pool",
    "remove-unit",
    "remove-user",
  ]);
  t.deepEqual(await complete(["steward", "deploy", "--n"]), ["--num-units"]);
  t.deepEqual(await complete(["steward", "status", "-m", "c"]), ["con"]);
  t.deepEqual(await complete(["steward", "show-unit", "-m", "con", "board/"]), ["board/0"]);
  t.deepEqual(await complete(["steward", "wait-for", ""]), ["application", "model", "unit"]);
  for (const shell of ["zsh", "fish"])
    t.regex((await steward("completion", shell)).stdout, /steward completion --words --/);
  const bad = await steward("completion", "tcsh");
  t.is(bad.code, 1);
  t.regex(bad.stdout + bad.stderr, /give the shell: bash, zsh or fish \(not "tcsh"\)/);
});

test("words are split as a shell splits them, without expanding anything", (t) => {
  const words = (line: string): unknown => lineWords(line);
  t.deepEqual(words(`config web greeting="Hi there" 'a b'\\ c`), {
    words: ["config", "web", "greeting=Hi there", "a b c"],
  });
  t.deepEqual(words(`run x "say \\"hi\\"" 'it''s' $HOME *`), { words: ["run", "x", 'say "hi"', "its", "$HOME", "*"] });
  t.deepEqual(words(`a "" ''`), { words: ["a", "", ""] });
  t.deepEqual(words(`status "web`), { error: "the line ends inside double quotes: close them" });
  t.deepEqual(splitWords("status -m "), { words: ["status", "-m"] }, "after a space the next word is empty");
  t.deepEqual(splitWords(`status "web/`), { words: ["status"], last: "web/", unclosed: '"' });
});
