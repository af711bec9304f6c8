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
import type { RecordedHosting } from "../substrates";

export interface ControllerEntry {
  addresses: string[];
  caCert: string;
  user: string;
  password?: string;
  /** The password was generated at bootstrap and this file holds its only copy (logout then needs --force). */
  generatedPassword?: boolean;
  token?: string;
  /**
   * Where the controller runs, for a controller this client bootstrapped: the kind and what it
   * recorded of its settings (a data directory, a cloud's region, a StatefulSet; no secret), as
   * the kind's hosting made it (substrates/controller-hosting.ts). Absent: logged in to or registered.
   */
  hosting?: RecordedHosting;
  currentModel?: string;
  /** Where each application's operator was deployed from (`model/app` to a directory), for `steward refresh`. */
  operatorSources?: Record<string, string>;
}

/**
 * An entry as clients before hostings wrote it: one optional key per kind, named as the kinds are
 * (read only to upgrade it; {@link upgradeEntry}).
 */
interface EntryBeforeHosting extends ControllerEntry {
  dataDir?: string;
  aws?: { settings: AwsModelSettings; uuid: string };
  vsphere?: { settings: VsphereModelSettings; uuid: string };
  kubernetes?: { namespace: string; statefulSet: string; context?: string };
}

/**
 * An entry in the shape this client writes: one written before entries recorded their hosting (a
 * `dataDir`, `aws`, `vsphere` or `kubernetes` key) gets the same place as its `hosting`. Upgraded in
 * memory on load; the next save writes the new shape.
 */
export function upgradeEntry(entry: ControllerEntry): ControllerEntry {
  const { dataDir, aws, vsphere, kubernetes, ...rest } = entry as EntryBeforeHosting;
  if (rest.hosting || (!dataDir && !aws && !vsphere && !kubernetes)) return rest;
  // The older shape's keys are the kinds' names: this is the one place that reads them.
  const hosting: RecordedHosting = aws
    ? { substrate: "aws", settings: aws.settings, uuid: aws.uuid }
    : vsphere
      ? { substrate: "vsphere", settings: vsphere.settings, uuid: vsphere.uuid }
      : kubernetes
        ? { substrate: "kubernetes", settings: kubernetes }
        : { substrate: "local", settings: { dataDir: dataDir! } };
  return { ...rest, hosting };
}

/** The data directory of a controller on this host (its hosting records one), else undefined. */
export function dataDirOf(entry: ControllerEntry | undefined): string | undefined {
  const settings = entry?.hosting?.settings as { dataDir?: unknown } | undefined;
  return typeof settings?.dataDir === "string" ? settings.dataDir : undefined;
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
  let cfg: ClientConfig;
  try {
    cfg = JSON.parse(text) as ClientConfig;
  } catch {
    throw new StewardError("invalid-request", `${join(home, "controllers.json")} is not valid JSON; fix or remove it`);
  }
  const controllers = cfg.controllers ?? {};
  for (const [name, entry] of Object.entries(controllers)) controllers[name] = upgradeEntry(entry);
  return { ...cfg, controllers };
}

export async function saveClientConfig(home: string, cfg: ClientConfig): Promise<void> {
  await mkdir(home, { recursive: true, mode: 0o700 });
  const path = join(home, "controllers.json");
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, JSON.stringify(cfg, null, 2) + "\n", { mode: 0o600 });
  await rename(tmp, path);
}
