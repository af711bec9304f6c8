/**
 * The CLI's own files under `$STEWARD_HOME` (default `~/.steward`): `controllers.json` (0600: it
 * holds credentials, like Juju's accounts.yaml) and, for controllers bootstrapped on this host,
 * their data directories under `controllers/<name>/`.
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import type { AwsModelSettings, VsphereModelSettings } from "../api/core";
import { StewardError } from "../api/core";

export interface ControllerEntry {
  addresses: string[];
  caCert: string;
  user: string;
  password?: string;
  /** The password was generated at bootstrap and this file holds its only copy (logout then needs --force). */
  generatedPassword?: boolean;
  token?: string;
  /** Set for a controller running on this host (local bootstrap): its data directory. */
  dataDir?: string;
  /** Set for a controller bootstrapped on EC2: where its instances are and the UUID they are tagged with (no secret). */
  aws?: { settings: AwsModelSettings; uuid: string };
  /** Set for a controller bootstrapped on vSphere: where its VMs are and the UUID they are marked with (no secret). */
  vsphere?: { settings: VsphereModelSettings; uuid: string };
  /**
   * Set for a controller bootstrapped on Kubernetes: its namespace and StatefulSet, and the
   * kubeconfig context it was bootstrapped with (a name only: the cluster's credential stays in
   * the user's kubeconfig; upgrade-controller reads it from there).
   */
  kubernetes?: { namespace: string; statefulSet: string; context?: string };
  currentModel?: string;
  /** Where each application's operator was deployed from (`model/app` to a directory), for `steward refresh`. */
  operatorSources?: Record<string, string>;
}

export interface ClientConfig {
  current?: string;
  controllers: Record<string, ControllerEntry>;
}

export function stewardHome(env: NodeJS.ProcessEnv): string {
  return env.STEWARD_HOME ?? join(homedir(), ".steward");
}

export async function loadClientConfig(home: string): Promise<ClientConfig> {
  const text = await readFile(join(home, "controllers.json"), "utf8").catch(() => undefined);
  if (!text) return { controllers: {} };
  try {
    return JSON.parse(text) as ClientConfig;
  } catch {
    throw new StewardError("invalid-request", `${join(home, "controllers.json")} is not valid JSON; fix or remove it`);
  }
}

export async function saveClientConfig(home: string, cfg: ClientConfig): Promise<void> {
  await mkdir(home, { recursive: true, mode: 0o700 });
  const path = join(home, "controllers.json");
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, JSON.stringify(cfg, null, 2) + "\n", { mode: 0o600 });
  await rename(tmp, path);
}
