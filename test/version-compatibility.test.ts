/**
 * Versions that work together (README, "Versions that work together"): the policy itself, the
 * controller's door (requests and agent WebSockets naming a version outside its window are refused
 * before anything else, naming both versions), and real processes of two builds: this checkout and
 * releases made from it with other versions (test/harness/release.ts): CLIs a minor version older and
 * newer, and two apart, against this controller and against an older bootstrapped one; agents a minor
 * version older (they run units) and newer (refused, and their log says why) than their controller.
 */
import test from "ava";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { CONTROLLER_TLS_NAME, ControllerClient, STEWARD_VERSION, VERSION_HEADER, versionProblem } from "../api";
import { dataDirOf, loadClientConfig } from "../cli";
import { removeLocalController } from "../substrates";
import { bootstrapOnFreePort, cliOnControllers } from "./harness/cli";
import type { TestController } from "./harness/controller";
import { allReady, fixturesDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { recordDir } from "./harness/operators";
import { rawRequest } from "./harness/http";
import type { Release } from "./harness/release";
import { makeRelease } from "./harness/release";

const [MAJOR, MINOR] = STEWARD_VERSION.split(".").map(Number) as [number, number];
const v = (minorDelta: number, patch = 0): string => `${MAJOR}.${MINOR + minorDelta}.${patch}`;

test("the policy: clients one minor version either side, agents their own or one older, patches never matter", (t) => {
  const c = "2.5.3";
  t.is(versionProblem("client", "2.5.0", c), undefined);
  t.is(versionProblem("client", "2.4.9", c), undefined);
  t.is(versionProblem("client", "2.6.0", c), undefined);
  t.regex(
    versionProblem("client", "2.7.0", c)!,
    /client 2\.7\.0 and controller 2\.5\.3 are 2 minor versions apart.*use a client of 2\.5 or 2\.6/,
  );
  t.regex(versionProblem("client", "2.3.1", c)!, /2 minor versions apart.*upgrade the client to 2\.4 or later/);
  t.regex(versionProblem("client", "3.5.3", c)!, /differ in major version/);
  t.is(versionProblem("agent", "2.5.7", c), undefined);
  t.is(versionProblem("agent", "2.4.0", c), undefined);
  t.regex(
    versionProblem("agent", "2.6.0", c)!,
    /agent may not be newer than its controller \(upgrade the controller first/,
  );
  t.regex(versionProblem("agent", "2.3.9", c)!, /upgrade the agent to 2\.4 or later/);
  t.regex(versionProblem("agent", "latest", c)!, /not MAJOR\.MINOR\.PATCH/);
});

let tc: TestController;
let home: string;
const releases = new Map<string, Release>();
/** One release per version, made once (a hard-linked copy of this build with its version changed). */
async function release(version: string): Promise<Release> {
  let r = releases.get(version);
  if (!r) {
    r = await makeRelease({ version });
    // The local machines' agents run as another user: they must be able to read the release's bundles.
    await chmod(join(r.dir, ".."), 0o755);
    releases.set(version, r);
  }
  return r;
}

test.before(async () => {
  tc = await startTestController();
  home = await mkdtemp(join(tmpdir(), "steward-versions-"));
  await cliOnControllers(home, { here: tc });
});
test.after.always(async () => {
  await tc?.close();
  for (const r of releases.values()) await r.close();
  if (home) await rm(home, { recursive: true, force: true });
});

test("the controller refuses a request naming a version outside the window, names its own on every answer, and lets unversioned requests through", async (t) => {
  const health = (headers: Record<string, string>) =>
    rawRequest(tc.addresses[0]!, tc.caCert, "GET", "/v1/health", undefined, headers);
  const plain = await health({});
  t.is(plain.status, 200);
  t.is(plain.headers[VERSION_HEADER], STEWARD_VERSION);
  t.is((await health({ [VERSION_HEADER]: v(1, 4) })).status, 200);
  const far = await health({ [VERSION_HEADER]: v(2) });
  t.is(far.status, 400);
  t.is(far.body.reason, "version-incompatible");
  t.is(far.body.message, versionProblem("client", v(2), STEWARD_VERSION));
  t.is(far.headers[VERSION_HEADER], STEWARD_VERSION, "a refusal names the controller's version too");
  const garbage = await health({ [VERSION_HEADER]: "x".repeat(5000) });
  t.is(garbage.status, 400);
  t.true(garbage.body.message!.length < 200, "the sender's text is not echoed whole");
});

/** An agent WebSocket login: "open" or the status and body it was refused with. */
async function agentSocket(version: string): Promise<{ status: number; body: string } | "open"> {
  const ws = new WebSocket(`wss://${tc.addresses[0]}/v1/agent`, {
    ca: tc.caCert,
    servername: CONTROLLER_TLS_NAME,
    headers: { authorization: "Agent not-a-credential", [VERSION_HEADER]: version },
  } as WebSocket.ClientOptions);
  try {
    return await new Promise((resolve) => {
      ws.once("open", () => resolve("open"));
      ws.once("unexpected-response", (_req, res) => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      ws.once("error", () => resolve({ status: 0, body: "" }));
    });
  } finally {
    ws.terminate();
  }
}

test("an agent newer than the controller is refused at the WebSocket door, before its credential is looked at", async (t) => {
  const newer = await agentSocket(v(1));
  t.not(newer, "open");
  if (newer === "open") return;
  t.is(newer.status, 400);
  t.regex(newer.body, /an agent may not be newer than its controller/);
  const same = await agentSocket(v(0, 9));
  t.deepEqual(same !== "open" && same.status, 401, "a compatible agent gets as far as its (bad) credential");
});

test("CLIs of other versions against this controller: one minor older and newer work, two newer is refused with both versions named", async (t) => {
  const newer = await release(v(1));
  const r1 = await newer.steward(home, "models");
  t.is(r1.code, 0, r1.stderr);
  t.regex(r1.stdout, /No models/);
  const far = await release(v(2));
  const r2 = await far.steward(home, "models");
  t.not(r2.code, 0);
  t.true(r2.stderr.startsWith(`ERROR ${versionProblem("client", v(2), STEWARD_VERSION)!}`), r2.stderr + r2.stdout);
  const ver = await far.steward(home, "version");
  t.regex(ver.stdout, new RegExp(`steward ${v(2).replace(/\./g, "\\.")}\\n.*answered, but client ${v(2)}`));
  if (MINOR > 0) {
    const older = await release(v(-1));
    const r3 = await older.steward(home, "models");
    t.is(r3.code, 0, r3.stderr);
  }
});

test("an older controller (a release with a lower version, bootstrapped) works with this client and refuses one two minor versions newer", async (t) => {
  // Lowered by a patch when this build is x.0.z and no older minor version exists.
  const oldVersion = MINOR > 0 ? v(-1) : `${MAJOR}.${MINOR}.0`;
  const old = await release(oldVersion);
  const oldHome = await mkdtemp(join(tmpdir(), "steward-old-controller-"));
  let dataDir: string | undefined;
  try {
    const boot = await bootstrapOnFreePort((...args) => old.steward(oldHome, ...args), "old");
    t.is(boot.code, 0, boot.stderr);
    const entry = (await loadClientConfig(oldHome)).controllers.old!;
    dataDir = dataDirOf(entry);
    const client = new ControllerClient({
      addresses: entry.addresses,
      caCert: entry.caCert,
      user: "admin",
      password: entry.password!,
      timeoutMs: 5000,
    });
    try {
      t.is((await client.call<{ version: string }>("GET", "/v1/health")).version, oldVersion);
      await client.createModel("from-a-newer-client");
      t.true((await client.listModels()).some((m) => m.name === "from-a-newer-client"));
    } finally {
      client.close();
    }
    const tooNew = await release(`${MAJOR}.${Number(oldVersion.split(".")[1]) + 2}.0`);
    const refused = await tooNew.steward(oldHome, "models");
    t.not(refused.code, 0);
    t.regex(
      refused.stderr + refused.stdout,
      new RegExp(`controller ${oldVersion.replace(/\./g, "\\.")} are 2 minor versions apart`),
    );
  } finally {
    if (dataDir) await removeLocalController(dataDir);
    await rm(oldHome, { recursive: true, force: true });
  }
});

/** A controller of this build whose local machines run `agents`' agent, one recorder unit deployed in `model`; closed after `fn`. */
async function withAgentsOf(agents: Release, model: string, fn: (tc: TestController) => Promise<void>): Promise<void> {
  const tc = await startTestController({ agentEntry: join(agents.dir, "agent-bundle", "main.js") });
  try {
    await tc.admin.createModel(model);
    const op = await tc.upload(join(fixturesDir, "operators", "recorder"));
    await tc.admin.deploy(model, { name: "rec", operator: op, units: 1, config: { "record-dir": await recordDir() } });
    await fn(tc);
  } finally {
    await tc.close();
  }
}

test("agents of other versions: an older one runs its unit, a newer one is refused and its log says why", async (t) => {
  await withAgentsOf(await release(v(1)), "newer-agents", async (other) => {
    const uuid = (await other.admin.listModels()).find((m) => m.name === "newer-agents")!.uuid;
    const log = join(other.dir, "c", "machines", uuid, "0", "agent.log");
    const said = await eventually(
      "the newer agent's log to say why it was refused",
      async () => {
        const text = await readFile(log, "utf8").catch(() => "");
        return text.includes("may not be newer than its controller") ? text : undefined;
      },
      60_000,
    );
    t.regex(
      said,
      new RegExp(`agent ${v(1).replace(/\./g, "\\.")} and controller ${STEWARD_VERSION.replace(/\./g, "\\.")}`),
    );
    const units = Object.values((await other.admin.status("newer-agents")).applications.rec!.units);
    t.false(
      units.some((u) => u.agent.current === "idle"),
      "no unit of a refused agent runs",
    );
  });
  if (MINOR === 0) return t.log("no older minor version than this build's to run an older agent");
  await withAgentsOf(await release(v(-1)), "older-agents", async (third) => {
    const status = await third.waitForUnits("older-agents", allReady(1), "the older agent's unit active", 60_000);
    t.is(Object.keys(status.applications.rec!.units).length, 1);
  });
});
