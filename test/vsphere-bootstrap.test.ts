/**
 * `steward bootstrap vsphere:VCENTER` against vcsim, VMware's own vSphere simulator (real vim25
 * SOAP over TLS; test/harness/vcsim.ts), whose powered-on VMs get a FAKE guest: the guest bridge
 * boots a test host per VM and applies its `guestinfo.userdata` with the harness's cloud-init
 * subset (its SSH module before the VM's address is reported, as sshd starts after it). The CLI
 * clones one VM with a host key made for it, installs the controller over SSH with that key pinned,
 * stores the vSphere account and makes vSphere the replica cloud; with --replicas 3 the controller
 * clones the other two itself. destroy-controller destroys every VM marked with the controller.
 * Run with the HA suite (alone: it moves a controller into etcd and boots several hosts).
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControllerClient } from "../api";
import { loadClientConfig } from "../cli";
import { vsphere } from "../substrates";
import type { CliResult } from "./harness/cli";
import { cliRunner } from "./harness/cli";
import { eventually } from "./harness/eventually";
import { TestLab } from "./harness/hosts";
import type { Vcsim } from "./harness/vcsim";
import { startVcsim } from "./harness/vcsim";

const { optionValues } = vsphere;

const root = process.getuid?.() === 0;
const ha = root ? test.serial : test.skip; // test hosts are namespaces: root

let lab: TestLab;
let vc: Vcsim;
let home: string;
let steward: (...args: string[]) => Promise<CliResult>;
let caFile: string;
let credFile: string;
let vcenter: string;
let client: ControllerClient | undefined;

test.before(async () => {
  if (!root) return;
  lab = await TestLab.create(0);
  // The controller's replicas would run in the lab's namespaces: vcsim listens on the lab's bridge for them.
  vc = await startVcsim(lab, { listen: `${lab.subnet}.1` });
  vcenter = new URL(vc.url).host;
  home = await mkdtemp(join(tmpdir(), "steward-vsphere-bootstrap-"));
  steward = cliRunner(home, home);
  caFile = join(home, "vcenter-ca.pem");
  await writeFile(caFile, vc.caCert);
  credFile = join(home, "vsphere.yaml");
  await writeFile(credFile, `user: ${vc.user}\npassword: ${vc.password}\n`, { mode: 0o600 });
});
test.after.always(async () => {
  client?.close();
  delete process.env.VSPHERE_USER;
  delete process.env.VSPHERE_PASSWORD;
  await vc?.stop().catch(() => undefined);
  await lab?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

const ok = (t: ExecutionContext, r: CliResult, what: string): void => {
  if (r.code !== 0) t.log(r.stdout, r.stderr);
  t.is(r.code, 0, what);
};
const placementArgs = (): string[] => [
  "--datacenter",
  vc.datacenter,
  "--template",
  vc.template,
  "--vcenter-ca-file",
  caFile,
];

/** Every VM in the simulator, with the controller its extraConfig names (if any). */
async function allVms(): Promise<
  {
    id: string;
    name: string;
    state: string;
    address?: string;
    controller?: string;
    model?: string;
    userData?: string;
  }[]
> {
  const sc = await vc.client.serviceContent();
  const found = await vc.client.propertiesUnder(sc.rootFolder, "VirtualMachine", [
    "name",
    "runtime.powerState",
    "guest.ipAddress",
    "config.extraConfig",
  ]);
  return found.map((o) => {
    const config = optionValues(o.props.get("config.extraConfig"));
    const controller = config.get("guestinfo.steward.controller"),
      model = config.get("guestinfo.steward.model"),
      address = o.props.get("guest.ipAddress")?.text;
    const userData = config.get("guestinfo.userdata");
    return {
      id: o.obj.value,
      name: o.props.get("name")?.text ?? "",
      state: o.props.get("runtime.powerState")?.text ?? "",
      ...(address ? { address } : {}),
      ...(controller ? { controller } : {}),
      ...(model ? { model } : {}),
      ...(userData ? { userData } : {}),
    };
  });
}

ha("bootstrap vsphere: refuses bad input before it clones anything", async (t) => {
  t.timeout(120_000);
  const before = (await allVms()).map((v) => v.id).sort();
  const noPassword = join(home, "no-password.yaml");
  await writeFile(noPassword, `user: ${vc.user}\n`);
  const wrongPassword = join(home, "wrong-password.yaml");
  await writeFile(wrongPassword, `user: ${vc.user}\npassword: not-the-password\n`);
  const target = `vsphere:${vcenter}`;
  const cases: [string[], RegExp][] = [
    [
      ["bootstrap", target, "x", ...placementArgs()],
      /give the vSphere credential: --credential-file FILE .* or --from-env \(VSPHERE_USER, VSPHERE_PASSWORD\)/,
    ],
    [
      ["bootstrap", target, "x", ...placementArgs(), "--credential-file", credFile, "--replicas", "2"],
      /--replicas must be 1, 3, 5 or 7, not "2"/,
    ],
    [
      ["bootstrap", target, "x", "--datacenter", vc.datacenter, "--credential-file", credFile],
      /vsphere needs --vcenter \(https:\/\/…\/sdk\), --datacenter and --template/,
    ],
    [
      ["bootstrap", "vsphere:http://vcenter.invalid/sdk", "x", ...placementArgs(), "--credential-file", credFile],
      /"url" must be vCenter's https:\/\/ SDK URL/,
    ],
    [
      [
        "bootstrap",
        target,
        "x",
        ...placementArgs(),
        "--vcenter",
        "https://other.invalid/sdk",
        "--credential-file",
        credFile,
      ],
      /vCenter is given twice and differs/,
    ],
    [
      ["bootstrap", "vsphere:", "x", ...placementArgs(), "--credential-file", credFile],
      /give vCenter: vsphere:vcenter\.example\.com/,
    ],
    [
      ["bootstrap", target, "x", ...placementArgs(), "--credential-file", credFile, "--image", "ami-0123456789abcdef0"],
      /are for aws:REGION/,
    ],
    [
      ["bootstrap", target, "x", ...placementArgs(), "--credential-file", credFile, "--host-key", "SHA256:abc"],
      /are for ssh: targets; on vsphere the keys are made for the VM/,
    ],
    [
      ["bootstrap", target, "Bad_Name", ...placementArgs(), "--credential-file", credFile],
      /controller name "Bad_Name" must be lower-case/,
    ],
    [
      ["bootstrap", target, "x", ...placementArgs(), "--credential-file", join(home, "missing.yaml")],
      /cannot read .*missing\.yaml/,
    ],
    [["bootstrap", target, "x", ...placementArgs(), "--credential-file", noPassword], /password/],
    [
      [
        "bootstrap",
        "aws:eu-west-1",
        "x",
        "--image",
        "ami-0123456789abcdef0",
        "--datacenter",
        "DC0",
        "--credential-file",
        credFile,
      ],
      /are for vsphere:VCENTER/,
    ],
    [["bootstrap", "ssh:root@192.0.2.1", "x", "--template", "t"], /are for vsphere:VCENTER/],
    // Checked by vCenter, still before anything is cloned:
    [
      [
        "bootstrap",
        `${target}/sdk`,
        "x",
        "--datacenter",
        vc.datacenter,
        "--template",
        "no-such-template",
        "--vcenter-ca-file",
        caFile,
        "--credential-file",
        credFile,
      ],
      /vSphere template "no-such-template" not found in datacenter DC0/,
    ],
    [
      ["bootstrap", target, "x", ...placementArgs(), "--credential-file", wrongPassword],
      /vSphere Login failed: InvalidLogin/,
    ],
  ];
  for (const [args, message] of cases) {
    const r = await steward(...args);
    t.not(r.code, 0, args.join(" "));
    t.regex(r.stderr + r.stdout, message, args.join(" "));
    t.notRegex(r.stderr + r.stdout, new RegExp(vc.password), "the password is never printed");
  }
  t.deepEqual((await allVms()).map((v) => v.id).sort(), before, "nothing was cloned");
  t.is(vc.bridge!.vms.size, 0, "no guest was booted");
  t.deepEqual(Object.keys((await loadClientConfig(home)).controllers), [], "no controller entry was written");
});

ha("a VM that does not install the host key made for it fails the pin, and the bootstrap destroys it", async (t) => {
  t.timeout(300_000);
  // A template without cloud-init: its guest boots with its own host key and ignores the user data.
  const plain = await startVcsim(lab, { listen: `${lab.subnet}.1`, cloudInit: false });
  t.teardown(() => plain.stop());
  const plainCa = join(home, "plain-ca.pem");
  await writeFile(plainCa, plain.caCert);
  const plainCred = join(home, "plain.yaml");
  await writeFile(plainCred, `user: ${plain.user}\npassword: ${plain.password}\n`);
  const r = await steward(
    "bootstrap",
    `vsphere:${new URL(plain.url).host}`,
    "nokeys",
    "--datacenter",
    plain.datacenter,
    "--template",
    plain.template,
    "--vcenter-ca-file",
    plainCa,
    "--credential-file",
    plainCred,
  );
  t.is(r.code, 1);
  t.regex(r.stderr, /host key of .* does not match: expected SHA256:/);
  const destroyed = /Terminating VM (vm-\d+) \(the bootstrap failed\)/.exec(r.stderr)?.[1];
  t.truthy(destroyed, "the bootstrap says it destroys the VM it cloned");
  t.truthy(plain.bridge!.vms.get(destroyed!), "that VM had booted a guest");
  const left = await plain.client.propertiesUnder((await plain.client.serviceContent()).rootFolder, "VirtualMachine", [
    "config.extraConfig",
  ]);
  t.deepEqual(
    left
      .filter((o) => optionValues(o.props.get("config.extraConfig")).has("guestinfo.steward.controller"))
      .map((o) => o.obj.value),
    [],
    "the VM it cloned is not left",
  );
  t.false("nokeys" in (await loadClientConfig(home)).controllers, "no controller entry for a failed bootstrap");
});

ha(
  "bootstrap vsphere: installs the controller on a VM it clones, with the host key made for it pinned; destroy-controller destroys its VMs",
  async (t) => {
    t.timeout(600_000);
    const started = Date.now();
    const r = await steward(
      "bootstrap",
      `vsphere:${vcenter}`,
      "vsb",
      ...placementArgs(),
      "--credential-file",
      credFile,
      "--credential",
      "lab",
    );
    ok(t, r, "bootstrap");
    t.log(`bootstrap on vcsim took ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const pinned = /connecting over SSH \(host key (SHA256:\S+), made for it\)/.exec(r.stderr)?.[1];
    t.truthy(pinned, "the host key made for the VM is pinned");
    t.regex(r.stdout, /Bootstrapped controller "vsb" on vSphere \(/);
    t.notRegex(r.stdout + r.stderr, new RegExp(vc.password), "the vSphere password is never printed");
    t.false((await readFile(join(home, "controllers.json"), "utf8")).includes(vc.password), "nor kept by the client");

    const entry = (await loadClientConfig(home)).controllers.vsb!;
    client = new ControllerClient({
      addresses: entry.addresses,
      caCert: entry.caCert,
      user: "admin",
      password: entry.password!,
      timeoutMs: 4000,
    });
    const info = await client.controllerInfo();
    t.is(entry.hosting?.substrate, "vsphere", "the client records where the controller runs");
    t.is(entry.hosting?.uuid, info.uuid, "the client knows the UUID the VMs are marked with");
    t.is(entry.hosting?.substrate === "vsphere" ? entry.hosting.settings.url : undefined, vc.url);

    // One VM, marked as this controller's replica (chosen before it existed), on, at the controller's address.
    const mine = (await allVms()).filter((v) => v.controller === info.uuid);
    t.is(mine.length, 1);
    const [vm] = mine;
    t.is(vm?.model, vsphere.REPLICA_MODEL, "marked as a replica, so the keeper can retire it like its own clones");
    t.is(vm?.state, "poweredOn");
    t.deepEqual(
      entry.addresses,
      [`${vm!.address}:17070`],
      "the controller is on the VM, at the address VMware Tools reports",
    );
    const guest = vc.bridge!.vms.get(vm!.id);
    t.is(guest?.host.hostKeyFingerprint, pinned, "the guest's sshd has the host key that was pinned");
    t.is(
      vm?.userData,
      undefined,
      "the user data (the host key's private half) is gone from the VM's settings once applied",
    );

    // The account is stored (the password never shown back) and vSphere is the replica cloud.
    const creds = await steward("credentials");
    t.regex(creds.stdout, /lab\s+vsphere/);
    t.notRegex(creds.stdout, new RegExp(vc.password));
    t.regex(
      (await steward("show-controller")).stdout,
      /Replica cloud: vsphere DC0, template debian-12-template, credential lab/,
    );
    ok(t, await steward("add-model", "shop"), "the controller serves");
    await eventually("model listed", async () => (await client!.listModels()).some((m) => m.name === "shop"));

    // Destroying it destroys every VM marked with it, with the account given again.
    const noAccount = await steward("destroy-controller", "vsb", "--yes");
    t.is(noAccount.code, 1);
    t.regex(noAccount.stdout + noAccount.stderr, /give the vSphere credential to remove its VMs with/);
    t.is(
      (await allVms()).filter((v) => v.controller === info.uuid).length,
      1,
      "nothing was destroyed without the account",
    );
    client.close();
    client = undefined;
    process.env.VSPHERE_USER = vc.user;
    process.env.VSPHERE_PASSWORD = vc.password;
    const destroyed = await steward("destroy-controller", "vsb", "--yes", "--from-env");
    ok(t, destroyed, "destroy-controller");
    t.regex(destroyed.stderr, new RegExp(`Destroying the controller's VMs in DC0\\n\\s+${vm!.name}`));
    t.deepEqual(
      (await allVms()).filter((v) => v.controller === info.uuid),
      [],
      "no VM of the controller is left",
    );
    await eventually("the guest is gone with its VM", async () => guest?.state === "destroyed");
    t.false("vsb" in (await loadClientConfig(home)).controllers, "the client forgot it");
  },
);

ha(
  "bootstrap vsphere: --replicas 3 installs the first replica over SSH and the controller clones the other two itself",
  async (t) => {
    t.timeout(900_000);
    const started = Date.now();
    const r = await steward(
      "bootstrap",
      `vsphere:${vc.url}`,
      "vsha",
      "--replicas",
      "3",
      ...placementArgs(),
      "--credential-file",
      credFile,
      "--timeout",
      "12m",
    );
    ok(t, r, "bootstrap");
    t.log(`a 3-replica bootstrap on vcsim took ${((Date.now() - started) / 1000).toFixed(1)} s`);
    t.regex(r.stderr, /Growing to 3 replicas: the controller launches the others on vsphere/);
    t.notRegex(r.stdout + r.stderr, new RegExp(vc.password), "the vSphere password is never printed");

    const entry = (await loadClientConfig(home)).controllers.vsha!;
    t.is(entry.addresses.length, 3, "the client knows all three replicas");
    client = new ControllerClient({
      addresses: entry.addresses,
      caCert: entry.caCert,
      user: "admin",
      password: entry.password!,
      timeoutMs: 4000,
    });
    const info = await client.controllerInfo();
    const voters = info.cluster.members.filter((m) => m.hasVote && m.present);
    t.is(voters.length, 3);
    // Three VMs, all marked as this controller's replicas (so the keeper can retire any of them), all on.
    const mine = (await allVms()).filter((v) => v.controller === info.uuid);
    t.deepEqual(
      mine.map((v) => [v.model, v.state]),
      [
        ["replicas", "poweredOn"],
        ["replicas", "poweredOn"],
        ["replicas", "poweredOn"],
      ],
    );
    t.deepEqual(voters.map((m) => m.host).sort(), mine.map((v) => v.address!).sort(), "the voters are on the VMs");
    t.deepEqual(
      voters.map((m) => m.instance?.id).sort(),
      mine.map((v) => v.id).sort(),
      "each replica's VM is recorded with it, the bootstrap's first one too",
    );
    const shown = (await steward("show-controller")).stdout;
    for (const v of mine) t.true(shown.includes(v.id), `show-controller shows ${v.id}`);
    t.regex((await steward("credentials")).stdout, /vsphere\s+vsphere/, "stored under the default name");

    client.close();
    client = undefined;
    ok(t, await steward("destroy-controller", "vsha", "--yes", "--credential-file", credFile), "destroy-controller");
    t.deepEqual(
      (await allVms()).filter((v) => v.controller === info.uuid),
      [],
      "no VM of the controller is left",
    );
  },
);
