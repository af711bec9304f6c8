/**
 * @module provider
 * Steward's Pulumi resources: `Controller`, `Model`, `Machine`, `Application`, `Integration` and `Secret`.
 * Each is a dynamic resource whose serialized provider only names the implementation (impl/), so
 * the state holds no client and no secret; credentials travel as secret inputs and outputs.
 *
 * ```ts
 * const ctl = new Controller("ctl", { substrate: "local" });
 * const model = new Model("demo", { connection: ctl.connection });
 * const web = new Application("web", { model, operator: "./operators/hello-http", units: 2 });
 * ```
 */
import type { CloudControllerArgs } from "./controller";
import type { CloudMachineArgs } from "./machine";
import type { SettingsArgs } from "./substrate-args";
export { Controller } from "./controller";
export type { CloudControllerArgs, ControllerArgs, LocalControllerArgs, SshControllerArgs } from "./controller";
export { Model } from "./model";
export type { ModelArgs } from "./model";
export { Machine } from "./machine";
export type { CloudMachineArgs, LocalMachineArgs, MachineArgs, SshMachineArgs } from "./machine";
export type { CloudCredentialArgs, Inputs, ModelSettingsArgs, SettingsArgs } from "./substrate-args";

// The per-kind names the package published before its arguments came from the substrate contracts;
// stacks in use import them, so they stay (a new kind needs none: ControllerArgs, MachineArgs and
// ModelArgs take it as they are).
export type AwsControllerArgs = CloudControllerArgs<"aws">;
export type VsphereControllerArgs = CloudControllerArgs<"vsphere">;
export type AwsMachineArgs = CloudMachineArgs<"aws">;
export type VsphereMachineArgs = CloudMachineArgs<"vsphere">;
export type AwsModelArgs = SettingsArgs<"aws">;
export type VsphereModelArgs = SettingsArgs<"vsphere">;
export { Application } from "./application";
export type { ApplicationArgs, ApplicationStorageArgs } from "./application";
export { Integration } from "./integration";
export type { IntegrationArgs, IntegrationEnd } from "./integration";
export { Secret } from "./secret";
export type { SecretArgs } from "./secret";
export type { ControllerConnection, SshHost, ReplicaCount } from "./connection";
export { shims } from "./shim";
/** The implementations the provider process runs, for benchmarks that call them directly. */
export { providers as implementations, requestCount } from "./impl";
export type { ApplicationOutputs } from "./impl/application-provider";
