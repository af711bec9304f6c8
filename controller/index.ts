/**
 * @module controller
 * The Steward controller: store port and backends, domain state, the HTTPS/WebSocket API and the
 * substrates that start machines.
 */
export * from "./store";
