export * from "./store";
export { EmbeddedStore, MAX_VALUE_BYTES, embeddedStoreSize } from "./embedded";
export type { EmbeddedStoreOptions } from "./embedded";
export { EtcdStore } from "./etcd";
export type { EtcdStoreOptions } from "./etcd";
