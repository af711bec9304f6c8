/**
 * vsphere models end to end: a real controller clones a VM per machine from a template on VMware's
 * own simulator (vcsim, built from Debian's govmomi sources), handing cloud-init the enrolment user
 * data through guestinfo; the harness's guest bridge (the FAKE part: vcsim has no real guests)
 * boots a test host per powered-on VM, runs that user data and reports the host's address as
 * VMware Tools would. The agents enrol and run units; removing a machine destroys its VM; a model
 * migrated to a second controller keeps its VMs, which that controller takes over.
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MachineInfo } from "../api";
import { ControllerClient, readOperatorDir, silentLogger } from "../api";
import { Controller, initControllerDir } from "../controller";
import { implementations } from "../provider";
import { vsphere } from "../substrates";
import { operatorsDir } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { migrateAndWait } from "./harness/migration";
import { TestLab } from "./harness/hosts";
import type { Vcsim } from "./harness/vcsim";
import { startVcsim, vcsimAvailable } from "./harness/vcsim";

const root = process.getuid?.() === 0;
const run = root ? test.serial : test.skip; // namespaces need root
let lab: TestLab;
let vc: Vcsim;
let controller: Controller;
let client: ControllerClient;
let dir: string;
let caCert: string;
let adminPassword: string;

test.before(async () => {
  if (!root) return;
  if (!vcsimAvailable())
    throw new Error("vcsim is not installed: run test/harness/vcsim/build.sh (npm test's pretest does)");
  lab = await TestLab.create(0);
  vc = await startVcsim(lab);
  dir = await mkdtemp(join(tmpdir(), "steward-vsphere-"));
  const init = await initControllerDir({ dataDir: dir, name: "vs", listen: { host: `${lab.subnet}.1`, port: 0 } });
  controller = await Controller.start({ dataDir: dir, log: silentLogger, cloudPollIntervalMs: 500 });
  caCert = init.caCert;
  adminPassword = init.adminPassword!;
  client = new ControllerClient({ addresses: controller.apiAddresses, caCert, user: "admin", password: adminPassword });
  await client.putCredential("lab", "vsphere", { user: vc.user, password: vc.password });
  await client.createModel("estate", undefined, "vsphere", {
    credential: "lab",
    settings: { url: vc.url, datacenter: vc.datacenter, template: vc.template, caCert: vc.caCert },
  });
});
test.after.always(async () => {
  client?.close();
  await controller?.stop().catch(() => undefined);
  await vc?.stop().catch(() => undefined);
  await lab?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const machines = (): Promise<MachineInfo[]> => client.listMachines("estate");

run("units placed without --to get VMs cloned from the template, whose agents enrol themselves", async (t) => {
  t.timeout(180_000);
  const op = await client.uploadOperator((await readOperatorDir(join(operatorsDir, "motd"))).bundle);
  await client.deploy("estate", { name: "motd", operator: op.hash, units: 2 });
  const up = await eventually(
    "two VMs with their agents started",
    async () => {
      const ms = await machines();
      const failed = ms.find((m) => m.install?.state === "failed");
      if (failed) throw new Error(`machine ${failed.id}: ${failed.install!.step}`);
      return ms.length === 2 && ms.every((m) => m.status === "started" && m.instance?.state === "poweredOn")
        ? ms
        : undefined;
    },
    120_000,
    250,
  );
  for (const m of up) {
    t.regex(m.instance!.id, /^vm-\d+$/, "the machine's instance is its VM");
    const bridged = vc.bridge!.vms.get(m.instance!.id);
    t.truthy(bridged, "the VM was booted by the guest bridge");
    t.is(m.address, bridged!.host.ip, "the machine's address is the guest's");
  }
  await eventually(
    "the units active",
    async () => {
      const units = Object.values((await client.status("estate")).applications.motd?.units ?? {});
      return units.length === 2 && units.every((u) => u.workload.current === "active");
    },
    60_000,
    250,
  );

  // Removing a machine destroys its VM (and the guest goes with it).
  const victim = up[0]!;
  await client.removeMachine("estate", victim.id, true);
  await eventually(
    "the machine gone and its VM destroyed",
    async () => {
      const gone = !(await machines()).some((m) => m.id === victim.id);
      const vms = await vc.client.propertiesUnder((await vc.client.serviceContent()).rootFolder, "VirtualMachine", [
        "name",
      ]);
      return gone && !vms.some((v) => v.obj.value === victim.instance!.id);
    },
    60_000,
    250,
  );
  t.is((await machines()).length, 1);
});

run("a vsphere model is refused without its settings, with what to give", async (t) => {
  const err = await t.throwsAsync(client.createModel("nothing", undefined, "vsphere", { credential: "lab" }));
  t.regex(err?.message ?? "", /"settings" is required for a vsphere model: at least url, datacenter and template/);
  const http = await t.throwsAsync(
    client.createModel("plain", undefined, "vsphere", {
      credential: "lab",
      settings: { url: "http://vc/sdk", datacenter: "DC0", template: "t" },
    }),
  );
  t.regex(http?.message ?? "", /"settings\.url" must be vCenter's https:\/\/ SDK URL/);
});

run("constraints size the VM the controller clones; a VM destroyed by hand shows as gone", async (t) => {
  t.timeout(180_000);
  await client.createModel("sized", undefined, "vsphere", {
    credential: "lab",
    settings: { url: vc.url, datacenter: vc.datacenter, template: vc.template, caCert: vc.caCert },
    constraints: "mem=2G",
  });
  const refused = await t.throwsAsync(client.addMachines("sized", "vsphere", 1, "root-disk=40G"));
  t.is(
    refused?.message,
    "constraints: root-disk is not supported on vsphere (a VM is its template's architecture and disk): give cores and mem",
  );
  t.deepEqual(await client.listMachines("sized"), [], "nothing added");

  const {
    machines: [added],
  } = await client.addMachines("sized", "vsphere", 1, "cores=2");
  const m = await eventually(
    "the VM's agent started",
    async () => {
      const found = (await client.listMachines("sized")).find((x) => x.id === added!.id);
      if (found?.install?.state === "failed") throw new Error(found.install.step);
      return found?.status === "started" && found.install?.state === "installed" ? found : undefined;
    },
    120_000,
    250,
  );
  t.is(m.constraints, "cores=2 mem=2G", "its own merged over the model's");
  t.is(m.hardware, "cores=2 mem=2G");
  const vm = new vsphere.MoRef("VirtualMachine", m.instance!.id);
  const hw = (await vc.client.propertiesOf(vm, ["config.hardware.numCPU", "config.hardware.memoryMB"]))!;
  t.is(hw.get("config.hardware.numCPU")?.text, "2", "vSphere says so too");
  t.is(hw.get("config.hardware.memoryMB")?.text, "2048");

  // Destroyed behind the controller's back: not relaunched (as in Juju), but shown as gone.
  await vc.client.runTask("PowerOffVM_Task", vm);
  await vc.client.runTask("Destroy_Task", vm);
  await eventually(
    "the controller records the VM gone",
    async () => (await client.listMachines("sized")).find((x) => x.id === m.id)?.instance?.state === "gone",
    30_000,
    250,
  );
  t.is((await client.listMachines("sized")).length, 1, "the machine stays until it is removed");
  await client.destroyModel("sized", true);
});

run(
  "the Pulumi Machine's provider on vsphere: a VM sized by constraints, its destruction by hand read as drift that replaces it, delete destroys it",
  async (t) => {
    t.timeout(180_000);
    // The provider's implementation straight (the aws one runs through the SDK's process in provider-machine-cloud.test.ts).
    const p = implementations.machine;
    const connection = { addresses: controller.apiAddresses, caCert, user: "admin", password: adminPassword };
    await client.createModel("pulumi", undefined, "vsphere", {
      credential: "lab",
      settings: { url: vc.url, datacenter: vc.datacenter, template: vc.template, caCert: vc.caCert },
    });
    const inputs = {
      connection,
      model: "pulumi",
      substrate: "vsphere" as const,
      constraints: "cores=3 mem=1G",
      timeoutSeconds: 120,
      forceDelete: false,
    };
    t.deepEqual((await p.check({} as never, inputs)).failures, []);
    const created = await p.create(inputs);
    const outs = created.outs as unknown as {
      machineId: string;
      instanceId: string;
      instanceState: string;
      hardware: string;
      status: string;
    };
    t.is(outs.status, "started");
    t.is(outs.instanceState, "poweredOn");
    t.is(outs.hardware, "cores=3 mem=1G");
    const vm = new vsphere.MoRef("VirtualMachine", outs.instanceId);
    t.is((await vc.client.propertiesOf(vm, ["config.hardware.numCPU"]))?.get("config.hardware.numCPU")?.text, "3");

    await vc.client.runTask("PowerOffVM_Task", vm);
    await vc.client.runTask("Destroy_Task", vm);
    await eventually(
      "the controller records the VM gone",
      async () =>
        (await client.listMachines("pulumi")).find((m) => m.id === outs.machineId)?.instance?.state === "gone",
      30_000,
      250,
    );
    await new Promise((r) => setTimeout(r, 2100)); // past the provider's status reuse (provider/impl/session.ts)
    const read = await p.read(created.id, created.outs as never);
    t.is((read.props as { instanceState?: string } | undefined)?.instanceState, "gone");
    const diff = await p.diff(created.id, read.props as never, inputs);
    t.deepEqual(diff.replaces, ["instanceState"], "the next up replaces it");

    await p.delete(created.id, read.props as never);
    t.false(
      (await client.listMachines("pulumi")).some((m) => m.id === outs.machineId),
      "the machine is removed",
    );
    await client.destroyModel("pulumi", true);
  },
);

run(
  "a vsphere model migrates to another controller: its VM and agent go on, the target takes the VM over (marked and renamed as its own), the source no longer finds it",
  async (t) => {
    t.timeout(300_000);
    const targetDir = await mkdtemp(join(tmpdir(), "steward-vsphere-tgt-"));
    const init = await initControllerDir({
      dataDir: targetDir,
      name: "vs-2",
      listen: { host: `${lab.subnet}.1`, port: 0 },
    });
    const target = await Controller.start({ dataDir: targetDir, log: silentLogger, cloudPollIntervalMs: 500 });
    const tgt = new ControllerClient({
      addresses: target.apiAddresses,
      caCert: init.caCert,
      user: "admin",
      password: init.adminPassword!,
    });
    // vCenter as each controller sees it (their placements), for what the source and the target would find.
    const vms = new vsphere.VsphereMachines();
    const settings = { url: vc.url, datacenter: vc.datacenter, template: vc.template, caCert: vc.caCert };
    const credentials = { user: vc.user, password: vc.password };
    const vmProps = async (id: string): Promise<{ name?: string; controller?: string }> => {
      const props = await vc.client.propertiesOf(new vsphere.MoRef("VirtualMachine", id), [
        "name",
        "config.extraConfig",
      ]);
      const controller = vsphere.optionValues(props?.get("config.extraConfig")).get(vsphere.EXTRA_CONFIG.controller);
      return {
        ...(props?.has("name") ? { name: props.get("name")!.text } : {}),
        ...(controller !== undefined ? { controller } : {}),
      };
    };
    const allVms = async (): Promise<string[]> =>
      (await vc.client.propertiesUnder((await vc.client.serviceContent()).rootFolder, "VirtualMachine", ["name"])).map(
        (v) => v.obj.value,
      );
    try {
      await tgt.putCredential("lab", "vsphere", credentials);
      const sourceUuid = (await client.controllerInfo()).uuid,
        targetUuid = (await tgt.controllerInfo()).uuid;
      const op = await client.uploadOperator((await readOperatorDir(join(operatorsDir, "motd"))).bundle);
      const { uuid: model } = await client.createModel("moving", undefined, "vsphere", {
        credential: "lab",
        settings: settings,
      });
      await client.deploy("moving", { name: "motd", operator: op.hash, units: 1 });
      const [m] = await eventually(
        "the machine's VM powered on with its agent",
        async () => {
          const ms = await client.listMachines("moving");
          if (ms[0]?.install?.state === "failed") throw new Error(ms[0].install.step);
          return ms.length === 1 && ms[0]!.status === "started" && ms[0]!.instance?.state === "poweredOn"
            ? ms
            : undefined;
        },
        120_000,
        250,
      );
      const vm = m!.instance!.id;
      await eventually(
        "the unit active on the source",
        async () =>
          (await client.status("moving")).applications.motd?.units["motd/0"]?.workload.current === "active" ||
          undefined,
        60_000,
        250,
      );
      t.deepEqual(
        await vmProps(vm),
        { name: vsphere.vmName(sourceUuid, model, m!.id), controller: sourceUuid },
        "before: the source's VM",
      );
      const before = (await allVms()).sort();

      const done = await migrateAndWait(client, "moving", {
        name: "vs-2",
        addresses: target.apiAddresses,
        caCert: init.caCert,
        user: "admin",
        password: init.adminPassword!,
      });
      t.is(done.phase, "DONE", done.failure);

      // On the target: the same machine and VM, taken over, its agent connected, the unit active and taking changes.
      const there = await eventually(
        "the machine started on the target",
        async () => {
          const ms = await tgt.listMachines("moving");
          return ms.length === 1 && ms[0]!.status === "started" && ms[0]!.instance?.state === "poweredOn"
            ? ms[0]
            : undefined;
        },
        60_000,
        250,
      ).catch(async (err: unknown) => {
        t.log(JSON.stringify(await tgt.listMachines("moving")), JSON.stringify(await vmProps(vm)));
        throw err;
      });
      t.is(there.instance!.id, vm, "the same VM");
      // The target's provisioner takes it over on its first pass after the model went live there.
      const takenOver = { name: vsphere.vmName(targetUuid, model, m!.id), controller: targetUuid };
      await eventually(
        "the VM taken over by the target",
        async () => (await vmProps(vm)).name === takenOver.name || undefined,
        30_000,
        250,
      ).catch(() => undefined);
      t.deepEqual(await vmProps(vm), takenOver, "renamed and marked as the target's");
      t.is((await tgt.status("moving")).applications.motd?.units["motd/0"]?.workload.current, "active");
      await tgt.updateApplication("moving", "motd", { config: { message: "on the target" } });
      await eventually(
        "the change reached the unit",
        async () =>
          (await tgt.status("moving")).applications.motd?.units["motd/0"]?.workload.message.includes("on the target") ||
          undefined,
        60_000,
        250,
      );
      t.deepEqual(
        await vms.instances({ settings, credentials, controllerUuid: sourceUuid }, model),
        [],
        "the source lists no VM of the model",
      );
      t.deepEqual(
        (await vms.instances({ settings, credentials, controllerUuid: targetUuid }, model)).map((v) => v.id),
        [vm],
        "the target lists it as its own",
      );
      t.is(
        await vms.adopt({ settings, credentials, controllerUuid: targetUuid }, model, sourceUuid),
        0,
        "a second adoption changes nothing",
      );
      t.deepEqual((await allVms()).sort(), before, "nothing cloned, nothing destroyed");
      t.is(vc.bridge!.vms.get(vm)?.state, "running", "the guest still runs");

      // The target owns it now: destroying the model there destroys the VM.
      await tgt.destroyModel("moving", true);
      await eventually("the VM destroyed by the target", async () => !(await allVms()).includes(vm), 120_000, 250);
    } finally {
      vms.close();
      tgt.close();
      await target.stop().catch(() => undefined);
      await rm(targetDir, { recursive: true, force: true });
    }
  },
);
