/**
 * A controller's first replica on EC2 (`steward bootstrap aws:…`, the Controller resource with
 * substrate "aws"): the steps of ../cloud-bootstrap.ts on one instance launched tagged as a replica
 * of the controller (so the keeper can retire it like those it launches), in the first subnet or
 * zone; EC2 becomes the replica cloud.
 */
import { randomUUID } from "node:crypto";
import type { AwsModelSettings } from "../../api/core";
import { StewardError } from "../../api/core";
import type { Progress } from "../brokers";
import type { CloudController } from "../cloud-bootstrap";
import { bootstrapOnInstance } from "../cloud-bootstrap";
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

export type AwsController = CloudController;

export async function bootstrapControllerOnAws(plan: AwsControllerPlan): Promise<AwsController> {
  const uuid = randomUUID();
  const placement: AwsPlacement = { settings: plan.settings, controllerUuid: uuid, credentials: awsCredentialsOf(plan.attributes) };
  const ec2 = new Ec2();
  try {
    return await bootstrapOnInstance({
      name: plan.name, uuid, port: plan.port, progress: plan.progress, unreachableHint: "the security group",
      credential: { name: plan.credentialName, substrate: "aws", attributes: plan.attributes },
      replicaCloud: { substrate: "aws", credential: plan.credentialName, aws: plan.settings },
    }, {
      noun: "instance",
      launch: async (userData) => {
        plan.progress(`Launching an instance (${plan.settings.instanceType}, ${plan.settings.imageId}) in ${plan.settings.region}`);
        return (await ec2.launch(placement, { n: 0, name: replicaInstanceName(uuid), tags: REPLICA_TAGS, userData, idempotencyKey: `bootstrap-${uuid}` })).id;
      },
      state: async (id) => {
        const i = await ec2.instance(placement, id);
        if (!i || GONE_STATES.has(i.state)) throw new StewardError("unavailable", `instance ${id} ${i ? `is ${i.state}` : "is gone"} before it ran; see its state reason in the EC2 console`, { reason: "instance-gone" });
        return { state: i.state, ...(i.state === "running" && i.address ? { address: i.address } : {}) };
      },
      terminate: (id) => ec2.terminate(placement, [id]),
    });
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
