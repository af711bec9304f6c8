/**
 * The vSphere stack: three VMs cloned from a template as the hosts of a 3-replica controller
 * (installed over SSH, host keys pinned), kept on different ESXi hosts by a DRS anti-affinity rule,
 * then a vsphere model with two integrated applications whose machines the controller clones itself.
 *
 * It comes up in three `pulumi up`s, each enabled by a setting (README.md says why and how):
 * 1. the three VMs (cloud-init makes the SSH user and publishes each VM's host key fingerprint in
 *    its `guestinfo.steward.hostkey.ed25519`) and their anti-affinity rule;
 * 2. with `hostKeys` (read from those keys through vCenter): the controller;
 * 3. with `credential` (once a vCenter account is stored on the controller with
 *    `steward add-credential`): the model, its applications and their integration.
 */
import type * as pulumi from "@pulumi/pulumi";
import { join } from "node:path";
import { stringify } from "yaml";
import { Application, Controller, Integration, Model } from "steward";
import type { SshHost } from "steward";
import * as vsphere from "./vsphere";

export interface VmwareStackSettings {
  /** vCenter's host name (or address), as its certificate names it: `vcenter.example.com`. */
  vcenter: string;
  /** The vCenter account Pulumi clones the controller's VMs with (README.md lists its privileges). */
  vcenterUser: string;
  /** Its password: a secret. */
  vcenterPassword: pulumi.Input<string>;
  /** The CA (PEM) that signs vCenter's certificate, for the controller; none when a public CA does. */
  vcenterCaCert?: string;
  /** The datacenter (its name, or its path in the inventory). */
  datacenter: string;
  /** The DRS cluster the VMs run in, under the datacenter's host folder. */
  cluster: string;
  /** A resource pool path under the datacenter's host folder. @default "<cluster>/Resources", the cluster's root pool */
  resourcePool?: string;
  /** The datastore of the controller's VMs (the model's VMs go to the template's). */
  datastore: string;
  /** The port group of the controller's VMs: the template's own, as the controller's clones keep the template's. */
  network: string;
  /** The template (its name, or its path under the datacenter's VM folder): Debian 12 or Ubuntu 24.04 with cloud-init, open-vm-tools and curl. */
  template: string;
  /** The VM folder (path under the datacenter's) for every VM, the controller's and the model's. @default the datacenter's */
  folder?: string;
  /** Three ESXi hosts of the cluster to start the three VMs on, one each; for clusters without DRS. */
  esxiHosts?: string[];
  /** Three static addresses, `10.0.40.11/24`, one per VM, in order; DHCP when absent. */
  addresses?: string[];
  /** With `addresses`: the default gateway. */
  gateway?: string;
  /** With `addresses`: DNS servers. */
  nameservers?: string[];
  /** @default 2 */
  controllerCpus?: number;
  /** @default 4096 */
  controllerMemoryMb?: number;
  /** The system disk, at least the template's. @default 16 */
  controllerDiskGb?: number;
  /** The controller's VMs are named `<vmPrefix>-controller-0` … `-2`. */
  vmPrefix: string;
  /** The OpenSSH public key the VMs' SSH user is made with (by cloud-init). */
  publicKey: string;
  /** Its private key, for installing the controller over SSH: a secret. */
  privateKey: pulumi.Input<string>;
  /** The user cloud-init makes on each VM, with the key and passwordless sudo. @default "steward" */
  sshUser?: string;
  /** Stage 2: the three VMs' ED25519 host key fingerprints (`SHA256:…`), in the VMs' order. */
  hostKeys?: string[];
  /** Stage 3: the name the controller's vCenter account is stored under on the controller (`steward add-credential`). */
  credential?: string;
  /** Units of the web application, one VM each. @default 3 */
  webUnits?: number;
  /** Where the example operators are (the repository's operators/). */
  operatorsDir: string;
}

/** The credential name the printed commands use until `credential` is set. */
export const DEFAULT_CREDENTIAL = "steward-vsphere";
/** Where each VM publishes its ED25519 host key's fingerprint (set by the guest, read through vCenter). */
export const HOST_KEY_GUESTINFO = "guestinfo.steward.hostkey.ed25519";
/** The file `replicaCloudCommand` reads vCenter's CA from (README.md saves it there). */
export const VCENTER_CA_FILE = "vcenter-ca.pem";

export function vmwareStack(s: VmwareStackSettings) {
  if (/[/:\s]/.test(s.vcenter))
    throw new Error(`vcenter: give vCenter's host name, such as vcenter.example.com, not ${JSON.stringify(s.vcenter)}`);
  if (s.esxiHosts && (s.esxiHosts.length !== 3 || new Set(s.esxiHosts).size !== 3))
    throw new Error(`esxiHosts: give three distinct ESXi hosts of ${s.cluster}, not ${JSON.stringify(s.esxiHosts)}`);
  if (s.addresses) {
    if (s.addresses.length !== 3 || new Set(s.addresses.map(hostOf)).size !== 3)
      throw new Error(
        `addresses: give three distinct addresses with their prefix length (10.0.40.11/24), one per VM, not ${JSON.stringify(s.addresses)}`,
      );
    const bad = s.addresses.find((a) => !isIpv4Cidr(a));
    if (bad !== undefined)
      throw new Error(
        `addresses: ${JSON.stringify(bad)} is not an IPv4 address with its prefix length, such as 10.0.40.11/24`,
      );
    if (!s.gateway || !isIpv4(s.gateway))
      throw new Error(
        `gateway: static addresses need the default gateway's IPv4 address, not ${JSON.stringify(s.gateway)}`,
      );
  } else if (s.gateway || s.nameservers)
    throw new Error("gateway and nameservers go with addresses: without them the VMs take DHCP's");
  if (s.hostKeys && s.hostKeys.length !== 3)
    throw new Error(`hostKeys: give the three VMs' fingerprints in order, not ${s.hostKeys.length}`);
  const sshUser = s.sshUser ?? "steward";
  const resourcePool = s.resourcePool ?? `${s.cluster}/Resources`;

  // --- vCenter, through an explicit provider: the password goes to it alone, and no
  // VSPHERE_ALLOW_UNVERIFIED_SSL in the environment can turn certificate checks off.
  const provider = new vsphere.Provider("vcenter", {
    vsphereServer: s.vcenter,
    user: s.vcenterUser,
    password: s.vcenterPassword,
    allowUnverifiedSsl: false,
  });
  const invoke = { provider };
  const datacenter = vsphere.getDatacenterOutput({ name: s.datacenter }, invoke);
  const where = { datacenterId: datacenter.id };
  const cluster = vsphere.getComputeClusterOutput({ name: s.cluster, ...where }, invoke);
  const pool = vsphere.getResourcePoolOutput({ name: resourcePool, ...where }, invoke);
  const datastore = vsphere.getDatastoreOutput({ name: s.datastore, ...where }, invoke);
  const network = vsphere.getNetworkOutput({ name: s.network, ...where }, invoke);
  const template = vsphere.getVirtualMachineOutput({ name: s.template, ...where }, invoke);
  const esxiHosts = s.esxiHosts?.map((name) => vsphere.getHostOutput({ name, ...where }, invoke));

  // --- The controller's VMs: full clones of the template, with its firmware, guest type, adapter
  // and disks (the first grown to controllerDiskGb), on the given port group. cloud-init (VMware
  // datasource) reads their metadata and user data from guestinfo; both only count at first boot,
  // so later changes to them, or a new template, never replace a replica's VM.
  const names = [0, 1, 2].map((i) => `${s.vmPrefix}-controller-${i}`);
  const vms = names.map(
    (name, i) =>
      new vsphere.VirtualMachine(
        `controller-${i}`,
        {
          name,
          resourcePoolId: pool.id,
          datastoreId: datastore.id,
          ...(s.folder ? { folder: s.folder } : {}),
          ...(esxiHosts ? { hostSystemId: esxiHosts[i]!.id } : {}),
          numCpus: s.controllerCpus ?? 2,
          memory: s.controllerMemoryMb ?? 4096,
          guestId: template.guestId,
          firmware: template.firmware,
          scsiType: template.scsiType,
          networkInterfaces: [
            { networkId: network.id, adapterType: template.networkInterfaceTypes.apply((types) => types[0]!) },
          ],
          disks: template.disks.apply((disks) =>
            disks.map((d, n) => ({
              label: `disk${n}`,
              unitNumber: d.unitNumber,
              size: n === 0 ? Math.max(d.size, s.controllerDiskGb ?? 16) : d.size,
              thinProvisioned: d.thinProvisioned,
              eagerlyScrub: d.eagerlyScrub,
            })),
          ),
          clone: { templateUuid: template.id },
          extraConfig: {
            "guestinfo.metadata": base64(
              JSON.stringify(controllerMetadata(name, s.addresses?.[i], s.gateway, s.nameservers)),
            ),
            "guestinfo.metadata.encoding": "base64",
            "guestinfo.userdata": base64(controllerUserData(sshUser, s.publicKey)),
            "guestinfo.userdata.encoding": "base64",
          },
          // Wait (up to 10 minutes) until VMware Tools reports an address on the default gateway's network.
          waitForGuestNetTimeout: 10,
          waitForGuestNetRoutable: true,
        },
        { provider, ignoreChanges: ["clone", "extraConfig", "hostSystemId"] },
      ),
  );

  // DRS keeps them on three hosts. Not mandatory: HA may still restart a replica on a host that
  // runs another when a host dies (two replicas of three keep quorum; one down, none).
  const apart = new vsphere.ComputeClusterVmAntiAffinityRule(
    "controllers-apart",
    {
      computeClusterId: cluster.id,
      virtualMachineIds: vms.map((vm) => vm.id),
      name: `${s.vmPrefix}-controllers-apart`,
      enabled: true,
      mandatory: false,
    },
    { provider },
  );

  const vcenterUrl = `https://${s.vcenter}/sdk`;
  const credential = s.credential ?? DEFAULT_CREDENTIAL;
  // Where the controller clones VMs, for the model and for replacement replicas alike.
  const placement = {
    url: vcenterUrl,
    datacenter: s.datacenter,
    template: s.template,
    resourcePool,
    ...(s.folder ? { folder: s.folder } : {}),
    ...(s.vcenterCaCert ? { caCert: s.vcenterCaCert } : {}),
  };
  const infrastructure = {
    vcenterUrl,
    controllerVmIds: vms.map((vm) => vm.id),
    controllerVmNames: names,
    controllerMoids: vms.map((vm) => vm.moid),
    controllerAddresses: vms.map((vm) => vm.defaultIpAddress),
    /** `steward set-replica-cloud vsphere …` for this placement, to run once the credential is stored. */
    replicaCloudCommand: shellCommand([
      "steward",
      "set-replica-cloud",
      "vsphere",
      "--credential",
      credential,
      "--vcenter",
      vcenterUrl,
      "--datacenter",
      s.datacenter,
      "--template",
      s.template,
      ...(s.folder ? ["--folder", s.folder] : []),
      "--resource-pool",
      resourcePool,
      ...(s.vcenterCaCert ? ["--vcenter-ca-file", VCENTER_CA_FILE] : []),
    ]),
  };
  const resources = { provider, vms, apart };
  if (!s.hostKeys) return { stage: 1, ...infrastructure, resources };

  // --- Stage 2: the controller, on the addresses the VMs report. Pulumi and `steward` reach them
  // there, the replicas advertise them to each other (etcd) and to agents.
  const hostKeys = s.hostKeys;
  const controller = new Controller(
    "prod",
    {
      substrate: "ssh",
      hosts: vms.map((vm, i) =>
        vm.defaultIpAddress.apply((ip): SshHost => ({ host: ip, user: sshUser, hostKey: hostKeys[i]! })),
      ),
      replicas: 3,
      privateKey: s.privateKey,
      replaceAfterSeconds: 300,
      maxReplacementsPerHour: 2,
    },
    {
      // The provider re-creates the controller when its first host changes. Once it runs, it keeps
      // its own membership (the keeper replaces lost replicas), so a re-created first VM must not
      // take every model with it.
      ignoreChanges: ["hosts[0]"],
    },
  );
  const controlled = {
    ...infrastructure,
    controllerUuid: controller.uuid,
    addresses: controller.addresses,
    leader: controller.leader,
    members: controller.members,
    connection: controller.connection,
  };
  if (!s.credential) return { stage: 2, ...controlled, resources: { ...resources, controller } };

  // --- Stage 3: a model whose machines are VMs the controller clones from the same template with
  // the stored account; web on three of them, a checker on a fourth, integrated.
  const model = new Model("shop", {
    connection: controller.connection,
    substrate: "vsphere",
    credential: s.credential,
    vsphere: placement,
  });
  // Units wait for their VM to be cloned, boot and enrol (a few minutes) before their hooks run.
  const web = new Application("web", {
    model,
    operator: join(s.operatorsDir, "hello-http"),
    units: s.webUnits ?? 3,
    config: { greeting: "Hello from vSphere" },
    timeoutSeconds: 1200,
  });
  const checker = new Application("checker", {
    model,
    operator: join(s.operatorsDir, "http-checker"),
    units: 1,
    timeoutSeconds: 1200,
  });
  const integration = new Integration("web-checker", {
    endpoints: [
      { application: web, endpoint: "website" },
      { application: checker, endpoint: "upstream" },
    ],
  });
  return {
    stage: 3,
    ...controlled,
    webUnits: web.unitNames,
    checkerUnits: checker.unitNames,
    resources: { ...resources, controller, model, web, checker, integration },
  };
}

/**
 * cloud-init's metadata for a controller VM: its identity and hostname, and (with a static address)
 * its network, in the version 2 format the VMware datasource takes; without one, the template's
 * network configuration (DHCP) stays.
 */
export function controllerMetadata(name: string, address?: string, gateway?: string, nameservers?: string[]) {
  return {
    "instance-id": name,
    "local-hostname": name,
    ...(address
      ? {
          network: {
            version: 2,
            ethernets: {
              nic0: {
                match: { name: "e*" },
                dhcp4: false,
                addresses: [address],
                routes: [{ to: "0.0.0.0/0", via: gateway }],
                ...(nameservers?.length ? { nameservers: { addresses: nameservers } } : {}),
              },
            },
          },
        }
      : {}),
  };
}

/**
 * First boot of a controller VM: the SSH user with the key and passwordless sudo (whatever the
 * template's default user is), no password logins; etcd from the distribution (Steward needs 3.4 or
 * newer: Debian 12 has 3.4.23, Ubuntu 24.04 3.4.30), its packaged service stopped since each
 * replica runs its own member on 2379-2380; then the host key's fingerprint published in guestinfo
 * (through VMware Tools: read through vCenter, not over the network SSH uses). Node.js comes over
 * SSH at install when the image's is older than 20. Nothing secret: anyone who may read the VM's
 * settings in vCenter can read this.
 */
export function controllerUserData(sshUser: string, publicKey: string): string {
  const publish = `info-set ${HOST_KEY_GUESTINFO} $(ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub | cut -d ' ' -f 2)`;
  return `#cloud-config\n${stringify(
    {
      users: [
        {
          name: sshUser,
          shell: "/bin/bash",
          sudo: "ALL=(ALL) NOPASSWD:ALL",
          lock_passwd: true,
          ssh_authorized_keys: [publicKey],
        },
      ],
      ssh_pwauth: false,
      package_update: true,
      packages: ["etcd-server"],
      runcmd: [
        ["systemctl", "disable", "--now", "etcd"],
        // vmtoolsd when the VM's settings forbid vmware-rpctool's info-set (guest_rpc.rpci.auth.cmd.info-set).
        ["sh", "-c", `vmware-rpctool "${publish}" || vmtoolsd --cmd "${publish}"`],
      ],
    },
    { lineWidth: 0 },
  )}`;
}

const base64 = (text: string): string => Buffer.from(text, "utf8").toString("base64");

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
function isIpv4(s: string): boolean {
  const m = IPV4.exec(s);
  return !!m && m.slice(1).every((o) => Number(o) <= 255);
}
function isIpv4Cidr(s: string): boolean {
  const [ip, bits, ...rest] = s.split("/");
  return (
    rest.length === 0 && isIpv4(ip ?? "") && /^\d{1,2}$/.test(bits ?? "") && Number(bits) >= 1 && Number(bits) <= 32
  );
}
const hostOf = (cidr: string): string => cidr.split("/")[0]!;

/** A command line with each word quoted for a POSIX shell where it needs it (vSphere names often hold spaces). */
export function shellCommand(words: string[]): string {
  return words.map((w) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`)).join(" ");
}
