/**
 * A cloud launch that a stopping leader cuts short, against the FAKE EC2 endpoint (test/harness/fake-ec2.ts)
 * whose instances are real test hosts that apply their user data. The instance's boot is held, so the
 * leader is stopped while it waits for the agent to enrol: the stop ends the wait at once and records
 * nothing more (the machine stays `installing`, no failure), and the next leader, on the same store,
 * resumes it: it finds the instance by its tags, launches nothing new, and records the machine installed
 * once the agent enrols.
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MachineInfo } from "../api";
import { ControllerClient, readOperatorDir, silentLogger } from "../api";
import { Controller, initControllerDir } from "../controller";
import { fakeEc2Boot } from "./harness/cloud-init";
import { operatorsDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { FakeEc2, createModelOnFake } from "./harness/fake-ec2";
import { TestLab } from "./harness/hosts";

const root = process.getuid?.() === 0;
const aws = root ? test.serial : test.skip; // namespaces need root

const region = "eu-west-1";
const awsKey = { accessKeyId: "AKIAFAKEEC2TEST00002", secretAccessKey: "fake-secret-for-the-fake-ec2-endpoint-0002" };
let lab: TestLab;
let fake: FakeEc2;
let dir: string;
let controller: Controller | undefined;
let openGate: () => void = () => undefined;

test.before(async () => {
  if (!root) return;
  lab = await TestLab.create(0);
  const boot = fakeEc2Boot(lab);
  const gate = new Promise<void>((resolve) => {
    openGate = resolve;
  });
  // Instances stay pending (no host, no user data run) until the gate opens.
  fake = new FakeEc2({ region, credentials: awsKey, boot: async (i) => gate.then(() => boot(i)) });
  dir = await mkdtemp(join(tmpdir(), "steward-cloud-cancel-"));
});
test.after.always(async () => {
  openGate();
  await controller?.stop().catch(() => undefined);
  await fake?.stop().catch(() => undefined);
  await lab?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A port free on `host` now: the controller keeps it across its restart, so the instance's user data still reaches it. */
async function freePort(host: string): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

aws("a leader stopped while its instance boots leaves the machine to the next, which resumes it", async (t) => {
  t.timeout(300_000);
  await fake.start();
  const host = `${lab.subnet}.1`;
  const init = await initControllerDir({ dataDir: dir, name: "cancel", listen: { host, port: await freePort(host) } });
  const start = async (): Promise<ControllerClient> => {
    controller = await Controller.start({ dataDir: dir, log: silentLogger, cloudPollIntervalMs: 300 });
    return new ControllerClient({
      addresses: controller.apiAddresses,
      caCert: init.caCert,
      user: "admin",
      password: init.adminPassword!,
    });
  };
  let client = await start();
  await createModelOnFake(fake, client, "shop");
  const op = await client.uploadOperator((await readOperatorDir(join(operatorsDir, "motd"))).bundle);
  await client.deploy("shop", { name: "motd", operator: op.hash, units: 1 });
  const machine = async (c: ControllerClient): Promise<MachineInfo | undefined> => (await c.listMachines("shop"))[0];
  let last: unknown;
  await eventually(
    "the instance launched and awaited",
    async () => {
      const m = await machine(client);
      last = { install: m?.install, instances: fake.instances().length };
      return fake.instances().length === 1 && m?.install?.step.includes("waiting for its agent");
    },
    60_000,
    100,
  ).catch((err: unknown) => {
    t.log(`last seen: ${JSON.stringify(last)}`);
    throw err;
  });
  const waiting = (await machine(client))!;
  t.is(waiting.install?.state, "installing");

  await controller!.stop();
  client.close();
  client = await start();
  t.teardown(() => client.close());
  // The next leader: the machine as the stopped one left it, still installing (not failed), then resumed.
  const left = (await machine(client))!;
  t.is(left.install?.state, "installing", `left as: ${JSON.stringify(left.install)}`);
  openGate();
  const done = await eventually(
    "the resumed machine installed",
    async () => {
      const m = await machine(client);
      if (m?.install?.state === "failed") throw new Error(m.install.step);
      return m?.install?.state === "installed" && m.status === "started" ? m : undefined;
    },
    180_000,
    250,
  );
  t.is(fake.instances().length, 1, "no second instance was launched");
  t.is(done.instance?.id, fake.instances()[0]!.id);
  t.is(done.install?.step, "agent enrolled");
});
