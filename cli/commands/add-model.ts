import { Command, Option, UsageError } from "clipanion";
import type { KubernetesModelSettings, ModelSubstrate } from "../../api/core";
import { contractNamed, contractOf, substratesWhere } from "../../api/core";
import { CloudOptionsCommand, withConstraintsFlag } from "../cloud-options";
import { kindOfTarget } from "../kind-flags";
import { DURATION_HELP, isDuration } from "../validators";

/** Kinds named alone on the command line; a pod kind is named with its cluster (`kubernetes:CLUSTER`, its target word). */
const plainKinds = (): string => substratesWhere((k) => k.provisions !== "pods").join(", ");
const clusterKind = (arg: string) => {
  const kind = kindOfTarget(arg);
  return kind?.provisions === "pods" ? kind : undefined;
};

export default class AddModelCommand extends withConstraintsFlag(CloudOptionsCommand) {
  static override paths = [["add-model"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "create a model and make it current",
    details: `
      A model holds applications, their units and the machines they run on. The new model becomes the current one for later commands.

      Its substrate says where machines come from when units are placed without --to: \`local\` (the default) starts agents as processes on the controller's host; \`aws\` launches an EC2 instance per machine and \`vsphere\` clones a VM from a template, each enrolling its agent with cloud-init (no SSH); \`ssh\` and \`manual\` models use only machines added to them with add-machine (deploy and add-unit then need --to).

      An aws model needs a stored credential (steward add-credential), a region and an image (any Linux AMI with cloud-init and curl); instances go to its subnets (or the region's zones) in turn.

      --constraints (as Juju has them: cores, mem, root-disk, arch, instance-type) are the default for the machines an aws or vsphere model makes; an application's (deploy --constraints) and a machine's (add-machine --constraints) are merged over them. On aws they choose the smallest fitting instance type from a list of t3, m6i, t4g and m7g types (an explicit instance-type wins) and size the root volume; on vsphere cores and mem size the clone.

      A vsphere model needs a stored vsphere credential, vCenter's SDK URL, a datacenter and a template VM (Linux with cloud-init's VMware datasource and curl); its user data goes in through guestinfo.

      \`--substrate kubernetes:CLUSTER\` makes a model on a cluster registered with steward add-k8s: a namespace (the model's name, or --namespace) where each application is a StatefulSet and unit N is its pod N, with the Steward agent as a container of the pod. The controller first checks that the cluster answers and that the cluster's user may work in that namespace (and create it, when it does not exist); \`--skip-check\` makes the model without asking the cluster (its units then wait for it).
    `,
    examples: [
      ["Create a model called demo", "$0 add-model demo"],
      ["A model of SSH hosts", "$0 add-model shop --substrate ssh"],
      [
        "A model on EC2, spread over three subnets",
        "$0 add-model shop --substrate aws --credential prod --region eu-west-1 --image ami-0abcdef1234567890 --instance-type t3.small --subnet subnet-0aaa1111 --subnet subnet-0bbb2222 --subnet subnet-0ccc3333 --security-group sg-0123abcd",
      ],
      [
        "A model on vSphere",
        "$0 add-model estate --substrate vsphere --credential lab --vcenter https://vcenter.example.com/sdk --datacenter DC1 --template debian-12-template --vcenter-ca-file vcenter-ca.pem",
      ],
      [
        "Machines with at least 2 cores and 4 GiB by default",
        '$0 add-model shop --substrate aws --credential prod --region eu-west-1 --image ami-0abcdef1234567890 --constraints "cores=2 mem=4G"',
      ],
      ["A model on a Kubernetes cluster registered with add-k8s", "$0 add-model shop --substrate kubernetes:lab"],
      ["Run update-status every minute", "$0 add-model demo --update-status-interval 1m"],
    ],
  });

  name = Option.String({ required: true, name: "name" });
  substrateArg = Option.String("--substrate", {
    description: `Where machines come from: ${plainKinds()}, or kubernetes:CLUSTER (default local)`,
  });
  namespace = Option.String("--namespace", {
    description: "kubernetes: the namespace its pods go in (default the model's name)",
  });
  credential = Option.String("--credential", {
    description: "Stored credential its machines are made with (steward add-credential)",
  });
  skipCheck = Option.Boolean("--skip-check", false, {
    description: "kubernetes: make the model without checking the cluster's reachability and rights",
  });
  interval = Option.String("--update-status-interval", {
    description: "How often units run update-status (default 5m): " + DURATION_HELP,
    validator: isDuration(),
  });

  /** `--substrate`, with `kubernetes:CLUSTER` read as the kubernetes substrate and the cluster's credential. */
  private get substrate(): ModelSubstrate | undefined {
    const arg = this.substrateArg;
    if (arg === undefined) return undefined;
    const cluster = clusterKind(arg);
    if (cluster) return cluster.name;
    const kind = contractNamed(arg);
    if (!kind)
      throw new UsageError(
        `--substrate ${arg}: expected one of ${plainKinds()}, or kubernetes:CLUSTER (a cluster registered with steward add-k8s)`,
      );
    return kind.name;
  }

  private kubernetesSettings(): { credential?: string; settings?: KubernetesModelSettings } {
    if (contractOf(this.substrate).provisions !== "pods") {
      if (this.namespace !== undefined)
        throw new UsageError("--namespace is for kubernetes models (--substrate kubernetes:CLUSTER)");
      if (this.skipCheck)
        throw new UsageError("--skip-check is for kubernetes models (--substrate kubernetes:CLUSTER)");
      return {};
    }
    const cluster = this.substrateArg!.slice(this.substrateArg!.indexOf(":") + 1) || this.credential;
    if (!cluster)
      throw new UsageError(
        "name the cluster: --substrate kubernetes:CLUSTER (one registered with steward add-k8s; see steward credentials)",
      );
    if (this.credential !== undefined && this.credential !== cluster)
      throw new UsageError(
        `--substrate kubernetes:${cluster} and --credential ${this.credential} name two clusters: give one`,
      );
    return {
      credential: cluster,
      ...(this.namespace !== undefined ? { settings: { namespace: this.namespace } } : {}),
    };
  }

  async run(): Promise<number> {
    const k8s = this.kubernetesSettings();
    const constraints = this.constraintsText();
    const cloud = await this.cloudSettings();
    const client = await this.connect();
    const config = this.interval !== undefined ? { updateStatusInterval: Math.round(this.interval / 1000) } : undefined;
    const m = await client.createModel(
      this.name,
      config,
      this.substrate,
      { credential: this.credential, ...cloud, ...k8s, constraints },
      { skipCheck: this.skipCheck },
    );
    const { name, cfg } = await this.resolveController();
    cfg.controllers[name]!.currentModel = m.name;
    await this.saveConfig(cfg);
    this.out(
      `Added model "${m.name}" (${m.uuid}, ${m.substrate} substrate${m.credential ? `, ${contractNamed(m.substrate)?.provisions === "pods" ? "cluster" : "credential"} ${m.credential}` : ""}${m.constraints ? `, constraints ${m.constraints}` : ""}) and made it current.`,
    );
    return 0;
  }

  private async cloudSettings(): Promise<{ settings?: Record<string, unknown> }> {
    this.checkCloudFlags(this.substrate);
    const settings = await this.settingsFromFlags(this.substrate);
    return settings ? { settings } : {};
  }
}
