/**
 * `steward upgrade-model` on SSH hosts (real sshd test hosts in network namespaces, a real
 * controller and agents): each host's agent downloads the release from the controller, switches,
 * and is started again by what keeps it running there (the supervisor loop on a host without
 * systemd); its units run no install or start again. Killed afterwards, the agent comes back on the
 * release it moved to, not on the one it was installed with.
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ModelStatus } from "../api";
import { readOperatorDir } from "../api";
import { generateReleaseKey } from "../controller";
import { cliOnControllers } from "./harness/cli";
import type { CliResult } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { allReady, operatorsDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import type { TestHost } from "./harness/hosts";
import { TestLab, sshMachineStarted } from "./harness/hosts";
import type { Release } from "./harness/release";
import { makeRelease, publishAgentRelease } from "./harness/release";

const root = process.getuid?.() === 0;
const ssh = root ? test.serial : test.skip; // namespaces and sshd need root

const MODEL = "hosts";
const AGENT_LOGS = "/var/lib/steward/agents/*/agent.log";
let lab: TestLab;
let tc: TestController;
let home: string;
let patch: Release;
let steward: (...args: string[]) => Promise<CliResult>;

test.before(async () => {
  if (!root) return;
  const key = generateReleaseKey();
  patch = await makeRelease({ bump: "patch" });
  home = await mkdtemp(join(tmpdir(), "steward-upgrade-ssh-"));
  const source = join(home, "releases");
  await publishAgentRelease(patch, source, key.privateKeyPem);
  lab = await TestLab.create(2);
  tc = await startTestController({
    listenHost: `${lab.subnet}.1`,
    releases: { source, keys: [key.publicKey], pollSeconds: 1 },
  });
  steward = await cliOnControllers(home, { here: tc }, { currentModel: MODEL });
  await tc.admin.createModel(MODEL, undefined, "ssh");
});
test.after.always(async () => {
  await tc?.close();
  await lab?.close();
  await patch?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

/** The hooks `unit` completed on `host`, in order, from its agent's log. */
async function hooksRun(host: TestHost, unit: string): Promise<string[]> {
  const out = await host.exec(`grep -h 'hook completed' ${AGENT_LOGS} | grep -o 'unit=${unit} hook=[a-z-]*' || true`);
  return out.stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => l.slice(`unit=${unit} hook=`.length));
}

const versions = (s: ModelStatus): string[] => Object.values(s.machines).map((m) => m.agentVersion ?? "(none)");

ssh(
  "the agents of SSH hosts move to a release the controller holds; their units run no install or start again; a restart keeps the release",
  async (t) => {
    t.timeout(600_000);
    const [a, b] = lab.hosts as [TestHost, TestHost];
    for (const h of [a, b]) await tc.admin.addSshMachine(MODEL, lab.sshTarget(h));
    const machines = await Promise.all([a, b].map((h) => sshMachineStarted(tc.admin, MODEL, h)));
    const op = await readOperatorDir(join(operatorsDir, "hello-http"));
    await tc.admin.uploadOperator(op.bundle);
    await tc.admin.deploy(MODEL, { name: "web", operator: op.hash, units: 2, to: machines });
    const before = await tc.waitForUnits(MODEL, allReady(2), "both web units active", 180_000);
    const installedWith = versions(before);
    t.false(installedWith.includes(patch.version), "the hosts start on the release they were installed with");
    const unitOn = new Map(
      Object.values(before.applications.web!.units).map((u) => [before.machines[u.machine]!.address, u.name]),
    );
    // start as well as install: the upgrade must not be what makes start run (the agent's log shows both).
    for (const h of [a, b])
      await eventually(
        `${h.name}'s unit started`,
        async () => (await hooksRun(h, unitOn.get(h.ip)!)).includes("start"),
        60_000,
        250,
      );

    const r = await steward("upgrade-model", "--to", patch.version, "--trial", "60s", "--timeout", "5m");
    t.is(r.code, 0, r.stderr + r.stdout);
    t.regex(r.stdout, new RegExp(`2 machine agents moved to ${patch.version.replace(/\./g, "\\.")}`));
    const after = await tc.waitForUnits(MODEL, allReady(2), "both units active after the upgrade", 60_000);
    t.deepEqual(versions(after), [patch.version, patch.version]);
    for (const h of [a, b]) {
      const state = JSON.parse((await h.exec("cat /var/lib/steward/agents/*/agent-release.json")).stdout) as {
        current?: string;
        trial?: unknown;
      };
      t.is(state.current, patch.version, `${h.name} chose the release`);
      t.is(state.trial, undefined, `${h.name}'s trial ended: its new agent reported`);
      const hooks = await hooksRun(h, unitOn.get(h.ip)!);
      t.is(hooks.filter((x) => x === "install").length, 1, `${h.name}: install ran once`);
      t.is(hooks.filter((x) => x === "start").length, 1, `${h.name}: start ran once`);
    }

    // Killed, the agent is started again by its supervisor, on the release it moved to.
    const agentPid = 'for f in /var/lib/steward/agents/*/supervisor.pid; do pgrep -P "$(cat "$f")"; done';
    const killed = (await a.exec(`p=$(${agentPid}) && kill -9 $p && echo $p`)).stdout.trim();
    t.regex(killed, /^\d+$/, "host a's agent process was killed");
    const machineA = Object.values(after.machines).find((m) => m.address === a.ip)!.id;
    await eventually(
      "host a's agent started again",
      async () => {
        const now = (await a.exec(agentPid)).stdout.trim();
        return /^\d+$/.test(now) && now !== killed;
      },
      60_000,
      500,
    );
    const starts = async (): Promise<string[]> =>
      (await a.exec(`grep -h 'agent started' ${AGENT_LOGS} || true`)).stdout.split("\n").filter(Boolean);
    await eventually("host a's agent logged its start", async () => (await starts()).length >= 3, 60_000, 500);
    // Its starts: the install, the switch to the release, and the supervisor's restart after the kill.
    t.regex((await starts()).at(-1)!, new RegExp(`version=${patch.version.replace(/\./g, "\\.")}\\b`));
    const restarted = await tc.waitForUnits(MODEL, allReady(2), "both units active after the restart", 60_000);
    t.is(restarted.machines[machineA]!.agentVersion, patch.version);
    const hooks = await hooksRun(a, unitOn.get(a.ip)!);
    t.is(hooks.filter((x) => x === "install").length, 1, "install did not run again after the restart");
  },
);
