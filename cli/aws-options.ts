/** The flags that say where aws instances go, shared by `add-model --substrate aws` and `set-replica-cloud aws`. */
import { Option, UsageError } from "clipanion";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { AwsModelSettings } from "../api/core";
import type { StewardContext } from "./context";

/** Each a class property of the command (clipanion finds options only there), e.g. `region = awsOption.region();`. */
export const awsOption = {
  region: () => Option.String("--region", { description: "aws: the region, e.g. eu-west-1" }),
  image: () => Option.String("--image", { description: "aws: the AMI its instances boot (Linux with cloud-init and curl)" }),
  instanceType: () => Option.String("--instance-type", { description: "aws: the instance type (default t3.small)" }),
  subnets: () => Option.Array("--subnet", [], { description: "aws: a subnet for its instances (repeat: they are used in turn)" }),
  securityGroups: () => Option.Array("--security-group", [], { description: "aws: a security group for its instances (repeatable)" }),
  endpoint: () => Option.String("--endpoint", { description: "aws: another EC2 endpoint (https://…), e.g. a VPC endpoint" }),
  endpointCa: () => Option.String("--endpoint-ca-file", { description: "aws: the CA certificate (PEM) that signs --endpoint" }),
};

export type AwsFlags = { region?: string | undefined; image?: string | undefined; instanceType?: string | undefined; subnets: string[]; securityGroups: string[]; endpoint?: string | undefined; endpointCa?: string | undefined };

export function awsFlagsGiven(f: AwsFlags): boolean {
  return [f.region, f.image, f.instanceType, f.endpoint, f.endpointCa].some((v) => v !== undefined) || f.subnets.length + f.securityGroups.length > 0;
}

/** The settings from the flags; the controller checks their values and says which one is wrong. */
export async function awsSettings(ctx: StewardContext, f: AwsFlags): Promise<Partial<AwsModelSettings>> {
  if (!f.region || !f.image) throw new UsageError("aws needs --region and --image (an AMI id such as ami-0abcdef1234567890)");
  const ca = f.endpointCa ? await readFile(resolve(ctx.cwd, f.endpointCa), "utf8").catch(() => { throw new UsageError(`cannot read ${f.endpointCa}`); }) : undefined;
  return {
    region: f.region, imageId: f.image, ...(f.instanceType ? { instanceType: f.instanceType } : {}),
    ...(f.subnets.length ? { subnetIds: f.subnets } : {}), ...(f.securityGroups.length ? { securityGroupIds: f.securityGroups } : {}),
    ...(f.endpoint ? { endpoint: f.endpoint } : {}), ...(ca ? { endpointCaCert: ca } : {}),
  };
}
