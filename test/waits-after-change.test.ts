/**
 * Waits after a change wait for the change: `steward refresh --wait` and `steward apply` return only
 * once every unit has run the hooks the change brings (upgrade, config-changed), not as soon as the
 * units are active/idle, which they still are from before the change reached them. The operator
 * (a recorder variant) takes 3 s in those hooks and logs their end, so a wait that returns early
 * finds the end missing; for apply, the units' agents are also held back (SIGSTOP) for 2 s so that
 * the change surely reaches them after the wait began. The Pulumi provider's Application update is checked in provider.test.ts.
 */
import test from "ava";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import type { ModelStatus } from "../api";
import { hasApplied } from "../api";
import type { ClientConfig } from "../cli";
import { saveClientConfig } from "../cli";
import { cliRunner } from "./harness/cli";
import type { CliResult } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { recordDir, recorderVariant } from "./harness/operators";

const repo = join(__dirname, "..", "..");
let tc: TestController;
let dir: string;
let steward: (...args: string[]) => Promise<CliResult>;

test.before(async () => {
  tc = await startTestController();
  dir = await mkdtemp(join(tmpdir(), "steward-waits-"));
  const home = join(dir, "home");
  const cfg: ClientConfig = {
    current: "t",
    controllers: { t: { addresses: tc.addresses, caCert: tc.caCert, user: "admin", password: tc.adminPassword } },
  };
  await saveClientConfig(home, cfg);
  steward = cliRunner(home, repo);
});
test.after.always(async () => {
  await tc?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A recorder whose upgrade and config-changed hooks take 3 s, then log "<unit> <hook>-completed". */
async function slowRecorder(name: string): Promise<string> {
  const op = await recorderVariant({ name });
  const dispatch = join(op, "dispatch");
  const slow = `case "$hook" in upgrade|config-changed) sleep 3; echo "$STEWARD_UNIT_NAME $hook-completed" >>"$dir/hooks.log" ;; esac\ncase "$hook" in`;
  // And says which process is its agent (the hook's parent), for a test to hold it back.
  const text = (await readFile(dispatch, "utf8"))
    .replace(/^case "\$hook" in$/m, slow)
    .replace(/^(me=.*)$/m, `$1\necho "$PPID" >"$dir/agent-$me"`);
  await writeFile(dispatch, text);
  return op;
}

/** How many times each unit logged "<hook>-completed". */
async function completed(record: string, hook: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const line of (await readFile(join(record, "hooks.log"), "utf8")).split("\n")) {
    const [unit, what] = line.split(" ");
    if (what === `${hook}-completed`) counts[unit!] = (counts[unit!] ?? 0) + 1;
  }
  return counts;
}

/** Every unit of `app` has applied what the application wants, as status shows it. */
function allApplied(s: ModelStatus, app: string): boolean {
  const a = s.applications[app]!;
  return (
    a.wanted !== undefined &&
    Object.values(a.units).every((u) => u.applied !== undefined && hasApplied(u.applied, a.wanted))
  );
}

test.serial("refresh --wait returns only after every unit ran the upgrade hook of the new content", async (t) => {
  t.timeout(300_000);
  const op = await slowRecorder("slowrec");
  const record = await recordDir();
  t.is((await steward("add-model", "refresh-wait")).code, 0);
  const deploy = await steward(
    "deploy",
    op,
    "rec",
    "-m",
    "refresh-wait",
    "-n",
    "2",
    "--config",
    `record-dir=${record}`,
    "--wait",
    "--timeout",
    "120s",
  );
  t.is(deploy.code, 0, deploy.stdout + deploy.stderr);
  t.deepEqual(await completed(record, "upgrade"), {}, "no upgrade yet");
  // New content: the same operator with a changed file.
  await writeFile(join(op, "dispatch"), (await readFile(join(op, "dispatch"), "utf8")) + "# v2\n");
  const r = await steward("refresh", "rec", "-m", "refresh-wait", "--path", op, "--wait", "--timeout", "120s");
  t.is(r.code, 0, r.stdout + r.stderr);
  t.regex(r.stdout, /All units of "rec" run the new content and are active/);
  // Read at the moment it returned: the upgrade hook had ended on every unit.
  t.deepEqual(await completed(record, "upgrade"), { "rec/0": 1, "rec/1": 1 });
  t.true(allApplied(await tc.admin.status("refresh-wait"), "rec"));
});

test.serial("apply waits for a config change to be run by every unit", async (t) => {
  t.timeout(300_000);
  const op = await slowRecorder("slowcfg");
  const record = await recordDir();
  const file = join(dir, "model.yaml");
  const modelFile = (label: string): string =>
    `model: apply-wait\napplications:\n  rec:\n    operator: ${op}\n    units: 2\n    config:\n      record-dir: ${record}\n      label: ${label}\n`;
  await writeFile(file, modelFile("one"));
  const first = await steward("apply", file, "--yes", "--timeout", "120s");
  t.is(first.code, 0, first.stdout + first.stderr);
  const before = await completed(record, "config-changed");
  t.deepEqual(Object.keys(before).sort(), ["rec/0", "rec/1"], "the deploy waited for config-changed too");
  await writeFile(file, modelFile("two"));
  // The change reaches the units late (their agents stopped for 2 s): until then they show the
  // active/idle of before, which is no answer to this change.
  const agents = [
    ...new Set(
      await Promise.all(
        ["rec-0", "rec-1"].map(async (u) => Number(await readFile(join(record, `agent-${u}`), "utf8"))),
      ),
    ),
  ];
  let second: CliResult;
  try {
    for (const pid of agents) process.kill(pid, "SIGSTOP");
    const applying = steward("apply", file, "--yes", "--timeout", "120s");
    await new Promise((r) => setTimeout(r, 2000));
    for (const pid of agents) process.kill(pid, "SIGCONT");
    second = await applying;
  } finally {
    for (const pid of agents) process.kill(pid, "SIGCONT");
  }
  t.is(second.code, 0, second.stdout + second.stderr);
  const after = await completed(record, "config-changed");
  for (const unit of ["rec/0", "rec/1"])
    t.is(after[unit], before[unit]! + 1, `${unit} ran config-changed for label=two before apply returned`);
  const s = await tc.admin.status("apply-wait");
  t.true(allApplied(s, "rec"));
  t.is(s.applications.rec!.config.label, "two");
});
