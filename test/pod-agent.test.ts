/**
 * The agent as a Kubernetes pod's agent container (`main.js --pod`), as real processes against a
 * real controller, with what a pod has made by hand: the mounted Secret is a directory holding
 * `agent-<ordinal>.conf`, the claim is a directory that outlives the process, and the downward API
 * is POD_NAME / POD_UID / POD_IP. The machines are manual ones (their credential is handed out
 * once), as the Kubernetes provisioner's will be; which machine a pod is stays its business.
 */
import test from "ava";
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { get } from "node:http";
import { join } from "node:path";
import type { AgentConfig } from "../api";
import { Agent, adoptMountedConfig } from "../agent";
import {
  AGENT_CONFIG_FILE,
  POD_LIVENESS_PATH,
  POD_READINESS_PATH,
  agentConfigText,
  podAgentConfigKey,
  silentLogger,
} from "../api";
import { freePort } from "../substrates";
import type { TestController } from "./harness/controller";
import { allReady, fixturesDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";

const agentEntry = join(__dirname, "..", "agent", "main.js");

let tc: TestController;
test.before(async () => {
  tc = await startTestController();
});
test.after.always(async () => {
  await tc?.close();
});

interface Pod {
  /** The claim: the agent's directory. */
  dir: string;
  /** The mounted Secret. */
  configs: string;
  record: string;
  port: number;
}

interface RunningPod {
  child: ChildProcess;
  log: () => Promise<string>;
  stop: () => Promise<void>;
}

async function newPod(name: string): Promise<Pod> {
  const base = await mkdtemp(join(tc.dir, `pod-${name}-`));
  const pod = {
    dir: join(base, "claim"),
    configs: join(base, "secret"),
    record: join(base, "record"),
    port: await freePort("127.0.0.1"),
  };
  for (const d of [pod.configs, pod.record]) await mkdir(d);
  return pod;
}

/** Starts the pod's agent container (a pod named `podName`, uid `uid`) and returns it. */
function runPod(pod: Pod, podName: string, uid: string): RunningPod {
  const logFile = join(pod.record, `agent-${uid}.log`);
  const child = spawn(
    process.execPath,
    [agentEntry, "--pod", "--dir", pod.dir, "--configs", pod.configs, "--health-port", String(pod.port)],
    {
      env: { ...process.env, POD_NAME: podName, POD_UID: uid, POD_IP: "127.0.0.1" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    child,
    log: async () => {
      await writeFile(logFile, out);
      return out;
    },
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

/** GET on the pod's probe port: status and body. */
function probe(pod: Pod, path: string, method = "GET"): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get({ host: "127.0.0.1", port: pod.port, path, method, timeout: 2000 }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => {
        body += d.toString();
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error("probe timed out")));
    req.on("error", reject);
  });
}

/** A model with one manual machine running one unit of the pod-ready operator; answers the machine's agent configuration. */
async function modelWithUnit(model: string, pod: Pod, config: Record<string, string> = {}): Promise<AgentConfig> {
  const { uuid } = await tc.admin.createModel(model, { updateStatusInterval: 1 });
  const [machine] = (await tc.admin.addMachines(model, "manual", 1)).machines;
  const op = await tc.upload(join(fixturesDir, "operators", "pod-ready"));
  await tc.admin.deploy(model, {
    name: "db",
    operator: op,
    units: 1,
    to: [machine!.id],
    config: { "record-dir": pod.record, ...config },
  });
  return {
    model: uuid,
    machine: machine!.id,
    credential: machine!.credential!,
    controllerAddresses: tc.addresses,
    caCert: tc.caCert,
  };
}

async function hooksRun(pod: Pod): Promise<string[]> {
  return (await readFile(join(pod.record, "hooks.log"), "utf8").catch(() => ""))
    .split("\n")
    .filter(Boolean)
    .map((l) => l.split(" ")[1]!);
}

const mount = (pod: Pod, ordinal: number, cfg: AgentConfig): Promise<void> =>
  writeFile(join(pod.configs, podAgentConfigKey(ordinal)), agentConfigText(cfg), { mode: 0o600 });

test.serial(
  "a pod's agent serves its probes at once, waits for its configuration, then runs its unit from it",
  async (t) => {
    const pod = await newPod("wait");
    const cfg = await modelWithUnit("pod-wait", pod);
    const running = runPod(pod, "db-3", "uid-wait-1");
    t.teardown(() => running.stop());
    await eventually(
      "the probes answer",
      () =>
        probe(pod, POD_LIVENESS_PATH).then(
          (r) => r.status === 200,
          () => false,
        ),
      10_000,
    );
    const notYet = await eventually(
      "not ready, waiting",
      async () => {
        const r = await probe(pod, POD_READINESS_PATH);
        return r.body.includes("waiting for") ? r : undefined;
      },
      10_000,
    );
    t.is(notYet.status, 503);
    t.regex(notYet.body, /^no unit on this pod yet: waiting for .*\/agent-3\.conf/);
    // Polled every second, said once.
    await new Promise((r) => setTimeout(r, 2500));
    t.is(
      (await running.log()).split("\n").filter((l) => l.includes("waiting for")).length,
      1,
      "the wait is logged once",
    );
    t.is(running.child.exitCode, null, "still running");

    await mount(pod, 3, cfg);
    await tc.waitForUnits("pod-wait", allReady(1), "db/0 active", 30_000);
    t.deepEqual(
      (await hooksRun(pod)).filter((h) => h !== "update-status"),
      ["install", "leader-elected", "config-changed", "start"],
    );
    t.deepEqual(
      JSON.parse(await readFile(join(pod.dir, AGENT_CONFIG_FILE), "utf8")),
      cfg,
      "the mounted configuration is the agent's",
    );
    const ready = await eventually(
      "ready",
      async () => {
        const r = await probe(pod, POD_READINESS_PATH);
        return r.status === 200 ? r : undefined;
      },
      10_000,
    );
    t.is(ready.body, "db/0 ready\n");
    t.is((await probe(pod, "/metrics")).status, 404);
    t.is((await probe(pod, POD_READINESS_PATH, "POST")).status, 405);
    t.is((await probe(pod, POD_LIVENESS_PATH, "HEAD")).status, 200);
  },
);

test.serial(
  "a recreated pod (new uid, same claim) runs start again; a restarted container (same uid) does not; a stale credential on the claim is replaced",
  async (t) => {
    const pod = await newPod("boot");
    const cfg = await modelWithUnit("pod-boot", pod);
    await mount(pod, 0, cfg);
    let running = runPod(pod, "db-0", "uid-a");
    t.teardown(() => running.stop());
    await tc.waitForUnits("pod-boot", allReady(1), "db/0 active");
    t.is((await hooksRun(pod)).filter((h) => h === "start").length, 1);

    // The container restarts: same pod, same uid. It runs update-status again (every second), never start.
    await running.stop();
    let from = (await hooksRun(pod)).length;
    running = runPod(pod, "db-0", "uid-a");
    await eventually(
      "update-status after the container's restart",
      async () => (await hooksRun(pod)).slice(from).includes("update-status"),
      20_000,
    );
    t.false(
      (await hooksRun(pod)).slice(from).includes("start"),
      `start ran again in the same pod: ${(await hooksRun(pod)).slice(from).join(" ")}`,
    );

    // The pod is recreated (same claim, new uid), and its claim holds a configuration with an old credential.
    await running.stop();
    await writeFile(join(pod.dir, AGENT_CONFIG_FILE), agentConfigText({ ...cfg, credential: "an-old-credential" }));
    from = (await hooksRun(pod)).length;
    running = runPod(pod, "db-0", "uid-b");
    await eventually(
      "start after the pod was recreated",
      async () => (await hooksRun(pod)).slice(from).includes("start"),
      20_000,
    );
    t.is(
      JSON.parse(await readFile(join(pod.dir, AGENT_CONFIG_FILE), "utf8")).credential,
      cfg.credential,
      "the mounted credential replaced the old one",
    );
    t.regex(await running.log(), /agent configuration replaced from/);
    t.deepEqual(
      (await hooksRun(pod)).slice(from).filter((h) => h !== "update-status"),
      ["start"],
      "only start: the unit's hook state was on the claim",
    );
    await tc.waitForUnits("pod-boot", allReady(1), "db/0 active again");
  },
);

test.serial(
  "a pod whose machine was removed takes the next machine mounted for its number (a scale down and up its StatefulSet saw as one), without a restart",
  async (t) => {
    const pod = await newPod("next");
    const cfg = await modelWithUnit("pod-next", pod);
    await mount(pod, 0, cfg);
    const running = runPod(pod, "db-0", "uid-next");
    t.teardown(() => running.stop());
    await tc.waitForUnits("pod-next", allReady(1), "db/0 active");
    await tc.admin.removeUnit("pod-next", "db/0");
    await tc.waitForUnits("pod-next", (units) => units.length === 0, "db/0 gone");
    await tc.admin.removeMachine("pod-next", cfg.machine);
    await eventually(
      "the agent idles, its machine removed",
      async () => /the agent idles/.test(await running.log()),
      30_000,
    );

    // The provisioner gives this pod's number to a new unit on a new machine: its configuration is mounted in place.
    const [next] = (await tc.admin.addMachines("pod-next", "manual", 1)).machines;
    await tc.admin.addUnits("pod-next", "db", 1, [next!.id]);
    const from = (await hooksRun(pod)).length;
    await mount(pod, 0, { ...cfg, machine: next!.id, credential: next!.credential! });
    await tc.waitForUnits("pod-next", allReady(1), "db/1 active on the same pod");
    t.deepEqual(Object.keys((await tc.admin.status("pod-next")).applications.db!.units), ["db/1"]);
    t.true((await hooksRun(pod)).slice(from).includes("install"), "the new unit was installed");
    t.is(JSON.parse(await readFile(join(pod.dir, AGENT_CONFIG_FILE), "utf8")).machine, next!.id);
    t.is(running.child.exitCode, null, "the same container runs on");
  },
);

test("the claim's configuration is kept for the same machine, credential and controller; one pinning another CA (the model migrated) gives way to the mounted one", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-adopt-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const source: AgentConfig = {
    model: "m",
    machine: "0",
    credential: "c",
    controllerAddresses: ["10.0.0.1:17070"],
    caCert: "SOURCE CA",
  };
  const saved = (): Promise<AgentConfig> =>
    readFile(join(dir, AGENT_CONFIG_FILE), "utf8").then((x) => JSON.parse(x) as AgentConfig);
  t.is(await adoptMountedConfig(dir, source), "created");
  // The agent saved newer addresses of the same controller: they stay.
  await writeFile(
    join(dir, AGENT_CONFIG_FILE),
    agentConfigText({ ...source, controllerAddresses: ["10.0.0.2:17070"] }),
  );
  t.is(await adoptMountedConfig(dir, source), "kept");
  t.deepEqual((await saved()).controllerAddresses, ["10.0.0.2:17070"]);
  await mkdir(join(dir, "units", "db-0"), { recursive: true });
  // The Secret now pins the controller the model moved to: the agent goes there, with its unit state.
  const target = { ...source, controllerAddresses: ["10.0.1.1:17070"], caCert: "TARGET CA" };
  t.is(await adoptMountedConfig(dir, target), "replaced");
  t.deepEqual(await saved(), target);
  t.true(
    (await stat(join(dir, "units", "db-0")).catch(() => undefined))?.isDirectory(),
    "the unit's state stays (same machine)",
  );
});

test.serial("/readyz follows readiness-set, and the active workload status when it was never said", async (t) => {
  const pod = await newPod("ready");
  const cfg = await modelWithUnit("pod-ready", pod, { "workload-status": "waiting" });
  await mount(pod, 0, cfg);
  const running = runPod(pod, "db-0", "uid-r");
  t.teardown(() => running.stop());
  const readyz = (status: number, body: RegExp) =>
    t.notThrowsAsync(
      eventually(
        `/readyz ${status} ${body}`,
        async () => {
          const r = await probe(pod, POD_READINESS_PATH);
          return r.status === status && body.test(r.body) ? r : undefined;
        },
        20_000,
      ),
    );
  await readyz(
    503,
    /^db\/0's workload status is waiting: ready when it is active, or when its operator runs readiness-set ready\n$/,
  );
  await tc.admin.updateApplication("pod-ready", "db", { config: { "workload-status": "active" } });
  await readyz(200, /^db\/0 ready\n$/);
  // The operator's word wins over the workload status, both ways.
  await tc.admin.updateApplication("pod-ready", "db", {
    config: { readiness: "not-ready", "readiness-message": "waiting for 2 peers" },
  });
  await readyz(503, /^db\/0 is not ready: waiting for 2 peers\n$/);
  await tc.admin.updateApplication("pod-ready", "db", {
    config: { readiness: "ready", "workload-status": "maintenance" },
  });
  await readyz(200, /^db\/0 ready\n$/);
  // Kept in the unit's state with the boot it was said in (the probe may answer a moment before it is on disk).
  const said = { ready: true, message: "waiting for 2 peers", bootId: "uid-r" };
  const onDisk = async (): Promise<unknown> =>
    (JSON.parse(await readFile(join(pod.dir, "units", "db-0", "state.json"), "utf8")) as { readiness?: unknown })
      .readiness;
  await eventually(
    "readiness on disk",
    async () => JSON.stringify(await onDisk()) === JSON.stringify(said),
    5000,
  ).catch(() => undefined);
  t.deepEqual(await onDisk(), said);
});

test.serial(
  "the machine's end: the pod's agent reports it and idles, live and not ready, without retrying",
  async (t) => {
    const pod = await newPod("end");
    const cfg = await modelWithUnit("pod-end", pod);
    await mount(pod, 0, cfg);
    const running = runPod(pod, "db-0", "uid-e");
    t.teardown(() => running.stop());
    await tc.waitForUnits("pod-end", allReady(1), "db/0 active");
    await tc.admin.removeUnit("pod-end", "db/0");
    await tc.waitForUnits("pod-end", (units) => units.length === 0, "db/0 gone");
    await tc.admin.removeMachine("pod-end", cfg.machine);
    await eventually("the machine gone", async () => (await tc.admin.listMachines("pod-end")).length === 0, 20_000);
    await eventually(
      "the agent idles",
      async () => /the agent idles until its pod is deleted/.test(await running.log()),
      10_000,
    );
    const lines = (await running.log()).split("\n").length;
    await new Promise((r) => setTimeout(r, 3000));
    t.is(running.child.exitCode, null, "the agent did not exit (the container would be restarted)");
    t.is((await probe(pod, POD_LIVENESS_PATH)).status, 200);
    t.deepEqual(await probe(pod, POD_READINESS_PATH), { status: 503, body: "this machine was removed\n" });
    t.is(
      (await running.log()).split("\n").length,
      lines,
      `nothing more was logged: ${(await running.log())
        .split("\n")
        .slice(lines - 1)
        .join("\n")}`,
    );
  },
);

test.serial("liveness fails only when one hook holds the machine lock longer than any may run", async (t) => {
  const pod = await newPod("wedge");
  const cfg = await modelWithUnit("pod-wedge", pod);
  await mkdir(pod.dir);
  await writeFile(join(pod.dir, AGENT_CONFIG_FILE), agentConfigText(cfg));
  // In this process, to shorten "longer than any may run" (15 minutes; a hook is killed after 10).
  const agent = await Agent.start({ dir: pod.dir, log: silentLogger, pod: true, bootId: "uid-w", wedgedAfterMs: 1500 });
  t.teardown(() => agent.stop());
  await tc.waitForUnits("pod-wedge", allReady(1), "db/0 active");
  t.deepEqual(agent.liveness(), { ok: true, reason: "ok" });
  await tc.admin.updateApplication("pod-wedge", "db", { config: { "hook-seconds": 4 } });
  const wedged = await eventually(
    "live fails while config-changed holds the lock",
    () => (agent.liveness().ok ? undefined : agent.liveness()),
    10_000,
  );
  t.regex(
    wedged.reason,
    /^one hook or action has held the machine lock for \d+ s, longer than any may run: the agent is wedged$/,
  );
  await eventually("live again once the hook is over", () => agent.liveness().ok, 10_000);
  t.is((await hooksRun(pod)).filter((h) => h === "config-changed").length, 2);
});

test.serial("a pod agent started wrongly exits at once saying what to fix", async (t) => {
  const pod = await newPod("bad");
  const run = (args: string[], env: Record<string, string>): Promise<{ code: number | null; err: string }> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [agentEntry, "--pod", "--dir", pod.dir, ...args], {
        env: { ...process.env, ...env },
        stdio: ["ignore", "ignore", "pipe"],
      });
      let err = "";
      child.stderr!.on("data", (d: Buffer) => {
        err += d.toString();
      });
      child.once("exit", (code) => resolve({ code, err }));
    });
  const configs = ["--configs", pod.configs, "--health-port", String(pod.port)];
  t.like(await run(configs, { POD_NAME: "db", POD_UID: "u" }), {
    code: 1,
    err: 'agent failed to start: pod name "db" does not end in -<ordinal> (as a StatefulSet\'s pods do, e.g. "db-2"): set POD_NAME from the pod\'s metadata.name\n',
  });
  t.like(await run(configs, { POD_NAME: "db-0" }), { code: 1 });
  t.regex((await run(configs, { POD_NAME: "db-0" })).err, /POD_UID is not set/);
  t.regex(
    (await run(["--health-port", "1"], { POD_NAME: "db-0", POD_UID: "u" })).err,
    /--pod needs --configs CONFIG_DIR \(or STEWARD_AGENT_CONFIGS\)/,
  );
  t.regex(
    (await run(["--configs", pod.configs, "--health-port", "http"], { POD_NAME: "db-0", POD_UID: "u" })).err,
    /--health-port must be a port number from 0 to 65535 \(got "http"\)/,
  );
});

// Last: it stops the controller.
test.serial(
  "/livez stays 200 while the controller is stopped; readiness holds, even across a container restart",
  async (t) => {
    const pod = await newPod("live");
    const cfg = await modelWithUnit("pod-live", pod, { readiness: "ready" });
    await mount(pod, 0, cfg);
    let running = runPod(pod, "db-0", "uid-l");
    t.teardown(() => running.stop());
    await tc.waitForUnits("pod-live", allReady(1), "db/0 active");
    await eventually("ready", async () => (await probe(pod, POD_READINESS_PATH)).status === 200, 10_000);
    await tc.controller.stop();
    // Longer than three of the agent's pings (5 s): it has noticed and is redialling.
    await eventually(
      "the agent notices",
      async () => /disconnected from controller|cannot reach any controller/.test(await running.log()),
      20_000,
    );
    for (let i = 0; i < 6; i++) {
      t.is((await probe(pod, POD_LIVENESS_PATH)).status, 200);
      t.is((await probe(pod, POD_READINESS_PATH)).status, 200);
      await new Promise((r) => setTimeout(r, 500));
    }
    // The agent container restarts while the controller is still away: the unit's state on the claim answers.
    await running.stop();
    running = runPod(pod, "db-0", "uid-l");
    await eventually(
      "the probes answer again",
      () =>
        probe(pod, POD_LIVENESS_PATH).then(
          (r) => r.status === 200,
          () => false,
        ),
      10_000,
    );
    // Not ready while the agent reads its configuration and starts (a second or two; longer on a busy
    // machine), then ready from what is on the claim.
    const r = await eventually(
      "ready again",
      async () => {
        const p = await probe(pod, POD_READINESS_PATH);
        return /starting|no unit on this pod yet/.test(p.body) ? undefined : p;
      },
      20_000,
    );
    t.deepEqual(r, { status: 200, body: "db/0 ready\n" });
    // Its first dial may come after the probes answer, on a busy machine: wait for it.
    const log = await eventually(
      "the restarted agent finds the controller away",
      async () => {
        const text = await running.log();
        return /cannot reach any controller/.test(text) ? text : undefined;
      },
      30_000,
    );
    t.regex(log, /cannot reach any controller/, "the controller really is away");
  },
);
