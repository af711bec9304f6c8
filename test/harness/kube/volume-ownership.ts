/**
 * The FAKE kubelet's volume ownership management: what the kubelet does to a volume before a pod's
 * containers use it when the pod's securityContext has an `fsGroup` ("Configure volume permission and
 * ownership change policy for Pods", kubernetes.io; pkg/volume/volume_linux.go SetVolumeOwnership):
 * every file and directory is given group `fsGroup`, files gain group read-write (rw-rw----) and
 * directories group read-write-execute and setgid, OR'd with the mode they had; symbolic links are
 * skipped. `fsGroupChangePolicy: OnRootMismatch` skips it all when the volume's root already has the
 * group and those permissions; `Always` (the default) walks the volume at every mount. Applied to
 * claims' volumes: the fake binds them to local directories, as the local volume plugin and most CSI
 * drivers (whose volumes support ownership management) would be; hostPath volumes never are.
 */
import { chmod, lchown, lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

const GROUP_RW = 0o060;
const GROUP_X = 0o010;
const SETGID = 0o2000;

export interface PodSecurityOwnership {
  fsGroup?: number;
  fsGroupChangePolicy?: "Always" | "OnRootMismatch";
}

/** Whether the volume's root already is as ownership management leaves it (OnRootMismatch's test). */
async function rootMatches(root: string, fsGroup: number): Promise<boolean> {
  const st = await lstat(root);
  const want = GROUP_RW | GROUP_X | SETGID;
  return st.gid === fsGroup && (st.mode & want) === want;
}

async function own(path: string, fsGroup: number): Promise<void> {
  const st = await lstat(path);
  if (st.isSymbolicLink()) return;
  await lchown(path, -1, fsGroup);
  const mask = st.isDirectory() ? GROUP_RW | GROUP_X | SETGID : GROUP_RW;
  await chmod(path, (st.mode & 0o7777) | mask);
  if (st.isDirectory()) for (const name of await readdir(path)) await own(join(path, name), fsGroup);
}

/** Applies the pod's fsGroup to a volume about to be mounted (nothing without one). */
export async function applyVolumeOwnership(root: string, security: PodSecurityOwnership | undefined): Promise<void> {
  const fsGroup = security?.fsGroup;
  if (fsGroup === undefined) return;
  if (security?.fsGroupChangePolicy === "OnRootMismatch" && (await rootMatches(root, fsGroup))) return;
  await own(root, fsGroup);
}
