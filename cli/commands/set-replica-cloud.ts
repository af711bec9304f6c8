import { Command, Option, UsageError } from "clipanion";
import { AwsOptionsCommand } from "../aws-options";

export default class SetReplicaCloudCommand extends AwsOptionsCommand {
  static override paths = [["set-replica-cloud"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "let the controller launch its own replacement replicas on a cloud",
    details: `
      When a replica has been gone longer than the controller's replace-after setting and no spare
      host is left, the quorum keeper launches a new instance here, installs a replica on it without
      SSH (cloud-init fetches the controller from the cluster, its CA pinned), adds it to etcd, and
      terminates the lost replica's instance once it is out of the cluster. The keeper's dampers
      stay: nothing without quorum, one change at a time, at most max-replacements an hour.

      The instances need to reach the replicas on the API port and etcd's 2379-2380, and be reached
      by them (security groups). \`--clear\` stops launching replicas (spares are still used).
    `,
    examples: [
      ["Replace lost replicas with EC2 instances in three subnets", "$0 set-replica-cloud aws --credential prod --region eu-west-1 --image ami-0abcdef1234567890 --subnet subnet-0aaa1111 --subnet subnet-0bbb2222 --subnet subnet-0ccc3333 --security-group sg-0123abcd"],
      ["Stop launching replicas", "$0 set-replica-cloud --clear"],
    ],
  });

  substrate = Option.String({ required: false, name: "aws" });
  credential = Option.String("--credential", { description: "The stored credential to launch with (steward add-credential)" });
  clear = Option.Boolean("--clear", false, { description: "Launch no more replicas" });

  async run(): Promise<number> {
    const client = await this.connect();
    if (this.clear) {
      await client.setReplicaCloud(undefined);
      this.out("Replacement replicas are no longer launched on a cloud.");
      return 0;
    }
    if (this.substrate !== "aws") throw new UsageError(`give the cloud: aws (the only one so far), not ${this.substrate ?? "nothing"}`);
    if (!this.credential) throw new UsageError("--credential is needed: the stored credential to launch instances with");
    const aws = await this.awsSettings();
    await client.setReplicaCloud({ substrate: "aws", credential: this.credential, aws });
    this.out(`Lost replicas are replaced by new ${aws.instanceType ?? "t3.small"} instances in ${aws.region} when no spare host is left.`);
    return 0;
  }
}
