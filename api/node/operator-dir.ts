/** Reading an operator directory from disk into a {@link Bundle} (used by the CLI and the provider). */
import { lstat, readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import type { Bundle, BundleFileEntry } from "../operator";
import { OperatorInvalidError, bundleHash, validateBundle } from "../operator";

const SKIP = new Set([".git", "node_modules", ".DS_Store"]);

export async function readOperatorDir(
  dir: string,
): Promise<{ bundle: Bundle; hash: string; meta: ReturnType<typeof validateBundle> }> {
  const st = await lstat(dir).catch(() => undefined);
  if (!st?.isDirectory())
    throw new OperatorInvalidError(
      dir,
      "is not a directory: give the path of an operator directory (the one holding operator.yaml)",
    );
  const files: BundleFileEntry[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const entry of (await readdir(d, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      if (SKIP.has(entry.name)) continue;
      const full = join(d, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile()) {
        const s = await lstat(full);
        files.push({
          path: relative(dir, full).split("\\").join("/"),
          mode: s.mode & 0o777,
          content: (await readFile(full)).toString("base64"),
        });
      } else if (entry.isSymbolicLink()) {
        throw new OperatorInvalidError(relative(dir, full), "is a symbolic link; operators must hold real files");
      }
    }
  };
  await walk(dir);
  if (files.length === 0) throw new OperatorInvalidError(dir, "is empty: an operator needs operator.yaml and hooks/");
  const bundle = { files };
  const meta = validateBundle(bundle);
  return { bundle, hash: bundleHash(bundle), meta };
}
