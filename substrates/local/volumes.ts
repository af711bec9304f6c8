/**
 * The local substrate's storage (issue 32): a directory per instance under the machine's directory
 * (`<machine>/storage/data-0`), owned like the machine's directory (its agent's user). Detached, the
 * directory is moved aside to `<model>/kept-storage/data-0`, next to the machines and out of reach of
 * a machine's removal; attached again, it is moved into the new machine's directory. Only `destroy`
 * deletes data. Renames within one file system: instant whatever the size, and never half done.
 */
import { chown, lstat, mkdir, realpath, rename, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { MachineRef } from "../brokers";
import type { VolumeBroker, VolumeDeps, VolumeSpec } from "../volumes";
import { VolumeNotReady } from "../volumes";

/** `data/0` as one path part. */
const dirName = (id: string): string => id.replace("/", "-");

export class LocalVolumes implements VolumeBroker {
  constructor(private readonly o: VolumeDeps) {}

  /** The model's directory by its real path (the machines' directory may be a link): what agents are told. */
  private async modelDir(v: VolumeSpec): Promise<string> {
    return join(await realpath(this.o.machinesDir).catch(() => this.o.machinesDir), v.model);
  }
  private async attachedDir(v: VolumeSpec, m: MachineRef): Promise<string> {
    return join(await this.modelDir(v), m.machine, "storage", dirName(v.id));
  }
  private async keptDir(v: VolumeSpec): Promise<string> {
    return join(await this.modelDir(v), "kept-storage", dirName(v.id));
  }

  async attach(v: VolumeSpec, m: MachineRef): Promise<{ location: string; handle: Record<string, string> }> {
    const machineDir = join(await this.modelDir(v), m.machine);
    // The machine's directory is made (and given to its agent's user) when its agent first starts.
    const owner = await stat(machineDir).catch(() => undefined);
    if (!owner)
      throw new VolumeNotReady(`machine ${m.machine}'s directory is not there yet; its agent has not started`);
    const target = await this.attachedDir(v, m);
    await mkdir(join(machineDir, "storage"), { recursive: true, mode: 0o700 });
    await chown(join(machineDir, "storage"), owner.uid, owner.gid);
    if (!(await exists(target))) {
      const from = v.handle?.dir;
      if (from !== undefined && from !== target && (await exists(from))) await rename(from, target);
      else await mkdir(target, { mode: 0o700 });
    }
    await chown(target, owner.uid, owner.gid);
    return { location: target, handle: { dir: target } };
  }

  async detach(v: VolumeSpec, m: MachineRef): Promise<Record<string, string>> {
    const kept = await this.keptDir(v);
    const attached = await this.attachedDir(v, m);
    // Never attached there (its unit went first): it stays where it was.
    if (!(await exists(attached))) return v.handle ?? { dir: kept };
    await mkdir(dirname(kept), { recursive: true, mode: 0o700 });
    // A kept directory of the same id cannot be there: an instance is in one place at a time.
    await rename(attached, kept);
    return { dir: kept };
  }

  async destroy(v: VolumeSpec): Promise<void> {
    const modelDir = await this.modelDir(v);
    // Only ever inside the model's directory, whatever a handle says.
    for (const dir of new Set([await this.keptDir(v), ...(v.handle?.dir ? [v.handle.dir] : [])]))
      if (dir.startsWith(modelDir + "/")) await rm(dir, { recursive: true, force: true });
  }
}

async function exists(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => undefined)) !== undefined;
}
