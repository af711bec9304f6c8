/**
 * Which boot of the machine this is, so units can run `start` again after a reboot (as Juju does):
 * their workloads died with the machine and nothing else would bring them back.
 */
import { randomUUID } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * A marker in /run (a tmpfs, emptied at every boot) made by the first agent of this boot; where
 * /run cannot be written, the kernel's boot id. Undefined when neither exists: no reboot detection.
 */
export async function currentBootId(runDir = "/run/steward"): Promise<string | undefined> {
  const marker = join(runDir, "boot-id");
  const existing = (await readFile(marker, "utf8").catch(() => "")).trim();
  if (existing) return existing;
  try {
    await mkdir(runDir, { recursive: true, mode: 0o755 });
    // "wx": of two agents starting at once, one writes; the other reads what it wrote.
    await writeFile(marker, randomUUID(), { flag: "wx" }).catch(() => undefined);
    const made = (await readFile(marker, "utf8")).trim();
    if (made) return made;
  } catch {
    /* not writable: fall back */
  }
  return (await readFile("/proc/sys/kernel/random/boot_id", "utf8").catch(() => "")).trim() || undefined;
}
