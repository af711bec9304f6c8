/**
 * EC2 instances for a controller's replicas (the aws kind's `replicaHosts()`, ../replica-hosts.ts):
 * launched tagged as replicas of the controller (as the bootstrap's first one is), spread over the
 * subnets in turn, listed while live.
 */
import type { AwsModelSettings } from "../../api/core";
import type { ReplicaInstanceCloud } from "../replica-hosts";
import type { AwsPlacement } from "./ec2";
import { Ec2, GONE_STATES, LIVE_STATES, REPLICA_TAGS, awsCredentialsOf, replicaInstanceName } from "./ec2";

export function awsReplicaInstances(): ReplicaInstanceCloud<AwsModelSettings> {
  const ec2 = new Ec2();
  return {
    name: "aws",
    instances: (settings, credential, controllerUuid) => {
      const p: AwsPlacement = { settings, controllerUuid, credentials: awsCredentialsOf(credential) };
      return {
        launch: async (n, userData, idempotencyKey) => {
          const i = await ec2.launch(p, {
            n,
            name: replicaInstanceName(controllerUuid),
            tags: REPLICA_TAGS,
            userData,
            idempotencyKey,
          });
          return { id: i.id, ...(i.zone ? { zone: i.zone } : {}) };
        },
        state: async (id) => {
          const i = await ec2.instance(p, id);
          return {
            gone: !i || GONE_STATES.has(i.state),
            ...(i?.state === "running" && i.address ? { address: i.address } : {}),
            ...(i?.zone ? { zone: i.zone } : {}),
          };
        },
        live: () => ec2.instances(p, REPLICA_TAGS, LIVE_STATES),
        terminate: (ids) => ec2.terminate(p, ids),
      };
    },
    close: () => ec2.close(),
  };
}
