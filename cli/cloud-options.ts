/**
 * The flags that say where cloud machines go, shared by `add-model --substrate aws|vsphere`,
 * `set-replica-cloud aws|vsphere` and `bootstrap aws:REGION|vsphere:VCENTER`; and `--constraints`,
 * what those machines must have (add-model, deploy, add-machine).
 */
import { Option, UsageError } from "clipanion";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { AwsModelSettings, ModelSubstrate, VsphereModelSettings } from "../api/core";
import { StewardError, foreignFlagsProblem, formatConstraints, parseConstraints } from "../api/core";
import type { BaseCommand } from "./base-command";
import { ControllerCommand } from "./base-command";

type CommandClass = abstract new (...args: any[]) => BaseCommand;

/** Adds the aws placement flags to a command class (clipanion finds options on the instance, inherited ones included). */
export function withAwsFlags<B extends CommandClass>(Base: B) {
  abstract class WithAwsFlags extends Base {
    region = Option.String("--region", { description: "aws: the region, e.g. eu-west-1" });
    image = Option.String("--image", {
      description: "aws: the AMI its instances boot (Linux with cloud-init and curl)",
    });
    instanceType = Option.String("--instance-type", { description: "aws: the instance type (default t3.small)" });
    subnets = Option.Array("--subnet", [], {
      description: "aws: a subnet for its instances (repeat: they are used in turn)",
    });
    securityGroups = Option.Array("--security-group", [], {
      description: "aws: a security group for its instances (repeatable)",
    });
    endpoint = Option.String("--endpoint", {
      description: "aws: another EC2 endpoint (https://…), e.g. a VPC endpoint",
    });
    endpointCa = Option.String("--endpoint-ca-file", {
      description: "aws: the CA certificate (PEM) that signs --endpoint",
    });

    awsFlagsGiven(): boolean {
      return (
        [this.region, this.image, this.instanceType, this.endpoint, this.endpointCa].some((v) => v !== undefined) ||
        this.subnets.length + this.securityGroups.length > 0
      );
    }

    /** The settings from the flags; the controller (or the bootstrap) checks their values and says which one is wrong. */
    async awsSettings(): Promise<Partial<AwsModelSettings>> {
      if (!this.region || !this.image)
        throw new UsageError("aws needs --region and --image (an AMI id such as ami-0abcdef1234567890)");
      const ca = this.endpointCa ? await readPem(this.context.cwd, this.endpointCa) : undefined;
      return {
        region: this.region,
        imageId: this.image,
        ...(this.instanceType ? { instanceType: this.instanceType } : {}),
        ...(this.subnets.length ? { subnetIds: this.subnets } : {}),
        ...(this.securityGroups.length ? { securityGroupIds: this.securityGroups } : {}),
        ...(this.endpoint ? { endpoint: this.endpoint } : {}),
        ...(ca ? { endpointCaCert: ca } : {}),
      };
    }
  }
  return WithAwsFlags;
}

/** Constraints given as arguments (`cores=2 mem=4G`, one or several words) in their normal form; none given is undefined. */
export function constraintsArgument(words: readonly string[]): string | undefined {
  if (words.length === 0) return undefined;
  const text = formatConstraints(checked(words.join(" "), "constraints"));
  if (!text) throw new UsageError("no constraints given: give key=value pairs such as cores=2 mem=4G, or --clear");
  return text;
}

function checked(text: string, what: string): ReturnType<typeof parseConstraints> {
  try {
    return parseConstraints(text);
  } catch (err) {
    if (StewardError.isInstance(err)) throw new UsageError(`${what}: ${err.message.replace(/^constraints: /, "")}`);
    throw err;
  }
}

/** Adds `--constraints "cores=2 mem=4G"` (Juju's syntax) to a command class. */
export function withConstraintsFlag<B extends CommandClass>(Base: B) {
  abstract class WithConstraintsFlag extends Base {
    constraints = Option.String("--constraints", {
      description:
        'What its machines must have, as Juju writes it: "cores=2 mem=4G root-disk=20G arch=amd64" or "instance-type=t3.large"',
    });

    /** The constraints in their normal form, checked here first (the controller checks them again, against the model's cloud). */
    constraintsText(): string | undefined {
      if (this.constraints === undefined) return undefined;
      return formatConstraints(checked(this.constraints, "--constraints")) || undefined;
    }
  }
  return WithConstraintsFlag;
}

function readPem(cwd: string, file: string): Promise<string> {
  return readFile(resolve(cwd, file), "utf8").catch(() => {
    throw new UsageError(`cannot read ${file}`);
  });
}

/** Adds the vsphere placement flags to a command class. */
export function withVsphereFlags<B extends CommandClass>(Base: B) {
  abstract class WithVsphereFlags extends Base {
    vcenter = Option.String("--vcenter", { description: "vsphere: vCenter's SDK URL, https://…/sdk" });
    datacenter = Option.String("--datacenter", { description: "vsphere: the datacenter" });
    template = Option.String("--template", { description: "vsphere: the template VM cloned for each machine" });
    folder = Option.String("--folder", {
      description: "vsphere: the VM folder for its VMs (default: the datacenter's)",
    });
    resourcePool = Option.String("--resource-pool", {
      description: "vsphere: a resource pool, cluster or host (default: the template's host)",
    });
    vcenterCa = Option.String("--vcenter-ca-file", {
      description: "vsphere: the CA certificate (PEM) that signs vCenter's",
    });

    vsphereFlagsGiven(): boolean {
      return [this.vcenter, this.datacenter, this.template, this.folder, this.resourcePool, this.vcenterCa].some(
        (v) => v !== undefined,
      );
    }

    /** The settings from the flags; the controller (or the bootstrap) checks their values and says which one is wrong. */
    async vsphereSettings(): Promise<VsphereModelSettings> {
      if (!this.vcenter || !this.datacenter || !this.template)
        throw new UsageError("vsphere needs --vcenter (https://…/sdk), --datacenter and --template");
      const caCert = this.vcenterCa ? await readPem(this.context.cwd, this.vcenterCa) : undefined;
      return {
        url: this.vcenter,
        datacenter: this.datacenter,
        template: this.template,
        ...(this.folder ? { folder: this.folder } : {}),
        ...(this.resourcePool ? { resourcePool: this.resourcePool } : {}),
        ...(caCert ? { caCert } : {}),
      };
    }
  }
  return WithVsphereFlags;
}

/** A command that takes the aws and vsphere placement flags. */
export abstract class CloudOptionsCommand extends withVsphereFlags(withAwsFlags(ControllerCommand)) {
  /** Refuses flags for a cloud other than `substrate`. */
  protected checkCloudFlags(substrate: ModelSubstrate | undefined): void {
    const problem = foreignFlagsProblem(substrate, (flag) => this.cloudFlagGiven(flag));
    if (problem) throw new UsageError(problem);
  }

  /** The settings of `substrate` read from its flags; undefined for kinds without flags here. */
  protected async settingsFromFlags(
    substrate: ModelSubstrate | undefined,
  ): Promise<Partial<AwsModelSettings> | VsphereModelSettings | undefined> {
    const read: Partial<Record<ModelSubstrate, () => Promise<Partial<AwsModelSettings> | VsphereModelSettings>>> = {
      aws: () => this.awsSettings(),
      vsphere: () => this.vsphereSettings(),
    };
    return substrate ? read[substrate]?.() : undefined;
  }

  /** Whether `flag` (one of a kind's contract flags) was given. */
  private cloudFlagGiven(flag: string): boolean {
    const given: Record<string, unknown> = {
      "--region": this.region,
      "--image": this.image,
      "--instance-type": this.instanceType,
      "--subnet": this.subnets[0],
      "--security-group": this.securityGroups[0],
      "--endpoint": this.endpoint,
      "--endpoint-ca-file": this.endpointCa,
      "--vcenter": this.vcenter,
      "--datacenter": this.datacenter,
      "--template": this.template,
      "--folder": this.folder,
      "--resource-pool": this.resourcePool,
      "--vcenter-ca-file": this.vcenterCa,
    };
    return given[flag] !== undefined;
  }
}
