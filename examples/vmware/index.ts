/**
 * `pulumi up` entry point: reads the settings from stack config (see README.md). Each of the three
 * stages is switched on by a setting: `steward:hostKeys` (the controller), then `steward:credential`
 * (the model and its applications).
 */
import * as pulumi from "@pulumi/pulumi";
import { dirname, join } from "node:path";
import { vmwareStack } from "./stack";

const config = new pulumi.Config("steward");
const out = vmwareStack({
  vcenter: config.require("vcenter"),
  vcenterUser: config.require("vcenterUser"),
  vcenterPassword: config.requireSecret("vcenterPassword"),
  vcenterCaCert: config.get("vcenterCaCert"),
  datacenter: config.require("datacenter"),
  cluster: config.require("cluster"),
  resourcePool: config.get("resourcePool"),
  datastore: config.require("datastore"),
  network: config.require("network"),
  template: config.require("template"),
  folder: config.get("folder"),
  esxiHosts: config.getObject<string[]>("esxiHosts"),
  addresses: config.getObject<string[]>("addresses"),
  gateway: config.get("gateway"),
  nameservers: config.getObject<string[]>("nameservers"),
  controllerCpus: config.getNumber("controllerCpus"),
  controllerMemoryMb: config.getNumber("controllerMemoryMb"),
  controllerDiskGb: config.getNumber("controllerDiskGb"),
  vmPrefix: config.get("vmPrefix") ?? `steward-${pulumi.getStack()}`,
  publicKey: config.require("publicKey"),
  privateKey: config.requireSecret("privateKey"),
  sshUser: config.get("sshUser"),
  hostKeys: config.getObject<string[]>("hostKeys"),
  credential: config.get("credential"),
  webUnits: config.getNumber("webUnits"),
  operatorsDir: config.get("operatorsDir") ?? join(dirname(require.resolve("steward/package.json")), "operators"),
});

const next = {
  1: "Read the three VMs' host key fingerprints from vCenter into steward:hostKeys, then pulumi up (README.md, step 2)",
  2: "Store a vCenter account on the controller (steward add-credential), run replicaCloudCommand, set steward:credential, then pulumi up (README.md, step 3)",
  3: "Done: pulumi stack output webUnits; steward status -m shop",
}[out.stage];

export const stage = out.stage;
export const nextStep = next;
export const vcenterUrl = out.vcenterUrl;
export const controllerVmIds = out.controllerVmIds;
export const controllerVmNames = out.controllerVmNames;
export const controllerMoids = out.controllerMoids;
export const controllerAddresses = out.controllerAddresses;
export const replicaCloudCommand = out.replicaCloudCommand;
export const controllerUuid = "controllerUuid" in out ? out.controllerUuid : undefined;
export const addresses = "addresses" in out ? out.addresses : undefined;
export const leader = "leader" in out ? out.leader : undefined;
/** Addresses, CA and the admin password, for `steward` (README.md): secret. */
export const connection = "connection" in out ? out.connection : undefined;
export const webUnits = "webUnits" in out ? out.webUnits : undefined;
export const checkerUnits = "checkerUnits" in out ? out.checkerUnits : undefined;
