/**
 * Controllers on EC2 (the aws hosting of ../controller-hosting.ts, for `steward bootstrap aws:…` and
 * the Controller resource with substrate "aws"): the first replica is the steps of
 * ../cloud-bootstrap.ts on one instance launched tagged as a replica of the controller (so the
 * keeper can retire it like those it launches), in the first subnet or zone; EC2 becomes the
 * replica cloud. Destroying one terminates every instance tagged with it.
 */
import type { AwsModelSettings } from "../../api/core";
import { StewardError } from "../../api/core";
import { CLOUD_REPLICA_UPGRADE_REFUSED, bootstrapOnInstance, destroyMarked } from "../cloud-bootstrap";
import type { ControllerHosting } from "../controller-hosting";
import type { AwsPlacement } from "./ec2";
import { Ec2, GONE_STATES, LIVE_STATES, REPLICA_TAGS, awsCredentialsOf, replicaInstanceName } from "./ec2";

export const awsHosting: ControllerHosting<AwsModelSettings, AwsModelSettings> = {
  // Where its instances are, as the bootstrap checked it (defaults filled in); the UUID they are marked with is recorded beside it.
  record: (_plan, c) => c.settings,
  destroyable: (recorded) => recorded,
  replicaUpgradeRefused: CLOUD_REPLICA_UPGRADE_REFUSED,
  bootstrap: (plan, o) =>
    bootstrapOnInstance(plan, o, {
      substrate: "aws",
      unreachableHint: "the security group",
      check: (api, settings) => api.parseRequest(api.AwsModelSettingsSchema, settings, "aws settings"),
      open: (settings, uuid, attributes) => {
        const placement: AwsPlacement = { settings, controllerUuid: uuid, credentials: awsCredentialsOf(attributes) };
        const ec2 = new Ec2();
        return {
          noun: "instance",
          launch: async (userData) => {
            o.progress(`Launching an instance (${settings.instanceType}, ${settings.imageId}) in ${settings.region}`);
            return (
              await ec2.launch(placement, {
                n: 0,
                name: replicaInstanceName(uuid),
                tags: REPLICA_TAGS,
                userData,
                idempotencyKey: `bootstrap-${uuid}`,
              })
            ).id;
          },
          state: async (id) => {
            const i = await ec2.instance(placement, id);
            if (!i || GONE_STATES.has(i.state))
              throw new StewardError(
                "unavailable",
                `instance ${id} ${i ? `is ${i.state}` : "is gone"} before it ran; see its state reason in the EC2 console`,
                { reason: "instance-gone" },
              );
            return { state: i.state, ...(i.state === "running" && i.address ? { address: i.address } : {}) };
          },
          terminate: (id) => ec2.terminate(placement, [id]),
          close: () => ec2.close(),
        };
      },
    }),

  async destroy(target, o) {
    if (!target.uuid)
      throw new StewardError(
        "invalid-request",
        "destroying a controller's instances needs its UUID (what they are marked with)",
      );
    const ec2 = new Ec2();
    const placement: AwsPlacement = {
      settings: target.settings,
      controllerUuid: target.uuid,
      credentials: awsCredentialsOf(target.credential ?? {}),
    };
    return destroyMarked(
      {
        doing: `Terminating the controller's EC2 instances in ${target.settings.region}`,
        list: () => ec2.instances(placement, {}, LIVE_STATES),
        remove: (mine) =>
          ec2.terminate(
            placement,
            mine.map((i) => i.id),
          ),
        label: (i) => i.id,
        close: () => ec2.close(),
      },
      o.progress,
    );
  },
};
