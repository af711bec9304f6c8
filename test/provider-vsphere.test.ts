/**
 * The Controller resource with substrate "vsphere", through the SDK's dynamic-provider process
 * (test/harness/pulumi-engine.ts), against vcsim, VMware's own vSphere simulator, whose powered-on
 * VMs get a FAKE guest (test/harness/vcsim.ts: a test host applying the VM's guestinfo user data,
 * cloud-init's SSH module included): up clones a VM and installs the controller with the host key
 * made for it pinned, stores the account as a credential and makes vSphere the replica cloud; a
 * model on vsphere uses that credential; a second up changes nothing; refresh sees no drift;
 * changed settings update the replica cloud; destroy destroys every VM marked with the controller.
 */
import test from "ava";
import * as pulumi from "@pulumi/pulumi";
import { ControllerClient } from "../api";
import { Controller, Model, implementations } from "../provider";
import type { ControllerConnection } from "../provider";
import { vsphere } from "../substrates";
import { TestLab } from "./harness/hosts";
import { providerTestBed } from "./harness/provider-bed";
import type { Vcsim } from "./harness/vcsim";
import { startVcsim } from "./harness/vcsim";

const { optionValues } = vsphere;

const root = process.getuid?.() === 0;
const asRoot = root ? test.serial : test.skip; // test hosts need namespaces

let lab: TestLab;
let vc: Vcsim;
const { engine } = providerTestBed(test, {
  when: root,
  setUp: async () => {
    lab = await TestLab.create(0);
    vc = await startVcsim(lab, { listen: `${lab.subnet}.1` });
  },
  tearDown: async () => {
    await vc?.stop().catch(() => undefined);
    await lab?.close();
  },
});

/** The simulator's VMs marked with a controller: their ids, states, addresses and models. */
async function controllerVms(uuid: string): Promise<{ id: string; state: string; address?: string; model?: string }[]> {
  const sc = await vc.client.serviceContent();
  const found = await vc.client.propertiesUnder(sc.rootFolder, "VirtualMachine", [
    "runtime.powerState",
    "guest.ipAddress",
    "config.extraConfig",
  ]);
  return found.flatMap((o) => {
    const config = optionValues(o.props.get("config.extraConfig"));
    if (config.get("guestinfo.steward.controller") !== uuid) return [];
    const address = o.props.get("guest.ipAddress")?.text,
      model = config.get("guestinfo.steward.model");
    return [
      {
        id: o.obj.value,
        state: o.props.get("runtime.powerState")?.text ?? "",
        ...(address ? { address } : {}),
        ...(model ? { model } : {}),
      },
    ];
  });
}

const placement = (template = vc.template) => ({ url: vc.url, datacenter: vc.datacenter, template, caCert: vc.caCert });
const stack = (template?: string) => (): void => {
  const ctl = new Controller("ctl", {
    substrate: "vsphere",
    vsphere: placement(template),
    vsphereCredential: pulumi.secret({ user: vc.user, password: vc.password }),
    credentialName: "lab",
  });
  new Model("shop", { connection: ctl.connection, substrate: "vsphere", credential: "lab", vsphere: placement() });
};

test("a Controller on vsphere is replaced by another vCenter or datacenter (where its VMs are), updated by other settings", async (t) => {
  const vsphere = { url: "https://vc1.example.com/sdk", datacenter: "DC1", template: "t" };
  const olds = {
    name: "c",
    substrate: "vsphere",
    vsphere,
    vsphereCredential: { user: "u", password: "p" },
    replicas: 1,
    adopt: false,
    timeoutSeconds: 900,
  } as never;
  const diff = (changed: Record<string, string>) =>
    implementations.controller.diff("id", olds, { ...(olds as object), vsphere: { ...vsphere, ...changed } } as never);
  t.deepEqual((await diff({ url: "https://vc2.example.com/sdk" })).replaces, ["vsphere"]);
  t.deepEqual((await diff({ datacenter: "DC2" })).replaces, ["vsphere"]);
  const template = await diff({ template: "other" });
  t.deepEqual([template.replaces, template.changes], [[], true]);
  t.deepEqual((await diff({})).changes, false);
});

asRoot("a Controller on vsphere: bad settings fail check naming the field, before any VM is cloned", async (t) => {
  const before = (
    await vc.client.propertiesUnder((await vc.client.serviceContent()).rootFolder, "VirtualMachine", ["name"])
  ).length;
  const r = await engine.up(() => {
    new Controller("bad", {
      substrate: "vsphere",
      vsphere: { url: "http://vcenter.invalid", datacenter: vc.datacenter, template: vc.template },
    } as never);
    new Controller("worse", {
      substrate: "vsphere",
      vsphereCredential: { user: vc.user, password: "" },
      hosts: [{ host: "192.0.2.1", hostKey: "SHA256:x" }],
    } as never);
    new Controller("mixed", {
      substrate: "aws",
      aws: { region: "eu-west-1", imageId: "ami-0123456789abcdef0" },
      awsCredential: { accessKeyId: "AKIA", secretAccessKey: "s" },
      vsphere: placement(),
    } as never);
  });
  const message = r.errors.map((e) => e.message).join("\n");
  t.regex(message, /vsphere: "url" must be vCenter's https:\/\/ SDK URL/);
  t.regex(message, /vsphereCredential: required with substrate "vsphere": a vSphere account \(user, password/);
  t.regex(message, /vsphere: required with substrate "vsphere": at least url, datacenter and template/);
  t.regex(message, /vsphereCredential: needs user and password/);
  t.regex(message, /hosts: only for substrate "ssh": on vsphere the controller launches its VMs/);
  t.regex(message, /vsphere: only for substrate "vsphere"/);
  t.deepEqual(r.created, []);
  t.is(engine.state.size, 0);
  t.is(
    (await vc.client.propertiesUnder((await vc.client.serviceContent()).rootFolder, "VirtualMachine", ["name"])).length,
    before,
    "no VM was cloned",
  );
});

asRoot(
  "a Controller on vsphere: up clones a VM and installs the controller there, a model uses its stored account, destroy destroys its VMs",
  async (t) => {
    t.timeout(300_000);
    const started = Date.now();
    const up = await engine.up(stack());
    t.deepEqual(up.errors, []);
    t.log(`up (controller on a vcsim VM, and a model) took ${((Date.now() - started) / 1000).toFixed(1)} s`);
    t.deepEqual(up.created.sort(), ["ctl", "shop"]);
    const outs = engine.get("ctl")!.outputs as { uuid: string; connection: ControllerConnection; replicas: number };
    t.is(outs.replicas, 1);
    const vms = await controllerVms(outs.uuid);
    t.is(vms.length, 1, "one VM, marked with the controller it became");
    t.is(vms[0]?.state, "poweredOn");
    t.is(vms[0]?.model, vsphere.REPLICA_MODEL);
    t.deepEqual(outs.connection.addresses, [`${vms[0]!.address}:17070`]);
    t.is(vc.bridge!.vms.get(vms[0]!.id)?.error, undefined, "the guest applied its user data");

    const c = new ControllerClient({
      addresses: outs.connection.addresses,
      caCert: outs.connection.caCert,
      user: outs.connection.user,
      password: outs.connection.password,
    });
    try {
      t.deepEqual(
        (await c.listCredentials()).credentials.map((k) => [k.name, k.substrate]),
        [["lab", "vsphere"]],
      );
      const cloud = (await c.controllerInfo()).cluster.replicaCloud;
      t.deepEqual(
        [cloud?.substrate, cloud?.credential],
        ["vsphere", "lab"],
        "vSphere is the replica cloud, with the stored account",
      );
      t.is((await c.listModels()).find((m) => m.name === "shop")?.substrate, "vsphere");
    } finally {
      c.close();
    }
    t.false(engine.persistedState().includes(vc.password), "the vSphere password is not in the state in plain text");
    t.false(engine.persistedState().includes(outs.connection.password), "nor the admin password");

    const again = await engine.up(stack());
    t.deepEqual(
      [again.created, again.updated, again.replaced, again.errors],
      [[], [], [], []],
      "a second up changes nothing",
    );
    t.deepEqual(await engine.refresh(), { drifted: [], gone: [] });

    // Another template for new replicas (a VM of vcsim's inventory) is an update of the replica cloud, not a new controller.
    const changed = await engine.up(stack("DC0_H0_VM1"));
    t.deepEqual(changed.errors, []);
    t.true(changed.updated.includes("ctl"));
    t.false(changed.replaced.includes("ctl"));
    const c2 = new ControllerClient({
      addresses: outs.connection.addresses,
      caCert: outs.connection.caCert,
      user: outs.connection.user,
      password: outs.connection.password,
    });
    try {
      t.is((await c2.controllerInfo()).cluster.replicaCloud?.summary, "DC0, template DC0_H0_VM1");
    } finally {
      c2.close();
    }
    t.deepEqual(
      (await controllerVms(outs.uuid)).map((v) => v.id),
      [vms[0]!.id],
      "the controller's VM is the same one",
    );

    await engine.destroy();
    t.is(engine.state.size, 0);
    t.deepEqual(await controllerVms(outs.uuid), [], "every VM of the controller is destroyed");
  },
);
