/**
 * The machine half of storage attachments (issue 32): the controller has no way into an SSH host or a
 * cloud instance but its agent, so once a substrate's volume broker has done its half (a cloud volume
 * attached, a host's declared device chosen) this agent finds the device, makes ext4 on it once (only
 * when blkid finds no filesystem), mounts it, or makes the directory; then reports the location, and
 * only then does the unit's `<name>-storage-attached` hook run. When the unit goes it unmounts (and
 * deletes a directory instance being destroyed) and reports it released.
 *
 * Each step is idempotent (a device already mounted there is reported again), work runs one item at a
 * time beside the hooks (never holding the machine lock), and what fails (a cloud's device not there
 * yet) is tried again with backoff.
 */
import { execFile } from "node:child_process";
import { mkdir, readFile, realpath, rm, stat } from "node:fs/promises";
import { join, normalize } from "node:path";
import { promisify } from "node:util";
import type { Logger, MachineStorageWork, MachineVolumeWork, StorageOnMachineReport } from "../api/core";

const run = promisify(execFile);

/** Where udev names disks by what they are (cloud volumes by their ids). */
export const DISK_BY_ID = "/dev/disk/by-id";
const FIRST_RETRY_MS = 1000;
const LAST_RETRY_MS = 30_000;
/** mkfs of a large device takes a while; nothing else here should take more than seconds. */
const COMMAND_TIMEOUT_MS = 10 * 60_000;

export interface MachineStorageOptions {
  /** Sends the report to the controller (agent method `storageOnMachine`). */
  report: (r: StorageOnMachineReport) => Promise<unknown>;
  log: Logger;
  /** @default /dev/disk/by-id */
  diskById?: string;
}

/** A device found on this machine: the name the unit is given (by-id when it matched so) and the node it is. */
interface FoundDevice {
  name: string;
  node: string;
}

export class MachineStorage {
  private items: MachineStorageWork[] = [];
  /** What was done and reported, by instance: the item's key (op and work). */
  private readonly done = new Map<string, string>();
  /** Items that failed: when each may be tried again, and the delay after that. */
  private readonly retry = new Map<string, { at: number; delayMs: number; said: string }>();
  private running = false;
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly o: MachineStorageOptions) {}

  /** The view's work (absent: none). Work already done and reported is not done again. */
  update(items: MachineStorageWork[] | undefined): void {
    this.items = items ?? [];
    const ids = new Set(this.items.map((i) => i.id));
    for (const id of [...this.done.keys()]) if (!ids.has(id)) this.done.delete(id);
    for (const id of [...this.retry.keys()]) if (!ids.has(id)) this.retry.delete(id);
    void this.pass();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  /** Does each item not yet done whose time has come, one at a time; then waits for the next retry. */
  private async pass(): Promise<void> {
    if (this.running || this.closed) return;
    this.running = true;
    clearTimeout(this.timer);
    try {
      for (;;) {
        const now = Date.now();
        const next = this.items.find((i) => this.done.get(i.id) !== keyOf(i) && (this.retry.get(i.id)?.at ?? 0) <= now);
        if (!next || this.closed) break;
        await this.doItem(next);
      }
    } finally {
      this.running = false;
    }
    const waits = this.items
      .filter((i) => this.done.get(i.id) !== keyOf(i))
      .map((i) => this.retry.get(i.id)?.at ?? Date.now());
    if (waits.length > 0 && !this.closed) {
      this.timer = setTimeout(() => void this.pass(), Math.max(0, Math.min(...waits) - Date.now()));
      this.timer.unref();
    }
  }

  private async doItem(item: MachineStorageWork): Promise<void> {
    const key = keyOf(item);
    try {
      if (item.op === "attach") {
        const location = await this.attach(item);
        await this.o.report({ id: item.id, op: "attached", location });
      } else {
        await this.release(item);
        await this.o.report({ id: item.id, op: "released" });
      }
      this.done.set(item.id, key);
      this.retry.delete(item.id);
      this.o.log.info(item.op === "attach" ? "storage attached on this machine" : "storage released on this machine", {
        storage: item.id,
      });
    } catch (err) {
      const said = err instanceof Error ? err.message : String(err);
      const prev = this.retry.get(item.id);
      const delayMs = prev ? Math.min(prev.delayMs * 2, LAST_RETRY_MS) : FIRST_RETRY_MS;
      this.retry.set(item.id, { at: Date.now() + delayMs, delayMs, said });
      // Said once per problem, not at every try.
      if (prev?.said !== said)
        this.o.log.warn(`could not ${item.op} storage on this machine; will retry`, { storage: item.id, err: said });
    }
  }

  /** Does the attach's machine half: where the unit finds the instance. */
  private async attach(item: MachineStorageWork): Promise<string> {
    const work = item.work;
    const here = placeOf(work);
    // The first in the view's order keeps it.
    const mine = this.items.indexOf(item);
    const other = this.items.find((i, n) => n < mine && i.op === "attach" && here && placeOf(i.work) === here);
    if (other) throw new Error(`${here} is also storage ${other.id}'s location on this machine; each needs its own`);
    if (work.mode === "directory") {
      await mkdir(work.path, { recursive: true, mode: 0o750 });
      if (!(await stat(work.path)).isDirectory()) throw new Error(`${work.path} is there and is not a directory`);
      return work.path;
    }
    const dev = await this.findDevice(work.device);
    if (work.kind === "block") return dev.name;
    if (!work.mountPoint) throw new Error("a filesystem on a device needs a mount point");
    const mounted = (await mounts()).get(canonical(work.mountPoint));
    if (mounted !== undefined) {
      if ((await realpath(mounted).catch(() => mounted)) === dev.node) return work.mountPoint;
      throw new Error(`${work.mountPoint} already has ${mounted} mounted on it`);
    }
    // Formatted once: a device that holds a filesystem (this instance's data, or a user's) is never formatted again.
    if ((await filesystemOn(dev.node)) === undefined) await command("mkfs.ext4", ["-q", dev.node]);
    await mkdir(work.mountPoint, { recursive: true, mode: 0o755 });
    await command("mount", [dev.node, work.mountPoint]);
    return work.mountPoint;
  }

  /** Undoes the machine half: unmounts; a destroyed directory instance is deleted, a destroyed device wiped. */
  private async release(item: MachineStorageWork): Promise<void> {
    const work = item.work;
    if (work.mode === "directory") {
      if (item.destroy) {
        if (!deletable(work.path))
          throw new Error(`will not delete ${work.path}: not a storage instance's own directory`);
        if ((await mounts()).has(canonical(work.path)))
          throw new Error(`${work.path} has something mounted on it; not deleting it`);
        await rm(work.path, { recursive: true, force: true });
      }
      return;
    }
    if (work.kind === "filesystem" && work.mountPoint && (await mounts()).has(canonical(work.mountPoint)))
      await command("umount", [work.mountPoint]);
    if (item.destroy) {
      // Its data goes with it: a declared device given to another instance later starts blank.
      const dev = await this.findDevice(work.device).catch(() => undefined);
      if (dev) await command("wipefs", ["-a", "-q", dev.node]);
    }
  }

  /** The device `match` names on this machine: its by-id names in order, then its path. */
  private async findDevice(match: { byId?: string[]; path?: string }): Promise<FoundDevice> {
    const byId = this.o.diskById ?? DISK_BY_ID;
    const names = [...(match.byId ?? []).map((n) => join(byId, n)), ...(match.path ? [match.path] : [])];
    for (const name of names) {
      const node = await realpath(name).catch(() => undefined);
      if (node === undefined) continue;
      if (!(await stat(node)).isBlockDevice()) throw new Error(`${name} is not a block device`);
      return { name, node };
    }
    throw new Error(`the device is not there yet (looked for ${names.join(", ") || "nothing"})`);
  }
}

/** An item as what was done: the same item again is done once. */
const keyOf = (i: MachineStorageWork): string => JSON.stringify([i.op, i.work, i.destroy ?? false]);

/** `path` as the kernel lists a mount point: normalised, no trailing slash. */
const canonical = (path: string): string => normalize(path).replace(/(.)\/+$/, "$1");

/** The path an instance occupies on the machine (its directory or mount point), when it has one. */
function placeOf(work: MachineVolumeWork): string | undefined {
  if (work.mode === "directory") return canonical(work.path);
  return work.kind === "filesystem" && work.mountPoint ? canonical(work.mountPoint) : undefined;
}

/** What is mounted where on this machine: mount point → source (from /proc/self/mountinfo, escapes undone). */
async function mounts(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const text = await readFile("/proc/self/mountinfo", "utf8");
  const unescape = (s: string): string =>
    s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  for (const line of text.split("\n")) {
    const [before, after] = line.split(" - ");
    if (!before || !after) continue;
    const mountPoint = before.split(" ")[4];
    const source = after.split(" ")[1];
    if (mountPoint && source) out.set(unescape(mountPoint), unescape(source));
  }
  return out;
}

/** The filesystem type on `device`, or undefined when blkid finds none (exit 2). */
async function filesystemOn(device: string): Promise<string | undefined> {
  try {
    const { stdout } = await run("blkid", ["-p", "-o", "value", "-s", "TYPE", device], {
      timeout: COMMAND_TIMEOUT_MS,
    });
    return stdout.trim() || undefined;
  } catch (err) {
    if ((err as { code?: number }).code === 2) return undefined;
    throw new Error(`blkid ${device} failed: ${describe(err)}`);
  }
}

async function command(file: string, args: string[]): Promise<void> {
  try {
    await run(file, args, { timeout: COMMAND_TIMEOUT_MS });
  } catch (err) {
    throw new Error(`${file} ${args.join(" ")} failed: ${describe(err)}`);
  }
}

const describe = (err: unknown): string =>
  ((err as { stderr?: string }).stderr?.trim() || (err instanceof Error ? err.message : String(err))).slice(0, 500);

/**
 * Whether a directory instance at `path` may be deleted: never a system directory or one directly
 * under the root (an operator's `location: /srv` would otherwise take /srv with it).
 */
function deletable(path: string): boolean {
  const parts = canonical(path).split("/").filter(Boolean);
  return parts.length >= 2 && !["proc", "sys", "dev"].includes(parts[0]!);
}
