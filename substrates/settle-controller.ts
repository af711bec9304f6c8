/**
 * What follows a controller's first replica that answers, the same on every kind and for both callers
 * (the CLI's `bootstrap`, the provider's Controller resource): log in, store the cloud's credential and
 * make the cloud (or the StatefulSet) where the controller launches its own replicas, let the caller
 * record the controller (so a failed growth leaves a controller the caller knows), grow to the wanted
 * replicas and record it again with the addresses it has then. Apart from bootstrap-controller.ts, which
 * finds the kinds through the registry, because a kind's own bootstrap (kubernetes) ends with it too.
 */
import { ControllerClient, waitForVoters } from "../api/core";
import type { Progress } from "./brokers";
import type { ControllerPlan, FirstReplica, HostedController, HostingOptions } from "./controller-hosting";
import { alreadyThere } from "./controller-hosting";

export interface BootstrapOptions extends HostingOptions {
  /** Called once the first replica answers, and again after growing (its addresses then). */
  recorded?(controller: HostedController): Promise<void> | void;
}

/** What follows a first replica that answers, the same on every kind (see this file's header). */
export async function settleController(
  first: FirstReplica,
  plan: Pick<ControllerPlan<unknown>, "replicas" | "replaceAfterSeconds" | "timeoutMs" | "adminPassword" | "adopt">,
  o: BootstrapOptions,
): Promise<HostedController> {
  const adminPassword = first.adminPassword ?? (plan.adopt ? plan.adminPassword : undefined);
  if (!adminPassword) throw alreadyThere(o, first.where);
  const client = new ControllerClient({
    addresses: first.addresses,
    caCert: first.caCert,
    user: "admin",
    password: adminPassword,
    ...(first.callTimeoutMs ? { timeoutMs: first.callTimeoutMs } : {}),
  });
  try {
    const token = await client.login();
    const uuid = first.uuid ?? (await client.controllerInfo()).uuid;
    if (first.replicaCloud) await handOverReplicaCloud(client, first, o.progress);
    const controller: HostedController = {
      uuid,
      addresses: first.addresses,
      caCert: first.caCert,
      adminPassword,
      token,
      settings: first.settings,
    };
    await o.recorded?.(controller);
    if (plan.replicas > 1) {
      o.progress(first.growing ?? `Growing to ${plan.replicas} replicas`);
      const replaceAfter = plan.replaceAfterSeconds ? { replaceAfterSeconds: plan.replaceAfterSeconds } : {};
      await client.enableHa({
        replicas: plan.replicas,
        ...(first.hosts?.length ? { hosts: first.hosts } : {}),
        ...replaceAfter,
      });
      await waitForVoters(client, plan.replicas, plan.timeoutMs, o.progress);
      controller.addresses = first.reachable ? await first.reachable() : (await client.controllerInfo()).addresses;
      await o.recorded?.(controller);
    }
    await first.finish?.();
    return controller;
  } finally {
    client.close();
  }
}

/**
 * Stores the cloud's credential (replacing one of that name when `replace`) and sets where the
 * controller launches its own replicas: at bootstrap, and when the provider's Controller changes them.
 */
export async function handOverReplicaCloud(
  client: ControllerClient,
  cloud: Pick<FirstReplica, "credential" | "replicaCloud">,
  progress: Progress,
  replace = false,
): Promise<void> {
  if (cloud.credential) {
    const { name, substrate, attributes } = cloud.credential;
    progress(
      `Storing the ${substrate} credential as "${name}" and letting the controller launch its own replicas on ${substrate}`,
    );
    await client.putCredential(name, substrate, attributes, replace);
  }
  await client.setReplicaCloud(cloud.replicaCloud);
}
