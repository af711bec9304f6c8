/**
 * A controller's first replica on EC2, installed the way Juju bootstraps (for `steward bootstrap
 * aws:…` and the Controller resource with substrate "aws"): an SSH key and a host key are made for
 * one instance, which is launched tagged as a replica of a controller whose UUID is chosen now, with
 * user data that has cloud-init install both; the controller is installed over SSH with that host
 * key pinned. The credential is then stored in the controller and EC2 made its replica cloud, so
 * that it grows (enable-ha) and replaces lost replicas by launching instances itself.
 *
 * Nothing is left behind when it fails before the controller answers: the instance is terminated.
 */
import { randomUUID } from "node:crypto";
import type { AwsModelSettings } from "../../api/core";
import { ControllerClient, StewardError, waitForHealth } from "../../api/core";
import type { Progress } from "../brokers";
import { sshBootstrapUserData } from "../cloud-init";
import { controllerFiles } from "../controller-files";
import { SshSession, generateSshKeyPair, installController } from "../ssh";
import type { AwsPlacement } from "./ec2";
import { Ec2, GONE_STATES, LIVE_STATES, REPLICA_TAGS, awsCredentialsOf, replicaInstanceName } from "./ec2";

export interface AwsControllerPlan {
  name: string;
  /** Checked already (AwsModelSettingsSchema): they become the replica cloud's too. */
  settings: AwsModelSettings;
  /** The credential's attributes (access-key-id, secret-access-key, session-token), checked already. */
  attributes: Record<string, string>;
  /** The name it is stored under in the controller. */
  credentialName: string;
  port: number;
  progress: Progress;
}

export interface AwsController { uuid: string; addresses: string[]; caCert: string; adminPassword: string; instanceId: string }

/** How long an instance may take to run with an address, and its sshd to let the bootstrap key in. */
const INSTANCE_TIMEOUT_MS = 10 * 60_000;

export async function bootstrapControllerOnAws(plan: AwsControllerPlan): Promise<AwsController> {
  const uuid = randomUUID();
  const placement: AwsPlacement = { settings: plan.settings, controllerUuid: uuid, credentials: awsCredentialsOf(plan.attributes) };
  const clientKey = generateSshKeyPair(`steward-bootstrap-${plan.name}`);
  const hostKey = generateSshKeyPair(`steward-${plan.name}-0`);
  const ec2 = new Ec2();
  let instanceId: string | undefined;
  try {
    plan.progress(`Launching an instance (${plan.settings.instanceType}, ${plan.settings.imageId}) in ${plan.settings.region}`);
    const launched = await ec2.launch(placement, {
      n: 0, name: replicaInstanceName(uuid), tags: REPLICA_TAGS,
      userData: sshBootstrapUserData({ authorizedKey: clientKey.publicKey, hostKey }), idempotencyKey: `bootstrap-${uuid}`,
    });
    instanceId = launched.id;
    const address = await runningAddress(ec2, placement, launched.id, plan.progress);
    plan.progress(`Instance ${launched.id} running at ${address}; connecting over SSH (host key ${hostKey.fingerprint}, made for it)`);
    const session = await connectWhenUp(address, clientKey.privateKey, hostKey.fingerprint);
    let installed;
    try {
      installed = await installController(session, { name: plan.name, port: plan.port, uuid, files: controllerFiles(), progress: (step) => plan.progress(`  ${step}`) });
    } finally {
      session.close();
    }
    if (!installed.adminPassword) throw new StewardError("conflict", `instance ${launched.id} already holds a controller; it was launched for this bootstrap, so this should not happen`);
    const client = new ControllerClient({ addresses: installed.addresses, caCert: installed.caCert, user: "admin", password: installed.adminPassword, timeoutMs: 3000 });
    try {
      await waitForHealth(client, 60_000, `is port ${plan.port} of ${address} open to this machine (the security group)? Its log is /var/lib/steward/controller/controller.log`);
      instanceId = undefined; // the controller answers: from here on the instance is kept whatever happens
      plan.progress(`Storing the AWS credential as "${plan.credentialName}" and letting the controller launch its own replicas on EC2`);
      await client.putCredential(plan.credentialName, "aws", plan.attributes);
      await client.setReplicaCloud({ substrate: "aws", credential: plan.credentialName, aws: plan.settings });
    } finally {
      client.close();
    }
    return { uuid, addresses: installed.addresses, caCert: installed.caCert, adminPassword: installed.adminPassword, instanceId: launched.id };
  } catch (err) {
    // Before the controller answered, the instance is only a cost: take it away again.
    if (instanceId) {
      plan.progress(`Terminating instance ${instanceId} (the bootstrap failed)`);
      await ec2.terminate(placement, [instanceId]).catch((e: unknown) => plan.progress(`  could not terminate it: ${(e as Error).message}; do it in the console`));
    }
    throw err;
  } finally {
    ec2.close();
  }
}

/**
 * Terminates every instance of the controller `controllerUuid` (its replicas, those the keeper
 * launched included, and its models' machines): what is left to do once it is destroyed.
 */
export async function terminateControllerInstances(settings: AwsModelSettings, attributes: Record<string, string>, controllerUuid: string): Promise<string[]> {
  const ec2 = new Ec2();
  try {
    const placement: AwsPlacement = { settings, controllerUuid, credentials: awsCredentialsOf(attributes) };
    const ids = (await ec2.instances(placement, {}, LIVE_STATES)).map((i) => i.id);
    await ec2.terminate(placement, ids);
    return ids;
  } finally {
    ec2.close();
  }
}

async function runningAddress(ec2: Ec2, p: AwsPlacement, id: string, progress: Progress): Promise<string> {
  const deadline = Date.now() + INSTANCE_TIMEOUT_MS;
  let last = "";
  for (;;) {
    const i = await ec2.instance(p, id);
    if (!i || GONE_STATES.has(i.state)) throw new StewardError("unavailable", `instance ${id} ${i ? `is ${i.state}` : "is gone"} before it ran; see its state reason in the EC2 console`);
    if (i.state === "running" && i.address) return i.address;
    if (i.state !== last) { last = i.state; progress(`  instance ${id}: ${i.state}`); }
    if (Date.now() > deadline) throw new StewardError("unavailable", `instance ${id} did not run with an address within ${INSTANCE_TIMEOUT_MS / 60_000} min`);
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
      if (!StewardError.isInstance(err) || err.code !== "unavailable" || Date.now() > deadline) throw err;
    }
  }
}
