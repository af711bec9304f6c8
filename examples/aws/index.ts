/**
 * `pulumi up` entry point: reads the settings from stack config (see README.md). Each of the three
 * stages is switched on by a setting: `steward:hostKeys` (the controller), then `steward:credential`
 * (the model and its applications).
 */
import * as pulumi from "@pulumi/pulumi";
import { dirname, join } from "node:path";
import { awsStack } from "./stack";

const config = new pulumi.Config("steward");
const out = awsStack({
  region: new pulumi.Config("aws").require("region"),
  zones: config.requireObject<string[]>("zones"),
  vpcCidr: config.get("vpcCidr"),
  adminCidr: config.get("adminCidr"),
  imageId: config.require("imageId"),
  controllerInstanceType: config.get("controllerInstanceType"),
  workloadInstanceType: config.get("workloadInstanceType"),
  publicKey: config.require("publicKey"),
  privateKey: config.requireSecret("privateKey"),
  sshUser: config.get("sshUser"),
  hostKeys: config.getObject<string[]>("hostKeys"),
  credential: config.get("credential"),
  webUnits: config.getNumber("webUnits"),
  operatorsDir: config.get("operatorsDir") ?? join(dirname(require.resolve("steward/package.json")), "operators"),
});

const next = {
  1: "Read the three hosts' key fingerprints from their consoles into steward:hostKeys, then pulumi up (README.md, step 2)",
  2: "Store the key on the controller (steward add-credential), run replicaCloudCommand, set steward:credential, then pulumi up (README.md, step 3)",
  3: "Done: pulumi stack output webUnits; steward status -m shop",
}[out.stage];

export const stage = out.stage;
export const nextStep = next;
export const vpcId = out.vpcId;
export const subnetIds = out.subnetIds;
export const controllerSecurityGroupId = out.controllerSecurityGroupId;
export const workloadSecurityGroupId = out.workloadSecurityGroupId;
export const controllerInstanceIds = out.controllerInstanceIds;
export const controllerPrivateIps = out.controllerPrivateIps;
export const controllerPublicIps = out.controllerPublicIps;
export const tunnelHost = out.tunnelHost;
export const accessKeyId = out.accessKeyId;
export const secretAccessKey = out.secretAccessKey;
export const replicaCloudCommand = out.replicaCloudCommand;
export const controllerUuid = "controllerUuid" in out ? out.controllerUuid : undefined;
export const addresses = "addresses" in out ? out.addresses : undefined;
export const leader = "leader" in out ? out.leader : undefined;
/** Addresses, CA and the admin password, for `steward` (README.md): secret. */
export const connection = "connection" in out ? out.connection : undefined;
export const webUnits = "webUnits" in out ? out.webUnits : undefined;
export const checkerUnits = "checkerUnits" in out ? out.checkerUnits : undefined;
