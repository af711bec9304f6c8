/** The flags that say where aws instances go, shared by `add-model --substrate aws` and `set-replica-cloud aws`. */
import { Option, UsageError } from "clipanion";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { AwsModelSettings } from "../api/core";
import { ControllerCommand } from "./base-command";

/** A command that takes the aws placement flags (clipanion finds options on the instance, inherited ones included). */
export abstract class AwsOptionsCommand extends ControllerCommand {
  region = Option.String("--region", { description: "aws: the region, e.g. eu-west-1" });
  image = Option.String("--image", { description: "aws: the AMI its instances boot (Linux with cloud-init and curl)" });
  instanceType = Option.String("--instance-type", { description: "aws: the instance type (default t3.small)" });
  subnets = Option.Array("--subnet", [], { description: "aws: a subnet for its instances (repeat: they are used in turn)" });
  securityGroups = Option.Array("--security-group", [], { description: "aws: a security group for its instances (repeatable)" });
  endpoint = Option.String("--endpoint", { description: "aws: another EC2 endpoint (https://…), e.g. a VPC endpoint" });
  endpointCa = Option.String("--endpoint-ca-file", { description: "aws: the CA certificate (PEM) that signs --endpoint" });

  protected awsFlagsGiven(): boolean {
    return [this.region, this.image, this.instanceType, this.endpoint, this.endpointCa].some((v) => v !== undefined) || this.subnets.length + this.securityGroups.length > 0;
  }

  /** The settings from the flags; the controller checks their values and says which one is wrong. */
  protected async awsSettings(): Promise<Partial<AwsModelSettings>> {
    if (!this.region || !this.image) throw new UsageError("aws needs --region and --image (an AMI id such as ami-0abcdef1234567890)");
    const ca = this.endpointCa ? await readFile(resolve(this.context.cwd, this.endpointCa), "utf8").catch(() => { throw new UsageError(`cannot read ${this.endpointCa}`); }) : undefined;
    return {
      region: this.region, imageId: this.image, ...(this.instanceType ? { instanceType: this.instanceType } : {}),
      ...(this.subnets.length ? { subnetIds: this.subnets } : {}), ...(this.securityGroups.length ? { securityGroupIds: this.securityGroups } : {}),
      ...(this.endpoint ? { endpoint: this.endpoint } : {}), ...(ca ? { endpointCaCert: ca } : {}),
    };
  }
}
