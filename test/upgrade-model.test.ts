/**
 * `steward upgrade-model` on the local substrate, with real agent processes: the controller holds
 * releases made from this build with other versions (test/harness/release.ts); the agents download
 * one, switch to it and report it, one machine per application at a time with the leader's machine
 * last, and their units run no install or start again. An agent release that dies as it starts is
 * taken back by the agent itself, and the upgrade stops there with a message that says so; so is one
 * that hangs as it starts (a watchdog thread takes it back at the trial's deadline). A dry
 * run prints the plan and changes nothing; wrong arguments are refused with what to give instead.
 */
import test from "ava";
import { appendFile, mkdtemp, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ModelStatus } from "../api";
import { STEWARD_VERSION, StewardError, compareVersions } from "../api";
import { cliOnControllers } from "./harness/cli";
import type { CliResult } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { allReady, fixturesDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { hooksByUnit, recordDir } from "./harness/operators";
import type { Release } from "./harness/release";
import { makeRelease, publishAgentRelease } from "./harness/release";
import { generateReleaseKey } from "../controller";

const MODEL = "rolling";
/** Releases in the source the controller must refuse. */
const TAMPERED = "0.1.90";
const UNTRUSTED = "0.1.91";
let tc: TestController;
let home: string;
let records: string;
let steward: (...args: string[]) => Promise<CliResult>;
let patch: Release;
let broken: Release;
let hanging: Release;
let source: string;
const key = generateReleaseKey();

test.before(async () => {
  patch = await makeRelease({ bump: "patch" });
  broken = await makeRelease({ bump: "patch", by: 2, brokenAgent: true });
  hanging = await makeRelease({ bump: "patch", by: 3, hangingAgent: true });
  home = await mkdtemp(join(tmpdir(), "steward-upgrade-model-"));
  // The controller's release source: both signed by the key it trusts; one more signed by it and
  // changed afterwards, and one signed by a key it does not trust.
  source = join(home, "releases");
  for (const r of [patch, broken, hanging]) await publishAgentRelease(r, source, key.privateKeyPem);
  const tampered = await publishAgentRelease(patch, source, key.privateKeyPem, TAMPERED);
  await appendFile(join(tampered, "agent-bundle", "main.js"), "\n// changed after signing\n");
  await publishAgentRelease(patch, source, generateReleaseKey().privateKeyPem, UNTRUSTED);
  // The leader looks at the source every second (60 by default).
  tc = await startTestController({ releases: { source, keys: [key.publicKey], pollSeconds: 1 } });
  steward = await cliOnControllers(home, { here: tc }, { currentModel: MODEL });
  await tc.admin.createModel(MODEL);
  records = await recordDir();
  const op = await tc.upload(join(fixturesDir, "operators", "recorder"));
  await tc.admin.deploy(MODEL, { name: "rec", operator: op, units: 2, config: { "record-dir": records } });
  await tc.waitForUnits(MODEL, allReady(2), "both recorder units active", 90_000);
});

test.after.always(async () => {
  await tc?.close();
  for (const r of [patch, broken, hanging]) await r?.close();
  if (home) await rm(home, { recursive: true, force: true });
  if (records) await rm(records, { recursive: true, force: true });
});

/** Each machine's agent version, by machine id. */
const versions = (s: ModelStatus): Record<string, string | undefined> =>
  Object.fromEntries(Object.values(s.machines).map((m) => [m.id, m.agentVersion]));

/** The machine that runs the application's leader. */
/** The model's status, with the leader's machine and the other one. */
async function machinesNow(): Promise<{ before: ModelStatus; leader: string; other: string }> {
  const before = await tc.admin.status(MODEL);
  const leader = Object.values(before.applications.rec!.units).find((u) => u.leader)!.machine;
  return { before, leader, other: Object.keys(before.machines).find((id) => id !== leader)! };
}

test.serial("wrong arguments are refused, saying what to give", async (t) => {
  const batch = await steward("upgrade-model", "--batch", "0");
  t.not(batch.code, 0);
  t.regex(batch.stderr, /--batch 0: give a whole number of machines, 1 or more/);
  const to = await steward("upgrade-model", "--to", "latest");
  t.not(to.code, 0);
  t.regex(to.stderr, /--to latest: give a version such as \d+\.\d+\.\d+/);
  const unknown = await steward("upgrade-model", "--to", "0.1.77");
  t.not(unknown.code, 0);
  t.regex(
    unknown.stderr,
    new RegExp(`holds no agent release 0\\.1\\.77: it holds .*${patch.version.replace(/\./g, "\\.")}`),
  );
  // The controller refuses an agent newer than itself in minor version, whatever the client says.
  const [major, minor] = STEWARD_VERSION.split(".").map(Number) as [number, number];
  const err = await tc.admin.upgradeAgents(MODEL, { to: `${major}.${minor + 1}.0`, machines: ["0"] }).catch((e) => e);
  t.true(StewardError.isInstance(err), String(err));
  t.regex((err as Error).message, /an agent may not be newer than its controller/);
  const noMachine = await tc.admin.upgradeAgents(MODEL, { to: patch.version, machines: ["99"] }).catch((e) => e);
  t.regex((noMachine as Error).message, /machine.*99/);
  const s = await tc.admin.status(MODEL);
  t.false(
    Object.values(s.machines).some((m) => m.agentUpgrade),
    "no refused request asked any machine to move",
  );
});

test.serial(
  "releases signed by a key it trusts are held; one changed after signing, or signed by another key, is refused and never served",
  async (t) => {
    const { releases, refused } = await tc.admin.listAgentReleases();
    t.deepEqual(
      releases.map((r) => r.version).sort(),
      [STEWARD_VERSION, patch.version, broken.version, hanging.version].sort(),
    );
    t.deepEqual(
      refused.map((r) => r.version),
      [TAMPERED, UNTRUSTED],
    );
    t.regex(
      refused[0]!.reason,
      /release 0\.1\.90 is refused: agent-bundle\/main\.js is \d+ bytes, its manifest says \d+/,
    );
    t.regex(
      refused[1]!.reason,
      /release 0\.1\.91 is refused: it is signed by ed25519:\S+, which this controller does not trust/,
    );
    t.notRegex(JSON.stringify(refused), new RegExp(home), "the controller's paths are not shown");
    const cli = await steward("upgrade-model", "--to", UNTRUSTED);
    t.not(cli.code, 0);
    t.regex(cli.stderr, /holds no agent release 0\.1\.91: .*which this controller does not trust/);
    const shown = await steward("show-controller");
    t.regex(
      shown.stdout,
      new RegExp(
        `Agent releases \\(steward upgrade-model\\): ${STEWARD_VERSION.replace(/\./g, "\\.")} \\(its own\\), `,
      ),
    );
    t.regex(shown.stdout, /^ {2}refused 0\.1\.90: release 0\.1\.90 is refused: /m);
    const direct = await tc.admin.upgradeAgents(MODEL, { to: TAMPERED, machines: ["0"] }).catch((e: Error) => e);
    t.regex(String(direct), /holds no agent release 0\.1\.90/);
  },
);

test.serial(
  "the leader looks at the source on its own: a release copied in is held and shown as available, nothing applied",
  async (t) => {
    const version = "0.1.60";
    // Copied in under a dot name (looks pass it by), then renamed whole into place, as docs/upgrades.md says.
    const copied = await publishAgentRelease(patch, join(source, ".copying"), key.privateKeyPem, version);
    await rename(copied, join(source, version));
    // No request asks for it: only the leader's poll can hold it (GET /v1/controller reads what is held).
    const info = await eventually(
      `${version} available`,
      async () => {
        const o = await tc.admin.controllerOverview();
        return o.available?.includes(version) ? o : undefined;
      },
      30_000,
      250,
    );
    t.deepEqual(info.available, [...(info.available ?? [])].sort(compareVersions), "oldest first");
    const shown = await steward("show-controller");
    t.regex(
      shown.stdout,
      new RegExp(
        `${version.replace(/\./g, "\\.")} available: steward upgrade-model --to ${version.replace(/\./g, "\\.")}`,
      ),
    );
    const s = await tc.admin.status(MODEL);
    t.false(
      Object.values(s.machines).some((m) => m.agentVersion === version || m.agentUpgrade),
      "no machine was asked to move",
    );
  },
);

test.serial("--dry-run prints the plan, the leader's machine last, and changes nothing", async (t) => {
  const { before, leader, other } = await machinesNow();
  const r = await steward("upgrade-model", "--to", patch.version, "--dry-run");
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, new RegExp(`wave 1: machine ${other}: ${STEWARD_VERSION} -> ${patch.version} \\(rec\\)`));
  t.regex(
    r.stdout,
    new RegExp(`wave 2: machine ${leader}: ${STEWARD_VERSION} -> ${patch.version} \\(rec; leader of rec\\)`),
  );
  t.regex(r.stdout, /Dry run: nothing was changed/);
  const after = await tc.admin.status(MODEL);
  t.deepEqual(versions(after), versions(before));
  t.false(Object.values(after.machines).some((m) => m.agentUpgrade));
});

test.serial(
  "the agents move to a release the controller holds, one at a time, and no unit runs install or start again",
  async (t) => {
    const { leader, other } = await machinesNow();
    const hooksBefore = await hooksByUnit(records);
    const r = await steward("upgrade-model", "--to", patch.version, "--trial", "60s");
    t.is(r.code, 0, r.stderr + r.stdout);
    t.regex(r.stderr, new RegExp(`Wave 1 of 2: machine ${other}\\n[^]*Wave 2 of 2: machine ${leader}\\n`));
    t.regex(r.stdout, new RegExp(`2 machine agents moved to ${patch.version.replace(/\./g, "\\.")}`));
    const after = await tc.waitForUnits(MODEL, allReady(2), "both units active after the upgrade", 60_000);
    t.deepEqual(versions(after), { [leader]: patch.version, [other]: patch.version });
    t.false(
      Object.values(after.machines).some((m) => m.agentUpgrade),
      "status shows no upgrade left",
    );
    const hooks = await hooksByUnit(records);
    for (const [unit, ran] of hooks) {
      const count = (h: string, list: string[]): number => list.filter((x) => x === h).length;
      const earlier = hooksBefore.get(unit) ?? [];
      t.is(count("install", ran), count("install", earlier), `${unit} ran install again`);
      t.is(count("start", ran), count("start", earlier), `${unit} ran start again`);
      t.is(count("install", ran), 1);
    }
    const again = await steward("upgrade-model", "--to", patch.version);
    t.is(again.code, 0, again.stderr);
    t.regex(again.stdout, /already runs .*nothing to do/);
  },
);

test.serial(
  "a release whose agent dies as it starts is taken back by the agent, and the upgrade stops there",
  async (t) => {
    const { leader, other } = await machinesNow();
    const r = await steward("upgrade-model", "--to", broken.version, "--trial", "60s");
    t.not(r.code, 0);
    t.regex(
      r.stderr,
      new RegExp(
        `stopped at machine ${other}: the agent of ${broken.version.replace(/\./g, "\\.")} stopped before it reported`,
      ),
    );
    t.regex(r.stderr, /run the same steward upgrade-model again: it resumes/);
    const after = await tc.waitForUnits(MODEL, allReady(2), "both units active on the release they ran", 60_000);
    t.deepEqual(versions(after), { [leader]: patch.version, [other]: patch.version }, "both run the release before");
    t.regex(after.machines[other]!.agentUpgrade?.failed ?? "", /went back to the release before/);
    t.is(after.machines[leader]!.agentUpgrade, undefined, "the leader's machine was never asked");
  },
);

test.serial(
  "a release whose agent hangs as it starts, its main thread never free again, is taken back at the trial's deadline",
  async (t) => {
    const { leader, other } = await machinesNow();
    const r = await steward("upgrade-model", "--to", hanging.version, "--trial", "10s", "--timeout", "2m");
    t.not(r.code, 0);
    t.regex(
      r.stderr,
      new RegExp(
        `stopped at machine ${other}: the agent of ${hanging.version.replace(/\./g, "\\.")} did not report to the controller by `,
      ),
    );
    const after = await tc.waitForUnits(MODEL, allReady(2), "both units active on the release they ran", 60_000);
    t.deepEqual(versions(after), { [leader]: patch.version, [other]: patch.version }, "both run the release before");
    t.is(after.machines[leader]!.agentUpgrade, undefined, "the leader's machine was never asked");
  },
);

test.serial(
  "moving agents to another release is refused while a machine of the model still moves to one",
  async (t) => {
    const { leader, other } = await machinesNow();
    // The other machine is asked to move to a release whose agent dies as it starts: it goes back within seconds.
    await tc.admin.upgradeAgents(MODEL, { to: broken.version, machines: [other], trialSeconds: 30 });
    const err = (await tc.admin.upgradeAgents(MODEL, { to: STEWARD_VERSION, machines: [leader] }).catch((e) => e)) as
      StewardError | undefined;
    t.true(err instanceof StewardError, "refused");
    t.is(err?.reason, "agent-upgrade-in-progress");
    t.regex(
      err?.message ?? "",
      new RegExp(
        `machine ${other} is still moving to agent release ${broken.version.replace(/\./g, "\\.")} \\(attempt \\d+\\): another steward upgrade-model may be running`,
      ),
    );
    const cli = await steward("upgrade-model", "--to", STEWARD_VERSION);
    t.not(cli.code, 0);
    t.regex(cli.stderr, /is still moving to agent release/);
    // Once that move has ended (the agent went back), another is accepted.
    await eventually(
      "the other machine's move ended",
      async () => ((await tc.admin.status(MODEL)).machines[other]?.agentUpgrade?.failed ? true : undefined),
      90_000,
      250,
    );
    const accepted = await tc.admin.upgradeAgents(MODEL, { to: patch.version, machines: [leader] });
    t.is(accepted.to, patch.version);
    await tc.waitForUnits(MODEL, allReady(2), "both units active on the release they ran", 60_000);
  },
);

test.serial(
  "release keys rotate: a new key trusted makes its releases usable at once, the old one distrusted withdraws its releases, the last is kept",
  async (t) => {
    const shown = await steward("release-keys");
    t.is(shown.code, 0, shown.stderr);
    t.regex(shown.stdout, /Release keys trusted \(as in controller\.json\):\n {2}ed25519:/);
    const last = await steward("release-keys", "--distrust", key.publicKey);
    t.not(last.code, 0);
    t.regex(last.stderr, /that would leave no key trusted: trust the new key before distrusting the last one/);
    const bad = await steward("release-keys", "--trust", "ed25519:short");
    t.not(bad.code, 0);
    t.regex(bad.stderr, /trust.*must be a release public key/);

    // A release signed with a new key is refused until that key is trusted; then it is used at once.
    const next = generateReleaseKey();
    const rotated = "0.1.80";
    await publishAgentRelease(patch, source, next.privateKeyPem, rotated);
    t.regex(
      (await tc.admin.listAgentReleases()).refused.find((r) => r.version === rotated)?.reason ?? "",
      /which this controller does not trust/,
    );
    const trusted = await steward("release-keys", "--trust", next.publicKey);
    t.is(trusted.code, 0, trusted.stderr);
    t.regex(trusted.stdout, /changed by admin at /);
    t.true(
      (await tc.admin.listAgentReleases()).releases.some((r) => r.version === rotated),
      "held once its key is trusted",
    );

    // The old key distrusted: the releases it signed are no longer offered, and say why.
    t.is((await steward("release-keys", "--distrust", key.publicKey)).code, 0);
    const after = await tc.admin.listAgentReleases();
    t.false(after.releases.some((r) => r.version === patch.version));
    t.regex(
      after.refused.find((r) => r.version === patch.version)?.reason ?? "",
      /signed by ed25519:\S+, which this controller no longer trusts/,
    );
    const move = await tc.admin.upgradeAgents(MODEL, { to: patch.version, machines: ["0"] }).catch((e: Error) => e);
    t.regex(String(move), /no longer trusts/);
    const overview = await tc.admin.controllerOverview();
    t.false(overview.available?.includes(patch.version) ?? false, "not shown as available");
    t.true(overview.available?.includes(rotated) ?? false);
    // Trusted again, they are offered again.
    t.is((await steward("release-keys", "--trust", key.publicKey)).code, 0);
    t.true((await tc.admin.listAgentReleases()).releases.some((r) => r.version === patch.version));
  },
);
