/**
 * Operator content on the machine: fetched once per content hash, verified against that hash, and
 * unpacked atomically into `<agent-dir>/operators/<hash>/`, shared by every unit that runs it.
 */
import { mkdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import type { Bundle } from "../api/core";
import { StewardError, bundleHash, bundlePathProblem, fileDirectoryClash, operatorHashProblem } from "../api/core";
import { getFromController } from "./controller-get";

/** An operator that could not be made ready on this machine; the message names the problem. */
export class OperatorUnpackError extends StewardError {
  constructor(hash: string, problem: string, cause?: unknown) {
    super("operator-invalid", `operator ${hash.slice(0, 15)}… cannot be unpacked: ${problem}`, {
      details: { hash },
      ...(cause ? { cause } : {}),
    });
  }
}

/**
 * Where file `path` of a bundle goes under `root`, after checking it stays there: the controller
 * checks paths at upload, but the agent writes to its own disk and must not trust it.
 */
export function bundleFilePath(root: string, path: string): string {
  const problem = bundlePathProblem(path);
  if (problem)
    throw new StewardError("operator-invalid", `file ${JSON.stringify(path)} ${problem}`, { details: { path } });
  const full = resolve(root, path);
  const rel = relative(resolve(root), full);
  if (rel === "" || rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)) {
    throw new StewardError(
      "operator-invalid",
      `file ${JSON.stringify(path)} would be written outside the operator directory`,
      { details: { path } },
    );
  }
  return full;
}

/** Writes every file of `bundle` under `root` (which must not exist yet), checking every path first. */
export async function unpackBundle(bundle: Bundle, root: string): Promise<void> {
  const targets = bundle.files.map((f) => bundleFilePath(root, f.path));
  const clash = fileDirectoryClash(bundle.files.map((f) => f.path));
  if (clash)
    throw new StewardError(
      "operator-invalid",
      `file ${JSON.stringify(clash.file)} is also a directory (of ${JSON.stringify(clash.inside)})`,
      { details: { path: clash.file } },
    );
  await mkdir(root, { recursive: true });
  for (const [i, f] of bundle.files.entries()) {
    const target = targets[i]!;
    await mkdir(dirname(target), { recursive: true });
    // "wx": a file never replaces another (a duplicate path is a broken bundle, not an update).
    await writeFile(target, Buffer.from(f.content, "base64"), { mode: f.mode & 0o777, flag: "wx" });
  }
}

export class OperatorStore {
  private readonly inflight = new Map<string, Promise<string>>();

  constructor(
    private readonly root: string,
    private readonly addresses: () => string[],
    private readonly caCert: () => string,
    private readonly authorization: string,
  ) {}

  /** The directory of operator `hash`, fetching and unpacking it first if needed. */
  ensure(hash: string): Promise<string> {
    let p = this.inflight.get(hash);
    if (!p) {
      p = this.fetchAndUnpack(hash).finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, p);
    }
    return p;
  }

  private async fetchAndUnpack(hash: string): Promise<string> {
    // The hash becomes a directory name: never trust it to be one.
    const hashProblem = operatorHashProblem(hash);
    if (hashProblem) throw new OperatorUnpackError(hash, hashProblem);
    const dir = join(this.root, hash);
    if (
      await stat(join(dir, "operator.yaml")).then(
        () => true,
        () => false,
      )
    )
      return dir;
    const bundle = await this.fetch(hash);
    if (bundleHash(bundle) !== hash)
      throw new OperatorUnpackError(
        hash,
        `arrived with different content (hash ${bundleHash(bundle)}); refusing to run it`,
      );
    const tmp = `${dir}.tmp-${process.pid}`;
    try {
      await rm(tmp, { recursive: true, force: true });
      await unpackBundle(bundle, tmp);
      await rm(dir, { recursive: true, force: true });
      await rename(tmp, dir);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      throw new OperatorUnpackError(hash, (err as Error).message, err);
    }
    return dir;
  }

  private fetch(hash: string): Promise<Bundle> {
    return getFromController<Bundle>({
      addresses: this.addresses(),
      caCert: this.caCert(),
      authorization: this.authorization,
      path: `/v1/operators/${hash}`,
      what: `operator ${hash}`,
      reason: "operator-download-failed",
    });
  }
}
