/**
 * The CLI's own files under `$STEWARD_HOME` (default `~/.steward`): `controllers.json` (0600: it
 * holds credentials, like Juju's accounts.yaml) and, for controllers bootstrapped on this host,
 * their data directories under `controllers/<name>/`.
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import type { ModelSubstrate } from "../api/core";
import { MODEL_SUBSTRATES, StewardError } from "../api/core";
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
 * An entry as clients before hostings wrote it: a controller on this host had its `dataDir`, one on
 * a cloud or on Kubernetes a key named as its kind (`aws: {settings, uuid}`, `kubernetes: {namespace,
 * statefulSet, context}`). Read only to upgrade it ({@link upgradeEntry}).
 */
type EntryBeforeHosting = ControllerEntry & { dataDir?: string } & Partial<Record<ModelSubstrate, unknown>>;

/**
 * An entry in the shape this client writes: one written before entries recorded their hosting gets
 * the same place as its `hosting`. Upgraded in memory on load; the next save writes the new shape.
 */
export function upgradeEntry(entry: ControllerEntry): ControllerEntry {
  const { dataDir, ...rest } = entry as EntryBeforeHosting;
  let hosting: RecordedHosting | undefined = rest.hosting;
  for (const kind of MODEL_SUBSTRATES) {
    const old = rest[kind] as { settings?: unknown; uuid?: string } | undefined;
    delete rest[kind];
    // A cloud's key held its settings and the UUID its instances are marked with; Kubernetes' held its settings themselves.
    if (old && !hosting)
      hosting = (
        old.settings
          ? { substrate: kind, settings: old.settings, ...(old.uuid ? { uuid: old.uuid } : {}) }
          : { substrate: kind, settings: old }
      ) as RecordedHosting;
  }
  // The one older key not named as its kind: a controller on this host, by its data directory.
  if (dataDir && !hosting) hosting = { substrate: "local", settings: { dataDir } };
  return hosting ? { ...rest, hosting } : rest;
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
