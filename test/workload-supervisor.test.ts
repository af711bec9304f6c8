/**
 * The workload supervisor (Pebble's role) with real service processes: restart by policy with a
 * growing back-off, start/stop, exec, push/pull, bad and oversized requests answered without the
 * supervisor going down, and SIGTERM passed on to the services when the container stops.
 */
import test from "ava";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecResult, PingResult, PullResult, ReplanResult, ServiceInfo } from "../agent";
import { LayerError, Supervisor, SupervisorClient, checkLayer, installSupervisor, splitCommand } from "../agent";
import { eventually } from "./harness/eventually";

interface Setup {
  dir: string;
  sup: Supervisor;
  client: SupervisorClient;
}

async function setup(o: { healthPort?: number } = {}): Promise<Setup> {
  const dir = await mkdtemp(join(tmpdir(), "steward-sup-"));
  const socketPath = join(dir, "run", "web.sock");
  const sup = await Supervisor.start({
    container: "web",
    socketPath,
    ...o,
    healthHost: "127.0.0.1",
    log: () => undefined,
    onShutdown: () => undefined,
  });
  return { dir, sup, client: new SupervisorClient(socketPath, "web") };
}
async function teardown(s: Setup): Promise<void> {
  await s.sup.stop();
  await rm(s.dir, { recursive: true, force: true });
}
const service = async (c: SupervisorClient, name: string): Promise<ServiceInfo | undefined> =>
  (await c.call<ServiceInfo[]>({ op: "services" })).find((x) => x.name === name);
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Sends raw bytes on the socket; the answer's error as "code: message" (or what came, if not one). */
function raw(socketPath: string, bytes: Buffer | string, end = true): Promise<string> {
  return new Promise<string>((resolve) => {
    const sock = connect(socketPath);
    let got = "";
    sock.on("connect", () => {
      sock.write(bytes);
      if (end) sock.end();
    });
    sock.on("data", (d: Buffer) => {
      got += d.toString();
    });
    sock.on("error", () => resolve(got));
    sock.on("close", () => resolve(got));
  }).then((got) => {
    try {
      const r = JSON.parse(got) as { error?: { code: string; message: string } };
      return r.error ? `${r.error.code}: ${r.error.message}` : got;
    } catch {
      return got;
    }
  });
}

test("a service that exits is restarted by its policy, each wait at least the last one times the factor", async (t) => {
  const s = await setup();
  t.teardown(() => teardown(s));
  const starts = join(s.dir, "starts");
  const layer = {
    services: {
      flaky: {
        command: ["sh", "-c", `date +%s%3N >> ${starts}; exit 3`],
        startup: "enabled",
        "on-failure": "restart",
        "backoff-delay": "100ms",
        "backoff-factor": 2,
        "backoff-limit": "2s",
      },
    },
  };
  const plan = await s.client.call<ReplanResult>({ op: "layer", layer });
  t.deepEqual(plan.started, ["flaky"]);
  const lines = await eventually(
    "four starts",
    async () => {
      const l = (await readFile(starts, "utf8").catch(() => "")).trim().split("\n").filter(Boolean).map(Number);
      return l.length >= 4 ? l : undefined;
    },
    20_000,
  );
  // Back-off waits 100, 200, 400 ms: each gap is at least that (the time to start a process only adds).
  const gaps = lines.slice(1, 4).map((v, i) => v - lines[i]!);
  [100, 200, 400].forEach((min, i) => t.true(gaps[i]! >= min - 2, `gap ${i + 1} is ${gaps[i]} ms, at least ${min}`));
  const info = await service(s.client, "flaky");
  t.true(info!.restarts >= 3);
  t.is(info!.lastExit?.code, 3);
  t.true(["backoff", "active"].includes(info!.current), info!.current);
  // Stopping a service in back-off ends the restarts.
  await s.client.call({ op: "stop", services: ["flaky"] });
  t.is((await service(s.client, "flaky"))!.current, "inactive");
  const count = (await readFile(starts, "utf8")).trim().split("\n").length;
  await new Promise((r) => setTimeout(r, 1500));
  t.is((await readFile(starts, "utf8")).trim().split("\n").length, count, "no start after stop");
});

test("on-failure ignore leaves the service in error; on-success ignore leaves it inactive", async (t) => {
  const s = await setup();
  t.teardown(() => teardown(s));
  await s.client.call({
    op: "layer",
    layer: {
      services: {
        bad: { command: "sh -c 'exit 4'", startup: "enabled", "on-failure": "ignore" },
        good: { command: "true", startup: "enabled", "on-success": "ignore" },
      },
    },
  });
  const bad = await eventually(
    "bad in error",
    async () => {
      const i = await service(s.client, "bad");
      return i?.current === "error" ? i : undefined;
    },
    10_000,
  );
  t.is(bad.restarts, 0);
  t.regex(bad.message ?? "", /code 4/);
  await eventually(
    "good inactive after exiting 0",
    async () =>
      (await service(s.client, "good"))?.lastExit?.code === 0 &&
      (await service(s.client, "good"))?.current === "inactive",
    10_000,
  );
});

test("on-failure shutdown ends the supervisor with a failure, so the kubelet restarts the container", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-sup-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  let ended: (code: number) => void = () => undefined;
  const code = new Promise<number>((resolve) => {
    ended = resolve;
  });
  const sup = await Supervisor.start({
    container: "w",
    socketPath: join(dir, "w.sock"),
    log: () => undefined,
    onShutdown: (c) => ended(c),
  });
  t.teardown(() => sup.stop());
  await new SupervisorClient(join(dir, "w.sock"), "w").call({
    op: "layer",
    layer: { services: { main: { command: "sh -c 'exit 2'", startup: "enabled", "on-failure": "shutdown" } } },
  });
  t.is(await code, 1);
  t.false(existsSync(join(dir, "w.sock")), "it stopped serving");
});

test("start, stop and restart a service; replan restarts a changed one and stops a removed one", async (t) => {
  const s = await setup();
  t.teardown(() => teardown(s));
  const plan = await s.client.call<ReplanResult>({
    op: "layer",
    layer: { services: { sleeper: { command: "sleep 1000" }, other: { command: "sleep 1001" } } },
  });
  t.deepEqual(plan, { started: [], stopped: [], restarted: [] }, "startup disabled: nothing started");
  t.is((await service(s.client, "sleeper"))!.current, "inactive");
  await s.client.call({ op: "start", services: ["sleeper", "other"] });
  const pid = (await service(s.client, "sleeper"))!.pid!;
  t.true(alive(pid));
  await s.client.call({ op: "restart", services: ["sleeper"] });
  const pid2 = (await service(s.client, "sleeper"))!.pid!;
  t.not(pid2, pid);
  t.false(alive(pid), "the old process is gone");
  await s.client.call({ op: "stop", services: ["sleeper"] });
  t.is((await service(s.client, "sleeper"))!.current, "inactive");
  t.false(alive(pid2));
  const otherPid = (await service(s.client, "other"))!.pid!;
  const re = await s.client.call<ReplanResult>({
    op: "layer",
    layer: { services: { sleeper: { command: "sleep 1002", startup: "enabled" } } },
  });
  t.deepEqual(re, { started: ["sleeper"], stopped: ["other"], restarted: [] });
  t.false(alive(otherPid), "a service left out of the new layer is stopped");
  const unknown = await t.throwsAsync(s.client.call({ op: "start", services: ["nope"] }));
  t.regex(unknown!.message, /no service "nope" in the layer \(services: sleeper\)/);
  const missing = await t.throwsAsync(
    s.client.call({ op: "layer", layer: { services: { x: { command: "/no/such/program", startup: "enabled" } } } }),
  );
  t.regex(missing!.message, /could not start \/no\/such\/program/);
  t.is((await service(s.client, "x"))!.current, "error");
});

test("changes sent at once are applied one at a time: a service replaced by five concurrent layers runs once", async (t) => {
  const s = await setup();
  t.teardown(() => teardown(s));
  // The running service takes a moment to stop, so the five replans would overlap if not serialized.
  await s.client.call({
    op: "layer",
    layer: {
      services: {
        svc: {
          command: ["sh", "-c", "trap 'sleep 0.3; exit 0' TERM; while :; do sleep 0.05; done"],
          startup: "enabled",
        },
      },
    },
  });
  const marker = `1000.${process.pid}${Date.now() % 100000}`; // a sleep no other process runs
  const layer = { services: { svc: { command: ["sleep", marker], startup: "enabled" } } };
  const plans = await Promise.all(Array.from({ length: 5 }, () => s.client.call<ReplanResult>({ op: "layer", layer })));
  t.is(plans.filter((p) => p.restarted.includes("svc")).length, 1, JSON.stringify(plans));
  const running = await s.client.call<ExecResult>({ op: "exec", command: ["pgrep", "-f", `sleep ${marker}`] });
  t.is(running.stdout.trim().split("\n").filter(Boolean).length, 1, `one process: ${running.stdout}`);
});

test("exec returns the output and exit code, and a command past its timeout is killed", async (t) => {
  const s = await setup();
  t.teardown(() => teardown(s));
  const r = await s.client.call<ExecResult>({
    op: "exec",
    command: ["sh", "-c", 'echo out; echo "$GREETING" >&2; cat; exit 7'],
    environment: { GREETING: "hi" },
    stdin: "from stdin\n",
  });
  t.deepEqual(r, { exitCode: 7, stdout: "out\nfrom stdin\n", stderr: "hi\n", timedOut: false, truncated: false });
  const slow = await s.client.call<ExecResult>({ op: "exec", command: ["sleep", "30"], timeoutMs: 300 });
  t.true(slow.timedOut);
  t.not(slow.exitCode, 0);
  const none = await s.client.call<ExecResult>({ op: "exec", command: ["/no/such/program"] });
  t.is(none.exitCode, 127);
  t.regex(none.stderr, /cannot run \/no\/such\/program/);
  const big = await s.client.call<ExecResult>({
    op: "exec",
    command: ["head", "-c", String(3 * 1024 * 1024), "/dev/zero"],
  });
  t.true(big.truncated);
  t.is(big.stdout.length, 1024 * 1024);
});

test("push writes a file with its mode (making directories), pull reads it back; bad paths are refused", async (t) => {
  const s = await setup();
  t.teardown(() => teardown(s));
  const path = join(s.dir, "etc", "app", "conf.ini");
  await s.client.call({ op: "push", path, content: Buffer.from("a=1\n").toString("base64"), mode: 0o600 });
  t.is(readFileSync(path, "utf8"), "a=1\n");
  t.is(statSync(path).mode & 0o777, 0o600);
  const pulled = await s.client.call<PullResult>({ op: "pull", path });
  t.is(Buffer.from(pulled.content, "base64").toString(), "a=1\n");
  t.is(pulled.mode, 0o600);
  const missing = await t.throwsAsync(s.client.call({ op: "pull", path: join(s.dir, "nope") }));
  t.regex(missing!.message, /does not exist/);
  const relative = await t.throwsAsync(s.client.call({ op: "push", path: "etc/x", content: "" }));
  t.regex(relative!.message, /must be absolute/);
  const noDirs = await t.throwsAsync(
    s.client.call({ op: "push", path: join(s.dir, "a", "b"), content: "", makeDirs: false }),
  );
  t.regex(noDirs!.message, /does not exist/);
});

test("bad, unknown, empty and oversized requests are answered with an error and the supervisor stays up", async (t) => {
  const s = await setup();
  t.teardown(() => teardown(s));
  const sock = s.client.socketPath;
  t.regex(await raw(sock, "not json\n"), /^bad-request: the request is not JSON/);
  t.regex(await raw(sock, "[1,2]\n"), /must be a JSON object/);
  t.regex(await raw(sock, '{"op":"format-disk"}\n'), /unknown op "format-disk"/);
  t.regex(await raw(sock, ""), /empty request/);
  t.regex(await raw(sock, '{"op":"ping"}'), /did not end with a newline/);
  t.regex(
    await raw(sock, '{"op":"layer","layer":{"services":{"a":{"command":""}}}}\n'),
    /bad layer: "services.a.command" is empty/,
  );
  t.regex(await raw(sock, '{"op":"exec","command":"ls"}\n'), /command must be a non-empty list/);
  t.regex(await raw(sock, '{"op":"push","path":"/tmp/x","content":7}\n'), /base64/);
  t.regex(
    await raw(sock, Buffer.alloc(9 * 1024 * 1024, 0x61), false),
    /^too-large: the request is larger than 8388608 bytes/,
  );
  const ping = await s.client.call<PingResult>({ op: "ping" });
  t.is(ping.container, "web");
  t.is(ping.bootId, s.sup.bootId);
});

test("the container's probe endpoint answers while the supervisor runs", async (t) => {
  const s = await setup({ healthPort: 0 });
  t.teardown(() => teardown(s));
  const status = await new Promise<number>((resolve, reject) => {
    request({ host: "127.0.0.1", port: s.sup.healthPort, path: "/v1/health" }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on("error", reject)
      .end();
  });
  t.is(status, 200);
});

test("SIGTERM to the supervisor process is passed on to its services, then it exits 0", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-sup-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const socketPath = join(dir, "w.sock");
  const proc = spawn(
    process.execPath,
    [join(__dirname, "..", "agent", "workload", "supervisor-main.js"), "--socket", socketPath, "--container", "w"],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  t.teardown(() => {
    if (proc.exitCode === null) proc.kill("SIGKILL");
  });
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  await eventually("the socket", () => existsSync(socketPath), 10_000);
  const client = new SupervisorClient(socketPath, "w");
  const marker = join(dir, "got-term");
  await client.call({
    op: "layer",
    layer: {
      services: {
        svc: {
          command: ["sh", "-c", `trap 'echo TERM > ${marker}; exit 0' TERM; while :; do sleep 0.05; done`],
          startup: "enabled",
          "kill-delay": "10s",
        },
      },
    },
  });
  const pid = (await service(client, "svc"))!.pid!;
  await new Promise((r) => setTimeout(r, 200)); // the trap is set
  proc.kill("SIGTERM");
  t.is(await exited, 0);
  t.is(readFileSync(marker, "utf8").trim(), "TERM", "the service got SIGTERM (not SIGKILL)");
  t.false(alive(pid));
});

test("layers are checked: commands split as a shell would, unknown fields and bad values named", (t) => {
  t.deepEqual(splitCommand(`python3 -c 'print("a b")' "x y" z\\ w`), ["python3", "-c", 'print("a b")', "x y", "z w"]);
  const l = checkLayer({
    services: { web: { command: "srv --port 80", environment: { PORT: 80 }, "backoff-delay": "1s" } },
  });
  t.deepEqual(l.services.web!.command, ["srv", "--port", "80"]);
  t.is(l.services.web!.environment.PORT, "80");
  t.is(l.services.web!.startup, "disabled");
  t.is(l.services.web!.backoffDelayMs, 1000);
  const problem = (raw: unknown): string => {
    try {
      checkLayer(raw);
      return "accepted";
    } catch (err) {
      t.true(err instanceof LayerError);
      return (err as Error).message;
    }
  };
  t.regex(
    problem({ services: { web: { command: "x", restart: "always" } } }),
    /"services.web.restart" is not a known service field/,
  );
  t.regex(problem({ services: { web: { command: "x 'y" } } }), /"services.web.command" has an unclosed ' quote/);
  t.regex(
    problem({ services: { web: { command: "x", "on-failure": "retry" } } }),
    /must be one of restart, ignore, shutdown/,
  );
  t.regex(
    problem({ services: { web: { command: "x", "backoff-delay": "soon" } } }),
    /must be a duration such as 500ms/,
  );
  t.regex(problem({ services: { Web: { command: "x" } } }), /not a valid service name/);
  t.regex(problem({ services: { web: { command: "x", "working-dir": "srv" } } }), /must be an absolute path/);
  t.regex(problem("services: {}"), /a layer must be a mapping/);
});

test("the init container's step places node and the supervisor, with a socket directory any user may create in", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-inst-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const bundle = join(dir, "bundle.js");
  writeFileSync(bundle, "// the supervisor\n");
  const placed = await installSupervisor(join(dir, "steward"), { bundle });
  t.deepEqual(placed, { node: join(dir, "steward", "node"), script: join(dir, "steward", "supervisor.js") });
  t.is(statSync(placed.node).size, statSync(process.execPath).size);
  t.true((statSync(placed.node).mode & 0o111) !== 0, "node is executable");
  t.is(readFileSync(placed.script, "utf8"), "// the supervisor\n");
  t.is(statSync(join(dir, "steward", "run")).mode & 0o7777, 0o1777);
  await t.throwsAsync(installSupervisor(join(dir, "other"), { bundle: join(dir, "missing.js") }), {
    message: /the supervisor bundle .*missing.js is missing/,
  });
});
