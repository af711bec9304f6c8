/**
 * An SSH install that a stopping controller cuts short: the replica's SSH provisioner is a worker, so
 * its stop aborts the install in flight (the session closes at once), records that it was interrupted
 * and only then lets the controller stop; adding the machine again finishes the install. The install is
 * held mid-way by a real sshd test host whose `sha256sum` waits for a gate file (bound over the real one
 * in the host's own mount namespace), so the stop lands while the install is certainly still running.
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MachineInfo } from "../api";
import { ControllerClient, silentLogger } from "../api";
import { Controller, initControllerDir } from "../controller";
import { eventually } from "./harness/eventually";
import type { TestHost } from "./harness/hosts";
import { TestLab } from "./harness/hosts";

const root = process.getuid?.() === 0;
const ssh = root ? test.serial : test.skip; // skipped only without root: namespaces and sshd need it

const GATE = "/tmp/steward-test-gate";
/** Waits for the gate, then does what sha256sum does (with the real binary, copied aside first). */
const HELD = "/tmp/steward-test-held";
const HELD_SHA256SUM = `#!/bin/sh\ntouch ${HELD}\nwhile [ ! -e ${GATE} ]; do sleep 0.1; done\nexec /tmp/steward-real-sha256sum "$@"\n`;

let lab: TestLab;
let dir: string;
let controller: Controller | undefined;

test.before(async () => {
  if (!root) return;
  lab = await TestLab.create(1);
  dir = await mkdtemp(join(tmpdir(), "steward-ssh-cancel-"));
});
test.after.always(async () => {
  await controller?.stop().catch(() => undefined);
  await lab?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function startController(password: string, caCert: string): Promise<ControllerClient> {
  controller = await Controller.start({ dataDir: dir, log: silentLogger });
  return new ControllerClient({ addresses: controller.apiAddresses, caCert, user: "admin", password });
}

/** Makes the host's sha256sum wait for the gate (bound over the real one in the host's mount namespace only). */
async function holdChecksums(h: TestHost): Promise<void> {
  const script = Buffer.from(HELD_SHA256SUM).toString("base64");
  const res = await h.exec(
    `rm -f ${GATE} ${HELD} && cp /usr/bin/sha256sum /tmp/steward-real-sha256sum && echo ${script} | base64 -d > /tmp/held-sha256sum && chmod 755 /tmp/held-sha256sum && mount --bind /tmp/held-sha256sum /usr/bin/sha256sum && echo held`,
  );
  if (!res.stdout.includes("held")) throw new Error(`could not hold sha256sum on ${h.name}`);
}

ssh("a controller stopped mid-install ends the install at once, says so, and the next add finishes it", async (t) => {
  t.timeout(360_000);
  const h = lab.hosts[0]!;
  const init = await initControllerDir({ dataDir: dir, name: "cancel", listen: { host: `${lab.subnet}.1`, port: 0 } });
  let client = await startController(init.adminPassword!, init.caCert);
  await client.createModel("bare");
  const target = { host: h.ip, user: "root", privateKey: lab.clientKey, hostKey: h.hostKeyFingerprint };
  await holdChecksums(h);

  const added = await client.addSshMachine("bare", target);
  const id = added.machines[0]!.id;
  const machine = async (c: ControllerClient): Promise<MachineInfo | undefined> =>
    (await c.listMachines("bare")).find((m) => m.id === id);
  // Held at the bundle's checksum: facts and Node are done, nothing of the agent is on the host yet.
  await eventually(
    "the install held at the agent bundle",
    async () => (await h.exec(`test -e ${HELD}`)).code === 0,
    60_000,
    100,
  );
  t.is((await machine(client))?.install?.state, "installing");

  const stopping = Date.now();
  await controller!.stop();
  t.log(`the controller stopped ${Date.now() - stopping} ms after being asked, the install held`);
  client.close();
  // Stopped while the host still held the install: it was cut short, not finished or failed by itself.
  t.is((await h.exec(`test -e ${GATE}`)).code, 1, "the gate was never opened");

  // Let the held command go: nothing more of the install happens on the host.
  await h.exec(`touch ${GATE}`);
  await new Promise((r) => setTimeout(r, 2000));
  t.is((await h.exec("ls /var/lib/steward/agents 2>/dev/null | wc -l")).stdout.trim(), "0", "no agent was installed");
  t.notRegex((await h.exec("ps -eo args")).stdout, /main\.js --dir/, "no agent runs");

  client = await startController(init.adminPassword!, init.caCert);
  t.teardown(() => client.close());
  const interrupted = await machine(client);
  t.is(interrupted?.install?.state, "failed");
  t.regex(interrupted?.install?.step ?? "", /^interrupted: .*add the machine again/);

  await client.addSshMachine("bare", target);
  const done = await eventually(
    "the next install finished",
    async () => {
      const m = await machine(client);
      return m?.install?.state === "installed" && m.status === "started" ? m : undefined;
    },
    180_000,
    200,
  );
  t.is(done.install!.changed, true);
});
