/**
 * The vSphere substrate's machines: one VM per machine, cloned from a template (any Linux image
 * with cloud-init, whose VMware datasource reads `guestinfo.*`, and curl), given the same user data
 * as an EC2 instance (../cloud-init.ts) in `guestinfo.userdata` (`gzip+base64`), and powered on:
 * cloud-init enrols its agent with a one-time token, no SSH needed. Removing a machine powers its VM
 * off and destroys it.
 *
 * Finding a machine's VM again (after a restart, a change of leader): every VM is named
 * `steward-<controller uuid, first 8>-<model uuid, first 8>-<machine>` and carries the full
 * identities in its extraConfig ({@link EXTRA_CONFIG}: `guestinfo.steward.controller`, `.model`,
 * `.machine`). VMs are looked for anywhere in the datacenter: by name prefix first (cheap: one
 * property of every VM), then confirmed by those keys, so a VM of another controller or a
 * look-alike name is never touched. A model migrated to another controller has its VMs marked and
 * renamed as that controller's ({@link VsphereMachines.adopt}).
 *
 * Constraints: `cores` and `mem` become `numCPUs` and `memoryMB` (rounded up to the 4 MB vSphere
 * wants) of a VirtualMachineConfigSpec applied with ReconfigVM_Task to the clone before it is
 * powered on; without them the VM keeps the template's. (vCenter would also apply them from the
 * clone spec's `config`, but vcsim copies the template's hardware there; reconfiguring is one path
 * that both honour.) arch, root-disk and instance-type are refused before anything is cloned.
 *
 * Settings (inventory paths are relative to the datacenter's `vm` or `host` folder, or absolute
 * when they start with `/`):
 * - `datacenter`: its inventory path (`DC0`, `dcs/DC0`);
 * - `template`: the VM or template to clone, a path under `<datacenter>/vm` or else a name
 *   searched for in the whole datacenter;
 * - `folder`: where the VMs go (default: the datacenter's `vm` folder);
 * - `resourcePool`: a pool under `<datacenter>/host` (`cluster/Resources`, or a cluster or host,
 *   meaning its root pool); default: the template's pool, or its host's root pool for a template.
 */
import { gzipSync } from "node:zlib";
import type { Constraints, VsphereModelSettings } from "../../api/core";
import { constraintsProblem, invalidRequest } from "../../api/core";
import type { MachineBroker, MachineSpec, MachineTarget, Progress, StartedMachine } from "../brokers";
import { enrolmentUserData } from "../cloud-init";
import type { ObjectContent, VsphereConnectionOptions } from "./soap";
import { MoRef, Typed, VimClient, isFault, moRefOf, optionValues, xsdString } from "./soap";
import { disksOf, isStorageDisk } from "./disks";

/** A model's vSphere settings (the API's), and for a self-signed test simulator only: accept any certificate. */
export type VsphereSettings = VsphereModelSettings & { insecure?: boolean };

export interface VsphereCredentials {
  user: string;
  password: string;
}

/** A stored vsphere credential's attributes (api/substrate-kinds.ts, the kind's credential) as the client takes them. */
export function vsphereCredentialsOf(attributes: Record<string, string>): VsphereCredentials {
  return { user: attributes.user!, password: attributes.password! };
}

/** Where VMs go: the vCenter and its settings, the credential, and the controller they belong to. */
export interface VspherePlacement {
  settings: VsphereSettings;
  credentials: VsphereCredentials;
  controllerUuid: string;
}

/** The extraConfig keys Steward sets on its VMs. */
export const EXTRA_CONFIG = {
  controller: "guestinfo.steward.controller",
  model: "guestinfo.steward.model",
  machine: "guestinfo.steward.machine",
  /** cloud-init's VMware datasource: user data and its encoding, metadata (instance-id, hostname) and its encoding. */
  userData: "guestinfo.userdata",
  userDataEncoding: "guestinfo.userdata.encoding",
  metadata: "guestinfo.metadata",
  metadataEncoding: "guestinfo.metadata.encoding",
  /** The disks' SCSI identifiers are their UUIDs: how the guest finds a storage instance's disk (volumes.ts). */
  diskUuids: "disk.EnableUUID",
} as const;

/** Controller replicas' VMs are named and marked as the machines of a pseudo-model of this name. */
export const REPLICA_MODEL = "replicas";

/** A machine's VM as Steward records it. */
export interface VsphereVm {
  /** The VM's managed object id (`vm-42`). */
  id: string;
  name: string;
  machine?: string;
  /** `poweredOn`, `poweredOff` or `suspended`. */
  state: string;
  /** The guest's address, as VMware Tools reports it. */
  address?: string;
}

/** The VM name of a machine. */
export function vmName(controllerUuid: string, model: string, machine: string): string {
  return `${namePrefix(controllerUuid, model)}${machine}`;
}
const namePrefix = (controllerUuid: string, model?: string): string =>
  `steward-${controllerUuid.slice(0, 8)}-${model === undefined ? "" : `${model.slice(0, 8)}-`}`;

const VM_PROPERTIES = ["name", "config.extraConfig", "runtime.powerState", "guest.ipAddress"];

/** A VM's size from constraints: what the clone's config spec sets (absent: the template's). */
interface VmSize {
  numCPUs?: number;
  memoryMB?: number;
}

function vmSize(c: Constraints): VmSize {
  const problem = constraintsProblem("vsphere", c);
  if (problem) throw invalidRequest(problem, { field: "constraints" });
  // vSphere wants a VM's memory in multiples of 4 MB.
  return {
    ...(c.cores !== undefined ? { numCPUs: c.cores } : {}),
    ...(c.mem !== undefined ? { memoryMB: Math.ceil(c.mem / 4) * 4 } : {}),
  };
}

interface Datacenter {
  ref: MoRef;
  path: string;
  vmFolder: MoRef;
  hostFolder: MoRef;
}
interface CloneSource {
  template: MoRef;
  folder: MoRef;
  pool: MoRef;
}

export class VsphereMachines implements MachineBroker<VspherePlacement> {
  private readonly clients = new Map<string, VimClient>();
  /** Per client, by the datacenter's path. */
  private readonly datacenters = new Map<VimClient, Map<string, Promise<Datacenter>>>();

  async startMachine(
    spec: MachineSpec<VspherePlacement>,
    opts: { progress?: Progress; signal?: AbortSignal } = {},
  ): Promise<StartedMachine> {
    const p = spec.placement;
    const vc = this.client(p);
    const dc = await this.datacenter(p);
    const existing = await this.machineVm(p, dc, spec.model, spec.machine);
    if (existing) return this.resume(vc, spec, existing, opts);
    if (!spec.issueEnrolment) throw new Error("vsphere machines enrol themselves: the spec needs issueEnrolment");
    const size = vmSize(spec.constraints ?? {});
    const source = await this.cloneSource(p, dc);
    opts.signal?.throwIfAborted();
    const token = await spec.issueEnrolment();
    const userData = enrolmentUserData({
      model: spec.model,
      machine: spec.machine,
      controller: spec.controller,
      token,
    });
    let vm: MoRef;
    try {
      vm = await this.clone(p, source, { model: spec.model, machine: spec.machine, userData, ...size }, opts);
    } catch (err) {
      // Another start of this machine cloned it first (vCenter keeps names unique in a folder).
      if (!isFault(err, "DuplicateName")) throw err;
      const other = await this.machineVm(p, dc, spec.model, spec.machine);
      if (!other) throw err;
      return this.resume(vc, spec, other, opts);
    }
    opts.progress?.(`VM ${vm.value} powered on; waiting for its agent to enrol`);
    await spec.waitForLogin?.();
    const hardware: Constraints = {
      ...(size.numCPUs !== undefined ? { cores: size.numCPUs } : {}),
      ...(size.memoryMB !== undefined ? { mem: size.memoryMB } : {}),
    };
    return { instanceId: vm.value, changed: true, ...(Object.keys(hardware).length ? { hardware } : {}) };
  }

  /**
   * Clones the template (as `settings` say) to a VM for `model`/`machine` carrying `userData`, and
   * powers it on. Controller replicas use it too (as model "replicas"), with their own user data.
   */
  async cloneWith(
    p: VspherePlacement,
    o: { model: string; machine: string; userData: Buffer },
    opts: { progress?: Progress; signal?: AbortSignal } = {},
  ): Promise<string> {
    const source = await this.cloneSource(p, await this.datacenter(p));
    return (await this.clone(p, source, o, opts)).value;
  }

  private async clone(
    p: VspherePlacement,
    source: CloneSource,
    o: { model: string; machine: string; userData: Buffer } & VmSize,
    opts: { progress?: Progress; signal?: AbortSignal },
  ): Promise<MoRef> {
    const vc = this.client(p);
    const name = vmName(p.controllerUuid, o.model, o.machine);
    const { userData } = o;
    const metadata = gzipSync(Buffer.from(JSON.stringify({ "instance-id": name, "local-hostname": name })));
    const extraConfig = Object.entries({
      [EXTRA_CONFIG.controller]: p.controllerUuid,
      [EXTRA_CONFIG.model]: o.model,
      [EXTRA_CONFIG.machine]: o.machine,
      [EXTRA_CONFIG.userData]: userData.toString("base64"),
      [EXTRA_CONFIG.userDataEncoding]: "gzip+base64",
      [EXTRA_CONFIG.metadata]: metadata.toString("base64"),
      [EXTRA_CONFIG.metadataEncoding]: "gzip+base64",
      // The guest's Linux names its disks by their UUIDs only with this on (volumes.ts byIdNamesOf).
      [EXTRA_CONFIG.diskUuids]: "TRUE",
    }).map(([key, value]) => ({ key, value: xsdString(value) }));
    opts.progress?.(`cloning ${p.settings.template} to VM ${name}`);
    const vm = moRefOf(
      await vc.runTask(
        "CloneVM_Task",
        source.template,
        {
          folder: source.folder,
          name,
          // VirtualMachineCloneSpec, in the WSDL's order: location, template, config, powerOn.
          spec: { location: { pool: source.pool }, template: false, config: { extraConfig }, powerOn: false },
        },
        { ...(opts.signal ? { signal: opts.signal } : {}) },
      ),
    );
    if (!vm) throw new Error(`vSphere cloned ${name} but named no VM`);
    if (o.numCPUs !== undefined || o.memoryMB !== undefined) {
      opts.progress?.(
        `VM ${vm.value} cloned; sizing it to ${[o.numCPUs !== undefined ? `${o.numCPUs} CPUs` : "", o.memoryMB !== undefined ? `${o.memoryMB} MB` : ""].filter(Boolean).join(" and ")}`,
      );
      // VirtualMachineConfigSpec, in the WSDL's order: numCPUs before memoryMB.
      try {
        await vc.runTask(
          "ReconfigVM_Task",
          vm,
          { spec: { numCPUs: o.numCPUs, memoryMB: o.memoryMB } },
          { ...(opts.signal ? { signal: opts.signal } : {}) },
        );
      } catch (err) {
        // Not left behind at the template's size, for a later start to power on as if it were sized.
        await vc.runTask("Destroy_Task", vm).catch(() => undefined);
        throw err;
      }
    }
    opts.progress?.(`VM ${vm.value} cloned; powering it on`);
    await vc.runTask("PowerOnVM_Task", vm, {}, { ...(opts.signal ? { signal: opts.signal } : {}) });
    return vm;
  }

  /** A machine's VM that exists already: powered on if it is not, then its agent awaited. */
  private async resume(
    vc: VimClient,
    spec: MachineSpec<VspherePlacement>,
    vm: VsphereVm,
    opts: { progress?: Progress; signal?: AbortSignal },
  ): Promise<StartedMachine> {
    let changed = false;
    if (vm.state !== "poweredOn") {
      // Powered off by hand, or a start interrupted between clone and power-on: its user data still
      // enrols it while its token lasts (a guest that ran cloud-init before just starts its agent).
      opts.progress?.(`VM ${vm.id} is ${vm.state}; powering it on`);
      await vc
        .runTask(
          "PowerOnVM_Task",
          new MoRef("VirtualMachine", vm.id),
          {},
          { ...(opts.signal ? { signal: opts.signal } : {}) },
        )
        .catch((err: unknown) => {
          if (!isFault(err, "InvalidPowerState")) throw err; // powered on meanwhile
        });
      changed = true;
    } else opts.progress?.(`VM ${vm.id} is poweredOn`);
    await spec.waitForLogin?.();
    return { instanceId: vm.id, changed };
  }

  /**
   * Takes over the VMs of a model that migrated here from `fromController` (as Juju's
   * AdoptResources): each is marked as this controller's (`guestinfo.steward.controller`, with
   * ReconfigVM_Task) and renamed to this controller's name (Rename_Task), so this controller finds it
   * as its own and `fromController` no longer does. Marked first: from then on the source's listing
   * never confirms it, even under its old name. Resumable: VMs are looked for under both names, one
   * already done is left alone, one marked but not yet renamed (a crash between the two) is renamed.
   * A VM of the model marked as a third controller's is not touched. The guest is not told:
   * `guestinfo.metadata`'s instance-id keeps the old name, so cloud-init does not run again at a
   * reboot. Answers how many VMs it changed (0 when there was nothing left to do).
   */
  async adopt(p: VspherePlacement, model: string, fromController: string): Promise<number> {
    const vc = this.client(p);
    const dc = await this.datacenter(p);
    const ours = namePrefix(p.controllerUuid, model),
      theirs = namePrefix(fromController, model);
    const named = (await vc.propertiesUnder(dc.ref, "VirtualMachine", ["name"])).filter((o) => {
      const n = o.props.get("name")?.text ?? "";
      return n.startsWith(ours) || n.startsWith(theirs);
    });
    let changed = 0;
    for (const o of await this.read(vc, named)) {
      const config = optionValues(o.props.get("config.extraConfig"));
      const owner = config.get(EXTRA_CONFIG.controller),
        machine = config.get(EXTRA_CONFIG.machine);
      if (
        config.get(EXTRA_CONFIG.model) !== model ||
        machine === undefined ||
        (owner !== fromController && owner !== p.controllerUuid)
      )
        continue;
      const name = vmName(p.controllerUuid, model, machine);
      let touched = false;
      try {
        if (owner !== p.controllerUuid) {
          await vc.runTask("ReconfigVM_Task", o.obj, {
            spec: { extraConfig: [{ key: EXTRA_CONFIG.controller, value: xsdString(p.controllerUuid) }] },
          });
          touched = true;
        }
        if (o.props.get("name")?.text !== name) {
          await vc.runTask("Rename_Task", o.obj, { newName: name });
          touched = true;
        }
      } catch (err) {
        if (!isFault(err, "ManagedObjectNotFound")) throw err; // destroyed meanwhile: nothing to take over
      }
      if (touched) changed++;
    }
    return changed;
  }

  /** Powers the machine's VMs off and destroys them (a machine already gone is fine). */
  async stopMachine(target: MachineTarget<VspherePlacement>, opts: { signal?: AbortSignal } = {}): Promise<void> {
    const p = target.placement;
    await this.destroy(p, await this.vms(p, await this.datacenter(p), target.model, target.machine), opts);
  }

  /** Every VM of this controller, whatever its model (replicas included), newest first. */
  async controllerVms(p: VspherePlacement): Promise<VsphereVm[]> {
    return this.vms(p, await this.datacenter(p));
  }

  /** One VM of this controller by id (undefined once it is gone, or if it is not this controller's). */
  async vm(p: VspherePlacement, id: string): Promise<VsphereVm | undefined> {
    const props = await this.client(p).propertiesOf(new MoRef("VirtualMachine", id), VM_PROPERTIES);
    return props ? this.recordOf(p, { obj: new MoRef("VirtualMachine", id), props }) : undefined;
  }

  /** Empties a VM's `guestinfo.userdata` (vSphere drops an extraConfig key set to ""), as cloud-init's `redact` does from inside. */
  async forgetUserData(p: VspherePlacement, id: string): Promise<void> {
    const extraConfig = [EXTRA_CONFIG.userData, EXTRA_CONFIG.userDataEncoding].map((key) => ({
      key,
      value: xsdString(""),
    }));
    await this.client(p).runTask("ReconfigVM_Task", new MoRef("VirtualMachine", id), { spec: { extraConfig } });
  }

  /** Powers these VMs off and destroys them (one already gone is fine). */
  async destroy(
    p: VspherePlacement,
    vms: Pick<VsphereVm, "id" | "state">[],
    opts: { signal?: AbortSignal } = {},
  ): Promise<void> {
    const vc = this.client(p);
    const taskOpts = opts.signal ? { signal: opts.signal } : {};
    for (const vm of vms) {
      const ref = new MoRef("VirtualMachine", vm.id);
      try {
        if (vm.state !== "poweredOff") {
          await vc.runTask("PowerOffVM_Task", ref, {}, taskOpts).catch((err: unknown) => {
            if (!isFault(err, "InvalidPowerState")) throw err; // already off
          });
        }
        // vSphere deletes every disk of a VM it destroys: storage instances' disks come off first (kept).
        await this.removeDisks(p, ref, isStorageDisk);
        await vc.runTask("Destroy_Task", ref, {}, taskOpts);
      } catch (err) {
        if (!isFault(err, "ManagedObjectNotFound")) throw err; // destroyed meanwhile
      }
    }
  }

  /** Takes the VM's disks whose file `which` picks off the VM, keeping their files (no fileOperation). */
  async removeDisks(p: VspherePlacement, vm: MoRef, which: (file: string) => boolean): Promise<number> {
    const vc = this.client(p);
    const props = await vc.propertiesOf(vm, ["config.hardware.device"]);
    const disks = disksOf(props?.get("config.hardware.device")).filter((d) => which(d.file));
    if (disks.length === 0) return 0;
    // VirtualDeviceConfigSpec `remove` without fileOperation `destroy`: the VMDK stays on its datastore.
    const deviceChange = disks.map((d) => ({
      operation: "remove",
      device: new Typed("VirtualDisk", {
        key: d.key,
        backing: new Typed("VirtualDiskFlatVer2BackingInfo", { fileName: d.file, diskMode: "persistent" }),
        controllerKey: d.controllerKey,
        unitNumber: d.unitNumber,
      }),
    }));
    await vc.runTask("ReconfigVM_Task", vm, { spec: { deviceChange } });
    return disks.length;
  }

  /** A client for the placement's vCenter (shared, kept with its session). */
  clientOf(p: VspherePlacement): VimClient {
    return this.client(p);
  }

  /** The placement's datacenter. */
  async datacenterRef(p: VspherePlacement): Promise<MoRef> {
    return (await this.datacenter(p)).ref;
  }

  /** The machine's VM (powered on ones first), if any. */
  async machineVmOf(p: VspherePlacement, model: string, machine: string): Promise<VsphereVm | undefined> {
    return this.machineVm(p, await this.datacenter(p), model, machine);
  }

  /** The model's VMs (of this controller), newest first. */
  async instances(p: VspherePlacement, model: string): Promise<VsphereVm[]> {
    return this.vms(p, await this.datacenter(p), model);
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
    this.datacenters.clear();
  }

  // ---- finding things ----

  /** One client per endpoint and credential (it keeps a session and a connection pool). */
  private client(p: VspherePlacement): VimClient {
    const o: VsphereConnectionOptions = {
      url: p.settings.url,
      user: p.credentials.user,
      password: p.credentials.password,
      ...(p.settings.caCert ? { caCert: p.settings.caCert } : {}),
      ...(p.settings.insecure ? { insecure: true } : {}),
    };
    const key = VimClient.keyOf(o);
    let c = this.clients.get(key);
    if (!c) {
      c = new VimClient(o);
      this.clients.set(key, c);
    }
    return c;
  }

  private datacenter(p: VspherePlacement): Promise<Datacenter> {
    const vc = this.client(p);
    const key = p.settings.datacenter;
    let known = this.datacenters.get(vc);
    if (!known) this.datacenters.set(vc, (known = new Map()));
    const cache = known;
    let d = cache.get(key);
    if (!d) {
      d = (async () => {
        const path = p.settings.datacenter.replace(/^\/+|\/+$/g, "");
        const ref = await vc.findByInventoryPath(path);
        if (!ref || ref.type !== "Datacenter")
          throw new Error(
            `vSphere datacenter ${JSON.stringify(p.settings.datacenter)} not found at ${vc.url}${ref ? ` (that path is a ${ref.type})` : ""}`,
          );
        const props = await vc.propertiesOf(ref, ["vmFolder", "hostFolder"]);
        const vmFolder = moRefOf(props?.get("vmFolder")),
          hostFolder = moRefOf(props?.get("hostFolder"));
        if (!vmFolder || !hostFolder) throw new Error(`vSphere datacenter ${path} has no vm or host folder`);
        return { ref, path, vmFolder, hostFolder };
      })();
      d.catch(() => cache.delete(key));
      cache.set(key, d);
    }
    return d;
  }

  /** An inventory path under the datacenter's `vm` or `host` folder (or absolute, with a leading `/`). */
  private pathIn(dc: Datacenter, under: "vm" | "host", path: string): string {
    return path.startsWith("/") ? path.replace(/^\/+/, "") : `${dc.path}/${under}/${path.replace(/\/+$/, "")}`;
  }

  /** What a clone needs: the template, the folder and the resource pool, each checked. */
  private async cloneSource(p: VspherePlacement, dc: Datacenter): Promise<CloneSource> {
    const vc = this.client(p);
    const s = p.settings;
    let template = await vc.findByInventoryPath(this.pathIn(dc, "vm", s.template));
    if (!template && !s.template.includes("/")) {
      const named = (await vc.propertiesUnder(dc.ref, "VirtualMachine", ["name"])).filter(
        (o) => o.props.get("name")?.text === s.template,
      );
      if (named.length > 1)
        throw new Error(
          `vSphere template ${JSON.stringify(s.template)} is ambiguous in datacenter ${dc.path}: ${named.length} VMs have that name; give its path under ${dc.path}/vm`,
        );
      template = named[0]?.obj;
    }
    if (!template || template.type !== "VirtualMachine") {
      throw new Error(
        `vSphere template ${JSON.stringify(s.template)} not found in datacenter ${dc.path} (looked for ${this.pathIn(dc, "vm", s.template)}${s.template.includes("/") ? "" : " and a VM of that name"})`,
      );
    }
    let folder = dc.vmFolder;
    if (s.folder) {
      const f = await vc.findByInventoryPath(this.pathIn(dc, "vm", s.folder));
      if (!f || f.type !== "Folder")
        throw new Error(
          `vSphere folder ${JSON.stringify(s.folder)} not found in datacenter ${dc.path} (looked for ${this.pathIn(dc, "vm", s.folder)})`,
        );
      folder = f;
    }
    let pool: MoRef | undefined;
    if (s.resourcePool) {
      const r = await vc.findByInventoryPath(this.pathIn(dc, "host", s.resourcePool));
      pool =
        r?.type === "ResourcePool"
          ? r
          : r && /ComputeResource$/.test(r.type)
            ? moRefOf((await vc.propertiesOf(r, ["resourcePool"]))?.get("resourcePool"))
            : undefined;
      if (!pool)
        throw new Error(
          `vSphere resource pool ${JSON.stringify(s.resourcePool)} not found in datacenter ${dc.path} (looked for ${this.pathIn(dc, "host", s.resourcePool)}${r ? `, a ${r.type}` : ""})`,
        );
    } else {
      // A VM has a pool; a template has none: its host's cluster (or standalone host) has.
      const t = await vc.propertiesOf(template, ["resourcePool", "runtime.host"]);
      pool = moRefOf(t?.get("resourcePool"));
      const host = moRefOf(t?.get("runtime.host"));
      if (!pool && host) {
        const compute = moRefOf((await vc.propertiesOf(host, ["parent"]))?.get("parent"));
        if (compute) pool = moRefOf((await vc.propertiesOf(compute, ["resourcePool"]))?.get("resourcePool"));
      }
      if (!pool)
        throw new Error(
          `vSphere template ${s.template} has no resource pool or host to clone into: give settings.resourcePool`,
        );
    }
    return { template, folder, pool };
  }

  /** The machine's VM (powered on ones first), if any. */
  private async machineVm(
    p: VspherePlacement,
    dc: Datacenter,
    model: string,
    machine: string,
  ): Promise<VsphereVm | undefined> {
    const vms = await this.vms(p, dc, model, machine);
    return vms.find((v) => v.state === "poweredOn") ?? vms[0];
  }

  /** This controller's VMs (for the model, and machine), confirmed by their extraConfig keys, newest first. */
  private async vms(p: VspherePlacement, dc: Datacenter, model?: string, machine?: string): Promise<VsphereVm[]> {
    const vc = this.client(p);
    const prefix =
      machine === undefined || model === undefined
        ? namePrefix(p.controllerUuid, model)
        : vmName(p.controllerUuid, model, machine);
    const named = (await vc.propertiesUnder(dc.ref, "VirtualMachine", ["name"])).filter((o) => {
      const n = o.props.get("name")?.text ?? "";
      return machine === undefined ? n.startsWith(prefix) : n === prefix;
    });
    const out: VsphereVm[] = [];
    for (const o of await this.read(vc, named)) {
      const vm = this.recordOf(p, o);
      if (!vm || (model !== undefined && vm.model !== model) || (machine !== undefined && vm.machine !== machine))
        continue;
      const { model: _, ...rest } = vm;
      out.push(rest);
    }
    // Managed object ids grow as objects are made: the highest is the newest.
    const n = (id: string): number => Number(/(\d+)$/.exec(id)?.[1] ?? 0);
    return out.sort((a, b) => n(b.id) - n(a.id));
  }

  /** {@link VM_PROPERTIES} of these VMs (one destroyed meanwhile is left out). */
  private async read(vc: VimClient, named: ObjectContent[]): Promise<ObjectContent[]> {
    try {
      return await vc.properties(
        named.map((o) => o.obj),
        VM_PROPERTIES,
      );
    } catch (err) {
      if (!isFault(err, "ManagedObjectNotFound")) throw err;
      // One was destroyed between the two reads: read them one by one.
      const found: ObjectContent[] = [];
      for (const o of named) {
        const props = await vc.propertiesOf(o.obj, VM_PROPERTIES);
        if (props) found.push({ obj: o.obj, props });
      }
      return found;
    }
  }

  /** A VM as recorded, with its model; undefined unless its extraConfig marks it as this controller's. */
  private recordOf(p: VspherePlacement, o: ObjectContent): (VsphereVm & { model?: string }) | undefined {
    const config = optionValues(o.props.get("config.extraConfig"));
    if (config.get(EXTRA_CONFIG.controller) !== p.controllerUuid) return undefined;
    const model = config.get(EXTRA_CONFIG.model),
      m = config.get(EXTRA_CONFIG.machine);
    const address = o.props.get("guest.ipAddress")?.text;
    return {
      id: o.obj.value,
      name: o.props.get("name")?.text ?? "",
      ...(model !== undefined ? { model } : {}),
      ...(m !== undefined ? { machine: m } : {}),
      state: o.props.get("runtime.powerState")?.text ?? "unknown",
      ...(address ? { address } : {}),
    };
  }
}
