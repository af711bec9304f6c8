/**
 * examples/vmware under Pulumi's mocks: the resources each stage declares and how they are wired
 * (three clones of the template on the looked-up pool, datastore and port group, kept apart by a
 * DRS rule or placed on three hosts, the controller on the VMs' addresses with their pinned host
 * keys, the vsphere model's settings from config), with lookups and outputs shaped like vCenter's;
 * that the vCenter password and the SSH key stay secret; and that each Steward resource's
 * serialized provider accepts the example's arguments in its `check`.
 */
import test from "ava";
import * as pulumi from "@pulumi/pulumi";
import { join } from "node:path";
import { parse } from "yaml";
import type { VmwareStackSettings } from "../examples/vmware/stack";
import { HOST_KEY_GUESTINFO, shellCommand, vmwareStack } from "../examples/vmware/stack";
import { PLUGIN_VERSION } from "../examples/vmware/vsphere";
import { SECRET_SIG, unwrapSecrets as unwrap } from "./harness/pulumi-engine";

const repo = join(__dirname, "..", "..");
const VCENTER = "vcenter.lab.example.com";
const USER = "pulumi@vsphere.local";
const PASSWORD = "Vc-Pa55word-not-a-real-one";
const CA = "-----BEGIN CERTIFICATE-----\nMIIBvTCCAWOgAwIBAgIUexample\n-----END CERTIFICATE-----\n";
const DATACENTER = "Lab DC";
const CLUSTER = "cluster-a";
const DATASTORE = "vsanDatastore";
const NETWORK = "steward-pg";
const TEMPLATE = "templates/debian-12-cloud";
const FOLDER = "steward";
const PREFIX = "steward-test";
const PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleExampleExampleExampleExampleExample user@laptop";
const PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nexample-not-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n";
const FINGERPRINTS = [1, 2, 3].map((n) => `SHA256:${"Q".repeat(42)}${n}`);
const CONTROLLER_UUID = "3f2a9c4e-7b1d-4e8a-9c2f-5d6e7f8a9b0c";

// What the mocked vCenter holds.
const DATACENTER_ID = "datacenter-3";
const CLUSTER_ID = "domain-c8";
const POOLS: Record<string, string> = {
  [`${CLUSTER}/Resources`]: "resgroup-9",
  [`${CLUSTER}/Resources/steward`]: "resgroup-57",
};
const DATASTORE_ID = "datastore-12";
const NETWORK_ID = "dvportgroup-21";
const TEMPLATE_UUID = "4217c1e0-5b3a-8f2e-9d4c-0a1b2c3d4e5f";
const TEMPLATE_DISKS = [
  { label: "Hard disk 1", size: 10, unitNumber: 0, thinProvisioned: true, eagerlyScrub: false },
  { label: "Hard disk 2", size: 40, unitNumber: 1, thinProvisioned: false, eagerlyScrub: false },
];
const ESXI: Record<string, string> = { "esx-01.lab": "host-31", "esx-02.lab": "host-32", "esx-03.lab": "host-33" };

interface Registered {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
  id: string;
  outputs: Record<string, unknown>;
  provider?: string | undefined;
}
interface Invoked {
  token: string;
  inputs: Record<string, unknown>;
  provider?: string | undefined;
}

const settings = (over: Partial<VmwareStackSettings> = {}): VmwareStackSettings => ({
  vcenter: VCENTER,
  vcenterUser: USER,
  vcenterPassword: pulumi.secret(PASSWORD),
  vcenterCaCert: CA,
  datacenter: DATACENTER,
  cluster: CLUSTER,
  datastore: DATASTORE,
  network: NETWORK,
  template: TEMPLATE,
  folder: FOLDER,
  vmPrefix: PREFIX,
  publicKey: PUBLIC_KEY,
  privateKey: pulumi.secret(PRIVATE_KEY),
  hostKeys: FINGERPRINTS,
  credential: "vc-prod",
  operatorsDir: join(repo, "operators"),
  ...over,
});

const fromBase64 = (s: unknown): string => Buffer.from(String(s), "base64").toString("utf8");
const metadataOf = (vm: Registered): Record<string, any> =>
  JSON.parse(fromBase64((vm.inputs.extraConfig as Record<string, string>)["guestinfo.metadata"]));
const userDataOf = (vm: Registered): string =>
  fromBase64((vm.inputs.extraConfig as Record<string, string>)["guestinfo.userdata"]);

/** Mocks answering as vCenter and the Steward providers would: lookups by name, managed object ids, guest addresses. */
async function mockVsphere(stack: string): Promise<{ registered: Registered[]; invoked: Invoked[] }> {
  const registered: Registered[] = [];
  const invoked: Invoked[] = [];
  let vmCount = 0,
    dhcp = 41;
  const known = (what: string, table: Record<string, string>, name: unknown): string =>
    table[String(name)] ??
    (() => {
      throw new Error(`no ${what} ${JSON.stringify(name)} in ${DATACENTER}`);
    })();
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        const inputs = args.inputs as Record<string, any>;
        const kind = args.type.split(":").pop()!;
        let id: string;
        const outs: Record<string, unknown> = { ...inputs };
        switch (args.type) {
          case "pulumi:providers:vsphere":
            id = "5d9e2f0a-provider";
            break;
          case "vsphere:index/virtualMachine:VirtualMachine": {
            if (inputs.clone?.templateUuid !== TEMPLATE_UUID)
              throw new Error(`${args.name}: clone of an unknown template ${inputs.clone?.templateUuid}`);
            if (!Object.values(POOLS).includes(inputs.resourcePoolId))
              throw new Error(`${args.name}: unknown resource pool ${inputs.resourcePoolId}`);
            const n = vmCount++;
            id = `4217${n}a2b-1c3d-4e5f-8a9b-${String(n).padStart(12, "0")}`;
            // The guest's address: the static one its metadata configures, else a DHCP lease.
            const network = JSON.parse(fromBase64(inputs.extraConfig?.["guestinfo.metadata"] ?? "e30=")).network;
            const address = network ? String(network.ethernets.nic0.addresses[0]).split("/")[0] : `10.20.30.${dhcp++}`;
            Object.assign(outs, {
              moid: `vm-${101 + n}`,
              uuid: id,
              defaultIpAddress: address,
              guestIpAddresses: [address],
              powerState: "on",
              hostSystemId: inputs.hostSystemId ?? `host-3${(n % 3) + 1}`,
            });
            break;
          }
          case "vsphere:index/computeClusterVmAntiAffinityRule:ComputeClusterVmAntiAffinityRule":
            id = `${inputs.computeClusterId}:${inputs.name}`;
            break;
          default:
            if (kind === "Controller") {
              id = CONTROLLER_UUID;
              const addresses = (inputs.hosts as { host: string }[]).map((h) => `${h.host}:17070`);
              Object.assign(outs, {
                uuid: id,
                addresses,
                caCert: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----",
                connection: {
                  addresses,
                  caCert: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----",
                  user: "admin",
                  password: "generated-password",
                },
                leader: "r0",
                members: [],
              });
            } else if (kind === "Model") {
              id = "5b0e6f9c-1111-4a2b-8c3d-0e1f2a3b4c5d";
              outs.uuid = id;
            } else if (kind === "Application") {
              id = `app-${args.name}`;
              Object.assign(outs, {
                uid: `uid-${args.name}`,
                unitNames: Array.from({ length: Number(inputs.units) }, (_, i) => `${args.name}/${i}`),
              });
            } else if (kind === "Integration") {
              id = "integration-7";
              Object.assign(outs, { integrationId: 7, interface: "http" });
            } else throw new Error(`the mocks do not know ${args.type}`);
        }
        registered.push({ type: args.type, name: args.name, inputs, id, outputs: outs, provider: args.provider });
        return { id, state: outs };
      },
      call: (args) => {
        const inputs = args.inputs as Record<string, any>;
        invoked.push({ token: args.token, inputs, provider: args.provider });
        const fn = args.token.split(":").pop();
        if (fn !== "getDatacenter" && inputs.datacenterId !== DATACENTER_ID)
          throw new Error(`${fn} outside the datacenter: ${inputs.datacenterId}`);
        switch (fn) {
          case "getDatacenter":
            known("datacenter", { [DATACENTER]: DATACENTER_ID }, inputs.name);
            return { id: DATACENTER_ID, name: inputs.name };
          case "getComputeCluster":
            return {
              id: known("cluster", { [CLUSTER]: CLUSTER_ID }, inputs.name),
              name: inputs.name,
              resourcePoolId: POOLS[`${CLUSTER}/Resources`],
            };
          case "getResourcePool":
            return { id: known("resource pool", POOLS, inputs.name), name: inputs.name };
          case "getDatastore":
            return { id: known("datastore", { [DATASTORE]: DATASTORE_ID }, inputs.name), name: inputs.name };
          case "getNetwork":
            return {
              id: known("network", { [NETWORK]: NETWORK_ID }, inputs.name),
              name: inputs.name,
              type: "DistributedVirtualPortgroup",
            };
          case "getHost":
            return {
              id: known("host", ESXI, inputs.name),
              name: inputs.name,
              resourcePoolId: POOLS[`${CLUSTER}/Resources`],
            };
          case "getVirtualMachine":
            known("template", { [TEMPLATE]: TEMPLATE_UUID }, inputs.name);
            return {
              id: TEMPLATE_UUID,
              guestId: "debian12_64Guest",
              firmware: "efi",
              scsiType: "pvscsi",
              networkInterfaceTypes: ["vmxnet3"],
              disks: TEMPLATE_DISKS,
            };
          default:
            throw new Error(`unexpected invoke ${args.token}`);
        }
      },
    },
    "steward-vmware",
    stack,
    false,
  );
  return { registered, invoked };
}

/** Resolves once every output of the stack and every resource's id has: all are registered then. */
async function settle(
  out: { resources: Record<string, pulumi.Resource | pulumi.CustomResource[]> } & Record<string, unknown>,
): Promise<void> {
  const outputs = Object.entries(out)
    .filter(([k, v]) => k !== "resources" && (pulumi.Output.isInstance(v) || Array.isArray(v)))
    .map(([, v]) => v as pulumi.Input<unknown>);
  const ids = Object.values(out.resources)
    .flat()
    .map((r) => (r instanceof pulumi.CustomResource ? r.id : (r as pulumi.Resource).urn));
  await new Promise<void>((resolve) => pulumi.all([...outputs, ...ids]).apply(() => resolve()));
  await new Promise((r) => setTimeout(r, 100));
}

const short = (type: string): string =>
  type
    .replace("pulumi-nodejs:dynamic/steward:", "steward:")
    .replace("pulumi:providers:vsphere", "vsphere:Provider")
    .replace(/^vsphere:index\/\w+:/, "");
const counts = (rs: Registered[]): Record<string, number> =>
  rs.reduce<Record<string, number>>((a, r) => ({ ...a, [short(r.type)]: (a[short(r.type)] ?? 0) + 1 }), {});
/** A value with every secret replaced by a marker: what the state and logs hold in plain text. */
const plainPart = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(plainPart)
    : v && typeof v === "object"
      ? SECRET_SIG in v
        ? "[secret]"
        : Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plainPart(x)]))
      : v;

test.serial(
  "the vmware example's last stage: three clones kept apart, the controller on their addresses with pinned keys, a vsphere model from config",
  async (t) => {
    const { registered, invoked } = await mockVsphere("full");
    const out = vmwareStack(settings());
    await settle(out);
    const of = (type: string): Registered[] => registered.filter((r) => short(r.type) === type);
    const one = (type: string): Registered => {
      const rs = of(type);
      t.is(rs.length, 1, type);
      return rs[0]!;
    };
    const named = (name: string): Registered =>
      registered.find((r) => r.name === name) ?? (t.fail(`no resource ${name}`) as never);

    t.deepEqual(counts(registered), {
      "vsphere:Provider": 1,
      VirtualMachine: 3,
      ComputeClusterVmAntiAffinityRule: 1,
      "steward:Controller": 1,
      "steward:Model": 1,
      "steward:Application": 2,
      "steward:Integration": 1,
    });

    // vCenter: one explicit provider, certificates checked, the password a secret; every lookup and
    // every vSphere resource goes through it, for the plugin version the module names.
    const provider = one("vsphere:Provider");
    t.like(unwrap(provider.inputs), {
      vsphereServer: VCENTER,
      user: USER,
      password: PASSWORD,
      allowUnverifiedSsl: "false",
    });
    t.true(SECRET_SIG in (provider.inputs.password as object), "the vCenter password goes to the provider as a secret");
    const providerRef = (p: string | undefined): boolean =>
      !!p && p.includes("pulumi:providers:vsphere::vcenter") && p.endsWith(`::${provider.id}`);
    t.deepEqual(invoked.map((i) => i.token.split(":").pop()).sort(), [
      "getComputeCluster",
      "getDatacenter",
      "getDatastore",
      "getNetwork",
      "getResourcePool",
      "getVirtualMachine",
    ]);
    t.true(
      invoked.every((i) => providerRef(i.provider)),
      "every lookup uses the explicit provider",
    );
    t.true(
      registered.filter((r) => r.type.startsWith("vsphere:")).every((r) => providerRef(r.provider)),
      "every vSphere resource uses the explicit provider",
    );
    const lookedUp = (fn: string): Record<string, unknown> => invoked.find((i) => i.token.endsWith(`:${fn}`))!.inputs;
    t.is(lookedUp("getDatacenter").name, DATACENTER);
    t.deepEqual(
      [
        lookedUp("getComputeCluster").name,
        lookedUp("getResourcePool").name,
        lookedUp("getDatastore").name,
        lookedUp("getNetwork").name,
        lookedUp("getVirtualMachine").name,
      ],
      [CLUSTER, `${CLUSTER}/Resources`, DATASTORE, NETWORK, TEMPLATE],
      "each lookup takes its name from config (the pool: the cluster's root pool by default)",
    );
    t.is(PLUGIN_VERSION, "4.17.0");

    // The VMs: three full clones of the template, with its hardware, on the looked-up pool, datastore and port group.
    const vms = of("VirtualMachine");
    t.deepEqual(
      vms.map((vm) => vm.inputs.name),
      [0, 1, 2].map((i) => `${PREFIX}-controller-${i}`),
    );
    for (const vm of vms) {
      t.like(vm.inputs, {
        resourcePoolId: POOLS[`${CLUSTER}/Resources`],
        datastoreId: DATASTORE_ID,
        folder: FOLDER,
        numCpus: 2,
        memory: 4096,
        guestId: "debian12_64Guest",
        firmware: "efi",
        scsiType: "pvscsi",
        clone: { templateUuid: TEMPLATE_UUID },
        waitForGuestNetRoutable: true,
      });
      t.deepEqual(vm.inputs.networkInterfaces, [{ networkId: NETWORK_ID, adapterType: "vmxnet3" }]);
      t.deepEqual(
        vm.inputs.disks,
        [
          { label: "disk0", unitNumber: 0, size: 16, thinProvisioned: true, eagerlyScrub: false },
          { label: "disk1", unitNumber: 1, size: 40, thinProvisioned: false, eagerlyScrub: false },
        ],
        "every disk of the template, the system disk grown to 16 GB",
      );
      t.is(vm.inputs.hostSystemId, undefined, "without esxiHosts DRS places them");
      t.true(Number(vm.inputs.waitForGuestNetTimeout) >= 5, "the VM waits for its guest's address");
    }

    // cloud-init: each VM its own identity, the template's DHCP network, the SSH user with the public
    // key only, etcd installed and stopped, and the host key's fingerprint published in guestinfo.
    t.deepEqual(
      vms.map((vm) => metadataOf(vm)),
      vms.map((vm) => ({ "instance-id": vm.inputs.name, "local-hostname": vm.inputs.name })),
    );
    for (const vm of vms) {
      t.like(vm.inputs.extraConfig, {
        "guestinfo.metadata.encoding": "base64",
        "guestinfo.userdata.encoding": "base64",
      });
      const text = userDataOf(vm);
      t.true(text.startsWith("#cloud-config\n"));
      const userData = parse(text) as {
        users: Record<string, unknown>[];
        ssh_pwauth: boolean;
        packages: string[];
        runcmd: string[][];
      };
      t.deepEqual(userData.users, [
        {
          name: "steward",
          shell: "/bin/bash",
          sudo: "ALL=(ALL) NOPASSWD:ALL",
          lock_passwd: true,
          ssh_authorized_keys: [PUBLIC_KEY],
        },
      ]);
      t.false(userData.ssh_pwauth);
      t.deepEqual(userData.packages, ["etcd-server"]);
      t.deepEqual(userData.runcmd[0], ["systemctl", "disable", "--now", "etcd"]);
      const publish = userData.runcmd[1]!;
      t.deepEqual(publish.slice(0, 2), ["sh", "-c"]);
      t.regex(
        publish[2]!,
        new RegExp(
          `^vmware-rpctool "info-set ${HOST_KEY_GUESTINFO.replace(/\./g, "\\.")} \\$\\(ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key\\.pub \\| cut -d ' ' -f 2\\)" \\|\\| vmtoolsd --cmd "info-set `,
        ),
      );
    }

    // DRS keeps the three apart, in the looked-up cluster; HA may still restart one anywhere.
    const rule = one("ComputeClusterVmAntiAffinityRule");
    t.like(rule.inputs, { computeClusterId: CLUSTER_ID, enabled: true, mandatory: false });
    t.deepEqual(
      rule.inputs.virtualMachineIds,
      vms.map((vm) => vm.id),
    );
    t.is(new Set(vms.map((vm) => vm.id)).size, 3);

    // The controller: three replicas on the addresses the VMs report, host keys pinned in order.
    const controller = one("steward:Controller");
    const ctl = unwrap(controller.inputs) as Record<string, unknown>;
    t.is(ctl.substrate, "ssh");
    t.is(ctl.replicas, 3);
    t.deepEqual(
      vms.map((vm) => vm.outputs.defaultIpAddress),
      ["10.20.30.41", "10.20.30.42", "10.20.30.43"],
    );
    t.deepEqual(
      ctl.hosts,
      vms.map((vm, i) => ({ host: vm.outputs.defaultIpAddress, user: "steward", hostKey: FINGERPRINTS[i] })),
    );
    t.true(SECRET_SIG in (controller.inputs.privateKey as object), "the private key goes to the provider as a secret");

    // The model: vsphere, the stored credential, the placement from config.
    const model = one("steward:Model");
    const m = unwrap(model.inputs) as Record<string, unknown>;
    t.is(m.substrate, "vsphere");
    t.is(m.credential, "vc-prod");
    t.deepEqual(m.vsphere, {
      url: `https://${VCENTER}/sdk`,
      datacenter: DATACENTER,
      template: TEMPLATE,
      folder: FOLDER,
      resourcePool: `${CLUSTER}/Resources`,
      caCert: CA,
    });
    t.deepEqual((m.connection as { addresses: string[] }).addresses, [
      "10.20.30.41:17070",
      "10.20.30.42:17070",
      "10.20.30.43:17070",
    ]);

    // The applications and their integration.
    const web = unwrap(named("web").inputs) as Record<string, unknown>;
    const checker = unwrap(named("checker").inputs) as Record<string, unknown>;
    t.like(web, { model: "shop", units: 3, config: { greeting: "Hello from vSphere" } });
    t.true(String((web.operator as { path: string }).path).endsWith(join("operators", "hello-http")));
    t.like(checker, { model: "shop", units: 1 });
    t.true(String((checker.operator as { path: string }).path).endsWith(join("operators", "http-checker")));
    t.true(
      [web, checker].every((a) => (a.operator as { hash: string }).hash.length > 0),
      "both operators were read",
    );
    const integration = unwrap(named("web-checker").inputs) as Record<string, unknown>;
    t.deepEqual(integration.endpoints, ["web:website", "checker:upstream"]);
    t.deepEqual(integration.applicationUids, ["uid-web", "uid-checker"]);

    // Secrets: neither the vCenter password nor the private key is anywhere outside a secret, in any
    // resource's or lookup's inputs nor in the VMs' decoded guestinfo.
    const everything = JSON.stringify([...registered.map((r) => r.inputs), ...invoked.map((i) => i.inputs)]);
    t.true(
      everything.includes(PASSWORD) && everything.includes("example-not-a-real-key"),
      "both are there, inside secrets",
    );
    const plain = JSON.stringify([
      ...registered.map((r) => plainPart(r.inputs)),
      ...invoked.map((i) => plainPart(i.inputs)),
      ...vms.flatMap((vm) => [metadataOf(vm), userDataOf(vm)]),
    ]);
    t.false(plain.includes(PASSWORD), "the vCenter password is never in plain text");
    t.false(
      plain.includes("example-not-a-real-key") || plain.includes("PRIVATE KEY"),
      "the private key is never in plain text",
    );

    // What the stack gives the next steps: the replica cloud on the model's placement, quoted for the shell.
    t.is(
      out.replicaCloudCommand,
      `steward set-replica-cloud vsphere --credential vc-prod --vcenter https://${VCENTER}/sdk --datacenter 'Lab DC' --template ${TEMPLATE} --folder ${FOLDER} --resource-pool ${CLUSTER}/Resources --vcenter-ca-file vcenter-ca.pem`,
    );
    t.is(out.stage, 3);

    // Each Steward resource's serialized provider loads on its own and its check accepts the example.
    const requireFromString = require("require-from-string") as (code: string) => {
      handler: () => pulumi.dynamic.ResourceProvider;
    };
    const dynamic = registered.filter((x) => x.type.startsWith("pulumi-nodejs:dynamic/steward:"));
    t.is(dynamic.length, 5);
    for (const r of dynamic) {
      const { __provider: text, ...inputs } = unwrap(r.inputs) as Record<string, unknown>;
      t.false(
        String(text).includes("PRIVATE KEY") || String(text).includes(PASSWORD),
        `${r.name}: no secret in the provider text`,
      );
      const checked = await requireFromString(String(text)).handler().check!({}, inputs);
      t.deepEqual(checked.failures ?? [], [], `${r.name} passes its provider's check`);
    }
  },
);

test.serial(
  "static addresses, three named ESXi hosts and a resource pool: each VM configured and placed as given, the controller on those addresses",
  async (t) => {
    const addresses = ["10.0.40.11/24", "10.0.40.12/24", "10.0.40.13/24"];
    const { registered, invoked } = await mockVsphere("static");
    const out = vmwareStack(
      settings({
        addresses,
        gateway: "10.0.40.1",
        nameservers: ["10.0.0.53"],
        esxiHosts: Object.keys(ESXI),
        resourcePool: `${CLUSTER}/Resources/steward`,
        vcenterCaCert: undefined,
        sshUser: "ops",
        controllerCpus: 4,
        controllerMemoryMb: 8192,
        controllerDiskGb: 32,
      }),
    );
    await settle(out);
    const vms = registered.filter((r) => short(r.type) === "VirtualMachine");
    t.is(vms.length, 3);

    // Placed on the three hosts in order, in the given pool, with the given size.
    t.deepEqual(
      invoked.filter((i) => i.token.endsWith(":getHost")).map((i) => i.inputs.name),
      Object.keys(ESXI),
    );
    t.deepEqual(
      vms.map((vm) => vm.inputs.hostSystemId),
      Object.values(ESXI),
    );
    t.true(
      vms.every(
        (vm) =>
          vm.inputs.resourcePoolId === POOLS[`${CLUSTER}/Resources/steward`] &&
          vm.inputs.numCpus === 4 &&
          vm.inputs.memory === 8192,
      ),
    );
    t.deepEqual(
      vms.map((vm) => (vm.inputs.disks as { size: number }[]).map((d) => d.size)),
      [
        [32, 40],
        [32, 40],
        [32, 40],
      ],
    );

    // Each VM's metadata configures its own address, the gateway and DNS.
    vms.forEach((vm, i) =>
      t.deepEqual(metadataOf(vm).network, {
        version: 2,
        ethernets: {
          nic0: {
            match: { name: "e*" },
            dhcp4: false,
            addresses: [addresses[i]],
            routes: [{ to: "0.0.0.0/0", via: "10.0.40.1" }],
            nameservers: { addresses: ["10.0.0.53"] },
          },
        },
      }),
    );
    t.deepEqual(
      (parse(userDataOf(vms[0]!)) as { users: { name: string }[] }).users.map((u) => u.name),
      ["ops"],
    );

    // The controller is installed on those addresses as the VMs report them.
    const ctl = unwrap(registered.find((r) => short(r.type) === "steward:Controller")!.inputs) as {
      hosts: { host: string; user: string }[];
    };
    t.deepEqual(
      ctl.hosts.map((h) => [h.host, h.user]),
      [
        ["10.0.40.11", "ops"],
        ["10.0.40.12", "ops"],
        ["10.0.40.13", "ops"],
      ],
    );

    // The model clones into the same pool; no CA given, none passed.
    const m = unwrap(registered.find((r) => short(r.type) === "steward:Model")!.inputs) as {
      vsphere: Record<string, unknown>;
    };
    t.is(m.vsphere.resourcePool, `${CLUSTER}/Resources/steward`);
    t.false("caCert" in m.vsphere);
    t.false(out.replicaCloudCommand.includes("--vcenter-ca-file"));
    t.true(out.replicaCloudCommand.includes(`--resource-pool ${CLUSTER}/Resources/steward`));
  },
);

test.serial(
  "until the host keys are given, only the VMs and their rule are declared; until the credential, no model",
  async (t) => {
    const first = await mockVsphere("stage1");
    const out1 = vmwareStack(settings({ hostKeys: undefined, credential: undefined }));
    await settle(out1);
    t.is(out1.stage, 1);
    t.deepEqual(counts(first.registered), {
      "vsphere:Provider": 1,
      VirtualMachine: 3,
      ComputeClusterVmAntiAffinityRule: 1,
    });
    t.deepEqual(await new Promise<string[]>((resolve) => pulumi.all(out1.controllerAddresses).apply(resolve)), [
      "10.20.30.41",
      "10.20.30.42",
      "10.20.30.43",
    ]);

    const second = await mockVsphere("stage2");
    const out2 = vmwareStack(settings({ credential: undefined }));
    await settle(out2);
    t.is(out2.stage, 2);
    t.is(counts(second.registered)["steward:Controller"], 1);
    t.false("steward:Model" in counts(second.registered));
    t.false("steward:Application" in counts(second.registered));
    t.regex(
      out2.replicaCloudCommand,
      /--credential steward-vsphere /,
      "the command names the credential the README stores",
    );
  },
);

test("settings that cannot make the stack are refused before anything is declared", (t) => {
  t.throws(() => vmwareStack(settings({ vcenter: `https://${VCENTER}/sdk` })), {
    message: /vcenter: give vCenter's host name/,
  });
  t.throws(() => vmwareStack(settings({ hostKeys: FINGERPRINTS.slice(0, 2) })), { message: /hostKeys/ });
  t.throws(() => vmwareStack(settings({ esxiHosts: ["esx-01.lab", "esx-02.lab"] })), {
    message: /three distinct ESXi hosts/,
  });
  t.throws(() => vmwareStack(settings({ esxiHosts: ["esx-01.lab", "esx-01.lab", "esx-02.lab"] })), {
    message: /three distinct ESXi hosts/,
  });
  t.throws(() => vmwareStack(settings({ addresses: ["10.0.40.11/24", "10.0.40.12/24"], gateway: "10.0.40.1" })), {
    message: /three distinct addresses/,
  });
  t.throws(
    () =>
      vmwareStack(settings({ addresses: ["10.0.40.11/24", "10.0.40.11/24", "10.0.40.13/24"], gateway: "10.0.40.1" })),
    { message: /three distinct addresses/ },
  );
  t.throws(
    () => vmwareStack(settings({ addresses: ["10.0.40.11", "10.0.40.12/24", "10.0.40.13/24"], gateway: "10.0.40.1" })),
    { message: /"10\.0\.40\.11" is not an IPv4 address with its prefix length/ },
  );
  t.throws(
    () =>
      vmwareStack(settings({ addresses: ["10.0.40.11/24", "10.0.40.12/24", "10.0.40.313/24"], gateway: "10.0.40.1" })),
    { message: /10\.0\.40\.313/ },
  );
  t.throws(() => vmwareStack(settings({ addresses: ["10.0.40.11/24", "10.0.40.12/24", "10.0.40.13/24"] })), {
    message: /gateway/,
  });
  t.throws(() => vmwareStack(settings({ gateway: "10.0.40.1" })), { message: /go with addresses/ });
  t.is(
    shellCommand(["steward", "--datacenter", "Lab DC", "--template", "it's"]),
    `steward --datacenter 'Lab DC' --template 'it'\\''s'`,
  );
});
