/**
 * The Pulumi provider end to end, without the Pulumi CLI: programs run under the SDK's mocks and
 * every resource goes through the SDK's own dynamic-provider gRPC process (test/harness/pulumi-engine.ts)
 * against a real local controller with real agents. The steps run in order on one stack.
 */
import test from "ava";
import { execFileSync } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControllerClient } from "../api";
import type { ModelStatus } from "../api";
import type { ControllerConnection } from "../provider";
import { Application, Controller, Integration, Model } from "../provider";
import { cliRunner } from "./harness/cli";
import { fixturesDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { recordDir } from "./harness/operators";
import { killProcessesUnder } from "./harness/processes";
import { providerTestBed, repoDir } from "./harness/provider-bed";

let dir: string;
let helloDir: string;
const { engine } = providerTestBed(test, {
  setUp: async () => {
    dir = await mkdtemp(join(tmpdir(), "steward-pulumi-"));
    helloDir = join(dir, "hello-http");
    await cp(join(repoDir, "operators", "hello-http"), helloDir, { recursive: true });
  },
  tearDown: async () => {
    if (!dir) return;
    await killProcessesUnder(dir);
    await rm(dir, { recursive: true, force: true });
  },
});

interface Shape {
  webUnits: number;
  greeting?: string;
  broken?: boolean;
  /** The web application's leadership lease. */
  lease?: string;
}

/** The stack under test: a local controller, a model, a web app and a checker integrated with it. */
function program(s: Shape): () => void {
  return () => {
    const ctl = new Controller("ctl", { substrate: "local", dataDir: join(dir, "controller") });
    const model = new Model("pm", { connection: ctl.connection, config: { updateStatusInterval: 60 } });
    const web = new Application("web", {
      model,
      operator: helloDir,
      units: s.webUnits,
      config: s.greeting ? { greeting: s.greeting } : {},
      ...(s.lease ? { leadershipLease: s.lease } : {}),
      timeoutSeconds: 90,
    });
    const checker = new Application("checker", {
      model,
      operator: join(repoDir, "operators", "http-checker"),
      timeoutSeconds: 90,
    });
    new Integration("web-checker", {
      endpoints: [
        { application: web, endpoint: "website" },
        { application: checker, endpoint: "upstream" },
      ],
    });
    if (s.broken) {
      new Application("broken", {
        // Long enough for its unit to reach the failing install hook on a loaded machine (8 s was not).
        model,
        operator: join(fixturesDir, "operators", "recorder"),
        timeoutSeconds: 25,
        deleteTimeoutSeconds: 5,
        forceDelete: true,
        config: { "record-dir": join(dir, "rec"), "fail-hook": "install", "fail-times": 1000 },
      });
    }
  };
}

const connection = (): ControllerConnection => engine.get("ctl")!.outputs.connection as ControllerConnection;
/** Model "pm" as the controller has it, asked with the stack's own connection output. */
async function modelStatus(): Promise<ModelStatus> {
  const c = connection();
  const client = new ControllerClient({ addresses: c.addresses, caCert: c.caCert, user: c.user, password: c.password });
  try {
    return await client.status("pm");
  } finally {
    client.close();
  }
}

test.serial("bad arguments come back from check as failures naming the field; nothing is created", async (t) => {
  const r = await engine.up(() => {
    new Controller("bad", { substrate: "local", replicas: 4 as never, port: 70000 });
    const connection = { addresses: ["127.0.0.1:1"], caCert: "x", user: "admin", password: "x" };
    new Model("bad-model", { connection, substrate: "gcp" as never });
    new Model("bad-cloud", { connection, substrate: "aws", aws: { region: "eu-west-1", imageId: "ubuntu" } });
  });
  t.is(r.created.length, 0);
  const message = r.errors.map((e) => e.message).join("\n");
  t.regex(message, /replicas: must be 1, 3, 5, 7, not 4: an even number of voters/);
  t.regex(message, /port: must be a whole number from 1 to 65535/);
  t.regex(message, /substrate: must be "local", "manual", "ssh", "aws", "vsphere", "kubernetes", not "gcp"/);
  t.regex(message, /credential: required for an aws model/);
  t.regex(message, /aws: "imageId" must be an id such as ami-/);
  t.is(engine.state.size, 0);
});

test.serial(
  "up from nothing: controller, model, two applications and their integration, every unit active",
  async (t) => {
    t.timeout(240_000);
    const r = await engine.up(program({ webUnits: 2, greeting: "hi" }));
    t.deepEqual(r.errors, []);
    t.deepEqual(r.created.sort(), ["checker", "ctl", "pm", "web", "web-checker"]);
    const s = await modelStatus();
    const units = Object.values(s.applications).flatMap((a) => Object.values(a.units));
    t.is(units.length, 3);
    t.true(
      units.every((u) => u.workload.current === "active" && u.agent.current === "idle"),
      JSON.stringify(units.map((u) => [u.name, u.workload.current, u.agent.current])),
    );
    t.is(s.applications.web!.config.greeting, "hi");
    t.is(s.integrations.filter((i) => i.type === "regular").length, 1);
    // A second up with nothing changed does nothing.
    const again = await engine.up(program({ webUnits: 2, greeting: "hi" }));
    t.deepEqual(again.errors, []);
    t.deepEqual([again.created, again.updated, again.replaced], [[], [], []]);
  },
);

test.serial("the state holds no secret in plain text and the serialized provider is small and secret-free", (t) => {
  const password = connection().password;
  t.true(password.length >= 16);
  const state = engine.persistedState();
  t.false(
    state.includes(password),
    `the admin password is encrypted wherever it is stored:\n${state
      .split("\n")
      .filter((l) => l.includes(password))
      .join("\n")}`,
  );
  t.true(engine.get("ctl")!.secretOutputs.includes("connection"));
  for (const [name, text] of engine.serializedProviders) {
    t.true(text.includes("exports.handler"), `${name}: a serialized provider`);
    t.false(text.includes(password), `${name}: no password in the provider text`);
    t.false(/BEGIN (RSA |EC |OPENSSH )?PRIVATE KEY/.test(text), `${name}: no key in the provider text`);
    t.true(text.length < 4096, `${name}: ${text.length} characters`);
  }
});

test.serial("scaling and a config change are updates, not replacements", async (t) => {
  t.timeout(180_000);
  const r = await engine.up(program({ webUnits: 3, greeting: "hello" }));
  t.deepEqual(r.errors, []);
  t.deepEqual(r.updated, ["web"]);
  t.deepEqual(r.replaced, []);
  const web = (await modelStatus()).applications.web!;
  t.is(Object.keys(web.units).length, 3);
  t.is(web.config.greeting, "hello");
});

test.serial("a leadership lease is an update, and leaving it out goes back to the controller's", async (t) => {
  t.timeout(180_000);
  const bad = await engine.up(program({ webUnits: 3, greeting: "hello", lease: "2s" }));
  t.regex(
    bad.errors.map((e) => e.message).join("\n"),
    /leadershipLease: 2s is too short: the minimum leadership lease is 5s/,
  );
  t.deepEqual([bad.updated, bad.replaced], [[], []]);
  const r = await engine.up(program({ webUnits: 3, greeting: "hello", lease: "10s" }));
  t.deepEqual(r.errors, []);
  t.deepEqual([r.updated, r.replaced], [["web"], []]);
  t.is((await modelStatus()).applications.web!.leadershipLeaseSeconds, 10);
  const same = await engine.up(program({ webUnits: 3, greeting: "hello", lease: "10s" }));
  t.deepEqual([same.updated, same.replaced], [[], []], "nothing changed");
  const back = await engine.up(program({ webUnits: 3, greeting: "hello" }));
  t.deepEqual([back.updated, back.replaced], [["web"], []]);
  t.is((await modelStatus()).applications.web!.leadershipLeaseSeconds, undefined);
});

test.serial(
  "scaling and model settings changed by hand with the steward CLI show as drift on refresh, and up puts them back",
  async (t) => {
    t.timeout(180_000);
    const home = join(dir, "cli-home");
    const c = connection();
    await rm(home, { recursive: true, force: true });
    await mkdir(home, { recursive: true });
    await writeFile(
      join(home, "controllers.json"),
      JSON.stringify({
        current: "p",
        controllers: { p: { addresses: c.addresses, caCert: c.caCert, user: c.user, password: c.password } },
      }),
      { mode: 0o600 },
    );
    const steward = cliRunner(home, repoDir);
    const add = await steward("add-unit", "-m", "pm", "web");
    t.is(add.code, 0, add.stderr);
    const cfg = await steward("config", "-m", "pm", "web", "port=0", "greeting=by hand");
    t.is(cfg.code, 0, cfg.stderr);
    const settings = await steward("model-config", "-m", "pm", "update-status-interval=30s");
    t.is(settings.code, 0, settings.stderr);

    const refreshed = await engine.refresh();
    const pm = refreshed.drifted.find((d) => d.name === "pm");
    t.deepEqual(pm?.properties, ["config"], JSON.stringify(refreshed));
    t.deepEqual(engine.get("pm")!.outputs.config, { updateStatusInterval: 30 });
    const web = refreshed.drifted.find((d) => d.name === "web");
    t.truthy(web, JSON.stringify(refreshed));
    t.true(web!.properties.includes("units"));
    t.true(web!.properties.includes("config"));
    t.is(engine.get("web")!.outputs.units, 4);

    const r = await engine.up(program({ webUnits: 3, greeting: "hello" }));
    t.deepEqual(r.errors, []);
    t.deepEqual([...r.updated].sort(), ["pm", "web"]);
    const s = (await modelStatus()).applications.web!;
    t.is(Object.values(s.units).filter((u) => u.life === "alive").length, 3);
    const shown = await steward("model-config", "-m", "pm");
    t.regex(shown.stdout, /update-status-interval\s+60s/);
    t.is(s.config.greeting, "hello");
  },
);

test.serial(
  "changed operator content upgrades the application in place, and the update waits for every unit's upgrade hook",
  async (t) => {
    t.timeout(180_000);
    const yaml = join(helloDir, "operator.yaml");
    await writeFile(yaml, (await readFile(yaml, "utf8")).replace('version: "1.0.0"', 'version: "1.1.0"'));
    // The new content's upgrade hook takes a while and leaves a mark when it ends.
    // Where hooks may write: local agents run unprivileged when the tests run as root.
    const upgraded = await recordDir("steward-upgraded-");
    await writeFile(
      join(helloDir, "hooks", "upgrade"),
      `#!/bin/sh\nset -eu\nsleep 3\ntouch "${upgraded}/$(echo "$STEWARD_UNIT_NAME" | tr / -)"\n`,
      { mode: 0o755 },
    );
    const r = await engine.up(program({ webUnits: 3, greeting: "hello" }));
    t.deepEqual(r.errors, []);
    t.deepEqual(r.updated, ["web"]);
    t.deepEqual(r.replaced, []);
    t.is(engine.get("web")!.outputs.operatorVersion, "1.1.0");
    // Read as the update returned: every unit had run its upgrade hook to the end.
    const units = Object.keys((await modelStatus()).applications.web!.units).sort();
    t.deepEqual(
      (await readdir(upgraded)).sort(),
      units.map((u) => u.replace("/", "-")),
    );
  },
);

test.serial("a unit stuck in error fails the up with a table of units, and the state stays consistent", async (t) => {
  t.timeout(180_000);
  const r = await engine.up(program({ webUnits: 3, greeting: "hello", broken: true }));
  const err = r.errors.find((e) => e.name === "broken");
  t.truthy(err, JSON.stringify(r));
  t.regex(err!.message, /Unit\s+Workload\s+Agent\s+Message/);
  t.regex(err!.message, /broken\/0\s+error/);
  const stored = engine.get("broken")!;
  t.truthy(stored, "the application that exists is in the state");
  t.truthy(stored.initErrors);
  // The next up does not create it twice: it updates (and fails again, as the unit is still in error).
  const again = await engine.up(program({ webUnits: 3, greeting: "hello", broken: true }));
  t.deepEqual(again.created, []);
  t.true(again.errors.some((e) => e.name === "broken"));
  t.deepEqual(Object.keys((await modelStatus()).applications.broken!.units), ["broken/0"]);
  // Dropping it from the program removes it (forced: its unit cannot run its hooks).
  const removed = await engine.up(program({ webUnits: 3, greeting: "hello" }));
  t.deepEqual(removed.errors, []);
  t.deepEqual(removed.deleted, ["broken"]);
});

test.serial("destroy removes the models, applications, agents and the controller", async (t) => {
  t.timeout(180_000);
  const dataDir = join(dir, "controller");
  await engine.destroy();
  t.is(engine.state.size, 0);
  t.false(
    await stat(dataDir).then(
      () => true,
      () => false,
    ),
    "the controller's data directory is gone",
  );
  const left = (): string => {
    try {
      return execFileSync("pgrep", ["-af", dir]).toString().trim();
    } catch {
      return "";
    }
  };
  // Agents stop as their machines are removed; the last may still be exiting.
  await eventually("no controller or agent process left", async () => left() === "", 15_000, 250).catch(
    () => undefined,
  );
  t.is(left(), "", "no controller or agent process is left");
});
