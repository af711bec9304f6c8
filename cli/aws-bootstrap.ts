/**
 * `steward bootstrap aws:REGION`: a controller on EC2, installed the way Juju bootstraps. The CLI
 * makes an SSH key and a host key for one instance, launches it (tagged as a replica of a
 * controller whose UUID is chosen now) with user data that makes cloud-init install both, connects
 * with the host key pinned, and installs the controller as `bootstrap ssh:` does. It then stores
 * the AWS credential in the controller and sets it as the replica cloud, so that the controller
 * grows (`--replicas 3`) and later replaces lost replicas by launching instances itself.
 *
 * Nothing is left behind on failure before the controller answers: the instance is terminated.
 */
import { UsageError } from "clipanion";
import { randomUUID } from "node:crypto";
import type { AwsModelSettings, ControllerClient as Client } from "../api/core";
import { ControllerClient, StewardError, waitForHealth, waitForVoters } from "../api/core";
import type * as Api from "../api";
import type * as Substrates from "../substrates";
import type { ControllerEntry } from "./client-config";

export interface AwsBootstrapPlan {
  name: string;
  settings: Partial<AwsModelSettings>;
  /** The credential's attributes (access-key-id, secret-access-key, session-token). */
  attributes: Record<string, string>;
  /** The name it is stored under in the controller. */
  credentialName: string;
  replicas: number;
  port: number;
  replaceAfterSeconds?: number;
  /** How long growing to `replicas` may take. */
  timeoutMs: number;
  progress(line: string): void;
}

/** How long an instance may take to run with an address, and its sshd to let the bootstrap key in. */
const INSTANCE_TIMEOUT_MS = 10 * 60_000;

/** Checks the plan as the controller would (so nothing is launched on bad input), then bootstraps. Returns the client entry. */
export async function bootstrapOnAws(plan: AwsBootstrapPlan): Promise<ControllerEntry> {
  // Loaded here: the schemas and the AWS SDK are heavy and only bootstrap needs them.
  const api = require("../api") as typeof Api;
  const { aws, ssh, controllerFiles, sshBootstrapUserData } = require("../substrates") as typeof Substrates;
  const settings = api.parseRequest(api.AwsModelSettingsSchema, plan.settings, "aws settings");
  api.parseRequest(api.CredentialRequest, { substrate: "aws", attributes: plan.attributes }, "aws credential");

  const uuid = randomUUID();
  const placement = { settings, controllerUuid: uuid, credentials: aws.awsCredentialsOf(plan.attributes) };
  const clientKey = ssh.generateSshKeyPair(`steward-bootstrap-${plan.name}`);
  const hostKey = ssh.generateSshKeyPair(`steward-${plan.name}-0`);
  const ec2 = new aws.Ec2();
  let instanceId: string | undefined;
  let answering = false;
  try {
    plan.progress(`Launching an instance (${settings.instanceType}, ${settings.imageId}) in ${settings.region}`);
    const launched = await ec2.launch(placement, {
      n: 0, name: aws.replicaInstanceName(uuid), tags: aws.REPLICA_TAGS,
      userData: sshBootstrapUserData({ authorizedKey: clientKey.publicKey, hostKey }), idempotencyKey: `bootstrap-${uuid}`,
    });
    instanceId = launched.id;
    const address = await runningAddress(ec2, placement, launched.id, plan.progress);
    plan.progress(`Instance ${launched.id} running at ${address}; connecting over SSH (host key ${hostKey.fingerprint}, made for it)`);
    const session = await connectWhenUp(ssh, address, clientKey.privateKey, hostKey.fingerprint);
    let installed;
    try {
      installed = await ssh.installController(session, { name: plan.name, port: plan.port, uuid, files: controllerFiles(), progress: (step) => plan.progress(`  ${step}`) });
    } finally {
      session.close();
    }
    if (!installed.adminPassword) throw new StewardError("conflict", `instance ${launched.id} already holds a controller; it was launched for this bootstrap, so this should not happen`);
    const client = new ControllerClient({ addresses: installed.addresses, caCert: installed.caCert, user: "admin", password: installed.adminPassword, timeoutMs: 3000 });
    try {
      await waitForHealth(client, 60_000, `is port ${plan.port} of ${address} open to this machine (the security group)? Its log is /var/lib/steward/controller/controller.log`);
      answering = true;
      const token = await client.login();
      const entry: ControllerEntry = { addresses: installed.addresses, caCert: installed.caCert, user: "admin", password: installed.adminPassword, generatedPassword: true, token };
      await handOverCloud(client, plan, settings);
      if (plan.replicas > 1) {
        plan.progress(`Growing to ${plan.replicas} replicas: the controller launches the others on EC2`);
        await client.enableHa({ replicas: plan.replicas, ...(plan.replaceAfterSeconds ? { replaceAfterSeconds: plan.replaceAfterSeconds } : {}) });
        await waitForVoters(client, plan.replicas, plan.timeoutMs, plan.progress);
        entry.addresses = (await client.controllerInfo()).addresses;
      }
      return entry;
    } finally {
      client.close();
    }
  } catch (err) {
    // Before the controller answered, the instance is only a cost: take it away again.
    if (instanceId && !answering) {
      plan.progress(`Terminating instance ${instanceId} (the bootstrap failed)`);
      await ec2.terminate(placement, [instanceId]).catch((e: unknown) => plan.progress(`  could not terminate it: ${(e as Error).message}; do it in the console`));
    }
    throw err;
  } finally {
    ec2.close();
  }
}

/** Stores the credential and makes EC2 the controller's replica cloud, with the bootstrap's own placement. */
async function handOverCloud(client: Client, plan: AwsBootstrapPlan, settings: AwsModelSettings): Promise<void> {
  plan.progress(`Storing the AWS credential as "${plan.credentialName}" and letting the controller launch its own replicas on EC2`);
  await client.putCredential(plan.credentialName, "aws", plan.attributes);
  await client.setReplicaCloud({ substrate: "aws", credential: plan.credentialName, aws: settings });
}

async function runningAddress(ec2: Substrates.aws.Ec2, p: Substrates.aws.AwsPlacement, id: string, progress: (line: string) => void): Promise<string> {
  const deadline = Date.now() + INSTANCE_TIMEOUT_MS;
  let last = "";
  for (;;) {
    const i = await ec2.instance(p, id);
    if (!i || i.state === "shutting-down" || i.state === "terminated") throw new StewardError("unavailable", `instance ${id} ${i ? `is ${i.state}` : "is gone"} before it ran; see its state reason in the EC2 console`);
    if (i.state === "running" && i.address) return i.address;
    if (i.state !== last) { last = i.state; progress(`  instance ${id}: ${i.state}`); }
    if (Date.now() > deadline) throw new StewardError("unavailable", `instance ${id} did not run with an address within ${INSTANCE_TIMEOUT_MS / 60_000} min`);
    await new Promise((r) => setTimeout(r, 2000));
  }
}

/** sshd comes up some seconds after the instance runs: dial until it answers; a wrong host key ends at once. */
async function connectWhenUp(ssh: typeof Substrates.ssh, host: string, privateKey: string, hostKey: string): Promise<Substrates.ssh.SshSession> {
  const deadline = Date.now() + INSTANCE_TIMEOUT_MS;
  for (;;) {
    try {
      return await ssh.SshSession.connect({ host, user: "root", privateKey, hostKey });
    } catch (err) {
      if (!StewardError.isInstance(err) || err.code !== "unavailable" || Date.now() > deadline) throw err;
    }
  }
}

/** `aws:eu-west-1` → `eu-west-1`; the flag, when given too, must agree. */
export function regionOf(target: string, flag: string | undefined): string {
  const region = target.slice("aws:".length);
  if (!region && !flag) throw new UsageError("give the region: aws:eu-west-1");
  if (region && flag && region !== flag) throw new UsageError(`the region is given twice and differs: ${target} and --region ${flag}`);
  return region || flag!;
}
