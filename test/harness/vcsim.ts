/**
 * vCenter for tests: VMware's own simulator, vcsim (govmomi; built by test/harness/vcsim/build.sh),
 * answering the real vSphere Web Services API (SOAP at /sdk) over TLS with a certificate from our
 * PKI, behind a user and password. Its default inventory (datacenter DC0, cluster DC0_C0, hosts,
 * VMs DC0_H0_VM0 …) gets a template: DC0_H0_VM0 powered off, marked as a template and renamed
 * {@link TEMPLATE}.
 *
 * vcsim has no guests: its VMs run nothing. The GUEST BRIDGE below is the FAKE part, standing in
 * for what a real VM's guest (cloud-init's VMware datasource and VMware Tools) would do: it polls
 * the inventory, and for each powered-on VM that carries `guestinfo.userdata` it boots a test host
 * in the lab (test/harness/hosts.ts), reports the host's address as the VM's guest IP (extraConfig
 * `SET.guest.ipAddress`, vcsim's hook for what Tools would report), and applies the user data with
 * the test cloud-init (test/harness/cloud-init.ts; `gzip+base64` and `base64` encodings): its SSH
 * module before the address is reported (on a real guest sshd starts only after that module, so
 * nobody can reach the image's host key), the rest in the background. A VM
 * powered off has its host killed (and booted again, without cloud-init, if powered on again, as a
 * disk keeps what cloud-init did); a VM destroyed has its host killed for good.
 *
 * Disks of a VM other than its own (those in its folder, cloned from the template with it: the root
 * disk), such as storage instances' VMDKs, appear in its guest as a real disk would, whether added
 * before it booted or after: the bridge reads the VM's devices as vcsim lists them, and plugs each such disk into the VM's
 * test host (TestHost.plugDisk: a loop device) backed by the VMDK's own `-flat.vmdk` file in vcsim's
 * datastore directory (grown to the disk's capacity), so its data lives on the datastore, follows the
 * file from VM to VM and goes when vSphere deletes the file. With `disk.EnableUUID` TRUE in the VM's
 * configuration the guest names it by the disk's UUID (`backing.uuid`, else VirtualDiskManager's
 * QueryVirtualDiskUuid), as udev does for a VMware disk: `/dev/disk/by-id/wwn-0x<32 hex digits>` and
 * `scsi-3<…>`; without it, no by-id name. A disk taken off the VM is unplugged.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCertificateAuthority, issueServerCertificate } from "../../controller";
import { vsphere } from "../../substrates";

type MoRef = vsphere.MoRef;
const { MoRef, VimClient, child, moRefOf, optionValues, textAt, xsdString } = vsphere;
import { bootCloudInit } from "./cloud-init";
import type { TestHost, TestLab } from "./hosts";

/** The template the simulator is given (cloned by the vsphere substrate). */
export const TEMPLATE = "debian-12-template";
export const DATACENTER = "DC0";
/** Where build.sh installs vcsim (VCSIM overrides). */
export const VCSIM_BIN = process.env.VCSIM ?? "/usr/local/bin/vcsim";

export const vcsimAvailable = (): boolean => existsSync(VCSIM_BIN);

/** What the guest bridge did for one VM. */
export interface BridgedVm {
  vm: string;
  host: TestHost;
  /** When the bridge saw the VM powered on, booted its host, and reported its address (ms since epoch). */
  seenAt: number;
  bootedAt: number;
  reportedAt?: number;
  /** Settles when the user data has been applied; never rejects (see `error`). */
  cloudInit: Promise<void>;
  cloudInitDoneAt?: number;
  error?: Error;
  state: "running" | "off" | "destroyed";
  /** Its other disks than its own (see the module comment), plugged into the host: by datastore path, their loop device. */
  disks: Map<string, string>;
}

export interface GuestBridge {
  /** Every VM the bridge booted a host for, by VM id. */
  readonly vms: Map<string, BridgedVm>;
  /** Errors of the polling loop itself (the last few). */
  readonly errors: Error[];
}

export interface Vcsim {
  /** The SDK endpoint: https://127.0.0.1:PORT/sdk. */
  url: string;
  user: string;
  password: string;
  /** The CA that signs the simulator's certificate. */
  caCert: string;
  template: string;
  datacenter: string;
  /** A client logged in as the user, for assertions. */
  client: vsphere.VimClient;
  /** Undefined when started without a lab. */
  bridge?: GuestBridge;
  stop(): Promise<void>;
}

/**
 * Starts vcsim on a random port (`listen`: 127.0.0.1 unless given, e.g. a lab's bridge address) and
 * prepares the template; with a lab, runs the guest bridge.
 */
export async function startVcsim(
  lab?: TestLab,
  opts: { listen?: string; pollIntervalMs?: number; cloudInit?: boolean } = {},
): Promise<Vcsim> {
  if (!vcsimAvailable())
    throw new Error(`vcsim is not installed at ${VCSIM_BIN}: run test/harness/vcsim/build.sh (or set VCSIM)`);
  const listen = opts.listen ?? "127.0.0.1";
  const dir = await mkdtemp(join(tmpdir(), "steward-vcsim-"));
  const ca = await createCertificateAuthority("vcsim");
  const cert = await issueServerCertificate(ca, [listen]);
  await writeFile(join(dir, "server.crt"), cert.certPem);
  await writeFile(join(dir, "server.key"), cert.keyPem, { mode: 0o600 });
  const user = "steward-test";
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const proc = spawn(
    VCSIM_BIN,
    [
      "-l",
      `${listen}:0`,
      "-username",
      user,
      "-password",
      password,
      "-tlscert",
      join(dir, "server.crt"),
      "-tlskey",
      join(dir, "server.key"),
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const exited = new Promise<void>((r) => proc.once("exit", () => r()));
  let url: string;
  try {
    url = await announcedUrl(proc);
  } catch (err) {
    proc.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const client = new VimClient({ url, user, password, caCert: ca.certPem });
  let bridge: Bridge | undefined;
  const stop = async (): Promise<void> => {
    await bridge?.stop();
    client.close();
    proc.kill("SIGTERM");
    const killer = setTimeout(() => proc.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(killer);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await prepareTemplate(client);
    if (lab) bridge = new Bridge(lab, client, opts.pollIntervalMs ?? 200, opts.cloudInit ?? true);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url,
    user,
    password,
    caCert: ca.certPem,
    template: TEMPLATE,
    datacenter: DATACENTER,
    client,
    ...(bridge ? { bridge } : {}),
    stop,
  };
}

/** The URL vcsim prints (`export GOVC_URL=https://user:pass@127.0.0.1:PORT/sdk GOVC_SIM_PID=…`), credentials removed. */
function announcedUrl(proc: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "",
      err = "";
    const timer = setTimeout(
      () => reject(new Error(`vcsim did not start in 20 s: ${err.trim() || out.trim()}`)),
      20_000,
    );
    proc.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /GOVC_URL=(\S+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      const u = new URL(m[1]!);
      u.username = "";
      u.password = "";
      resolve(u.href);
    });
    proc.stderr!.on("data", (d: Buffer) => {
      err = (err + d.toString()).slice(-4000);
    });
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`vcsim exited (${code}) before it listened: ${err.trim()}`));
    });
  });
}

async function prepareTemplate(client: vsphere.VimClient): Promise<void> {
  const vm = await client.findByInventoryPath(`${DATACENTER}/vm/DC0_H0_VM0`);
  if (!vm) throw new Error("vcsim's default inventory has no DC0/vm/DC0_H0_VM0");
  await client.runTask("PowerOffVM_Task", vm);
  await client.call("MarkAsTemplate", vm);
  await client.runTask("Rename_Task", vm, { newName: TEMPLATE });
}

/** The FAKE guest side of vcsim's VMs (see the module comment). */
class Bridge implements GuestBridge {
  readonly vms = new Map<string, BridgedVm>();
  readonly errors: Error[] = [];
  private stopped = false;
  private readonly loop: Promise<void>;

  /** `cloudInit` false: guests of an image without cloud-init, which boot and ignore their user data. */
  constructor(
    private readonly lab: TestLab,
    private readonly client: vsphere.VimClient,
    private readonly intervalMs: number,
    private readonly cloudInit: boolean,
  ) {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.poll();
      } catch (err) {
        this.errors.push(err instanceof Error ? err : new Error(String(err)));
        if (this.errors.length > 20) this.errors.shift();
      }
      await new Promise((r) => setTimeout(r, this.intervalMs));
    }
  }

  private async poll(): Promise<void> {
    const sc = await this.client.serviceContent();
    const seen = await this.client.propertiesUnder(sc.rootFolder, "VirtualMachine", [
      "runtime.powerState",
      "config.extraConfig",
      "guest.ipAddress",
      "config.hardware.device",
      "config.files.vmPathName",
    ]);
    const present = new Set<string>();
    for (const o of seen) {
      if (this.stopped) return;
      const id = o.obj.value;
      present.add(id);
      const on = o.props.get("runtime.powerState")?.text === "poweredOn";
      const known = this.vms.get(id);
      if (known) await this.syncDisks(o, known);
      if (known) {
        if (!on && known.state === "running") {
          known.state = "off";
          await known.host.kill();
        } else if (on && known.state === "off") {
          // Powered on again: the same disk boots; cloud-init does not run twice for an instance.
          await known.host.start();
          known.state = "running";
          await this.reportAddress(o.obj, known);
        }
        continue;
      }
      if (!on) continue;
      const config = optionValues(o.props.get("config.extraConfig"));
      const userData = config.get("guestinfo.userdata");
      if (userData === undefined) continue;
      await this.boot(o.obj, userData, config.get("guestinfo.userdata.encoding"));
      await this.syncDisks(o, this.vms.get(id)!);
    }
    for (const b of this.vms.values()) {
      if (b.state !== "destroyed" && !present.has(b.vm)) {
        b.state = "destroyed";
        await b.host.kill();
        for (const loop of b.disks.values()) await b.host.unplugDisk(loop).catch(() => undefined);
        b.disks.clear();
      }
    }
  }

  /** Plugs the VM's disks other than its own into its host, and unplugs those taken off (see the module comment). */
  private async syncDisks(o: vsphere.ObjectContent, vm: BridgedVm): Promise<void> {
    // The VM's own folder: `[ds] name/` of `[ds] name/name.vmx`.
    const own = (textAt(o.props.get("config.files.vmPathName")) ?? "").replace(/[^/\]]*$/, "");
    const listed = new Map<string, vsphere.XmlNode>();
    for (const d of o.props.get("config.hardware.device")?.children ?? []) {
      const file = textAt(d, "backing/fileName");
      if (d.xsiType === "VirtualDisk" && file && !(own && file.startsWith(own))) listed.set(file, d);
    }
    for (const [file, loop] of vm.disks)
      if (!listed.has(file)) {
        await vm.host.unplugDisk(loop);
        vm.disks.delete(file);
      }
    const byUuid = /^true$/i.test(optionValues(o.props.get("config.extraConfig")).get("disk.EnableUUID") ?? "");
    for (const [file, d] of listed) {
      if (vm.disks.has(file) || vm.state !== "running") continue;
      const flat = (await this.localPath(file)).replace(/\.vmdk$/, "-flat.vmdk");
      const capacity = Number(textAt(d, "capacityInKB") ?? 0) * 1024;
      const size = (await stat(flat)).size;
      if (size < capacity) await truncate(flat, capacity);
      const uuid = textAt(d, "backing/uuid") ?? (await this.diskUuid(file));
      const hex = uuid.replace(/[^0-9a-f]/gi, "").toLowerCase();
      const names = byUuid ? [`wwn-0x${hex}`, `scsi-3${hex}`] : [];
      const { loop } = await vm.host.plugDisk(Math.ceil(Math.max(size, capacity) / 2 ** 20), names, { file: flat });
      vm.disks.set(file, loop);
    }
  }

  /** Where vcsim keeps a datastore path's file: its datastore's `info.url` directory. */
  private async localPath(file: string): Promise<string> {
    const m = /^\[([^\]]+)\]\s*(.*)$/.exec(file);
    if (!m) throw new Error(`not a datastore path: ${file}`);
    const sc = await this.client.serviceContent();
    const stores = await this.client.propertiesUnder(sc.rootFolder, "Datastore", ["name", "info.url"]);
    const url = stores.find((ds) => ds.props.get("name")?.text === m[1])?.props.get("info.url")?.text;
    if (!url) throw new Error(`vcsim has no datastore ${m[1]}`);
    return join(url, m[2]!);
  }

  /** A disk's UUID as vSphere's disk manager tells it (vcsim leaves `backing.uuid` unset). */
  private async diskUuid(file: string): Promise<string> {
    const content = (
      await this.client.call("RetrieveServiceContent", new MoRef("ServiceInstance", "ServiceInstance"))
    )[0];
    const manager = moRefOf(child(content, "virtualDiskManager"))!;
    const datacenter = (await this.client.findByInventoryPath(DATACENTER))!;
    return textAt((await this.client.call("QueryVirtualDiskUuid", manager, { name: file, datacenter }))[0]) ?? "";
  }

  private async boot(vm: MoRef, userData: string, encoding: string | undefined): Promise<void> {
    const seenAt = Date.now();
    const host = await this.lab.addHost();
    const entry: BridgedVm = {
      vm: vm.value,
      host,
      seenAt,
      bootedAt: Date.now(),
      cloudInit: Promise.resolve(),
      state: "running",
      disks: new Map(),
    };
    this.vms.set(vm.value, entry);
    let bytes: Buffer | undefined;
    // cloud-init's VMware datasource: base64 (or gzip+base64: cloud-init gunzips), else plain text.
    const enc = (encoding ?? "").toLowerCase();
    if (["base64", "b64", "gzip+base64", "gz+b64"].includes(enc)) bytes = Buffer.from(userData, "base64");
    else if (enc === "") bytes = Buffer.from(userData, "utf8");
    else entry.error = new Error(`guestinfo.userdata.encoding ${encoding} is not one cloud-init knows`);
    const failed = (err: unknown): void => {
      entry.error = err instanceof Error ? err : new Error(String(err));
    };
    // The SSH module runs before sshd starts; then Tools reports the address (the guest's network
    // is up), before cloud-init's later modules end.
    const booted = bytes && this.cloudInit ? await bootCloudInit(host, bytes).catch(failed) : undefined;
    await this.reportAddress(vm, entry);
    if (booted)
      entry.cloudInit = booted.rest().then(() => {
        entry.cloudInitDoneAt = Date.now();
      }, failed);
  }

  private async reportAddress(vm: MoRef, entry: BridgedVm): Promise<void> {
    await this.client.runTask("ReconfigVM_Task", vm, {
      spec: { extraConfig: [{ key: "SET.guest.ipAddress", value: xsdString(entry.host.ip) }] },
    });
    entry.reportedAt = Date.now();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    for (const b of this.vms.values()) {
      await b.host.kill().catch(() => undefined);
      for (const loop of b.disks.values()) await b.host.unplugDisk(loop).catch(() => undefined);
      await b.cloudInit;
    }
  }
}
