/**
 * The provider objects Pulumi serializes into state. Each method only loads the implementation
 * (impl/) by module name and calls it: nothing else is captured, so the stored text is short,
 * holds no secret, and a newer Steward's code runs on the next `up` without a provider diff.
 */
import type * as pulumi from "@pulumi/pulumi";
import { sep } from "node:path";
import type { ResourceKind } from "./impl";

/**
 * How the provider process finds impl/: by package path when Steward is installed under
 * node_modules (resolved from the program's directory, as the engine runs the provider there),
 * else by absolute path (a checkout).
 */
function implementationModule(): string {
  const here = `${__dirname}${sep}impl`;
  const marker = `${sep}node_modules${sep}`;
  const i = here.lastIndexOf(marker);
  return i < 0 ? here : here.slice(i + marker.length).split(sep).join("/");
}

const IMPLEMENTATION = implementationModule();

function shim(kind: ResourceKind): pulumi.dynamic.ResourceProvider {
  const module = IMPLEMENTATION;
  const impl = (): Required<pulumi.dynamic.ResourceProvider> => require(module).providers[kind];
  return {
    check: (olds, news) => impl().check(olds, news),
    diff: (id, olds, news) => impl().diff(id, olds, news),
    create: (inputs) => impl().create(inputs),
    read: (id, props) => impl().read(id, props),
    update: (id, olds, news) => impl().update(id, olds, news),
    delete: (id, props) => impl().delete(id, props),
  };
}

/** One instance per kind, so the SDK serializes each once per program run. */
export const shims = {
  controller: shim("controller"),
  model: shim("model"),
  machine: shim("machine"),
  application: shim("application"),
  integration: shim("integration"),
};
