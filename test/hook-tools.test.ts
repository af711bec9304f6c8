/** Argument handling of the hook tools (the end-to-end path is in agent-lifecycle.test.ts). */
import test from "ava";
import type { ExecutionContext } from "ava";
import type { UnitView } from "../api";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HookToolServer, runTool } from "../agent";
import type { HookContext, SecretAccess } from "../agent";

/**
 * A stand-in for the agent side of a running hook: these tests check argument handling only; the
 * real context (controller calls, commit at hook end) runs in agent-lifecycle and agent-relations.
 */
function context(over: { leader?: boolean; relationHook?: boolean } = {}): HookContext & {
  statuses: [string, string][];
  sets: unknown[];
  ports: string[];
  readinessSaid: [boolean, string][];
  resigned: (string | undefined)[];
} {
  const view: UnitView = {
    name: "web/0",
    app: "web",
    life: "alive",
    operator: { hash: "h", name: "op", version: "1" },
    config: { port: 80, name: "x", debug: false },
    leader: over.leader ?? false,
    leaderKnown: true,
    leaderSettingsVersion: 0,
    relations: [
      {
        id: 4,
        endpoint: "db",
        interface: "pg",
        role: "requirer",
        remoteApp: "pg",
        life: "alive",
        remoteUnits: { "pg/0": 1 },
        remoteAppVersion: 0,
      },
    ],
  };
  const ctx = {
    statuses: [] as [string, string][],
    sets: [] as unknown[],
    ports: [] as string[],
    readinessSaid: [] as [boolean, string][],
    resigned: [] as (string | undefined)[],
    unit: "web/0",
    hook: over.relationHook ? "db-relation-changed" : "install",
    ...(over.relationHook ? { relation: { id: 4, endpoint: "db", remoteUnit: "pg/0", remoteApp: "pg" } } : {}),
    view: () => view,
    workloadStatus: () => ({ status: "active", message: "fine" }),
    async setWorkloadStatus(s: string, m: string) {
      ctx.statuses.push([s, m]);
    },
    async setAppStatus(s: string, m: string) {
      ctx.statuses.push([`app:${s}`, m]);
    },
    async setVersion() {
      /* not under test */
    },
    log: () => undefined,
    isLeader: async () => over.leader ?? false,
    async resignLeadership(to?: string) {
      ctx.resigned.push(to);
    },
    leaderGet: async () => ({ secret: "s3" }),
    async leaderSet() {
      /* not under test */
    },
    relationGet: async (_id: number, target: { unit?: string; app?: string }): Promise<Record<string, string>> =>
      target.unit === "pg/0" ? { host: "db.local" } : {},
    relationSet(id: number, app: boolean, patch: Record<string, string | null>) {
      ctx.sets.push({ id, app, patch });
    },
    openPort(p: string) {
      ctx.ports.push(p);
    },
    closePort() {
      /* not under test */
    },
    openedPorts: () => ctx.ports,
    readiness: () => ({ ready: false, reason: "web/0 has not run its start hook yet", source: "workload" as const }),
    async setReadiness(ready: boolean, message: string) {
      ctx.readinessSaid.push([ready, message]);
    },
  };
  return ctx;
}

test("status-set records the status and message", async (t) => {
  const ctx = context();
  t.is((await runTool(ctx, "status-set", ["active", "serving", "on", "80"])).code, 0);
  t.deepEqual(ctx.statuses, [["active", "serving on 80"]]);
});

test("status-set --application sets the application's status", async (t) => {
  const ctx = context({ leader: true });
  t.is((await runTool(ctx, "status-set", ["--application", "blocked", "needs", "a", "database"])).code, 0);
  t.deepEqual(ctx.statuses, [["app:blocked", "needs a database"]]);
});

test("status-set refuses a status operators may not set", async (t) => {
  const ctx = context();
  const r = await runTool(ctx, "status-set", ["error", "boom"]);
  t.is(r.code, 2);
  t.regex(r.stderr!, /first argument must be one of active, blocked, maintenance, waiting/);
  t.deepEqual(ctx.statuses, []);
});

test("an unknown flag is a usage error naming the flag", async (t) => {
  const r = await runTool(context(), "config-get", ["--formt", "json"]);
  t.is(r.code, 2);
  t.regex(r.stderr!, /unknown flag --formt\nusage: config-get/);
});

test("config-get prints one value, or everything as JSON", async (t) => {
  t.is((await runTool(context(), "config-get", ["port"])).stdout, "80\n");
  t.is((await runTool(context(), "config-get", ["--format=json", "debug"])).stdout, "false\n");
  t.deepEqual(JSON.parse((await runTool(context(), "config-get", [])).stdout!), { port: 80, name: "x", debug: false });
  const missing = await runTool(context(), "config-get", ["nope"]);
  t.is(missing.code, 1);
  t.regex(missing.stderr!, /"nope" is not set/);
});

test("status-get prints text or JSON", async (t) => {
  t.is((await runTool(context(), "status-get", [])).stdout, "active\n");
  t.deepEqual(JSON.parse((await runTool(context(), "status-get", ["--format", "json"])).stdout!), {
    status: "active",
    message: "fine",
  });
});

test("relation-set outside a relation hook needs -r, and an unknown relation id is refused", async (t) => {
  const r = await runTool(context(), "relation-set", ["a=b"]);
  t.is(r.code, 2);
  t.regex(r.stderr!, /not a relation hook: name the relation with -r <endpoint:id>/);
  const unknown = await runTool(context(), "relation-get", ["-r", "db:9", "host", "pg/0"]);
  t.is(unknown.code, 1);
  t.regex(unknown.stderr!, /relation db:9 does not exist for web\/0 \(known: db:4\)/);
  const ctx = context();
  t.is((await runTool(ctx, "relation-set", ["-r", "db:4", "a=b", "gone="])).code, 0);
  t.deepEqual(ctx.sets, [{ id: 4, app: false, patch: { a: "b", gone: null } }]);
});

test("relation-get defaults to the hook's remote unit; relation-ids and relation-list list what exists", async (t) => {
  const ctx = context({ relationHook: true });
  t.is((await runTool(ctx, "relation-get", ["host"])).stdout, "db.local\n");
  t.is((await runTool(ctx, "relation-ids", [])).stdout, "db:4\n");
  t.is((await runTool(ctx, "relation-list", [])).stdout, "pg/0\n");
  t.is((await runTool(ctx, "relation-list", ["--app"])).stdout, "pg\n");
});

test("non-leaders may not write the application databag or leader data", async (t) => {
  const app = await runTool(context({ relationHook: true }), "relation-set", ["--app", "k=v"]);
  t.is(app.code, 1);
  t.regex(app.stderr!, /web\/0 is not the leader of web; only the leader may write the application databag/);
  const leaderSet = await runTool(context(), "leader-set", ["k=v"]);
  t.is(leaderSet.code, 1);
  t.regex(leaderSet.stderr!, /only the leader may leader-set/);
  t.is((await runTool(context({ leader: true, relationHook: true }), "relation-set", ["--app", "k=v"])).code, 0);
});

test("an oversized databag is refused with the limit", async (t) => {
  const r = await runTool(context({ relationHook: true }), "relation-set", [`big=${"x".repeat(70_000)}`]);
  t.is(r.code, 1);
  t.regex(r.stderr!, /the databag would hold \d+ bytes; the limit is 65536 bytes/);
});

test("open-port normalises ports and refuses nonsense", async (t) => {
  const ctx = context();
  t.is((await runTool(ctx, "open-port", ["8080"])).code, 0);
  t.is((await runTool(ctx, "open-port", ["53/udp"])).code, 0);
  t.deepEqual(ctx.ports, ["8080/tcp", "53/udp"]);
  t.is((await runTool(ctx, "open-port", ["http"])).code, 2);
  t.is((await runTool(ctx, "open-port", ["70000"])).code, 1);
});

test("open-port and close-port refuse ports outside 1-65535, unknown protocols and control characters, saying why", async (t) => {
  const ctx = context();
  const refused: [string, number, RegExp][] = [
    ["99999/tcp", 1, /port "99999\/tcp" is outside 1-65535/],
    ["0", 1, /port "0" is outside 1-65535/],
    ["1-99999/udp", 1, /port "1-99999\/udp" is outside 1-65535/],
    ["10-5/tcp", 1, /port range "10-5\/tcp" ends before it starts/],
    ["80/sctp", 2, /"80\/sctp" is not a port such as 80, 80\/tcp, 53\/udp, 8000-8010\/tcp or icmp/],
    ["80/tcp\u001b[2J", 2, /"80\/tcp\\u001b\[2J" is not a port/],
    ["\u001b]0;title\u0007", 2, /is not a port/],
    ["80/tcp\n", 2, /is not a port/],
  ];
  for (const tool of ["open-port", "close-port"]) {
    for (const [port, code, message] of refused) {
      const r = await runTool(ctx, tool, [port]);
      t.is(r.code, code, `${tool} ${JSON.stringify(port)}`);
      t.regex(r.stderr!, message);
      t.notRegex(r.stderr!, /[\u0000-\u0008\u000b-\u001f\u007f]/, "no control characters reach the hook's output");
    }
  }
  t.deepEqual(ctx.ports, []);
  t.is((await runTool(ctx, "open-port", ["8000-8010/udp"])).code, 0);
  t.is((await runTool(ctx, "open-port", ["icmp"])).code, 0);
  t.is((await runTool(ctx, "open-port", ["65535"])).code, 0);
  t.deepEqual(ctx.ports, ["8000-8010/udp", "icmp", "65535/tcp"]);
});

test("every tool answers --help with its usage", async (t) => {
  for (const tool of [
    "status-set",
    "status-get",
    "config-get",
    "application-version-set",
    "log",
    "is-leader",
    "leader-get",
    "leader-set",
    "relation-ids",
    "relation-list",
    "relation-get",
    "relation-set",
    "open-port",
    "close-port",
    "opened-ports",
    "readiness-set",
    "readiness-get",
    "action-get",
    "action-set",
    "action-fail",
    "action-log",
  ]) {
    const r = await runTool(context(), tool, ["--help"]);
    t.is(r.code, 0);
    t.regex(r.stdout!, new RegExp(`^usage: ${tool}`));
  }
  t.is((await runTool(context(), "no-such-tool", [])).code, 2);
  // The action tools exist, but a hook is not an action.
  const outside = await runTool(context(), "action-get", []);
  t.is(outside.code, 1);
  t.regex(outside.stderr!, /action-get: only an action may use it/);
});

test("log refuses an unknown level", async (t) => {
  const r = await runTool(context(), "log", ["--level", "LOUD", "hi"]);
  t.is(r.code, 2);
  t.regex(r.stderr!, /--level must be one of DEBUG, INFO, WARNING, ERROR/);
});

test("readiness-set takes ready or not-ready and an optional message", async (t) => {
  const ctx = context();
  t.is((await runTool(ctx, "readiness-set", ["ready"])).code, 0);
  t.is((await runTool(ctx, "readiness-set", ["not-ready", "--message", "waiting for 2 peers"])).code, 0);
  t.is((await runTool(ctx, "readiness-set", ["-m=rejoining", "not-ready"])).code, 0);
  t.deepEqual(ctx.readinessSaid, [
    [true, ""],
    [false, "waiting for 2 peers"],
    [false, "rejoining"],
  ]);
});

test("readiness-set refuses anything but one of ready, not-ready, saying what it got", async (t) => {
  const ctx = context();
  for (const [args, why] of [
    [[], /give exactly one of ready, not-ready \(got nothing\)/],
    [["yes"], /give exactly one of ready, not-ready \(got "yes"\)/],
    [["ready", "now"], /\(got "ready" "now"\)/],
    [["ready", "--message"], /--message needs a value/],
    [["ready", "--force"], /unknown flag --force/],
  ] as const) {
    const r = await runTool(ctx, "readiness-set", [...args]);
    t.is(r.code, 2, args.join(" "));
    t.regex(r.stderr!, why);
    t.regex(r.stderr!, /usage: readiness-set ready\|not-ready \[--message TEXT\]/);
  }
  const long = await runTool(ctx, "readiness-set", ["not-ready", "--message", "x".repeat(1025)]);
  t.is(long.code, 1);
  t.regex(long.stderr!, /message is longer than 1024 characters/);
  t.deepEqual(ctx.readinessSaid, [], "nothing was set by a refused call");
});

test("readiness-get prints the unit's readiness as text or JSON", async (t) => {
  const ctx = context();
  t.is((await runTool(ctx, "readiness-get", [])).stdout, "not-ready\n");
  t.deepEqual(JSON.parse((await runTool(ctx, "readiness-get", ["--format", "json"])).stdout!), {
    ready: false,
    reason: "web/0 has not run its start hook yet",
    source: "workload",
  });
  t.is((await runTool(ctx, "readiness-get", ["--format", "yaml"])).code, 2);
  t.is((await runTool(ctx, "readiness-get", ["extra"])).code, 2);
});

/** A real tool server on its socket in a directory of its own, closed when the test ends. */
async function startToolServer(t: ExecutionContext): Promise<{ server: HookToolServer; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), "steward-tools-"));
  const server = new HookToolServer(dir);
  t.teardown(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });
  await server.start();
  return { server, dir };
}

/** Runs a tool's wrapper as a hook (or a process a hook left behind) would, with `env`. */
function runWrapper(
  server: HookToolServer,
  tool: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      join(server.toolsDir, tool),
      args,
      { env: { PATH: process.env.PATH, STEWARD_AGENT_SOCKET: server.socketPath, ...env } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

test("outside a hook, a unit's processes may run only the reading tools and container-stop, through the unit's context", async (t) => {
  const { server } = await startToolServer(t);
  const ctx = context({ leader: true });
  server.registerUnit("unit-ctx", ctx);
  // A tracer a hook started: the hook's own context is gone, its unit's is not.
  const env = { STEWARD_CONTEXT_ID: "hook-that-ended", STEWARD_UNIT_CONTEXT_ID: "unit-ctx" };
  const leader = await runWrapper(server, "is-leader", [], env);
  t.deepEqual([leader.code, leader.stdout], [0, "true\n"], leader.stderr);
  t.is((await runWrapper(server, "config-get", ["port"], env)).stdout, "80\n");
  const set = await runWrapper(server, "leader-set", ["a=b"], env);
  t.is(set.code, 2);
  t.regex(
    set.stderr,
    /tools work only inside a running hook, but for is-leader, leader-get, config-get, status-get, container-services, container-stop/,
  );
  t.is((await runWrapper(server, "leader-resign", [], env)).code, 2, "resigning is for hooks");
  // Its own workload's services may be stopped (this unit has none: the tool itself answers), never started or run in.
  const stop = await runWrapper(server, "container-stop", ["db", "postgres"], env);
  t.is(stop.code, 1, stop.stderr);
  t.regex(stop.stderr, /container-stop: web\/0 has no workload containers/);
  for (const tool of ["container-start", "container-restart", "container-exec", "container-push"])
    t.is((await runWrapper(server, tool, ["db", "--", "sh"], env)).code, 2, `${tool} is for hooks`);
  t.is((await runWrapper(server, "is-leader", [], { STEWARD_UNIT_CONTEXT_ID: "another" })).code, 2);
  t.deepEqual(ctx.resigned, []);
});

test("leader-resign gives leadership up, to the unit --to names; a bad unit name is misuse", async (t) => {
  const ctx = context({ leader: true });
  t.is((await runTool(ctx, "leader-resign", ["--to", "web/2"])).code, 0);
  t.is((await runTool(ctx, "leader-resign", [])).code, 0);
  t.deepEqual(ctx.resigned, ["web/2", undefined]);
  const bad = await runTool(ctx, "leader-resign", ["--to", "web"]);
  t.is(bad.code, 2);
  t.regex(bad.stderr!, /"web" is not a unit name such as web\/1/);
  t.is((await runTool(ctx, "leader-resign", ["web/1"])).code, 2, "the unit goes with --to");
});

/**
 * Runs `calls` in-process in a Node process of its own, as a Node operator would
 * (`require(STEWARD_TOOLS_MODULE).runTool`), with `env`; returns each call's outcome.
 */
function runInProcess(
  server: HookToolServer,
  calls: { tool: string; args: string[]; input?: string }[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }[]> {
  const script = `
    const { runTool } = require(process.env.STEWARD_TOOLS_MODULE);
    const calls = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
    process.stdout.write(JSON.stringify(calls.map((c) => runTool(c.tool, c.args, { input: c.input }))));`;
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      ["-e", script],
      { env: { PATH: process.env.PATH, STEWARD_TOOLS_MODULE: server.clientModule, ...env }, maxBuffer: 8 << 20 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}: ${stderr}`)) : resolve(JSON.parse(stdout))),
    );
    child.stdin!.end(JSON.stringify(calls));
  });
}

test("a Node operator's in-process tool calls answer exactly as the programs do, input included", async (t) => {
  const { server, dir } = await startToolServer(t);
  // Secret access that is never reached: the input is refused first.
  const ctx: HookContext = { ...context({ leader: true, relationHook: true }), secrets: {} as SecretAccess };
  server.register("hook-ctx", ctx);
  server.registerUnit("unit-ctx", ctx);
  const env = { STEWARD_AGENT_SOCKET: server.socketPath, STEWARD_CONTEXT_ID: "hook-ctx" };
  const calls = [
    { tool: "config-get", args: ["port"] },
    { tool: "config-get", args: ["--format", "json"] },
    { tool: "relation-get", args: ["-", "pg/0"] },
    { tool: "status-set", args: ["exploded", "no"] },
    { tool: "open-port", args: ["--bogus"] },
    { tool: "is-leader", args: [] },
  ];
  const inProcess = await runInProcess(server, calls, env);
  const programs = await Promise.all(calls.map((c) => runWrapper(server, c.tool, c.args, env)));
  t.deepEqual(inProcess, programs);
  t.deepEqual(inProcess[0], { code: 0, stdout: "80\n", stderr: "" });
  t.is(inProcess[3]!.code, 2, "a refused status is misuse, as from the program");
  // A tool no wrapper exists for: the agent names the ones it has.
  const [unknown] = await runInProcess(server, [{ tool: "no-such-tool", args: [] }], env);
  t.is(unknown!.code, 2);
  t.regex(unknown!.stderr, /no-such-tool: not a hook tool this agent provides \(available: status-set/);

  // Input reaches the tool only where the program would read stdin: the refusal names its size.
  const big = "k: " + "v".repeat(200_000);
  const [withInput, argvOnly] = await runInProcess(
    server,
    [
      { tool: "secret-add", args: ["--file", "-"], input: big },
      { tool: "secret-add", args: ["a=b"], input: big },
    ],
    env,
  );
  t.is(withInput!.code, 1);
  t.regex(withInput!.stderr, new RegExp(`the standard input is ${Buffer.byteLength(big)} bytes`));
  t.notRegex(argvOnly!.stderr, /standard input/);

  // A process a hook left running: only the reading tools, as for the programs.
  const outside = { STEWARD_AGENT_SOCKET: server.socketPath, STEWARD_UNIT_CONTEXT_ID: "unit-ctx" };
  const [leader, set] = await runInProcess(
    server,
    [
      { tool: "is-leader", args: [] },
      { tool: "leader-set", args: ["a=b"] },
    ],
    outside,
  );
  t.deepEqual(leader, { code: 0, stdout: "true\n", stderr: "" });
  t.is(set!.code, 2);
  t.regex(set!.stderr, /tools work only inside a running hook/);

  // No hook at all, or no agent behind the socket: misuse, never a throw or a hang.
  const [none] = await runInProcess(server, [{ tool: "is-leader", args: [] }], {});
  t.is(none!.code, 2);
  t.regex(none!.stderr, /must be run from a hook/);
  const [gone] = await runInProcess(server, [{ tool: "is-leader", args: [] }], {
    STEWARD_AGENT_SOCKET: join(dir, "no-agent.sock"),
    STEWARD_CONTEXT_ID: "hook-ctx",
  });
  t.is(gone!.code, 2);
  t.regex(gone!.stderr, /is-leader: cannot reach the agent: .*ENOENT/);
});
