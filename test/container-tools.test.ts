/**
 * The container-* hook tools against a real supervisor: their arguments (misuse exits 2, refusals
 * exit 1, --help), the layer from a file or stdin, services, exec's exit code, push and pull; and
 * their refusal off Kubernetes. The path through a pod is in workload-containers.test.ts.
 */
import test from "ava";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { UnitView } from "../api";
import type { HookContext } from "../agent";
import { Supervisor, SupervisorClient, runTool } from "../agent";

function context(workload?: HookContext["workload"]): HookContext {
  const view: UnitView = {
    name: "web/0",
    app: "web",
    life: "alive",
    operator: { hash: "h", name: "op", version: "1" },
    config: {},
    leader: false,
    leaderKnown: true,
    leaderSettingsVersion: 0,
    relations: [],
  };
  const none = async (): Promise<void> => undefined;
  return {
    unit: "web/0",
    hook: "web-workload-ready",
    view: () => view,
    workloadStatus: () => ({ status: "active", message: "" }),
    setWorkloadStatus: none,
    setAppStatus: none,
    setVersion: none,
    log: () => undefined,
    isLeader: async () => false,
    leaderGet: async () => ({}),
    leaderSet: none,
    relationGet: async () => ({}),
    relationSet: () => undefined,
    openPort: () => undefined,
    closePort: () => undefined,
    openedPorts: () => [],
    readiness: () => ({ ready: false, reason: "", source: "workload" }),
    setReadiness: none,
    ...(workload ? { workload } : {}),
  };
}

let dir: string;
let sup: Supervisor;
let ctx: HookContext;
test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), "steward-ctools-"));
  sup = await Supervisor.start({
    container: "app",
    socketPath: join(dir, "run", "app.sock"),
    log: () => undefined,
    onShutdown: () => undefined,
  });
  ctx = context({
    containers: async () => ["app"],
    client: (name) => new SupervisorClient(join(dir, "run", `${name}.sock`), name),
  });
});
test.after.always(async () => {
  await sup?.stop();
  await rm(dir, { recursive: true, force: true });
});

test("off Kubernetes the tools refuse, saying where workload containers exist", async (t) => {
  const r = await runTool(context(), "container-services", ["app"]);
  t.is(r.code, 1);
  t.regex(
    r.stderr!,
    /container-services: web\/0 has no workload containers: they run only in Kubernetes pods, declared under containers: in operator.yaml/,
  );
});

test("misuse exits 2 with the usage; an unknown container is refused naming the pod's containers; --help", async (t) => {
  const start = await runTool(ctx, "container-start", ["app"]);
  t.is(start.code, 2);
  t.regex(start.stderr!, /name the container and at least one service\nusage: container-start CONTAINER SERVICE/);
  const unknown = await runTool(ctx, "container-services", ["db"]);
  t.is(unknown.code, 1);
  t.regex(unknown.stderr!, /no workload container "db" in this pod \(containers: app\)/);
  t.regex(
    (await runTool(ctx, "container-exec", ["--help"])).stdout!,
    /^usage: container-exec CONTAINER \[--timeout SECONDS\]/,
  );
  t.is((await runTool(ctx, "container-push", ["app", "x", "relative/dest"])).code, 2);
  t.is((await runTool(ctx, "container-push", ["app", "x", "/etc/x", "--mode", "rw"])).code, 2);
});

test("container-layer-set reads a YAML file relative to the hook's directory, or the layer on stdin; a bad layer is refused naming the field", async (t) => {
  writeFileSync(join(dir, "layer.yaml"), "services:\n  sleeper:\n    command: sleep 1000\n    startup: enabled\n");
  const set = await runTool(ctx, "container-layer-set", ["app", "--file", "layer.yaml"], { cwd: dir });
  t.is(set.code, 0, set.stderr);
  t.is(set.stdout, "started: sleeper\n");
  const list = JSON.parse((await runTool(ctx, "container-services", ["app", "--format", "json"])).stdout!) as {
    name: string;
    current: string;
  }[];
  t.deepEqual(
    list.map((s) => [s.name, s.current]),
    [["sleeper", "active"]],
  );
  t.regex(
    (await runTool(ctx, "container-services", ["app"])).stdout!,
    /^SERVICE\s+STARTUP\s+CURRENT\s+RESTARTS\s+NOTES\nsleeper\s+enabled\s+active\s+0\n$/,
  );
  const fromStdin = await runTool(ctx, "container-layer-set", ["app"], {
    stdin: JSON.stringify({ services: { sleeper: { command: "sleep 1001", startup: "enabled" } } }),
  });
  t.is(fromStdin.stdout, "restarted: sleeper\n");
  const bad = await runTool(ctx, "container-layer-set", ["app"], {
    stdin: "services:\n  sleeper:\n    command: sleep 1\n    on-failure: retry\n",
  });
  t.is(bad.code, 1);
  t.regex(
    bad.stderr!,
    /container-layer-set: the layer on stdin: "services.sleeper.on-failure" must be one of restart, ignore, shutdown/,
  );
  const empty = await runTool(ctx, "container-layer-set", ["app"], { stdin: "" });
  t.regex(empty.stderr!, /the layer on stdin is empty/);
  const missing = await runTool(ctx, "container-layer-set", ["app", "-f", "nope.yaml"], { cwd: dir });
  t.regex(missing.stderr!, /cannot read nope.yaml/);
  t.is((await runTool(ctx, "container-stop", ["app", "sleeper"])).code, 0);
  t.regex((await runTool(ctx, "container-services", ["app"])).stdout!, /sleeper\s+enabled\s+inactive/);
  const noSuch = await runTool(ctx, "container-restart", ["app", "nginx"]);
  t.is(noSuch.code, 1);
  t.regex(noSuch.stderr!, /no service "nginx" in the layer \(services: sleeper\)/);
});

test("container-exec prints the output and exits with the command's code; past --timeout it exits 124", async (t) => {
  const r = await runTool(ctx, "container-exec", ["app", "--", "sh", "-c", "echo out; echo err >&2; exit 3"]);
  t.deepEqual(r, { code: 3, stdout: "out\n", stderr: "err\n" });
  const wd = await runTool(ctx, "container-exec", ["app", "--workdir", dir, "--", "pwd"]);
  t.is(wd.stdout, `${dir}\n`);
  const slow = await runTool(ctx, "container-exec", ["app", "--timeout", "0.3", "--", "sleep", "20"]);
  t.is(slow.code, 124);
  t.regex(slow.stderr!, /sleep was killed after 0.3 s/);
  t.is((await runTool(ctx, "container-exec", ["app", "--timeout", "0", "--", "true"])).code, 2);
});

test("container-exec --stdin gives the command the hook's input; without it the command reads nothing", async (t) => {
  const input = "SELECT 'secret';\n";
  const fed = await runTool(ctx, "container-exec", ["app", "--stdin", "--", "cat"], { stdin: input });
  t.deepEqual(fed, { code: 0, stdout: input, stderr: "" });
  // A command's own -h after -- is its own (psql -h HOST): the input still goes with --stdin.
  const own = await runTool(ctx, "container-exec", ["app", "--stdin", "--", "sh", "-c", "cat", "-h"], {
    stdin: input,
  });
  t.is(own.stdout, input);
  const unfed = await runTool(ctx, "container-exec", ["app", "--", "cat"], { stdin: input });
  t.deepEqual(unfed, { code: 0, stdout: "", stderr: "" });
});

test("container-push and container-pull copy files with their mode", async (t) => {
  writeFileSync(join(dir, "conf.ini"), "port=8080\n");
  const dest = join(dir, "in-container", "etc", "app.ini");
  t.is((await runTool(ctx, "container-push", ["app", "conf.ini", dest, "--mode", "0600"], { cwd: dir })).code, 0);
  t.is(readFileSync(dest, "utf8"), "port=8080\n");
  t.is(statSync(dest).mode & 0o777, 0o600);
  t.is((await runTool(ctx, "container-pull", ["app", dest, "back.ini"], { cwd: dir })).code, 0);
  t.is(readFileSync(join(dir, "back.ini"), "utf8"), "port=8080\n");
  const gone = await runTool(ctx, "container-pull", ["app", "/no/such/file", "x"], { cwd: dir });
  t.is(gone.code, 1);
  t.regex(gone.stderr!, /container-pull: \/no\/such\/file does not exist/);
});
