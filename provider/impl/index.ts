/**
 * What runs inside the Pulumi provider process: one provider per resource kind, each in its own
 * module (`<kind>-provider.ts`) that the serialized shims (../shim.ts) load by name, so a Model's
 * read loads the model provider and the API client, not the Controller's SSH and cloud installers.
 *
 * `providers` loads each implementation on first use: benchmarks and tests call them directly, and
 * Pulumi states written before the shims named each module still load this one.
 */
import type * as pulumi from "@pulumi/pulumi";
import type * as Session from "./session";

export type ResourceKind =
  | "controller"
  | "model"
  | "machine"
  | "application"
  | "integration"
  | "secret"
  | "kubernetesSeed"
  | "kubernetesController";
export const RESOURCE_KINDS: readonly ResourceKind[] = [
  "controller",
  "model",
  "machine",
  "application",
  "integration",
  "secret",
  "kubernetesSeed",
  "kubernetesController",
];

/**
 * Typed as the SDK's provider interface only, so the published declarations of the resources do not
 * reach into the implementations (and through them the request schemas and SSH installers).
 */
export const providers = {} as Record<ResourceKind, Required<pulumi.dynamic.ResourceProvider>>;
for (const kind of RESOURCE_KINDS) {
  Object.defineProperty(providers, kind, {
    enumerable: true,
    get: () => require(`./${kind}-provider`)[`${kind}Provider`],
  });
}

/** HTTP requests sent by this process so far (benchmarks report it). */
export function requestCount(): number {
  return (require("./session") as typeof Session).requestCount();
}
