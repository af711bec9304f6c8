import { Command, Option, UsageError } from "clipanion";
import type { ReplicaCloudSetting } from "../../api/core";
import { contractNamed, kindsWhere } from "../../api/core";
import { CloudOptionsCommand } from "../cloud-options";

export default class SetReplicaCloudCommand extends CloudOptionsCommand {
  static override paths = [["set-replica-cloud"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "let the controller launch its own replacement replicas on a cloud",
    details: `
      When a replica has been gone longer than the controller's replace-after setting and no spare
      host is left, the quorum keeper launches a new instance (an EC2 instance, or a VM cloned from a
      vSphere template), installs a replica on it without SSH (cloud-init fetches the controller from
      the cluster, its CA pinned), adds it to etcd, and terminates the lost replica's instance once it
      is out of the cluster. The keeper's dampers stay: nothing without quorum, one change at a time,
      at most max-replacements an hour.

      The instances need to reach the replicas on the API port and etcd's 2379-2380, and be reached
      by them. \`--clear\` stops launching replicas (spares are still used).
    `,
    examples: [
      [
        "Replace lost replicas with EC2 instances in three subnets",
        "$0 set-replica-cloud aws --credential prod --region eu-west-1 --image ami-0abcdef1234567890 --subnet subnet-0aaa1111 --subnet subnet-0bbb2222 --subnet subnet-0ccc3333 --security-group sg-0123abcd",
      ],
      [
        "Replace them with VMs cloned on vSphere",
        "$0 set-replica-cloud vsphere --credential lab --vcenter https://vcenter.example.com/sdk --datacenter DC1 --template debian-12-template --vcenter-ca-file vcenter-ca.pem",
      ],
      ["Stop launching replicas", "$0 set-replica-cloud --clear"],
    ],
  });

  substrate = Option.String({ required: false, name: "aws|vsphere" });
  credential = Option.String("--credential", {
    description: "The stored credential to launch with (steward add-credential)",
  });
  clear = Option.Boolean("--clear", false, { description: "Launch no more replicas" });

  async run(): Promise<number> {
    if (this.clear) {
      await (await this.connect()).setReplicaCloud(undefined);
      this.out("Replacement replicas are no longer launched on a cloud.");
      return 0;
    }
    const kind = contractNamed(this.substrate ?? "");
    if (kind?.replicaHosts !== "instances")
      throw new UsageError(
        `give the cloud: ${kindsWhere((k) => k.replicaHosts === "instances").replace(" and ", " or ")}, not ${this.substrate ?? "nothing"}`,
      );
    if (!this.credential) throw new UsageError("--credential is needed: the stored credential to launch with");
    this.checkCloudFlags(kind.name);
    const settings = await this.settingsFromFlags(kind.name);
    const cloud = { substrate: kind.name, credential: this.credential, settings } as ReplicaCloudSetting;
    await (await this.connect()).setReplicaCloud(cloud);
    this.out(`Lost replicas are replaced on ${kind.name} (${kind.describe(settings)}) when no spare host is left.`);
    return 0;
  }
}
