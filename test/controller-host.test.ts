/**
 * Write access to a model gives at most its machines: local machines run on the controller's host,
 * so only superusers make them or write to a model that has them (grants refuse it, saying why, and
 * so does each write); a controller not bootstrapped locally makes none unless its controller.json
 * turns them on; machines per request and local machines per host are capped; and where the
 * controller runs as root, a local machine's hooks run as an unprivileged user that cannot read the
 * controller's CA key, store or consoles.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import type { Bundle, ControllerClient, StewardError } from "../api";
import { MAX_MACHINES_PER_REQUEST } from "../api";
import { dataFiles } from "../controller";
import { placeAgentsDir, readableAgentEntry } from "../substrates";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";

let tc: TestController;
/** A controller bootstrapped on another host, local machines off; and one where a superuser turned them on. */
let remote: TestController;
let remoteEnabled: TestController;
let writer: ControllerClient;
let operator: string;
const PER_HOST = 3;

/** An operator whose install hook tries to read each path in its `paths` config and reports what it could in its status. */
function prober(): Bundle {
  const yaml = `name: prober\nversion: "1"\nsummary: Reports which paths its hooks can read.\nconfig:\n  paths:\n    type: string\n    default: ""\n    description: Paths to try, separated by spaces.\n`;
  const hook = `#!/bin/sh
out="uid=$(id -u)"
for p in $(config-get paths); do
  if cat "$p" >/dev/null 2>&1 || ls "$p" >/dev/null 2>&1; then out="$out read:$p"; else out="$out denied:$p"; fi
done
status-set active "$out"
`;
  return {
    files: [
      { path: "operator.yaml", mode: 0o644, content: Buffer.from(yaml).toString("base64") },
      { path: "hooks/install", mode: 0o755, content: Buffer.from(hook).toString("base64") },
      { path: "hooks/config-changed", mode: 0o755, content: Buffer.from(hook).toString("base64") },
    ],
  };
}

test.before(async () => {
  [tc, remote, remoteEnabled] = await Promise.all([
    startTestController({ localMachines: { maxPerHost: PER_HOST } }),
    startTestController({ substrate: "remote" }),
    startTestController({ substrate: "remote", localMachines: { enabled: true } }),
  ]);
  await tc.admin.createModel("loc");
  await tc.admin.createModel("bare", undefined, "ssh");
  await tc.admin.createUser("writer", "writer-password", false);
  await tc.admin.grant("bare", "writer", "write");
  writer = tc.clientFor("writer", "writer-password");
  operator = (await tc.admin.uploadOperator(prober())).hash;
});
test.after.always(async () => {
  await Promise.all([tc?.close(), remote?.close(), remoteEnabled?.close()]);
});

const refusal = async (
  t: ExecutionContext,
  p: Promise<unknown>,
  code: StewardError["code"],
  rule: RegExp,
): Promise<StewardError> => {
  const err = await t.throwsAsync<StewardError>(p);
  t.is(err?.code, code, err?.message);
  t.regex(err?.message ?? "", rule);
  return err!;
};

test.serial(
  "a grant of write or admin on a local model to a user who is not a superuser is refused, saying why; read is granted",
  async (t) => {
    for (const access of ["write", "admin"] as const) {
      const err = await refusal(
        t,
        tc.admin.grant("loc", "writer", access),
        "forbidden",
        /write on a local model needs superuser: local machines run on the controller's host/,
      );
      t.is(err.details.rule, "local-model-write-needs-superuser");
      t.is(err.reason, "local-model-write-needs-superuser", "the reason travels on the wire");
    }
    await tc.admin.grant("loc", "writer", "read");
    // A superuser may be given anything.
    await tc.admin.createUser("root2", "root2-password", true);
    await t.notThrowsAsync(tc.admin.grant("loc", "root2", "write"));
  },
);

test.serial("a model writer cannot make a local machine in a model it may write to", async (t) => {
  const err = await refusal(
    t,
    writer.addMachines("bare", "local"),
    "forbidden",
    /only a controller superuser may create local machines/,
  );
  t.is(err.details.rule, "local-machines-need-superuser");
  t.is(err.reason, "local-machines-need-superuser");
  t.false(err.retryable);
  // Its own machines are still its to add.
  await t.notThrowsAsync(writer.addMachines("bare", "manual"));
});

test.serial(
  "once a model has a local machine, a writer who is not a superuser can no longer change it: deploy, add-unit, remove-machine all refused",
  async (t) => {
    const [local] = (await tc.admin.addMachines("bare", "local")).machines;
    const rule = /write on a local model needs superuser: local machines run on the controller's host/;
    await refusal(t, writer.deploy("bare", { name: "probe", operator, units: 1, to: [local!.id] }), "forbidden", rule);
    await refusal(t, writer.uploadOperator(prober()), "forbidden", /write access to no model/);
    await tc.admin.deploy("bare", { name: "probe", operator, units: 1, to: [local!.id] });
    await refusal(t, writer.addUnits("bare", "probe", 1, [local!.id]), "forbidden", rule);
    await refusal(
      t,
      writer.call("PATCH", "/v1/models/bare/applications/probe", { config: { paths: "/" } }),
      "forbidden",
      rule,
    );
    await refusal(t, writer.call("DELETE", `/v1/models/bare/machines/${local!.id}`), "forbidden", rule);
    // Reading is still allowed.
    t.truthy((await writer.status("bare")).applications.probe);
    await tc.admin.call("DELETE", "/v1/models/bare/applications/probe?force=true");
    await tc.admin.call("DELETE", `/v1/models/bare/machines/${local!.id}?force=true`);
  },
);

test.serial(
  `one request makes at most ${MAX_MACHINES_PER_REQUEST} machines, and the host at most its configured number of local machines`,
  async (t) => {
    const over = await refusal(
      t,
      tc.admin.addMachines("loc", "local", MAX_MACHINES_PER_REQUEST + 1),
      "invalid-request",
      new RegExp(`over the limit of ${MAX_MACHINES_PER_REQUEST} per request: make them in several requests`),
    );
    t.is(over.details.limit, MAX_MACHINES_PER_REQUEST);
    await refusal(
      t,
      tc.admin.deploy("loc", { name: "many", operator, units: MAX_MACHINES_PER_REQUEST + 1 }),
      "invalid-request",
      /per request/,
    );
    // Wait until the machine removed by the test before is gone: it counts while it is there.
    await eventually(
      "bare's local machine is gone",
      async () =>
        Object.values((await tc.admin.status("bare")).machines).some((m) => m.substrate === "local") ? undefined : true,
      60_000,
    );
    await tc.admin.addMachines("loc", "local", PER_HOST - 1);
    const full = await refusal(
      t,
      tc.admin.addMachines("loc", "local", 2),
      "quota-exceeded",
      new RegExp(
        `has ${PER_HOST - 1} local machines and takes at most ${PER_HOST}: remove some, or raise "localMachines": \\{"maxPerHost": N\\}`,
      ),
    );
    t.is(full.details.rule, "local-machines-per-host");
    t.is(full.reason, "local-machines-per-host");
    await refusal(t, tc.admin.deploy("loc", { name: "two", operator, units: 2 }), "quota-exceeded", /takes at most 3/);
    const machines = Object.keys((await tc.admin.status("loc")).machines);
    t.is(machines.length, PER_HOST - 1, "nothing was half-made");
  },
);

test("a controller not bootstrapped locally refuses local machines, unless its controller.json turns them on", async (t) => {
  await remote.admin.createModel("m");
  const err = await refusal(
    t,
    remote.admin.addMachines("m", "local"),
    "forbidden",
    /not bootstrapped locally, so it makes no local machines .* "localMachines": \{"enabled": true\} in its controller.json/,
  );
  t.is(err.details.rule, "local-machines-disabled");
  await remoteEnabled.admin.createModel("m");
  await t.notThrowsAsync(remoteEnabled.admin.addMachines("m", "manual"));
  t.is((await remoteEnabled.admin.addMachines("m", "local")).machines.length, 1);
});

const asRoot = process.getuid?.() === 0;
(asRoot ? test.serial : test.skip)(
  "a local machine's hooks run as an unprivileged user that cannot read the CA key, the store, consoles/ or controller.json",
  async (t) => {
    const dataDir = join(tc.dir, "c");
    const secret = [dataFiles.caKey, dataFiles.serverKey, dataFiles.store, dataFiles.consoles, dataFiles.config].map(
      (f) => join(dataDir, f),
    );
    // Made here so that consoles/ exists even if no console ran yet.
    await mkdir(join(dataDir, dataFiles.consoles), { recursive: true, mode: 0o700 });
    await tc.admin.deploy("loc", { name: "prober", operator, units: 0, config: { paths: secret.join(" ") } });
    const [machine] = (await tc.admin.addMachines("loc", "local")).machines;
    await tc.admin.addUnits("loc", "prober", 1, [machine!.id]);
    const s = await tc.waitForUnits(
      "loc",
      (units) => units.some((u) => u.workload.message?.startsWith("uid=")),
      "the prober's report",
      90_000,
    );
    const report = Object.values(s.applications.prober!.units)[0]!.workload.message!;
    t.log(report);
    t.notRegex(report, /^uid=0 /, "hooks do not run as root");
    for (const path of secret) t.true(report.includes(`denied:${path}`), `${path}: ${report}`);
    t.is((await stat(dataDir)).mode & 0o777, 0o700);
    // The agent's directory is its own, outside the data directory.
    const agentDir = join(tc.dir, "agents", s.model.uuid, machine!.id);
    const uid = Number(/^uid=(\d+)/.exec(report)![1]);
    t.is((await stat(agentDir)).uid, uid);
    t.is(
      (await stat(join(dataDir, dataFiles.machines, s.model.uuid, machine!.id))).uid,
      uid,
      "machines/ in the data directory leads there",
    );
  },
);

test("the agent script is copied where the agents' user can read it when it cannot reach it (a release in the data directory, a package under a 0700 directory)", async (t) => {
  const agent = { uid: 4242, gid: 4242 };
  const base = await mkdtemp(join(tmpdir(), "steward-entry-"));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  await chmod(base, 0o755);
  const dataDir = join(base, "c");
  await mkdir(join(dataDir, "releases", "9.9.9", "agent-bundle"), { recursive: true });
  await writeFile(join(dataDir, "releases", "9.9.9", "agent-bundle", "main.js"), "// agent 9.9.9\n");
  await writeFile(join(dataDir, "releases", "9.9.9", "agent-bundle", "tool-client.js"), "// tools\n");
  await symlink(join("releases", "9.9.9"), join(dataDir, "current"));
  const agents = join(base, "agents");
  await mkdir(agents);
  const entry = await readableAgentEntry(dataDir, agents, join(dataDir, "current", "agent-bundle", "main.js"), agent);
  t.is(dirname(dirname(entry)), agents);
  t.regex(basename(dirname(entry)), /^\.agent-[0-9a-f]{16}$/);
  t.is(await readFile(join(dirname(entry), "tool-client.js"), "utf8"), "// tools\n");
  // An installation's own script that others can reach is used where it is.
  const outside = join(base, "dist", "agent-bundle", "main.js");
  await mkdir(dirname(outside), { recursive: true });
  await writeFile(outside, "// agent\n");
  t.is(await readableAgentEntry(dataDir, agents, outside, agent), outside);
  // Behind a directory only root may enter (a package installed under /root), it is copied.
  await chmod(join(base, "dist"), 0o700);
  const copied = await readableAgentEntry(dataDir, agents, outside, agent);
  t.not(copied, outside);
  t.is(await readFile(copied, "utf8"), "// agent\n");
  t.is(dirname(dirname(copied)), agents);
});

/**
 * A process standing in for an agent in `dir`: its command line names the directory, as an agent's
 * does, and its pid is in agent.pid. `exited` settles when it ends.
 */
async function standInAgent(t: ExecutionContext, dir: string): Promise<{ exited: Promise<unknown> }> {
  const agent = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)", dir], { stdio: "ignore" });
  t.teardown(() => {
    agent.kill("SIGKILL");
  });
  await writeFile(join(dir, "agent.pid"), String(agent.pid));
  return { exited: new Promise((resolve) => agent.once("exit", resolve)) };
}

test("agents that ran as root in the data directory's machines/ (or in another agents' directory) are stopped and moved, machines/ becoming a link there", async (t) => {
  const base = await mkdtemp(join(tmpdir(), "steward-move-"));
  const dataDir = join(base, "c");
  const old = join(dataDir, dataFiles.machines, "model-uuid", "0");
  await mkdir(old, { recursive: true });
  await writeFile(join(old, "agent.json"), "{}\n");
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const { exited } = await standInAgent(t, old);
  const agents = join(base, "agents");
  await placeAgentsDir(dataDir, agents);
  await exited;
  t.is(await readlink(join(dataDir, dataFiles.machines)), agents);
  t.is(await readFile(join(agents, "model-uuid", "0", "agent.json"), "utf8"), "{}\n");
  t.is((await stat(dataDir)).mode & 0o777, 0o700);
  t.is((await stat(agents)).mode & 0o777, 0o711);
  // A second start finds it done.
  await placeAgentsDir(dataDir, agents);
  t.is(await readlink(join(dataDir, dataFiles.machines)), agents);
  // Given another directory, the agents there are stopped and moved again, the link following.
  const moved = join(agents, "model-uuid", "0");
  const { exited: secondExited } = await standInAgent(t, moved);
  const elsewhere = join(base, "elsewhere");
  await placeAgentsDir(dataDir, elsewhere);
  await secondExited;
  t.is(await readlink(join(dataDir, dataFiles.machines)), elsewhere);
  t.is(await readFile(join(elsewhere, "model-uuid", "0", "agent.json"), "utf8"), "{}\n");
});

test("a local machine that reaches a controller not bootstrapped locally (an imported model) gets no agent there, and says why", async (t) => {
  const exported = await tc.admin.call<{ model: { uuid: string } }>("GET", "/v1/models/loc/export");
  await remote.admin.call("POST", "/v1/models/import", exported);
  const machines = await eventually(
    "the imported local machines say why they have no agent",
    async () => {
      const list = await remote.admin.call<
        { id: string; substrate: string; install?: { state: string; step: string } }[]
      >("GET", "/v1/models/loc/machines");
      const local = list.filter((m) => m.substrate === "local");
      return local.length > 0 && local.every((m) => m.install?.state === "failed") ? local : undefined;
    },
    60_000,
  );
  for (const m of machines)
    t.regex(
      m.install!.step,
      /not bootstrapped locally and makes no local machines .*"localMachines": \{"enabled": true\}/,
    );
  const uuid = (await remote.admin.status("loc")).model.uuid;
  t.false(existsSync(join(remote.dir, "c", dataFiles.machines, uuid)), "no agent directory was made");
  t.false(existsSync(join(remote.dir, "agents", uuid)), "no agent directory was made");
});
