/**
 * What runs inside the Pulumi provider process: one provider per resource kind, each in its own
 * module (`<kind>-provider.ts`) that the serialized shims (../shim.ts) load by name, so a Model's
 * read loads the model provider and the API client, not the Controller's SSH and cloud installers.
 *
 * `providers` loads each implementation on first use: benchmarks and tests call them directly, and
 * Pulumi states written before the shims named each module still load this one.
 */
import type { applicationProvider } from "./application-provider";
import type { controllerProvider } from "./controller-provider";
import type { integrationProvider } from "./integration-provider";
import type { machineProvider } from "./machine-provider";
import type { modelProvider } from "./model-provider";
import type * as Session from "./session";

interface Providers {
  controller: typeof controllerProvider;
  model: typeof modelProvider;
  machine: typeof machineProvider;
  application: typeof applicationProvider;
  integration: typeof integrationProvider;
}
export type ResourceKind = keyof Providers;
export const RESOURCE_KINDS: readonly ResourceKind[] = ["controller", "model", "machine", "application", "integration"];

export const providers = {} as Providers;
for (const kind of RESOURCE_KINDS) {
  Object.defineProperty(providers, kind, { enumerable: true, get: () => require(`./${kind}-provider`)[`${kind}Provider`] });
}

/** HTTP requests sent by this process so far (benchmarks report it). */
export function requestCount(): number {
  return (require("./session") as typeof Session).requestCount();
}
