/**
 * Opening the store a controller is configured with. The etcd client is loaded only when asked
 * for: it reads its protocol files from disk at load time, and a single-replica controller on the
 * embedded store should not depend on them.
 */
import type { Store } from "./store";
import { EmbeddedStore } from "./embedded";

/** `tls: true`: present the replica's own CA-issued certificate (a managed etcd requires it). */
export type StoreConfig =
  { backend: "embedded" } | { backend: "etcd"; endpoints: string[]; prefix?: string; tls?: boolean };

/**
 * `embeddedDir` is where the embedded store keeps its files (unused for etcd); `tls` holds the PEMs
 * used when the config asks for TLS.
 */
export async function openStore(
  config: StoreConfig,
  embeddedDir: string,
  tls?: { caCert: string; cert: string; key: string },
): Promise<Store> {
  if (config.backend === "etcd") {
    // eslint-disable-next-line @typescript-eslint/consistent-type-imports
    const { EtcdStore } = require("./etcd") as typeof import("./etcd");
    if (config.tls && !tls) throw new Error("the store config asks for TLS but no certificate was given");
    return EtcdStore.connect({
      endpoints: config.endpoints,
      ...(config.prefix ? { prefix: config.prefix } : {}),
      ...(config.tls ? { tls } : {}),
    });
  }
  return EmbeddedStore.open({ dir: embeddedDir });
}
