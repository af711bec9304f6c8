/**
 * @module provider
 * Steward's Pulumi resources: `Controller`, `Model`, `Machine`, `Application` and `Integration`.
 * Each is a dynamic resource whose serialized provider only names the implementation (impl/), so
 * the state holds no client and no secret; credentials travel as secret inputs and outputs.
 *
 * ```ts
 * const ctl = new Controller("ctl", { substrate: "local" });
 * const model = new Model("demo", { connection: ctl.connection });
 * const web = new Application("web", { model, operator: "./operators/hello-http", units: 2 });
 * ```
 */
export { Controller } from "./controller";
export type {
  AwsControllerArgs,
  ControllerArgs,
  LocalControllerArgs,
  SshControllerArgs,
  VsphereControllerArgs,
} from "./controller";
export { Model } from "./model";
export type { AwsModelArgs, ModelArgs, VsphereModelArgs } from "./model";
export { Machine } from "./machine";
export type { AwsMachineArgs, LocalMachineArgs, MachineArgs, SshMachineArgs, VsphereMachineArgs } from "./machine";
export { Application } from "./application";
export type { ApplicationArgs } from "./application";
export { Integration } from "./integration";
export type { IntegrationArgs, IntegrationEnd } from "./integration";
export type { ControllerConnection, SshHost, ReplicaCount } from "./connection";
export { shims } from "./shim";
/** The implementations the provider process runs, for benchmarks that call them directly. */
export { providers as implementations, requestCount } from "./impl";
export type { ApplicationOutputs } from "./impl/application-provider";
