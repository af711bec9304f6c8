/**
 * The provider objects Pulumi serializes into state. Each method only loads its kind's
 * implementation (impl/<kind>-provider) by module name and calls it: nothing else is captured, so
 * the stored text is short, holds no secret, a newer Steward's code runs on the next `up` without
 * a provider diff, and the provider process loads only what that kind needs.
 */
import type * as pulumi from "@pulumi/pulumi";
import { sep } from "node:path";
import type { ResourceKind } from "./impl";

/**
 * The module the provider process loads for `kind`. Installed under node_modules, it is the
 * package's public `<package>/dynamic/<kind>` entry (package.json `exports`), resolved from the
 * program's directory as the engine starts the provider there: no path of the machine that ran
 * `up` is stored, and a later Steward's files may move behind it. In a checkout (tests, benchmarks,
 * `npm link`), the module's absolute path.
 */
export function implementationModule(kind: ResourceKind, dir = __dirname): string {
  const marker = `${sep}node_modules${sep}`;
  const i = dir.lastIndexOf(marker);
  if (i < 0) return `${dir}${sep}impl${sep}${kind}-provider`;
  const parts = dir.slice(i + marker.length).split(sep);
  const name = parts[0]!.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
  return `${name}/dynamic/${kind}`;
}

function shim(kind: ResourceKind): pulumi.dynamic.ResourceProvider {
  const module = implementationModule(kind);
  const exported = `${kind}Provider`;
  const impl = (): Required<pulumi.dynamic.ResourceProvider> => require(module)[exported];
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
  secret: shim("secret"),
  kubernetesSeed: shim("kubernetesSeed"),
  kubernetesController: shim("kubernetesController"),
};
