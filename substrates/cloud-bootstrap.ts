/**
 * A controller's first replica on a cloud instance, installed the way Juju bootstraps (the aws and
 * vsphere hostings, ./controller-hosting.ts): an SSH key and a host key are made for one instance,
 * launched (by the cloud's own code: aws/, vsphere/) as a replica of a controller whose UUID is
 * chosen beforehand, with user data that has cloud-init install both; the controller is installed
 * over SSH with that host key pinned. The bootstrap flow (./bootstrap-controller.ts) then stores the
 * credential in the controller and makes the cloud its replica cloud, so that it grows (enable-ha)
 * and replaces lost replicas by launching instances itself.
 *
 * Nothing is left behind when it fails before the controller answers: the instance is terminated.
 * Destroying a controller is the same on every cloud too ({@link destroyMarked}): list what is
 * marked with its UUID, remove it.
 */
import { randomUUID } from "node:crypto";
import type * as Api from "../api";
import type { InstanceCloudSubstrate, ReplicaCloudSetting } from "../api/core";
import { ControllerClient, StewardError, isUnavailable, waitForHealth } from "../api/core";
import type { Progress } from "./brokers";
import type { ControllerPlan, FirstReplica, HostingOptions } from "./controller-hosting";
import { sshBootstrapUserData } from "./cloud-init";
import { controllerFiles } from "./controller-files";
import { SshSession, generateSshKeyPair, installController } from "./ssh";

/** Why replicas on a cloud's instances are not upgraded in place (the hostings' `replicaUpgradeRefused`). */
export const CLOUD_REPLICA_UPGRADE_REFUSED = cloudReplicaRefusal();

/** "runs on the cloud instance ID, which …": a replica on a cloud's instance (whatever launched it) is not upgraded in place. */
export function cloudReplicaRefusal(instance?: string): string {
  return `runs on ${instance ? `the cloud instance ${instance}` : "a cloud instance"}, which this command cannot upgrade in place yet (cloud-init installed it and no SSH access to it is kept)`;
}

/** One instance on a cloud, as the bootstrap sees it. */
export interface BootstrapInstance {
  /** What the cloud calls it in messages: "instance", "VM". */
  noun: string;
  /** Launches it with this user data (and the controller's marks); its id. */
  launch(userData: Buffer): Promise<string>;
  /** Its state, and its address once it runs; throws once it never will. */
  state(id: string): Promise<{ state: string; address?: string }>;
  terminate(id: string): Promise<void>;
  /**
   * Removes the user data from where the cloud keeps it, once the guest has applied it: it holds
   * the host key's private half. Where the cloud cannot (EC2 changes it only on a stopped
   * instance), absent.
   */
  forgetUserData?(id: string): Promise<void>;
}

/** What a cloud kind gives the bootstrap: its words, how it checks settings, and one instance. */
export interface InstanceCloud<Settings> {
  substrate: InstanceCloudSubstrate;
  /** The settings checked as the controller checks them (defaults filled in); the api's schemas load zod, so they come in here. */
  check(api: typeof Api, settings: Settings): Settings;
  /** What to check when the controller does not answer (a security group, a firewall). */
  unreachableHint: string;
  /** The instance's client for a controller with this UUID (instances are marked with it). */
  open(settings: Settings, uuid: string, attributes: Record<string, string>): BootstrapInstance & { close(): void };
}

/** How long an instance may take to run with an address, and its sshd to let the bootstrap key in. */
const INSTANCE_TIMEOUT_MS = 10 * 60_000;

export async function bootstrapOnInstance<Settings>(
  plan: ControllerPlan<Settings>,
  o: HostingOptions,
  kind: InstanceCloud<Settings>,
): Promise<FirstReplica> {
  // Checked before anything is launched; the schemas load zod, which only a bootstrap needs.
  const api = require("../api") as typeof Api;
  const credential = plan.credential ?? { name: kind.substrate, attributes: {} };
  api.parseRequest(
    api.CredentialRequest,
    { substrate: kind.substrate, attributes: credential.attributes },
    `${kind.substrate} credential`,
  );
  const settings = kind.check(api, plan.settings);
  const uuid = randomUUID();
  const cloud = kind.open(settings, uuid, credential.attributes);
  try {
    return {
      ...(await firstInstance(plan, o, cloud, uuid, kind.unreachableHint)),
      settings,
      credential: { ...credential, substrate: kind.substrate },
      // The controller launches its own replicas here, with the stored credential.
      replicaCloud: { substrate: kind.substrate, credential: credential.name, settings } as ReplicaCloudSetting,
      growing: `Growing to ${plan.replicas} replicas: the controller launches the others on ${kind.substrate}`,
    };
  } finally {
    cloud.close();
  }
}

async function firstInstance(
  plan: Pick<ControllerPlan<unknown>, "name" | "port">,
  o: HostingOptions,
  cloud: BootstrapInstance,
  uuid: string,
  unreachableHint: string,
): Promise<FirstReplica> {
  const clientKey = generateSshKeyPair(`steward-bootstrap-${plan.name}`);
  const hostKey = generateSshKeyPair(`steward-${plan.name}-0`);
  const port = plan.port ?? 17070;
  let doomed: string | undefined;
  try {
    const id = (doomed = await cloud.launch(sshBootstrapUserData({ authorizedKey: clientKey.publicKey, hostKey })));
    const address = await runningAddress(cloud, id, o.progress);
    o.progress(
      `${capitalized(cloud.noun)} ${id} running at ${address}; connecting over SSH (host key ${hostKey.fingerprint}, made for it)`,
    );
    const session = await connectWhenUp(address, clientKey.privateKey, hostKey.fingerprint);
    let installed;
    try {
      // The pinned key answered: cloud-init has read the user data, which need not stay readable.
      await cloud.forgetUserData?.(id);
      installed = await installController(session, {
        name: plan.name,
        port,
        uuid,
        instance: id,
        files: controllerFiles(),
        progress: (step) => o.progress(`  ${step}`),
      });
    } finally {
      session.close();
    }
    if (!installed.adminPassword)
      throw new StewardError(
        "conflict",
        `${cloud.noun} ${id} already holds a controller; it was launched for this bootstrap, so this should not happen`,
      );
    const probe = new ControllerClient({ addresses: installed.addresses, caCert: installed.caCert, timeoutMs: 3000 });
    try {
      await waitForHealth(
        probe,
        60_000,
        `is port ${port} of ${address} open to this machine (${unreachableHint})? Its log is /var/lib/steward/controller/controller.log`,
      );
    } finally {
      probe.close();
    }
    doomed = undefined; // the controller answers: from here on the instance is kept whatever happens
    return {
      uuid,
      addresses: installed.addresses,
      caCert: installed.caCert,
      adminPassword: installed.adminPassword,
      where: `${cloud.noun} ${id}`,
      callTimeoutMs: 3000,
    };
  } catch (err) {
    // Before the controller answered, the instance is only a cost: take it away again.
    if (doomed) {
      o.progress(`Terminating ${cloud.noun} ${doomed} (the bootstrap failed)`);
      await cloud
        .terminate(doomed)
        .catch((e: unknown) => o.progress(`  could not terminate it: ${(e as Error).message}; do it in the console`));
    }
    throw err;
  }
}

/** A cloud's view of the instances marked with one controller, for destroying them. */
export interface MarkedInstances<I> {
  /** What the progress line says is being done: "Terminating the controller's EC2 instances in eu-west-1". */
  doing: string;
  list(): Promise<I[]>;
  remove(items: I[]): Promise<void>;
  /** How the progress line names one. */
  label(item: I): string;
  close(): void;
}

/**
 * Removes every instance or VM of a controller (its replicas, those the keeper launched included,
 * and its models' machines): what is left to do once it is destroyed. Their ids or names.
 */
export async function destroyMarked<I>(cloud: MarkedInstances<I>, progress: Progress): Promise<string[]> {
  try {
    progress(cloud.doing);
    const mine = await cloud.list();
    await cloud.remove(mine);
    const labels = mine.map((i) => cloud.label(i));
    progress(`  ${labels.length ? labels.join(", ") : "none was left"}`);
    return labels;
  } finally {
    cloud.close();
  }
}

const capitalized = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

async function runningAddress(cloud: BootstrapInstance, id: string, progress: Progress): Promise<string> {
  const deadline = Date.now() + INSTANCE_TIMEOUT_MS;
  let last = "";
  for (;;) {
    const i = await cloud.state(id);
    if (i.address) return i.address;
    if (i.state !== last) {
      last = i.state;
      progress(`  ${cloud.noun} ${id}: ${i.state}`);
    }
    if (Date.now() > deadline)
      throw new StewardError(
        "deadline-exceeded",
        `${cloud.noun} ${id} did not run with an address within ${INSTANCE_TIMEOUT_MS / 60_000} min`,
      );
    await new Promise((r) => setTimeout(r, 2000));
  }
}

/** sshd comes up some seconds after the instance runs: dial until it answers; a wrong host key ends at once. */
async function connectWhenUp(host: string, privateKey: string, hostKey: string): Promise<SshSession> {
  const deadline = Date.now() + INSTANCE_TIMEOUT_MS;
  for (;;) {
    try {
      return await SshSession.connect({ host, user: "root", privateKey, hostKey });
    } catch (err) {
      if (!StewardError.isInstance(err) || !isUnavailable(err) || Date.now() > deadline) throw err;
    }
    // A refused connection answers at once: do not dial in a tight loop.
    await new Promise((r) => setTimeout(r, 1000));
  }
}
