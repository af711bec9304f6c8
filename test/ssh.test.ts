/**
 * Installing agents over SSH on real sshd test hosts (network, PID, UTS and mount namespaces on a
 * bridge with no uplink). Needs root; test/harness/setup-host.sh installs openssh-server and sudo.
 */
import test from "ava";
import { join } from "node:path";
import type { StewardError } from "../api";
import { Controller, initControllerDir } from "../controller";
import { ControllerClient, readOperatorDir, silentLogger } from "../api";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import { connect, createServer } from "node:net";
import type { AddressInfo, Socket } from "node:net";
import * as substrates from "../substrates";
import { tmpdir } from "node:os";
import type { TestHost } from "./harness/hosts";
import { SUDO_USER, TestLab } from "./harness/hosts";
import { eventually } from "./harness/eventually";
import { operatorsDir } from "./harness/controller";
import { cliRunner } from "./harness/cli";
import { loginToken, openConsole } from "./harness/web-console";
import { loadClientConfig } from "../cli";

const run = promisify(execFile);
const root = process.getuid?.() === 0;
const ssh = root ? test.serial : test.skip; // skipped only without root: namespaces and sshd need it

let lab: TestLab;
let controller: Controller;
let client: ControllerClient;
let dir: string;

test.before(async () => {
  if (!root) return;
  // Host 2 has no Node.js; host 3 is reached as a non-root user with passwordless sudo.
  // Host 7 gets a controller bootstrapped over SSH.
  lab = await TestLab.create(7, (i) => ({ noNode: i === 1 }));
  dir = await mkdtemp(join(tmpdir(), "steward-ssh-"));
  const init = await initControllerDir({ dataDir: dir, name: "ssh", listen: { host: `${lab.subnet}.1`, port: 0 } });
  controller = await Controller.start({ dataDir: dir, log: silentLogger });
  client = new ControllerClient({
    addresses: controller.apiAddresses,
    caCert: init.caCert,
    user: "admin",
    password: init.adminPassword!,
  });
  await client.createModel("bare");
});
test.after.always(async () => {
  client?.close();
  await controller?.stop().catch(() => undefined);
  await lab?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const target = (
  h: TestHost,
  over: Partial<{ user: string; privateKey: string; hostKey: string; trustOnFirstUse: boolean }> = {},
) => ({
  host: h.ip,
  user: h.index === 3 ? SUDO_USER : "root",
  privateKey: lab.clientKey,
  hostKey: h.hostKeyFingerprint,
  ...over,
});

async function machineOf(h: TestHost): Promise<
  | {
      id: string;
      status: string;
      message: string;
      install?: { state: string; step: string; changed?: boolean; bytesUploaded?: number };
    }
  | undefined
> {
  return (await client.listMachines("bare")).find((m) => m.address === h.ip);
}
/** Waits until the host's agent is installed and connected. */
const started = (h: TestHost, timeoutMs = 60_000) =>
  eventually(
    `${h.name} installed and started`,
    async () => {
      const m = await machineOf(h);
      if (m?.install?.state === "failed") throw new Error(m.install.step);
      return m?.status === "started" && m.install?.state === "installed" ? m : undefined;
    },
    timeoutMs,
    200,
  );

ssh("agents install on five hosts in parallel and an operator deploys there", async (t) => {
  t.timeout(300_000);
  const hosts = lab.hosts.slice(0, 5);
  const added = await Promise.all(hosts.map((h) => client.addSshMachine("bare", target(h))));
  t.deepEqual(
    added.map((a) => a.machines[0]!.hostKey),
    hosts.map((h) => h.hostKeyFingerprint),
  );
  // One host gets the 52 MB Node binary while four others install beside it: on a loaded machine
  // that alone has taken over a minute.
  const machines = await Promise.all(hosts.map((h) => started(h, 180_000)));
  // The host without Node got this controller's; the others use their own.
  t.is((await lab.hosts[1]!.exec("ls /opt/steward/node/*/node")).code, 0);
  t.not((await lab.hosts[0]!.exec("ls /opt/steward/node/*/node")).code, 0);
  t.true(machines[1]!.install!.bytesUploaded! > 50_000_000, "the Node binary was shipped");
  t.true(
    machines[0]!.install!.bytesUploaded! < 1_000_000,
    `only the agent bundle went to a host with Node (${machines[0]!.install!.bytesUploaded} bytes)`,
  );
  // What one host has installed is invisible on another (private paths per host).
  t.is((await lab.hosts[0]!.exec("ls /var/lib/steward/agents")).stdout.trim().split("\n").length, 1);
  const cfg = await lab.hosts[2]!.exec("stat -c %a /var/lib/steward/agents/*/agent.json");
  t.is(cfg.stdout.trim(), "600", "the config with the credential is 0600");

  const op = await readOperatorDir(join(operatorsDir, "motd"));
  await client.uploadOperator(op.bundle);
  await client.deploy("bare", { name: "motd", operator: op.hash, units: 5, to: machines.map((m) => m.id) });
  await eventually(
    "5 units active on the SSH hosts",
    async () => {
      const units = Object.values((await client.status("bare")).applications.motd?.units ?? {});
      return units.length === 5 && units.every((u) => u.workload.current === "active" && u.agent.current === "idle");
    },
    60_000,
    250,
  );
  t.is(
    (await lab.hosts[3]!.exec("cat /var/lib/steward/agents/*/units/motd-*/data/motd.txt")).stdout.trim(),
    "Welcome to Steward",
  );
});

ssh("installing again on an installed host changes nothing and says so", async (t) => {
  t.timeout(240_000);
  const h = lab.hosts[0]!;
  const before = (await machineOf(h))!;
  const again = await client.addSshMachine("bare", target(h));
  t.is(again.machines[0]!.id, before.id, "the same machine, not a second one");
  // It still waits for the agent's login: 30 s ran out on a loaded machine.
  const m = await eventually(
    "the second install finished",
    async () => {
      const x = await machineOf(h);
      return x?.install?.state === "installed" && x.install.step !== before.install?.step ? x : undefined;
    },
    120_000,
    200,
  ).catch(async () => (await machineOf(h))!);
  t.is(m.install!.changed, false);
  t.is(m.install!.step, "already installed; nothing changed");
  t.is(m.install!.bytesUploaded, 0);
});

ssh("a wrong host key is refused naming both fingerprints, and nothing is installed", async (t) => {
  const h = lab.hosts[5]!;
  const wrong = "SHA256:" + "A".repeat(43);
  const err = await t.throwsAsync<StewardError>(client.addSshMachine("bare", target(h, { hostKey: wrong })));
  t.is(err?.code, "forbidden");
  t.true(err!.message.includes(wrong) && err!.message.includes(h.hostKeyFingerprint), err!.message);
  t.is(await machineOf(h), undefined);
  t.not((await h.exec("ls /var/lib/steward/agents")).code, 0, "nothing installed");
});

ssh("a wrong private key is a clear authentication error", async (t) => {
  const keyDir = await mkdtemp(join(tmpdir(), "steward-key-"));
  await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(keyDir, "other")]);
  const other = await readFile(join(keyDir, "other"), "utf8");
  const err = await t.throwsAsync<StewardError>(
    client.addSshMachine("bare", target(lab.hosts[5]!, { privateKey: other })),
  );
  t.is(err?.code, "unauthorized");
  t.regex(err!.message, /refused the private key \(authentication failed\)/);
  const none = await t.throwsAsync<StewardError>(
    client.addSshMachine("bare", { host: lab.hosts[5]!.ip, user: "root", privateKey: lab.clientKey }),
  );
  t.regex(none!.message, /no host key pinned/);
  const garbage = await t.throwsAsync<StewardError>(
    client.addSshMachine("bare", target(lab.hosts[5]!, { privateKey: "not a key" })),
  );
  t.regex(garbage!.message, /private key for .* cannot be read/);
});

ssh("a host reached through a jump host: the jump host's key is verified too", async (t) => {
  const [jumpHost, h] = [lab.hosts[0]!, lab.hosts[5]!];
  const jump = { host: jumpHost.ip, user: "root", hostKey: "SHA256:" + "B".repeat(43) };
  const wrongJump = await t.throwsAsync<StewardError>(client.addSshMachine("bare", { ...target(h), jump }));
  t.is(wrongJump?.code, "forbidden");
  t.true(
    wrongJump!.message.includes(jumpHost.ip) && wrongJump!.message.includes(jumpHost.hostKeyFingerprint),
    wrongJump!.message,
  );
  // With the jump host's real key the connection goes through (and the target's key is still checked).
  const wrongTarget = await t.throwsAsync<StewardError>(
    client.addSshMachine("bare", {
      ...target(h, { hostKey: "SHA256:" + "C".repeat(43) }),
      jump: { ...jump, hostKey: jumpHost.hostKeyFingerprint },
    }),
  );
  t.true(wrongTarget!.message.includes(h.hostKeyFingerprint), wrongTarget!.message);
  t.is(await machineOf(h), undefined, "nothing was added");
});

ssh("an install cut off half-way fails clearly and the next run finishes it", async (t) => {
  t.timeout(420_000);
  const h = lab.hosts[5]!; // no agent yet; has Node
  await client.addSshMachine("bare", target(h));
  await eventually(
    "the install under way",
    async () => (await machineOf(h))?.install?.state === "installing",
    10_000,
    20,
  );
  await h.cut();
  const failed = await eventually(
    "the install failed",
    async () => {
      const m = await machineOf(h);
      return m?.install?.state === "failed" ? m : undefined;
    },
    90_000,
    200,
  );
  t.is(failed.status, "error");
  await h.restore();
  await client.addSshMachine("bare", target(h));
  // The second install waits for the agent's login too; on a loaded machine that has taken over a minute.
  let last: unknown;
  const m = await eventually(
    "the install finished",
    async () => {
      const x = await machineOf(h);
      last = x?.install;
      return x?.install?.state === "installed" ? x : undefined;
    },
    180_000,
    200,
  ).catch((err: unknown) => {
    t.log(`the install's last state: ${JSON.stringify(last)}`);
    throw err;
  });
  t.is(m.status, "started");
  t.is(m.install!.changed, true);
});

ssh("a rebooted host brings its agent back", async (t) => {
  const h = lab.hosts[2]!;
  await started(h);
  const since = async (): Promise<string | undefined> =>
    (await client.status("bare")).machines[(await machineOf(h))!.id]?.status.since;
  const before = await since();
  await h.restart(); // every process on the host dies; its init then starts what was registered for boot
  // A new connection from the rebooted host (its presence is dated anew).
  await eventually(
    "the agent reconnected after the reboot",
    async () => {
      const m = await machineOf(h);
      const s = await since();
      return m?.status === "started" && s !== before;
    },
    60_000,
    200,
  );
  t.regex((await h.exec("ps -eo args")).stdout, /main\.js --dir \/var\/lib\/steward\/agents/);
});

ssh(
  "a host rebooted with another address: its unit runs start (the reboot) and config-changed (the address), and serves and publishes there",
  async (t) => {
    const h = lab.hosts[2]!;
    const m = (await started(h))!;
    const op = await readOperatorDir(join(operatorsDir, "hello-http"));
    await client.uploadOperator(op.bundle);
    await client.deploy("bare", { name: "web", operator: op.hash, units: 1, to: [m.id] });
    const serving = (ip: string) =>
      eventually(
        `web/0 serving on ${ip}`,
        async () => {
          const u = (await client.status("bare")).applications.web?.units["web/0"];
          return u?.workload.current === "active" && u.workload.message.startsWith(`serving on http://${ip}:`)
            ? u.workload.message
            : undefined;
        },
        60_000,
        250,
      );
    await serving(h.ip);
    // hello-http serves from config-changed: wait for start too, or the reboot can cut the deploy short.
    await eventually(
      "web/0 started",
      async () =>
        (
          await h.exec(
            "grep -h 'hook completed' /var/lib/steward/agents/*/agent.log | grep -c 'unit=web/0 hook=start' || true",
          )
        ).stdout.trim() === "1",
      30_000,
      200,
    );

    await h.readdress(`${lab.subnet}.${120 + h.index}`); // powered off, a new lease, booted
    // start once more (the workload died with the host), then config-changed (the address moved);
    // install did not. (Hooks the operator does not have, such as leader-elected, are not logged.)
    const expected = ["install", "config-changed", "start", "start", "config-changed"];
    let hooks: string[] = [];
    await eventually(
      "web/0's hooks after the reboot",
      async () => {
        hooks = (
          await h.exec(
            "grep -h 'hook completed' /var/lib/steward/agents/*/agent.log | grep -o 'unit=web/0 hook=[a-z-]*'",
          )
        ).stdout
          .trim()
          .split("\n")
          .map((l) => l.slice("unit=web/0 hook=".length));
        return hooks.length >= expected.length;
      },
      60_000,
      200,
    ).catch(() => undefined);
    if (hooks.join() !== expected.join())
      t.log((await h.exec("tail -n 60 /var/lib/steward/agents/*/agent.log")).stdout);
    t.deepEqual(hooks, expected);
    // The URL it reports now (config-changed restarted the server, on a new free port) answers.
    let answer = "";
    await eventually(
      "web/0 answers at the URL it reports",
      async () => {
        const url = /(http:\/\/\S+)/.exec(await serving(h.ip))![1]!;
        answer = await fetch(url).then(
          (r) => r.text(),
          () => "",
        );
        return answer.includes("web/0");
      },
      20_000,
      250,
    ).catch(() => undefined);
    t.regex(answer, /web\/0/, "the server answers on the new address");
  },
);

ssh("remove-machine uninstalls the agent and leaves the host clean", async (t) => {
  const h = lab.hosts[4]!;
  const m = (await machineOf(h))!;
  await client.removeMachine("bare", m.id, true);
  await eventually("the machine gone", async () => (await machineOf(h)) === undefined, 30_000, 200);
  await eventually(
    "the host clean",
    async () =>
      (await h.exec("ls -A /var/lib/steward /opt/steward /etc/steward/boot.d")).stdout.trim() ===
      "/etc/steward/boot.d:\n\n/opt/steward:\n\n/var/lib/steward:",
    20_000,
    200,
  ).catch(() => undefined);
  t.is(
    (
      await h.exec("ls -A /var/lib/steward /opt/steward /etc/steward/boot.d | grep -v ':$' | grep -v '^$'")
    ).stdout.trim(),
    "",
    "nothing left",
  );
  t.notRegex((await h.exec("ps -eo args")).stdout, /main\.js --dir/);
});

ssh(
  "a model destroyed by force: its agent over SSH finds its machine gone and uninstalls itself; the host's other agent stays",
  async (t) => {
    const h = lab.hosts[5]!; // also runs an agent of the "bare" model (the install cut-off test)
    const { uuid } = await client.createModel("forced");
    const machine = (await client.addSshMachine("forced", target(h))).machines[0]!;
    await eventually(
      "the forced model's agent started",
      async () => (await client.listMachines("forced")).find((m) => m.id === machine.id)?.status === "started",
      60_000,
      200,
    );
    const agents = async (): Promise<string> => (await h.exec("ls /var/lib/steward/agents")).stdout;
    t.true((await agents()).includes(`${uuid}-${machine.id}`));

    // No machine is marked dying: the records vanish, and the agent is told only that much (4404).
    await client.destroyModel("forced", true);
    const gone = await eventually(
      "the agent uninstalled itself",
      async () => !(await agents()).includes(uuid),
      30_000,
      200,
    ).catch(() => false);
    t.true(gone, await agents());
    t.notRegex((await h.exec("ps -eo args")).stdout, new RegExp(`agents/${uuid}`));
    t.regex(await agents(), /\S/, "the bare model's agent on the same host is untouched");
    t.is((await machineOf(h))?.status, "started");
  },
);

ssh("a controller bootstrapped on a host over SSH is driven from the CLI", async (t) => {
  const home = await mkdtemp(join(tmpdir(), "steward-ssh-cli-"));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const keyFile = join(home, "id_ed25519");
  await writeFile(keyFile, lab.clientKey, { mode: 0o600 });
  const steward = cliRunner(home, process.cwd());
  const [c, m] = [lab.hosts[6]!, lab.hosts[4]!]; // host 5 was cleaned by the remove-machine test
  const boot = await steward(
    "bootstrap",
    `ssh:root@${c.ip}`,
    "remote",
    "--key-file",
    keyFile,
    "--host-key",
    c.hostKeyFingerprint,
  );
  t.is(boot.code, 0, boot.stdout + boot.stderr);
  t.regex(
    boot.stdout,
    new RegExp(
      `Bootstrapped controller "remote" on ${c.ip.replace(/\./g, "\\.")} at ${c.ip.replace(/\./g, "\\.")}:17070`,
    ),
  );
  t.regex(
    (await c.exec("ps -eo args")).stdout,
    /controller-bundle\/main\.js --data-dir \/var\/lib\/steward\/controller/,
  );
  t.is((await steward("add-model", "far")).code, 0);
  const add = await steward(
    "add-machine",
    `ssh:root@${m.ip}`,
    "--key-file",
    keyFile,
    "--host-key",
    m.hostKeyFingerprint,
  );
  t.is(add.code, 0, add.stdout + add.stderr);
  t.regex(add.stderr, /agent running/);
  const machines = JSON.parse((await steward("machines", "--format", "json")).stdout) as {
    id: string;
    address: string;
  }[];
  t.deepEqual(
    machines.map((x) => x.address),
    [m.ip],
  );
  const deploy = await steward(
    "deploy",
    "operators/motd",
    "-n",
    "1",
    "--to",
    machines[0]!.id,
    "--wait",
    "--timeout",
    "90s",
  );
  t.is(deploy.code, 0, deploy.stdout + deploy.stderr);
  const status = JSON.parse((await steward("status", "--format", "json")).stdout) as {
    applications: Record<string, { units: Record<string, { workload: { current: string } }> }>;
  };
  t.is(status.applications.motd!.units["motd/0"]!.workload.current, "active");
  // The dashboard's console pane there runs the CLI bundle shipped beside the controller's.
  const entry = (await loadClientConfig(home)).controllers.remote!;
  const token = await loginToken(entry.addresses[0]!, entry.caCert, entry.user, entry.password!);
  const pane = await openConsole(entry.addresses[0]!, entry.caCert, { authorization: `Bearer ${token}` });
  try {
    pane.type("status -m far\r");
    await pane.waitFor(/^motd\/0\*?\s+active\s+idle/m);
  } finally {
    pane.ws.close();
  }
  // Bootstrapping again where a controller runs changes nothing and says what to do.
  const again = await steward(
    "bootstrap",
    `ssh:root@${c.ip}`,
    "remote2",
    "--key-file",
    keyFile,
    "--host-key",
    c.hostKeyFingerprint,
  );
  t.is(again.code, 1);
  t.regex(again.stdout + again.stderr, /already runs a controller that this client does not know/);
});

ssh("a session whose connection the host resets does not take the process down; its next command fails", async (t) => {
  const h = lab.hosts[6]!;
  // A proxy in front of the host's sshd that can answer with a TCP reset, as a host that reboots or drops state does.
  const sockets: Socket[] = [];
  const proxy = createServer((inbound) => {
    const outbound = connect(22, h.ip);
    sockets.push(inbound, outbound);
    inbound.pipe(outbound).pipe(inbound);
    inbound.on("error", () => undefined);
    outbound.on("error", () => undefined);
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  t.teardown(() => {
    proxy.close();
    for (const s of sockets) s.destroy();
  });
  const port = (proxy.address() as AddressInfo).port;
  const session = await substrates.ssh.SshSession.connect({ ...target(h), host: "127.0.0.1", port, user: "root" });
  t.is((await session.run("echo up")).stdout.trim(), "up");
  const uncaught: unknown[] = [];
  const record = (err: unknown): void => {
    uncaught.push(err);
  };
  process.on("uncaughtException", record);
  t.teardown(() => {
    process.off("uncaughtException", record);
  });
  for (const s of sockets) s.resetAndDestroy();
  await new Promise((r) => setTimeout(r, 500));
  t.deepEqual(uncaught.map(String), [], "the reset is not an uncaught exception");
  await t.throwsAsync(session.run("echo again"));
  session.close();
});
