/**
 * A controller on this host (`steward bootstrap`, the Controller resource with substrate "local"):
 * its data directory made by the controller's own `main.js init`, started under its supervisor;
 * destroyed by stopping it and its agents and deleting the directory. A directory that holds a
 * controller already is refused unless the plan adopts it; one this bootstrap made is removed again
 * when the controller does not start.
 */
import { rm } from "node:fs/promises";
import type { ControllerHosting } from "../controller-hosting";
import type { RecordedHosting } from "../registry";
import { alreadyThere } from "../controller-hosting";
import { initLocalController, removeLocalController, startLocalController } from "./controller-process";
import { freePort } from "./processes";
import { localReplicaUpgrade } from "./replica-upgrade";

/** A local controller: its data directory, and the address it listens on (default 127.0.0.1). */
export interface LocalControllerSettings {
  dataDir: string;
  host?: string;
}

/** What a client records of a controller on this host: its data directory. */
export interface LocalControllerRecord {
  dataDir: string;
}

/** What a client records of a controller on this host in `dataDir` that it made without bootstrap (restore-backup). */
export function recordedLocalController(dataDir: string, uuid?: string): RecordedHosting {
  return { substrate: "local", settings: { dataDir }, ...(uuid ? { uuid } : {}) };
}

export const localHosting: ControllerHosting<LocalControllerSettings, LocalControllerRecord> = {
  async bootstrap(plan, o) {
    const { dataDir, host = "127.0.0.1" } = plan.settings;
    const port = plan.port ?? (await freePort(host));
    o.progress(`Creating controller "${plan.name}" in ${dataDir}`);
    const init = await initLocalController({
      dataDir,
      name: plan.name,
      listen: { host, port },
      ...(plan.adminPassword ? { adminPassword: plan.adminPassword } : {}),
    });
    if (!init.created && !plan.adopt) throw alreadyThere(o, dataDir);
    o.progress("Starting the controller (embedded store)");
    let addresses: string[];
    try {
      addresses = await startLocalController(dataDir, init.caCert);
    } catch (err) {
      if (init.created) await rm(dataDir, { recursive: true, force: true });
      throw err;
    }
    return {
      addresses,
      caCert: init.caCert,
      where: dataDir,
      ...(init.adminPassword ? { adminPassword: init.adminPassword } : {}),
    };
  },

  async destroy(target, o) {
    o.progress("Stopping the controller");
    await removeLocalController(target.settings.dataDir);
    return [];
  },

  record: (plan) => ({ dataDir: plan.settings.dataDir }),
  destroyable: (recorded) => ({ dataDir: recorded.dataDir }),
  replicaUpgrade: localReplicaUpgrade,
};
