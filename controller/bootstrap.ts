/**
 * Creating a controller's data directory: the CA and server certificate, the configuration file and
 * the store with the controller's identity and admin user. Idempotent: an existing directory is
 * left as it is.
 */
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ControllerInit, ControllerInitResult } from "../api";
import { newSecret } from "./security/credentials";
import { openStore } from "./store";
import { StateOps } from "./state";
import type { ControllerConfig, PodModelsConfig } from "./config";
import { dataFiles } from "./config";

/** `main.js init`'s options (api/controller-init.ts), and what only an in-process caller can hand it. */
export interface InitControllerOptions extends ControllerInit {
  /** @default the embedded store in the data directory */
  store?: ControllerConfig["store"];
  /** The CA to use (a bootstrap that made it first, so it could hand the CA to what it made); new otherwise. */
  ca?: { certPem: string; keyPem: string };
  /** Kubernetes models' settings (the agent image), for a controller bootstrapped on Kubernetes. */
  kubernetes?: PodModelsConfig;
  /** Where its signed releases are, and the keys trusted to sign them. */
  releases?: ControllerConfig["releases"];
}

export async function initControllerDir(o: InitControllerOptions): Promise<ControllerInitResult> {
  const configPath = join(o.dataDir, dataFiles.config);
  if (
    await stat(configPath).then(
      () => true,
      () => false,
    )
  ) {
    return { created: false, caCert: await readFile(join(o.dataDir, dataFiles.caCert), "utf8") };
  }
  await mkdir(o.dataDir, { recursive: true, mode: 0o700 });
  // Loaded here only: the PKI library is heavy and a running controller does not need it.
  const { createCertificateAuthority, issueServerCertificate } =
    // eslint-disable-next-line @typescript-eslint/consistent-type-imports
    require("./security/pki") as typeof import("./security/pki");
  const ca = o.ca ?? (await createCertificateAuthority(o.name));
  const hosts = [
    o.listen.host,
    ...(o.advertise ?? []).map((a) => a.replace(/:\d+$/, "").replace(/^\[|\]$/g, "")),
  ].filter((h) => h !== "0.0.0.0" && h !== "::");
  const server = await issueServerCertificate(ca, hosts);
  await writeFile(join(o.dataDir, dataFiles.caCert), ca.certPem, { mode: 0o644 });
  await writeFile(join(o.dataDir, dataFiles.caKey), ca.keyPem, { mode: 0o600 });
  await writeFile(join(o.dataDir, dataFiles.serverCert), server.certPem, { mode: 0o644 });
  await writeFile(join(o.dataDir, dataFiles.serverKey), server.keyPem, { mode: 0o600 });
  const adminPassword = o.adminPassword ?? newSecret(18);
  // A store left by an interrupted init holds an admin password nobody knows: start it afresh.
  await rm(join(o.dataDir, dataFiles.store), { recursive: true, force: true });
  const store = await openStore(o.store ?? { backend: "embedded" }, join(o.dataDir, dataFiles.store));
  try {
    await new StateOps(store).initController(o.name, adminPassword, o.uuid);
  } finally {
    await store.close();
  }
  const config: ControllerConfig = {
    name: o.name,
    listen: o.listen,
    ...(o.advertise ? { advertise: o.advertise } : {}),
    store: o.store ?? { backend: "embedded" },
    ...(o.instance ? { instance: { id: o.instance } } : {}),
    ...(o.kubernetes ? { kubernetes: o.kubernetes } : {}),
    ...(o.substrate ? { substrate: o.substrate } : {}),
    ...(o.releases ? { releases: o.releases } : {}),
  };
  // Written last: its presence marks a complete directory, so an interrupted init is redone.
  await writeFile(configPath, JSON.stringify(config, null, 2) + "\n", { mode: 0o600 });
  return { created: true, adminPassword, caCert: ca.certPem };
}
