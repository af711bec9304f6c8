/**
 * The CLI as a newcomer and a hostile operator meet it: arguments checked before anything changes,
 * waits that stop when waiting cannot help, output that cannot drive the terminal, a clear answer
 * to a controller whose certificate changed, `help`, `version` and `refresh`.
 */
import test from "ava";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import type { ModelStatus } from "../api";
import { ControllerClient } from "../api";
import { loadClientConfig } from "../cli";
import { initControllerDir } from "../controller";
import type { CliResult } from "./harness/cli";
import { bootstrapOnFreePort, cliRunner } from "./harness/cli";
import { fixturesDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { recordDir, recorderVariant, sequences } from "./harness/operators";
import { killProcessesUnder } from "./harness/processes";

const repo = join(__dirname, "..", "..");
let home: string;
let steward: (...args: string[]) => Promise<CliResult>;
let admin: ControllerClient;

test.before(async () => {
  home = await mkdtemp(join(tmpdir(), "steward-clih-"));
  steward = cliRunner(home, repo);
  const boot = await bootstrapOnFreePort(steward, "hard");
  if (boot.code !== 0) throw new Error(`bootstrap failed: ${boot.stdout}${boot.stderr}`);
  const entry = (await loadClientConfig(home)).controllers.hard!;
  admin = new ControllerClient({
    addresses: entry.addresses,
    caCert: entry.caCert,
    user: "admin",
    password: entry.password!,
  });
});
test.after.always(async () => {
  admin?.close();
  await steward?.("destroy-controller", "hard", "--yes", "--timeout", "20s");
  await killProcessesUnder(home);
  await rm(home, { recursive: true, force: true });
});

const noStack = (t: { false(v: boolean, m?: string): void }, r: CliResult): void =>
  t.false(/\n\s+at .+\(.*:\d+:\d+\)/.test(r.stdout + r.stderr), `no stack trace expected:\n${r.stdout}${r.stderr}`);

test.serial("a bad number or duration is refused before anything changes", async (t) => {
  t.is((await steward("add-model", "args")).code, 0);
  const modelFile = join(await mkdtemp(join(tmpdir(), "steward-mf-")), "model.yaml");
  await writeFile(
    modelFile,
    `model: args-apply\napplications:\n  board:\n    operator: ${join(repo, "operators", "motd")}\n    units: 1\n`,
  );
  const cases: [string[], RegExp][] = [
    [
      ["deploy", "operators/motd", "board", "--wait", "--timeout", "abc"],
      /--timeout: expected a duration such as 90s, 5m or 1h/,
    ],
    [["deploy", "operators/motd", "board", "-n", "two"], /-n: expected a number/],
    [["deploy", "operators/motd", "board", "--num-units=-1"], /--num-units: expected to be in the \[0; /],
    [["apply", modelFile, "--yes", "--timeout", "soon"], /--timeout: expected a duration/],
    [["enable-ha", "-n", "three"], /-n: expected a number/],
    [["enable-ha", "-n", "3", "--timeout", "abc"], /--timeout: expected a duration/],
    [["enable-ha", "--replace-after", "later"], /--replace-after: expected a duration/],
    [["enable-ha", "--max-replacements-per-hour", "many"], /--max-replacements-per-hour: expected a number/],
    [["bootstrap", "other", "--timeout", "abc"], /--timeout: expected a duration/],
    [["bootstrap", "other", "--port", "99999"], /--port: expected to be in the \[1; 65535\] range/],
    [["add-machine", "local", "-n", "0"], /-n: expected to be in the \[1; /],
    [["add-machine", "ssh:root@127.0.0.1", "--port", "ssh"], /--port: expected a number/],
    [["add-unit", "board", "-n", "1.5"], /-n: expected to be an integer/],
    [["destroy-controller", "hard", "--yes", "--timeout", "abc"], /--timeout: expected a duration/],
    [["destroy-model", "args", "--yes", "--timeout", "abc"], /--timeout: expected a duration/],
    [["add-model", "args2", "--update-status-interval", "often"], /--update-status-interval: expected a duration/],
  ];
  for (const [args, expected] of cases) {
    const r = await steward(...args);
    t.is(r.code, 1, args.join(" "));
    t.regex(r.stdout + r.stderr, expected, args.join(" "));
    noStack(t, r);
  }
  // Nothing of the above happened.
  const s = await admin.status("args");
  t.deepEqual(Object.keys(s.applications), [], "no application deployed");
  t.deepEqual(Object.keys(s.machines), [], "no machine added");
  t.deepEqual((await admin.listModels()).map((m) => m.name).sort(), ["args"], "apply created no model, add-model none");
  const info = await admin.controllerInfo();
  t.is(info.cluster.store, "embedded", "enable-ha did not start");
  const cfg = await loadClientConfig(home);
  t.deepEqual(Object.keys(cfg.controllers), ["hard"], "bootstrap registered nothing");
  t.false(existsSync(join(home, "controllers", "other")), "bootstrap created no data directory");
  // Bare numbers are seconds, for compatibility with the old destroy-controller --timeout.
  const ok = await steward("destroy-model", "args", "--yes", "--timeout", "60");
  t.is(ok.code, 0, ok.stderr);
});

test.serial("deploy --wait fails at once on a failed hook when the model does not retry hooks", async (t) => {
  t.is((await steward("add-model", "noretry")).code, 0);
  t.is((await steward("model-config", "automatically-retry-hooks=false")).code, 0);
  const record = await recordDir();
  // With the ten-minute timeout, only failing at once lets this test finish within ava's limit.
  const r = await steward(
    "deploy",
    join(fixturesDir, "operators", "recorder"),
    "rec",
    "--config",
    `record-dir=${record}`,
    "--config",
    "fail-hook=install",
    "--config",
    "fail-times=100",
    "--wait",
    "--timeout",
    "10m",
  );
  t.is(r.code, 1, r.stdout + r.stderr);
  t.regex(
    r.stderr,
    /rec\/0 failed a hook and model "noretry" does not retry hooks \(automatically-retry-hooks=false\)/,
  );
  t.regex(r.stderr, /steward resolve rec\/0/);
  t.regex(r.stderr, /^Unit\s+Workload\s+Agent\s+Message$/m);
  t.regex(r.stderr, /^rec\/0\s+error\s+error\s+hook failed: "install"$/m);
  t.regex(r.stderr, /^rec\/0's "install" hook printed:\n {2}failing install on purpose$/m, "and why: its output");
  noStack(t, r);
  await steward("destroy-model", "noretry", "--yes", "--force", "--no-wait");
});

test.serial("status, show-unit and errors never pass escape sequences to the terminal", async (t) => {
  t.is((await steward("add-model", "noisy")).code, 0);
  const op = await recorderVariant({ name: "noisy" });
  const dispatch = join(op, "dispatch");
  const evil = String.raw`evil\033[2J\033]0;pwned\007\r\nFAKE`;
  await writeFile(
    dispatch,
    (await readFile(dispatch, "utf8")).replace(
      /status-set active "label=\$\(config-get label\)"/,
      `status-set active "$(printf '${evil}')"`,
    ),
  );
  const record = await recordDir();
  t.is((await steward("deploy", op, "noisy", "--config", `record-dir=${record}`)).code, 0);
  const s = await eventually(
    "the unit reports the escape sequences",
    async () => {
      const st: ModelStatus = await admin.status("noisy");
      return st.applications.noisy?.units["noisy/0"]?.workload.message.includes("\x1b[2J") ? st : undefined;
    },
    60_000,
  );
  t.regex(
    s.applications.noisy!.units["noisy/0"]!.workload.message,
    /\x1b\]0;pwned\x07\r\nFAKE/,
    "the controller has them raw",
  );
  for (const args of [
    ["status"],
    ["status", "--format", "yaml"],
    ["status", "--format", "json"],
    ["show-unit", "noisy/0"],
    ["show-unit", "noisy/0", "--format", "json"],
    ["machines"],
  ]) {
    const r = await steward(...args, "-m", "noisy");
    t.is(r.code, 0, args.join(" "));
    t.false(
      /[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(r.stdout),
      `${args.join(" ")} printed a control character: ${JSON.stringify(r.stdout)}`,
    );
  }
  const tab = (await steward("status", "-m", "noisy")).stdout;
  t.regex(tab, /^noisy\/0\*?\s+active\s+.*evil.*FAKE$/m, "the message stays on its unit's line");
  t.false(/^FAKE/m.test(tab), "no forged line");
  await steward("destroy-model", "noisy", "--yes", "--force", "--no-wait");
});

test.serial(
  "a controller whose certificate the client does not trust is a clear error, not a stack trace",
  async (t) => {
    const other = await mkdtemp(join(tmpdir(), "steward-otherca-"));
    try {
      const init = await initControllerDir({
        dataDir: join(other, "c"),
        name: "other",
        listen: { host: "127.0.0.1", port: 0 },
      });
      const cfg = await loadClientConfig(home);
      const entry = cfg.controllers.hard!;
      // As if "hard" had been re-created with a new CA while this client kept the old one.
      cfg.controllers.stale = { addresses: entry.addresses, caCert: init.caCert, user: "admin", token: "x" };
      await writeFile(join(home, "controllers.json"), JSON.stringify(cfg));
      for (const args of [["status", "-m", "x"], ["status", "-m", "x", "--watch"], ["models"]]) {
        const r = await steward(...args, "-c", "stale");
        t.is(r.code, 1, args.join(" "));
        t.regex(
          r.stderr,
          /^ERROR cannot trust controller "stale": the controller at 127\.0\.0\.1:\d+ presented a certificate that the CA this client trusts for it does not accept/m,
        );
        t.regex(r.stderr, /this client's entry is stale: remove "stale" from .*controllers\.json/);
        noStack(t, r);
      }
    } finally {
      const cfg = await loadClientConfig(home);
      delete cfg.controllers.stale;
      await writeFile(join(home, "controllers.json"), JSON.stringify(cfg));
      await rm(other, { recursive: true, force: true });
    }
  },
);

test.serial("help and version", async (t) => {
  const pkg = JSON.parse(await readFile(join(repo, "package.json"), "utf8")) as { version: string };
  const version = await steward("version");
  t.is(version.code, 0);
  t.is(version.stdout, `steward ${pkg.version}\ncontroller "hard" ${pkg.version}\n`);
  const help = await steward("help");
  t.is(help.code, 0);
  t.regex(help.stdout, /^ {2}deploy +deploy an operator/m);
  t.regex(help.stdout, /^ {2}refresh +upgrade an application/m);
  const one = await steward("help", "deploy");
  t.is(one.code, 0);
  t.regex(one.stdout, /^\$ steward deploy /m);
  t.regex(
    one.stdout,
    /a duration such as 90s, 5m or 1h \(a bare number is seconds\)/,
    "--timeout's format is in the help",
  );
});

test("a reader that closes the pipe early ends the command quietly, not with an EPIPE stack trace", async (t) => {
  const child = spawn(process.execPath, [join(repo, "dist", "cli", "main.js"), "help"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.destroy(); // as `steward help | head -0` would: nobody reads what it writes
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  t.is(stderr, "");
  t.is(code, 0);
});

test.serial("refresh uploads the changed operator and its units run upgrade then config-changed", async (t) => {
  t.is((await steward("add-model", "refresh")).code, 0);
  const op = await recorderVariant({ name: "recorder" });
  const record = await recordDir();
  const deploy = await steward("deploy", op, "rec", "--config", `record-dir=${record}`, "--wait", "--timeout", "60s");
  t.is(deploy.code, 0, deploy.stderr);
  const dispatch = join(op, "dispatch");
  // The new content leaves a mark from every hook it runs.
  await writeFile(
    dispatch,
    (await readFile(dispatch, "utf8")).replace(
      /^set -eu$/m,
      `set -eu\ntouch "$(config-get record-dir)/v2-\${STEWARD_DISPATCH_PATH#hooks/}"`,
    ),
  );
  const r = await steward("refresh", "rec", "--wait", "--timeout", "60s");
  t.is(r.code, 0, r.stdout + r.stderr);
  t.regex(r.stderr, /Uploading operator recorder/);
  t.regex(r.stdout, /Upgrading "rec" from recorder 1 \(\w{8}\) to 1 \(\w{8}\)/);
  const after = await eventually(
    "the upgrade and the hook after it",
    async () => {
      const seq = (await sequences(record)).get("rec/0") ?? [];
      const i = seq.indexOf("upgrade");
      return i >= 0 && seq.length > i + 1 ? seq.slice(i) : undefined;
    },
    30_000,
  );
  t.deepEqual(after.slice(0, 2), ["upgrade", "config-changed"]);
  t.true(existsSync(join(record, "v2-upgrade")), "upgrade ran the new content");
  const same = await steward("refresh", "rec");
  t.is(same.code, 0);
  t.regex(same.stdout, /already runs this content/);
  const unknown = await steward("refresh", "other-app");
  t.is(unknown.code, 1);
  t.regex(unknown.stdout + unknown.stderr, /give its directory with --path DIR/);
  await steward("destroy-model", "refresh", "--yes", "--force", "--no-wait");
});
