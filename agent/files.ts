/** Atomic file writes: a reader (or a restarted agent) sees the old content or the new, never half. */
import { open, rename, writeFile } from "node:fs/promises";

export async function writeFileAtomic(path: string, data: string, mode = 0o600): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, data, { mode });
  const fh = await open(tmp, "r+");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
}
