/**
 * A local controller (steward bootstrap) is supervised as local agents are: killed, it comes back;
 * and it does not inherit the bootstrapping shell's environment.
 */
import test from "ava";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { ControllerClient } from "../api";
import { dataDirOf, loadClientConfig } from "../cli";
import { Supervisor } from "../controller";
import { freePort, initLocalController, removeLocalController, startLocalController } from "../substrates";
import { bootstrapOnFreePort, cliRunner } from "./harness/cli";
import { eventually } from "./harness/eventually";
import { killProcessesUnder } from "./harness/processes";

const readPid = async (file: string): Promise<number> => Number(await readFile(file, "utf8").catch(() => "0"));

test.serial("a local controller killed with kill -9 is restarted, and gets none of the shell's secrets", async (t) => {
  const home = await mkdtemp(join(tmpdir(), "steward-lc-"));
  // In the environment of the process that runs bootstrap (this one: the CLI runs in-process).
  process.env.SECRET_TEST = "do-not-leak";
  const steward = cliRunner(home, process.cwd());
  try {
    const boot = await bootstrapOnFreePort(steward, "sup");
    t.is(boot.code, 0, boot.stdout + boot.stderr);
    const entry = (await loadClientConfig(home)).controllers.sup!;
    const pidFile = join(dataDirOf(entry)!, "controller.pid");
    const first = await readPid(pidFile);
    const environ = (await readFile(`/proc/${first}/environ`, "utf8")).split("\0").filter(Boolean);
    const names = environ.map((kv) => kv.slice(0, kv.indexOf("=")));
    t.false(names.includes("SECRET_TEST"), `the controller's environment: ${names.join(" ")}`);
    t.true(names.includes("PATH"), "it keeps PATH (etcd, hooks)");
    t.deepEqual(
      names.filter((n) => !["PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "STEWARD_LOG_LEVEL"].includes(n)),
      [],
      "nothing else",
    );

    process.kill(first, "SIGKILL");
    const second = await eventually(
      "a new controller process",
      async () => {
        const pid = await readPid(pidFile);
        return pid !== first && pid > 0 ? pid : undefined;
      },
      60_000,
      200,
    );
    t.not(second, first);
    const client = new ControllerClient({
      addresses: entry.addresses,
      caCert: entry.caCert,
      user: "admin",
      password: entry.password!,
    });
    try {
      await eventually(
        "the restarted controller answers",
        async () =>
          await client.listModels().then(
            () => true,
            () => false,
          ),
        30_000,
        200,
      );
    } finally {
      client.close();
    }
    const log = await readFile(join(dataDirOf(entry)!, "controller.log"), "utf8");
    t.regex(log, /supervisor: the controller killed by SIGKILL after \d+ s; restarting it in 1 s/);
    const gone = await steward("destroy-controller", "sup", "--yes", "--timeout", "5s");
    t.is(gone.code, 0, gone.stderr);
    await eventually(
      "no process left under the controller's directory",
      async () => {
        const pids = await Promise.all(
          [second].map((p) =>
            readFile(`/proc/${p}/status`, "utf8").then(
              () => p,
              () => 0,
            ),
          ),
        );
        return pids.every((p) => p === 0);
      },
      20_000,
    );
  } finally {
    delete process.env.SECRET_TEST;
    await killProcessesUnder(home);
    await rm(home, { recursive: true, force: true });
  }
});

test("a controller that keeps dying at once is given up with one clear line", async (t) => {
  const lines: string[] = [];
  const supervisor = new Supervisor({
    command: [process.execPath, "-e", "process.exit(3)"],
    log: (level, line) => lines.push(`${level} ${line}`),
    maxImmediateCrashes: 3,
    initialBackoffMs: 10,
  });
  t.is(await supervisor.run(), 1);
  t.is(lines.filter((l) => l.includes("restarting it in")).length, 2, lines.join("\n"));
  t.regex(
    lines.at(-1)!,
    /^error supervisor: the controller exited with code 3; it died within 10 s of starting 3 times in a row, so it is not restarted again/,
  );
});

test("a controller whose first run never served is not restarted", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-sup-"));
  try {
    const lines: string[] = [];
    const supervisor = new Supervisor({
      command: [process.execPath, "-e", "process.exit(2)"],
      log: (level, line) => lines.push(`${level} ${line}`),
      readyFile: join(dir, "ready"),
    });
    t.is(await supervisor.run(), 1);
    t.deepEqual(lines, ["error supervisor: the controller exited with code 2 before it served; not restarting it"]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("local bootstrap runs the controller's own init: a chosen admin password works, and a second init keeps the directory", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-init-"));
  const dataDir = join(dir, "ctl");
  try {
    const port = await freePort("127.0.0.1");
    const password = "chosen password, with spaces and 'quotes'";
    const uuid = "0b6f3c2e-9a41-4d7e-8f10-2c3d4e5f6a7b";
    const init = await initLocalController({
      dataDir,
      name: "chosen",
      listen: { host: "127.0.0.1", port },
      adminPassword: password,
      uuid,
    });
    t.true(init.created);
    t.regex(init.caCert, /BEGIN CERTIFICATE/);
    const again = await initLocalController({ dataDir, name: "chosen", listen: { host: "127.0.0.1", port } });
    t.deepEqual(
      [again.created, again.caCert, again.adminPassword],
      [false, init.caCert, undefined],
      "an existing directory is kept, and its password not shown",
    );
    const addresses = await startLocalController(dataDir, init.caCert);
    const client = new ControllerClient({ addresses, caCert: init.caCert, user: "admin", password });
    t.truthy(await client.login());
    t.is(
      (await client.controllerInfo()).uuid,
      uuid,
      "the UUID chosen before init (what cloud instances are tagged with)",
    );
    client.close();
  } finally {
    await removeLocalController(dataDir);
    await rm(dir, { recursive: true, force: true });
  }
});

test("a failing init says why", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-init-"));
  try {
    // Under a regular file, no directory can be made.
    await writeFile(join(dir, "file"), "");
    const dataDir = join(dir, "file", "ctl");
    const err = await t.throwsAsync(
      initLocalController({ dataDir, name: "x", listen: { host: "127.0.0.1", port: 1 } }),
    );
    t.regex(err?.message ?? "", /creating the controller's data directory .*file\/ctl failed: .*ENOTDIR/);
    const badUuid = await t.throwsAsync(
      initLocalController({
        dataDir: join(dir, "ctl"),
        name: "x",
        listen: { host: "127.0.0.1", port: 1 },
        uuid: "not-a-uuid",
      }),
    );
    t.regex(badUuid?.message ?? "", /--uuid "not-a-uuid" is not a UUID/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
