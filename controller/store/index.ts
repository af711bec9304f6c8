export * from "./store";
export { EmbeddedStore, MAX_VALUE_BYTES, embeddedStoreSize, writeEmbeddedStore } from "./embedded";
export type { EmbeddedStoreOptions } from "./embedded";
export type { EtcdStoreOptions } from "./etcd";
export { openStore } from "./open";
export type { StoreConfig } from "./open";
