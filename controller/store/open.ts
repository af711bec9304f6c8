/**
 * Opening the store a controller is configured with. The etcd client is loaded only when asked
 * for: it reads its protocol files from disk at load time, and a single-replica controller on the
 * embedded store should not depend on them.
 */
import type { Store } from "./store";
import { EmbeddedStore } from "./embedded";

export type StoreConfig = { backend: "embedded" } | { backend: "etcd"; endpoints: string[]; prefix?: string };

/** `embeddedDir` is where the embedded store keeps its files (unused for etcd). */
export async function openStore(config: StoreConfig, embeddedDir: string): Promise<Store> {
  if (config.backend === "etcd") {
    // eslint-disable-next-line @typescript-eslint/consistent-type-imports
    const { EtcdStore } = require("./etcd") as typeof import("./etcd");
    return EtcdStore.connect({ endpoints: config.endpoints, ...(config.prefix ? { prefix: config.prefix } : {}) });
  }
  return EmbeddedStore.open({ dir: embeddedDir });
}
