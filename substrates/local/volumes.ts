/**
 * The local substrate's storage (issue 32): a directory per instance under the machine's directory
 * (`<machine>/storage/data-0`), owned like the machine's directory (its agent's user). Detached, the
 * directory is moved aside to `<model>/kept-storage/data-0`, next to the machines and out of reach of
 * a machine's removal; attached again, it is moved into the new machine's directory. Only `destroy`
 * deletes data. Renames within one file system: instant whatever the size, and never half done.
 *
 * A pool made with a `location` (`create-storage-pool fast local location=/srv/fast`) keeps each
 * instance at `<location>/<model>/data-0`, attached or kept: nothing moves, the machine's directory
 * only names it. The controller runs this as root and hands the directory to an agent's user, so the
 * location must be root's alone (a directory, not a link, writable by no one else).
 *
 * A model that came by migration from another local controller on this host keeps its machines
 * where that controller started them (agent-processes.ts), and so its storage: an instance is found
 * where its handle says, when that is a storage directory of this model under some local
 * controller's machines directory (checked: an imported handle names no other path), is kept aside
 * in that same model directory, and moves into this controller's tree when a machine of its own
 * takes it. Both controllers' directories must be on one file system (a rename across two fails, and
 * is retried, with the reason in the controller's log).
 */
import { chown, lchown, lstat, mkdir, realpath, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, normalize } from "node:path";
import { AGENT_CONFIG_FILE } from "../../api/core";
import type { MachineRef } from "../brokers";
import type { VolumeBroker, VolumeDeps, VolumeSpec } from "../volumes";
import { VolumeNotReady } from "../volumes";

const MODEL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

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

  /** A `location` pool's directory for the instance (absent: the pool keeps instances with machines). */
  private placedDir(v: VolumeSpec): string | undefined {
    const location = v.attributes?.location;
    return location ? join(location, v.model, dirName(v.id)) : undefined;
  }

  async attach(v: VolumeSpec, m: MachineRef): Promise<{ location: string; handle: Record<string, string> }> {
    const machineDir = await this.machineDir(v, m);
    // The machine's directory is made (and given to its agent's user) when its agent first starts.
    const owner = machineDir && (await stat(machineDir).catch(() => undefined));
    if (!machineDir || !owner)
      throw new VolumeNotReady(`machine ${m.machine}'s directory is not there yet; its agent has not started`);
    const placed = this.placedDir(v);
    if (placed !== undefined) {
      await ownedDirectory(dirname(dirname(placed)), "the pool's location");
      await ownedDirectory(dirname(placed), "the pool's directory for the model", 0o711);
      await mkdir(placed, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "EEXIST") throw err;
      });
      const st = await lstat(placed);
      if (!st.isDirectory()) throw new Error(`${placed} is not a directory`);
      await lchown(placed, owner.uid, owner.gid);
      return { location: placed, handle: { dir: placed } };
    }
    const target = join(machineDir, "storage", dirName(v.id));
    await mkdir(join(machineDir, "storage"), { recursive: true, mode: 0o700 });
    await chown(join(machineDir, "storage"), owner.uid, owner.gid);
    if (!(await exists(target))) {
      const from = storagePlace(v)?.dir;
      if (from !== undefined && from !== target && (await exists(from))) await rename(from, target);
      else await mkdir(target, { mode: 0o700 });
    }
    await chown(target, owner.uid, owner.gid);
    return { location: target, handle: { dir: target } };
  }

  async detach(v: VolumeSpec, m: MachineRef): Promise<Record<string, string>> {
    // A location pool's instance stays where it is.
    const placed = this.placedDir(v);
    if (placed !== undefined) return { dir: placed };
    const place = storagePlace(v);
    // Attached under this controller's directory, or (a migrated model) where its handle says.
    let attached = await this.attachedDir(v, m);
    if (!(await exists(attached)) && place?.machine === m.machine && (await exists(place.dir))) attached = place.dir;
    // Never attached there (its unit went first): it stays where it was.
    if (!(await exists(attached))) return v.handle ?? { dir: await this.keptDir(v) };
    // Kept beside the machines it was among: the same file system, and the same tree a migrated model runs in.
    const kept = join(dirname(dirname(dirname(attached))), "kept-storage", dirName(v.id));
    await mkdir(dirname(kept), { recursive: true, mode: 0o700 });
    // A kept directory of the same id cannot be there: an instance is in one place at a time.
    await rename(attached, kept);
    return { dir: kept };
  }

  async destroy(v: VolumeSpec): Promise<void> {
    const placed = this.placedDir(v);
    if (placed !== undefined) {
      await rm(placed, { recursive: true, force: true });
      return;
    }
    // Only ever this instance's own directories, whatever a handle says.
    for (const dir of new Set([await this.keptDir(v), ...(storagePlace(v) ? [storagePlace(v)!.dir] : [])]))
      await rm(dir, { recursive: true, force: true });
  }

  /**
   * Machine `m`'s directory: under this controller's, or, for a machine that came by migration, the
   * one beside where the instance's handle says it is (its agent's configuration there).
   */
  private async machineDir(v: VolumeSpec, m: MachineRef): Promise<string | undefined> {
    const own = join(await this.modelDir(v), m.machine);
    if (await exists(own)) return own;
    const place = storagePlace(v);
    if (!place) return undefined;
    const theirs = join(place.modelDir, m.machine);
    return (await exists(join(theirs, AGENT_CONFIG_FILE))) ? theirs : undefined;
  }
}

/**
 * Where the instance's handle says it is, when that is one of this instance's own places in some
 * local controller's machines directory (named by the model's uuid): `<machines>/<model>/<machine>/storage/<data-0>`
 * (attached) or `<machines>/<model>/kept-storage/<data-0>`. Anything else (an imported handle naming
 * another path) is not followed: nothing is moved from, or deleted at, a path that is not storage.
 */
export function storagePlace(v: VolumeSpec): { dir: string; modelDir: string; machine?: string } | undefined {
  const dir = v.handle?.dir;
  if (dir === undefined || !isAbsolute(dir) || normalize(dir) !== dir || basename(dir) !== dirName(v.id))
    return undefined;
  const parent = dirname(dir);
  const kept = basename(parent) === "kept-storage";
  if (!kept && basename(parent) !== "storage") return undefined;
  const modelDir = kept ? dirname(parent) : dirname(dirname(parent));
  if (basename(modelDir) !== v.model || !MODEL_UUID.test(v.model)) return undefined;
  if (kept) return { dir, modelDir };
  const machine = basename(dirname(parent));
  return /^[0-9]+$/.test(machine) ? { dir, modelDir, machine } : undefined;
}

/**
 * Refuses `dir` unless it is a directory (not a link) of this process's user that no one else may
 * write to; with `mode`, makes it first when it is missing.
 */
async function ownedDirectory(dir: string, what: string, mode?: number): Promise<void> {
  if (mode !== undefined)
    await mkdir(dir, { mode }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "EEXIST") throw err;
    });
  const st = await lstat(dir).catch(() => undefined);
  if (!st) throw new Error(`${what} ${dir} does not exist`);
  const uid = process.getuid?.() ?? st.uid;
  if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o022) !== 0)
    throw new Error(
      `${what} ${dir} must be a directory (not a link) of the controller's user that no one else can write to`,
    );
}

async function exists(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => undefined)) !== undefined;
}
