/**
 * The bootstrap flow, written once for every kind and both callers (the CLI's `bootstrap`, the
 * provider's Controller resource): the kind brings up the first replica (its `controller` hosting,
 * ./controller-hosting.ts, found through the registry), then ./settle-controller.ts does the rest.
 * `destroyController` is the other end: the kind takes away what it holds.
 */
import type { Progress } from "./brokers";
import type { ControllerPlan, HostedController, HostedTarget } from "./controller-hosting";
import type { HostingKind, HostingSettings, RecordedHosting } from "./registry";
import { CONTROLLER_HOSTING } from "./registry";
import type { BootstrapOptions } from "./settle-controller";
import { settleController } from "./settle-controller";

/** Bootstraps a controller on `kind`: its first replica, then {@link settleController}. */
export async function bootstrapController<K extends HostingKind>(
  kind: K,
  plan: ControllerPlan<HostingSettings[K]>,
  o: BootstrapOptions,
): Promise<HostedController<HostingSettings[K]>> {
  const hosting = CONTROLLER_HOSTING[kind]();
  const first = await hosting.bootstrap(plan, o);
  return settleController({ settings: plan.settings, ...first }, plan, o) as Promise<
    HostedController<HostingSettings[K]>
  >;
}

/** What a client records of controller `c`, which {@link bootstrapController} made on `kind` with `plan` (its entry's hosting). */
export function recordHosting<K extends HostingKind>(
  kind: K,
  plan: ControllerPlan<HostingSettings[K]>,
  c: HostedController<HostingSettings[K]>,
): RecordedHosting {
  const settings = CONTROLLER_HOSTING[kind]().record(plan, c);
  return { substrate: kind, settings, uuid: c.uuid } as RecordedHosting;
}

/** Takes away what `kind` holds for a controller whose models are gone: its instances, its install, its data. */
export async function destroyController<K extends HostingKind>(
  kind: K,
  target: HostedTarget<HostingSettings[K]>,
  o: { progress: Progress; signal?: AbortSignal },
): Promise<string[]> {
  return CONTROLLER_HOSTING[kind]().destroy(target, o);
}
