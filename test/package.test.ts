/**
 * Steward as a Pulumi user gets it: `npm pack`, then a fresh TypeScript project in a temporary
 * directory outside the repository installs the tarball with TypeScript and @pulumi/pulumi (offline,
 * from the tarball and the npm cache, with a lock taken from this repository's), type-checks a
 * program that uses every resource (and fails to type-check wrong arguments), runs it under the
 * SDK's mocks, and drives it through the SDK's dynamic-provider process against a local controller
 * (up, refresh, destroy) with the SDK the project installed, checking that the serialized providers
 * name the installed package.
 */
import test from "ava";
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { eventually } from "./harness/eventually";
import { writeOfflineProject } from "./harness/offline-lock";
import { MiniEngine } from "./harness/pulumi-engine";
import { killProcessesUnder, processesUnder } from "./harness/processes";

const run = promisify(execFile);
const repo = join(__dirname, "..", "..");
const PULUMI_VERSION = "3.248.0";
const KUBERNETES_VERSION = "4.34.2";
const TYPE = "pulumi-nodejs:dynamic/steward:";

let work: string;
let project: string;
let stateDir: string;
let tarball: string;
let packed: {
  name: string;
  version: string;
  filename: string;
  integrity: string;
  size: number;
  unpackedSize: number;
  files: { path: string }[];
};
let engine: MiniEngine | undefined;

/**
 * The environment of a user's shell: none of the npm_* variables `npm test` sets for this repository,
 * but the npm cache this test was given (the one `npm ci` filled).
 */
function userEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) || /^npm_config_cache$/i.test(k)),
  );
}

async function inProject(cmd: string, args: string[], timeout = 120_000): Promise<{ code: number; out: string }> {
  try {
    const r = await run(cmd, args, { cwd: project, env: userEnv(), timeout, maxBuffer: 64 << 20 });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string; message: string };
    return {
      code: typeof err.code === "number" ? err.code : 1,
      out: `${err.stdout ?? ""}${err.stderr ?? ""}${err.stdout || err.stderr ? "" : err.message}`,
    };
  }
}

const tsc = (config: string): Promise<{ code: number; out: string }> =>
  inProject(process.execPath, [join(project, "node_modules", "typescript", "bin", "tsc"), "-p", config]);

// Pulumi's TypeScript template (`pulumi new typescript`): classic module resolution, no skipLibCheck,
// so every declaration the package ships is checked as a user's compile checks it.
const TSCONFIG = {
  compilerOptions: {
    strict: true,
    outDir: "bin",
    target: "es2020",
    module: "commonjs",
    moduleResolution: "node",
    sourceMap: true,
    experimentalDecorators: true,
    pretty: false,
    noFallthroughCasesInSwitch: true,
    noImplicitReturns: true,
    forceConsistentCasingInFileNames: true,
  },
  files: ["index.ts"],
};

/** The user's program: every resource, typed outputs, the client entry. */
const PROGRAM = `import * as pulumi from "@pulumi/pulumi";
import { Application, Controller, Integration, Machine, Model, Secret } from "steward";
import type { ControllerArgs, ControllerConnection, SshHost } from "steward";
import { ControllerClient, StewardError } from "steward/client";
import type { ModelStatus } from "steward/client";
import { KubernetesController } from "steward/kubernetes";

const cfg = new pulumi.Config();
const ctl = new Controller("ctl", { substrate: "local", dataDir: cfg.require("dataDir"), timeoutSeconds: 120 });
const model = new Model("shop", { connection: ctl.connection, config: { updateStatusInterval: 60 } });
const box = new Machine("box", { model });
const web = new Application("web", {
  model, operator: pulumi.output("./operators/hello-http"), machines: [box.machineId], config: { greeting: cfg.get("greeting") ?? "hello" },
}, { customTimeouts: { create: "90s", update: "1m30s", delete: "2m" }, aliases: [{ name: "website" }] });
const checker = new Application("checker", { model, operator: "./operators/http-checker", units: pulumi.output(1), timeoutSeconds: 90 });
new Integration("web-checker", { endpoints: [{ application: web, endpoint: pulumi.output("website") }, { application: checker, endpoint: "upstream" }] });

// Outputs are typed: these assignments are checked.
const connection: pulumi.Output<ControllerConnection> = ctl.connection;
const password: pulumi.Output<string> = ctl.adminPassword;
const uuid: pulumi.Output<string> = model.uuid;
export const units: pulumi.Output<string[]> = web.unitNames;
export const machineId: pulumi.Output<string> = box.machineId;
export const addresses = connection.apply((c) => c.addresses);
export const modelUuid = uuid;
export const passwordLength = pulumi.secret(password.apply((p) => p.length));

// Other substrates' arguments type-check too (not deployed here).
export function sshController(hosts: SshHost[], key: pulumi.Input<string>): Controller {
  const args: ControllerArgs = { substrate: "ssh", hosts, replicas: 3, privateKey: key, replaceAfterSeconds: pulumi.output(300) };
  return new Controller("ssh-ctl", args, { protect: true, customTimeouts: { create: "30m" } });
}
export function awsMachine(m: Model): Machine {
  return new Machine("big", { model: m, substrate: "aws", constraints: "cores=4 mem=16G", timeoutSeconds: 900 }, { retainOnDelete: true });
}
export function kubeController(kubeconfig: pulumi.Input<string>): { ctl: KubernetesController; model: Model } {
  const k = new KubernetesController("k8s-ctl", { replicas: 3, kubeconfig, image: "registry.example.com/steward/controller:0.1.0", apiAddresses: ["203.0.113.10:17070"] });
  const m = new Model("pods", { connection: k.connection, substrate: "kubernetes", credential: k.clusterCredential, kubernetes: { namespace: "pods" } });
  return { ctl: k, model: m };
}
export function apiToken(m: Model): { token: Secret; app: Application } {
  const token = new Secret("api-token", { model: m, values: { token: cfg.requireSecret("token") }, grants: ["web"] });
  const uri: pulumi.Output<string> = token.uri;
  return { token, app: new Application("api", { model: m, operator: "./operators/api", config: { "api-key": uri } }) };
}
export async function unitCount(client: ControllerClient): Promise<number> {
  try {
    const s: ModelStatus = await client.status("shop");
    return Object.values(s.applications).reduce((n, a) => n + Object.keys(a.units).length, 0);
  } catch (e) {
    if (StewardError.isInstance(e) && e.code === "not-found") return 0;
    throw e;
  }
}
`;

/** Wrong arguments, each on its own line: the compile must fail on every one of them. */
const WRONG = [
  `new Controller("c1", { substrate: "local", replicas: 4 });`,
  `new Controller("c2", { substrate: "ssh", hosts: [] });`,
  `new Model("m1", { connection: ctl.connection, substrate: "gcp" });`,
  `new Application("a1", { model, operator: "./op", units: "two" });`,
  `new Machine("x1", { model, substrate: "local", privateKey: "k" });`,
  `new Integration("i1", { endpoints: [{ application: model }, { application: model }] });`,
  `new KubernetesController("k1", { replicas: 3 });`,
  `new Secret("s1", { model, values: "token=abc" });`,
];
const WRONG_PROGRAM = `import { Application, Controller, Integration, Machine, Model, Secret } from "steward";
import { KubernetesController } from "steward/kubernetes";
const ctl = new Controller("ctl", { substrate: "local" });
const model = new Model("m", { connection: ctl.connection });
${WRONG.join("\n")}
`;

/** A user's unit test of the program under the SDK's mocks: prints what was registered. */
const MOCKS = `const pulumi = require("@pulumi/pulumi");
const registered = [];
pulumi.runtime.setMocks({
  newResource(args) {
    registered.push({ type: args.type, name: args.name, inputs: args.inputs });
    const state = { ...args.inputs };
    if (args.type.endsWith(":Controller")) Object.assign(state, { adminPassword: "generated-password-123", connection: { addresses: ["127.0.0.1:17070"], caCert: "-----BEGIN CERTIFICATE-----", user: "admin", password: "generated-password-123" } });
    if (args.type.endsWith(":Machine")) state.machineId = "0";
    if (args.type.endsWith(":Application")) Object.assign(state, { uid: "uid-" + args.name, unitNames: [args.name + "/0"] });
    if (args.type.endsWith(":Model")) state.uuid = "uuid-1";
    return { id: args.name + "-id", state };
  },
  call: () => ({}),
}, "steward-user", "test", false);
pulumi.runtime.setConfig("steward-user:dataDir", "/nonexistent");
const program = require("./bin/index.js");
let badTimeout = "";
try {
  const { Model } = require("steward");
  new Model("late", { connection: { addresses: [], caCert: "", user: "", password: "" } }, { customTimeouts: { delete: "soon" } });
} catch (e) { badTimeout = e.message; }
program.units.apply((units) => setTimeout(() => {
  console.log(JSON.stringify({ units, badTimeout, registered: registered.filter((r) => r.name !== "late") }));
}, 300));
`;

test.before(async (t) => {
  work = await mkdtemp(join(tmpdir(), "steward-package-"));
  project = join(work, "stack");
  stateDir = join(work, "state");
  await mkdir(project);
  await mkdir(stateDir);
  // The tarball, as `npm publish` would upload it (from the build this test runs after).
  const pack = await run("npm", ["pack", "--json", "--pack-destination", work], {
    cwd: repo,
    env: userEnv(),
    maxBuffer: 64 << 20,
  });
  packed = JSON.parse(pack.stdout.slice(pack.stdout.indexOf("[")))[0];
  tarball = join(work, packed.filename);

  await writeFile(join(project, "Pulumi.yaml"), "name: steward-user\nruntime: nodejs\n");
  await writeFile(join(project, "tsconfig.json"), JSON.stringify(TSCONFIG, null, 2));
  await writeFile(
    join(project, "tsconfig.wrong.json"),
    JSON.stringify(
      { ...TSCONFIG, compilerOptions: { ...TSCONFIG.compilerOptions, noEmit: true }, files: ["wrong.ts"] },
      null,
      2,
    ),
  );
  // The same program under Node's own resolution, where the package's `exports` (and their `types`) decide.
  await writeFile(
    join(project, "tsconfig.node16.json"),
    JSON.stringify(
      {
        ...TSCONFIG,
        compilerOptions: { ...TSCONFIG.compilerOptions, module: "node16", moduleResolution: "node16", noEmit: true },
      },
      null,
      2,
    ),
  );
  await writeFile(join(project, "index.ts"), PROGRAM);
  await writeFile(join(project, "wrong.ts"), WRONG_PROGRAM);
  await writeFile(join(project, "mocks.js"), MOCKS);
  await cp(join(repo, "operators", "hello-http"), join(project, "operators", "hello-http"), { recursive: true });
  await cp(join(repo, "operators", "http-checker"), join(project, "operators", "http-checker"), { recursive: true });

  // Offline: the project's lock is taken from this repository's (harness/offline-lock.ts), and npm
  // takes every tarball but ours from the cache `npm ci` filled here, by its integrity.
  const typescript = JSON.parse(await readFile(join(repo, "node_modules", "typescript", "package.json"), "utf8"))
    .version as string;
  const locked = await writeOfflineProject({
    repo,
    project,
    tarball,
    tarballIntegrity: packed.integrity,
    manifest: { name: "steward-user", version: "1.0.0", private: true, main: "bin/index.js" },
    fromRepo: { typescript, "@pulumi/pulumi": PULUMI_VERSION, "@pulumi/kubernetes": KUBERNETES_VERSION },
  });
  const t0 = performance.now();
  const installed = await inProject("npm", ["ci", "--offline", "--no-audit", "--no-fund", "--loglevel=error"], 240_000);
  if (installed.code !== 0) {
    const cache = (await run("npm", ["config", "get", "cache"], { env: userEnv() })).stdout.trim();
    const wanted = /request to (\S+) failed/.exec(installed.out)?.[1];
    throw new Error(
      `npm ci --offline of the tarball (and ${locked.length - 1} packages from this repository's lock) failed` +
        `${wanted ? `: ${wanted} is not in the npm cache` : ""}. Its packages come from the npm cache (${cache}): run \`npm ci\` in ${repo} with that cache first.\n${installed.out}`,
    );
  }
  t.log(
    `packed ${packed.files.length} files, ${(packed.size / 1e6).toFixed(2)} MB (${(packed.unpackedSize / 1e6).toFixed(1)} MB unpacked); installed offline with ${locked.length - 1} packages in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
});

test.after.always(async () => {
  await engine?.destroy().catch(() => undefined);
  engine?.stop();
  if (work) {
    await killProcessesUnder(work);
    await rm(work, { recursive: true, force: true });
  }
});

test.serial(
  "the tarball holds what runs, with declarations, and no tests, benchmarks, sources or source maps",
  async (t) => {
    const files = packed.files.map((f) => f.path);
    for (const f of [
      "package.json",
      "LICENSE",
      "README.md",
      "docs/install.md",
      "dist/provider/index.js",
      "dist/provider/index.d.ts",
      "dist/api/scripting.js",
      "dist/api/scripting.d.ts",
      "dist/provider/impl/model-provider.js",
      "dist/cli/main.js",
      "dist/controller/main.js",
      "dist/controller-bundle/main.js",
      "dist/agent-bundle/main.js",
      "dist/agent-bundle/tool-client.js",
      "operators/hello-http/operator.yaml",
    ]) {
      t.true(files.includes(f), `${f} is in the package`);
    }
    const stray = files.filter(
      (f) =>
        /^dist\/(test|bench|examples|agent)\//.test(f) ||
        f.endsWith(".map") ||
        (f.endsWith(".ts") && !f.endsWith(".d.ts")) ||
        f.includes("tsbuildinfo"),
    );
    t.deepEqual(stray, []);
    const manifest = JSON.parse(await readFile(join(project, "node_modules", "steward", "package.json"), "utf8"));
    t.is(manifest.private, undefined, "publishable");
    t.truthy(manifest.peerDependencies["@pulumi/pulumi"]);
    // What the package brings is its dependencies' closure: npm finds every edge of the installed tree
    // met (none missing or invalid, nothing extraneous), and none of this repository's tools in it.
    t.deepEqual(manifest.dependencies, JSON.parse(await readFile(join(repo, "package.json"), "utf8")).dependencies);
    const ls = await inProject("npm", ["ls", "--all", "--offline"]);
    t.is(ls.code, 0, ls.out);
    for (const tool of [
      "ava",
      "eslint",
      "typescript-eslint",
      "esbuild",
      "playwright-core",
      "preact",
      "@xterm/xterm",
      "@pulumi/aws",
      "@kubernetes/client-node",
      "kubernetes-models",
    ]) {
      t.false(
        await stat(join(project, "node_modules", tool)).then(
          () => true,
          () => false,
        ),
        `${tool} came with the package`,
      );
    }
    // What stored providers load: each kind's module, and the one providers written before 0.1.0's
    // package layout named (refresh and destroy run the code in the state).
    const projectRequire = createRequire(join(project, "index.js"));
    for (const kind of ["controller", "model", "machine", "application", "integration", "secret"]) {
      t.is(typeof projectRequire(`steward/dynamic/${kind}`)[`${kind}Provider`].read, "function", kind);
      t.is(
        typeof projectRequire("steward/dist/provider/impl").providers[kind].read,
        "function",
        `${kind}, by the earlier path`,
      );
    }
    t.throws(() => projectRequire("steward/dist/controller/main.js"), { code: "ERR_PACKAGE_PATH_NOT_EXPORTED" });
    // The CLI comes with it.
    const help = await inProject(join(project, "node_modules", ".bin", "steward"), ["--help"]);
    t.is(help.code, 0, help.out);
    t.regex(help.out, /bootstrap/);
  },
);

test.serial(
  "a program using every resource type-checks against the installed declarations; wrong arguments do not",
  async (t) => {
    const [good, node16, wrong] = await Promise.all([
      tsc("tsconfig.json"),
      tsc("tsconfig.node16.json"),
      tsc("tsconfig.wrong.json"),
    ]);
    t.is(good.code, 0, good.out);
    t.is(node16.code, 0, node16.out);
    t.not(wrong.code, 0, "wrong.ts must not compile");
    const errorLines = new Set(
      [...wrong.out.matchAll(/^wrong\.ts\((\d+),\d+\): error TS\d+/gm)].map((m) => Number(m[1])),
    );
    // The wrong calls are on lines 4.. of wrong.ts, one each; nothing else may fail (a missing module would).
    t.deepEqual(
      [...errorLines].sort((a, b) => a - b),
      WRONG.map((_, i) => i + 5),
      wrong.out,
    );
    t.notRegex(wrong.out, /node_modules\//, `no error inside a package's declarations:\n${wrong.out}`);
    t.regex(wrong.out, /"gcp"/);
  },
);

test.serial(
  "the compiled program runs under the SDK's mocks: every resource registered, secrets kept secret, providers naming the package",
  async (t) => {
    const r = await inProject(process.execPath, ["mocks.js"]);
    t.is(r.code, 0, r.out);
    const out = JSON.parse(r.out.trim().split("\n").pop()!) as {
      units: string[];
      badTimeout: string;
      registered: { type: string; name: string; inputs: Record<string, any> }[];
    };
    t.deepEqual(out.units, ["web/0"]);
    t.is(out.badTimeout, 'customTimeouts.delete: "soon" is not a duration such as "30m", "1h30m" or "90s"');
    const byName = new Map(out.registered.map((x) => [x.name, x]));
    t.deepEqual(out.registered.map((x) => `${x.type.replace(TYPE, "")}:${x.name}`).sort(), [
      "Application:checker",
      "Application:web",
      "Controller:ctl",
      "Integration:web-checker",
      "Machine:box",
      "Model:shop",
    ]);
    const SIG = "4dabf18193072939515e22adb298388d";
    t.truthy(byName.get("shop")!.inputs.connection[SIG], "the model's connection input is secret");
    // customTimeouts reach the provider as the waits' inputs (the engine does not pass them to a dynamic provider).
    t.like(byName.get("web")!.inputs, {
      timeoutSeconds: 90,
      deleteTimeoutSeconds: 120,
      operator: { path: "./operators/hello-http" },
    });
    t.true(
      /^v2-/.test(byName.get("web")!.inputs.operator.hash),
      "the operator's content hash is taken from an Input path",
    );
    t.deepEqual(byName.get("web-checker")!.inputs.endpoints, ["web:website", "checker:upstream"]);
    for (const x of out.registered) {
      const kind = x.type.replace(TYPE, "").toLowerCase();
      const text = String(x.inputs.__provider?.value ?? x.inputs.__provider);
      t.true(
        text.includes(`"steward/dynamic/${kind}"`),
        `${x.name}: the provider loads steward/dynamic/${kind}:\n${text}`,
      );
      t.false(text.includes(repo) || text.includes(work), `${x.name}: no path of this machine in the provider text`);
    }
  },
);

test.serial(
  "up, refresh and destroy through the SDK's dynamic-provider process, from the installed package",
  async (t) => {
    t.timeout(300_000);
    // The program as the user's project loads it: the package and the SDK from its node_modules. (A
    // require from this file would find this repository itself: Node resolves a package's own name.)
    const projectRequire = createRequire(join(project, "index.js"));
    const steward = projectRequire("steward");
    const { ControllerClient } = projectRequire("steward/client");
    t.true(projectRequire.resolve("steward").startsWith(join(project, "node_modules", "steward") + "/"));
    const program = (greeting: string) => (): void => {
      const ctl = new steward.Controller("ctl", {
        substrate: "local",
        dataDir: join(stateDir, "controller"),
        timeoutSeconds: 120,
      });
      const model = new steward.Model("shop", { connection: ctl.connection, config: { updateStatusInterval: 60 } });
      const box = new steward.Machine("box", { model });
      const web = new steward.Application("web", {
        model,
        operator: join(project, "operators", "hello-http"),
        machines: [box.machineId],
        config: { greeting },
        timeoutSeconds: 90,
      });
      const checker = new steward.Application("checker", {
        model,
        operator: join(project, "operators", "http-checker"),
        timeoutSeconds: 90,
      });
      new steward.Integration("web-checker", {
        endpoints: [
          { application: web, endpoint: "website" },
          { application: checker, endpoint: "upstream" },
        ],
      });
    };
    engine = new MiniEngine(project, { STEWARD_HOME: join(stateDir, "home") }, project);
    await engine.start();

    const up = await engine.up(program("hello"));
    t.deepEqual(up.errors, []);
    t.deepEqual([...up.created].sort(), ["box", "checker", "ctl", "shop", "web", "web-checker"]);
    for (const [name, text] of engine.serializedProviders) {
      const kind = engine.get(name)!.type.replace(TYPE, "").toLowerCase();
      t.true(text.includes(`"steward/dynamic/${kind}"`), `${name}: ${text}`);
      t.false(text.includes(repo) || text.includes(work), `${name}: no path of this machine in the provider text`);
    }
    const c = engine.get("ctl")!.outputs.connection as {
      addresses: string[];
      caCert: string;
      user: string;
      password: string;
    };
    t.false(engine.persistedState().includes(c.password), "the admin password is encrypted in the state");
    const client = new ControllerClient({
      addresses: c.addresses,
      caCert: c.caCert,
      user: c.user,
      password: c.password,
    });
    try {
      const status = await client.status("shop");
      t.deepEqual(Object.keys(status.applications).sort(), ["checker", "web"]);
      t.true(
        Object.values(status.applications)
          .flatMap((a: any) => Object.values(a.units))
          .every((u: any) => u.workload.current === "active" && u.agent.current === "idle"),
      );

      // A refresh reads every resource back (a machine's address and status may have moved on since
      // up); a config edit by hand, through the installed client, is then drift of the application's config.
      const first = await engine.refresh();
      t.deepEqual(first.gone, []);
      t.false(
        first.drifted.some((d) => d.properties.includes("config")),
        JSON.stringify(first),
      );
      await client.updateApplication("shop", "web", { config: { greeting: "by hand" } });
      await new Promise((r) => setTimeout(r, 2100)); // past the provider process's shared status (provider/impl/session.ts)
      const refreshed = await engine.refresh();
      t.deepEqual(
        refreshed.drifted.filter((d) => d.properties.includes("config")).map((d) => d.name),
        ["web"],
        JSON.stringify(refreshed),
      );
      t.is((engine.get("web")!.outputs.config as Record<string, unknown>).greeting, "by hand");
      const again = await engine.up(program("hello"));
      t.deepEqual(again.errors, []);
      t.deepEqual(again.updated, ["web"]);
      t.is((await client.status("shop")).applications.web!.config.greeting, "hello");
    } finally {
      client.close();
    }

    await engine.destroy();
    t.is(engine.state.size, 0);
    t.false(
      await stat(join(stateDir, "controller")).then(
        () => true,
        () => false,
      ),
      "the controller's data directory is gone",
    );
    await eventually(
      "no controller or agent process left",
      async () => (await processesUnder(stateDir)).length === 0,
      15_000,
      250,
    ).catch(() => undefined);
    t.deepEqual(await processesUnder(stateDir), [], "no controller or agent process is left");
    t.log(`project: ${relative(work, project)}; provider process cwd: the project`);
  },
);
