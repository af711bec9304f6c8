/**
 * What the pod's init container does (`main.js --install-supervisor DIR`, in the agent image): puts
 * the Node binary it runs with and the supervisor bundle into the volume the workload containers
 * share, so each runs `DIR/node DIR/supervisor.js` as its entrypoint whatever its image holds (as
 * Juju's init container places Pebble). A hard link where the volume allows it, else a copy.
 */
import { chmod, copyFile, link, mkdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";

/** The supervisor bundle beside this (bundled) agent. */
export const supervisorBundle = (): string => join(__dirname, "supervisor.js");

async function place(src: string, dest: string, mode: number): Promise<void> {
  const tmp = `${dest}.tmp`;
  await rm(tmp, { force: true });
  try {
    await link(src, tmp);
  } catch {
    await copyFile(src, tmp);
    await chmod(tmp, mode);
  }
  await rename(tmp, dest);
}

export async function installSupervisor(
  dir: string,
  from: { node?: string; bundle?: string } = {},
): Promise<{ node: string; script: string }> {
  const bundle = from.bundle ?? supervisorBundle();
  await stat(bundle).catch(() => {
    throw new Error(
      `the supervisor bundle ${bundle} is missing: the agent image must hold dist/agent-bundle/supervisor.js beside main.js (npm run bundle)`,
    );
  });
  // Like /tmp: a workload image's user (often not root) must create its supervisor's socket here.
  await mkdir(join(dir, "run"), { recursive: true });
  await chmod(join(dir, "run"), 0o1777);
  const node = join(dir, "node"),
    script = join(dir, "supervisor.js");
  await place(from.node ?? process.execPath, node, 0o755);
  await place(bundle, script, 0o644);
  return { node, script };
}
