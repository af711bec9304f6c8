/**
 * What runs inside the Pulumi provider process: one provider per resource kind. The serialized
 * shims (../shim.ts) load this module by name, so the code in Pulumi state stays a few lines long
 * and carries no client, credential or library.
 */
import { applicationProvider } from "./application-provider";
import { controllerProvider } from "./controller-provider";
import { integrationProvider } from "./integration-provider";
import { machineProvider } from "./machine-provider";
import { modelProvider } from "./model-provider";

export const providers = {
  controller: controllerProvider,
  model: modelProvider,
  machine: machineProvider,
  application: applicationProvider,
  integration: integrationProvider,
};
export type ResourceKind = keyof typeof providers;
export { requestCount } from "./session";
