/**
 * A controller's first replica on a cloud instance, installed the way Juju bootstraps (for
 * `steward bootstrap aws:…` and `vsphere:…`, and the Controller resource on those substrates): an
 * SSH key and a host key are made for one instance, launched (by the cloud's own code: aws/,
 * vsphere/) as a replica of a controller whose UUID is chosen beforehand, with user data that has
 * cloud-init install both; the controller is installed over SSH with that host key pinned. The
 * credential is then stored in the controller and the cloud made its replica cloud, so that it
 * grows (enable-ha) and replaces lost replicas by launching instances itself.
 *
 * Nothing is left behind when it fails before the controller answers: the instance is terminated.
 */
import type { AwsModelSettings, VsphereModelSettings } from "../api/core";
import { ControllerClient, StewardError, isUnavailable, waitForHealth } from "../api/core";
import type { Progress } from "./brokers";
import { sshBootstrapUserData } from "./cloud-init";
import { controllerFiles } from "./controller-files";
import { SshSession, generateSshKeyPair, installController } from "./ssh";

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

/** Where the controller launches replicas later (the API's set-replica-cloud request). */
export type ReplicaCloud = { substrate: "aws"; credential: string; aws: AwsModelSettings } | { substrate: "vsphere"; credential: string; vsphere: VsphereModelSettings };

export interface InstanceBootstrapPlan {
  name: string;
  /** Chosen before the instance is launched, which is marked with it. */
  uuid: string;
  port: number;
  /** The credential stored in the controller; `replicaCloud` names it. */
  credential: { name: string; substrate: "aws" | "vsphere"; attributes: Record<string, string> };
  replicaCloud: ReplicaCloud;
  /** What to check when the controller does not answer (a security group, a firewall). */
  unreachableHint: string;
  progress: Progress;
}

export interface CloudController { uuid: string; addresses: string[]; caCert: string; adminPassword: string; instanceId: string }

/** How long an instance may take to run with an address, and its sshd to let the bootstrap key in. */
const INSTANCE_TIMEOUT_MS = 10 * 60_000;

export async function bootstrapOnInstance(plan: InstanceBootstrapPlan, cloud: BootstrapInstance): Promise<CloudController> {
  const clientKey = generateSshKeyPair(`steward-bootstrap-${plan.name}`);
  const hostKey = generateSshKeyPair(`steward-${plan.name}-0`);
  let doomed: string | undefined;
  try {
    const id = doomed = await cloud.launch(sshBootstrapUserData({ authorizedKey: clientKey.publicKey, hostKey }));
    const address = await runningAddress(cloud, id, plan.progress);
    plan.progress(`${capitalized(cloud.noun)} ${id} running at ${address}; connecting over SSH (host key ${hostKey.fingerprint}, made for it)`);
    const session = await connectWhenUp(address, clientKey.privateKey, hostKey.fingerprint);
    let installed;
    try {
      // The pinned key answered: cloud-init has read the user data, which need not stay readable.
      await cloud.forgetUserData?.(id);
      installed = await installController(session, { name: plan.name, port: plan.port, uuid: plan.uuid, instance: id, files: controllerFiles(), progress: (step) => plan.progress(`  ${step}`) });
    } finally {
      session.close();
    }
    if (!installed.adminPassword) throw new StewardError("conflict", `${cloud.noun} ${id} already holds a controller; it was launched for this bootstrap, so this should not happen`);
    const client = new ControllerClient({ addresses: installed.addresses, caCert: installed.caCert, user: "admin", password: installed.adminPassword, timeoutMs: 3000 });
    try {
      await waitForHealth(client, 60_000, `is port ${plan.port} of ${address} open to this machine (${plan.unreachableHint})? Its log is /var/lib/steward/controller/controller.log`);
      doomed = undefined; // the controller answers: from here on the instance is kept whatever happens
      plan.progress(`Storing the ${plan.credential.substrate} credential as "${plan.credential.name}" and letting the controller launch its own replicas on ${plan.credential.substrate}`);
      await client.putCredential(plan.credential.name, plan.credential.substrate, plan.credential.attributes);
      await client.setReplicaCloud(plan.replicaCloud);
    } finally {
      client.close();
    }
    return { uuid: plan.uuid, addresses: installed.addresses, caCert: installed.caCert, adminPassword: installed.adminPassword, instanceId: id };
  } catch (err) {
    // Before the controller answered, the instance is only a cost: take it away again.
    if (doomed) {
      plan.progress(`Terminating ${cloud.noun} ${doomed} (the bootstrap failed)`);
      await cloud.terminate(doomed).catch((e: unknown) => plan.progress(`  could not terminate it: ${(e as Error).message}; do it in the console`));
    }
    throw err;
  }
}

const capitalized = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

async function runningAddress(cloud: BootstrapInstance, id: string, progress: Progress): Promise<string> {
  const deadline = Date.now() + INSTANCE_TIMEOUT_MS;
  let last = "";
  for (;;) {
    const i = await cloud.state(id);
    if (i.address) return i.address;
    if (i.state !== last) { last = i.state; progress(`  ${cloud.noun} ${id}: ${i.state}`); }
    if (Date.now() > deadline) throw new StewardError("deadline-exceeded", `${cloud.noun} ${id} did not run with an address within ${INSTANCE_TIMEOUT_MS / 60_000} min`);
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
