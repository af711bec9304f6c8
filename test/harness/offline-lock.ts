/**
 * Installing the packed tarball into a fresh project with no network: a `package-lock.json` for that
 * project taken from this repository's own lock. The project's dependencies are the tarball and
 * some of this repository's packages (TypeScript, the Pulumi SDK); each of them, and everything they
 * need, sits in this repository's lock at the path (and version and integrity) `npm ci` installed it
 * from, so its tarball is in the npm cache. With every entry in the lock and a `resolved` for each,
 * `npm ci --offline` takes each tarball from the cache by its integrity and asks the registry for
 * nothing (without a lock, npm wants each package's metadata, which `npm ci` does not keep in full).
 */
import { readFile, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";

/** One `packages` entry of a lockfile (v3). */
interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  optional?: boolean;
  [field: string]: unknown;
}

interface Manifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  overrides?: Record<string, unknown>;
  [field: string]: unknown;
}

/**
 * Where `name` resolves from the package at `from` ("" for the root), as Node looks it up: the
 * nearest `node_modules/name` at or above `from`.
 */
function resolveIn(packages: Record<string, LockEntry>, from: string, name: string): string | undefined {
  for (let base = from; ; base = base.slice(0, Math.max(0, base.lastIndexOf("/node_modules/")))) {
    const candidate = `${base ? `${base}/` : ""}node_modules/${name}`;
    if (packages[candidate]) return candidate;
    if (!base) return undefined;
  }
}

/**
 * The registry URL of a package's tarball (npm maps it to the configured registry). This
 * repository's lock omits `resolved` (omit-lockfile-registry-resolved); without one npm asks for the
 * package's metadata before it looks in the cache for the tarball.
 */
function registryTarball(path: string, version: string): string {
  const name = path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
  return `https://registry.npmjs.org/${name}/-/${name.split("/").pop()!}-${version}.tgz`;
}

/**
 * The lock paths `roots` need, from the root: with `optionalDependencies` when `withOptional`, and
 * the peers npm installs (an optional peer only if something else brings it). Adds to `missing` each
 * package an edge followed needs but the lock lacks.
 */
function closure(
  packages: Record<string, LockEntry>,
  roots: Record<string, string>,
  withOptional: boolean,
  missing: string[],
): Set<string> {
  const found = new Set<string>();
  const queue: { from: string; deps: Record<string, string>; optional: boolean }[] = [
    { from: "", deps: roots, optional: false },
  ];
  for (let edge = queue.shift(); edge; edge = queue.shift()) {
    for (const [name, range] of Object.entries(edge.deps)) {
      const path = resolveIn(packages, edge.from, name);
      if (!path) {
        if (!edge.optional) missing.push(`${name}@${range} (needed by ${edge.from || "the project"})`);
        continue;
      }
      if (found.has(path)) continue;
      found.add(path);
      const e = packages[path]!;
      const optionalPeers = new Set(
        Object.entries(e.peerDependenciesMeta ?? {})
          .filter(([, m]) => m.optional)
          .map(([n]) => n),
      );
      queue.push({
        from: path,
        deps: {
          ...e.dependencies,
          ...Object.fromEntries(Object.entries(e.peerDependencies ?? {}).filter(([n]) => !optionalPeers.has(n))),
        },
        optional: false,
      });
      if (withOptional) queue.push({ from: path, deps: e.optionalDependencies ?? {}, optional: true });
    }
  }
  return found;
}

/**
 * Writes `package.json` (`manifest` with the dependencies) and `package-lock.json` in `project`: the
 * tarball (this repository packed) and `fromRepo` (name to the exact version this repository's lock
 * holds). Returns the lock's paths; throws, naming them, when packages the closure needs are not in
 * this repository's lock (so not in the cache either).
 */
export async function writeOfflineProject(o: {
  repo: string;
  project: string;
  manifest: { name: string; version: string; [field: string]: unknown };
  tarball: string;
  tarballIntegrity: string;
  fromRepo: Record<string, string>;
}): Promise<string[]> {
  const lockFile = join(o.repo, "package-lock.json");
  const repoLock = JSON.parse(await readFile(lockFile, "utf8")) as {
    lockfileVersion: number;
    packages: Record<string, LockEntry>;
  };
  if (repoLock.lockfileVersion !== 3)
    throw new Error(`${lockFile} is lockfileVersion ${repoLock.lockfileVersion}; this reads version 3`);
  const packages = repoLock.packages;
  const own = JSON.parse(await readFile(join(o.repo, "package.json"), "utf8")) as Manifest;
  const file = `file:${relative(o.project, o.tarball)}`;

  const missing: string[] = [];
  for (const [name, version] of Object.entries(o.fromRepo)) {
    // Another version than the lock holds is not in the cache (a package absent, the closure reports).
    const have = packages[`node_modules/${name}`]?.version;
    if (have !== undefined && have !== version) missing.push(`${name}@${version} (the lock has ${have})`);
  }
  // The package's dependencies resolve as from this repository's root: it is the package.
  const roots = { ...own.dependencies, ...o.fromRepo };
  const required = closure(packages, roots, false, missing);
  const all = closure(packages, roots, true, []);
  if (missing.length > 0) {
    throw new Error(
      `not in ${lockFile}, so not in the npm cache \`npm ci\` filled: ${missing.join(", ")}. ` +
        "Is the lock in step with package.json (`npm ls --all` in the repository, then `npm install` there)?",
    );
  }

  const dependencies = { [own.name]: file, ...o.fromRepo };
  const lock: Record<string, LockEntry> = {
    "": { name: o.manifest.name, version: o.manifest.version, dependencies },
    [`node_modules/${own.name}`]: {
      version: own.version,
      resolved: file,
      integrity: o.tarballIntegrity,
      ...Object.fromEntries(
        ["license", "dependencies", "peerDependencies", "peerDependenciesMeta", "bin", "engines"]
          .filter((f) => own[f] !== undefined)
          .map((f) => [f, own[f]]),
      ),
    },
  };
  for (const path of [...all].sort()) {
    // What is optional here is decided by this project's roots, not by the repository's dev tree.
    const { dev: _dev, devOptional: _devOptional, peer: _peer, optional: _optional, ...entry } = packages[path]!;
    lock[path] = {
      ...entry,
      resolved: entry.resolved ?? registryTarball(path, entry.version!),
      ...(required.has(path) ? {} : { optional: true }),
    };
  }
  // Overrides the repository may have chose versions its lock holds (and the cache has): without
  // them npm would find those entries invalid here and want others from the registry. (Users do not
  // get overrides, so the package avoids needing any: light-my-request is pinned to 6.6.0, whose
  // cookie ^1 runs on Node 20, where 6.8's cookie 2 wants Node 22.)
  await writeFile(
    join(o.project, "package.json"),
    JSON.stringify({ ...o.manifest, dependencies, ...(own.overrides ? { overrides: own.overrides } : {}) }, null, 2),
  );
  await writeFile(
    join(o.project, "package-lock.json"),
    JSON.stringify(
      { name: o.manifest.name, version: o.manifest.version, lockfileVersion: 3, requires: true, packages: lock },
      null,
      2,
    ),
  );
  return Object.keys(lock).filter((p) => p !== "");
}
