/** `pulumi up` entry point: reads the settings from stack config (see README.md). */
import * as pulumi from "@pulumi/pulumi";
import { dirname, join } from "node:path";
import { k8sStack } from "./stack";

const config = new pulumi.Config("steward");
const out = k8sStack({
  kubeconfig: config.requireSecret("kubeconfig"),
  context: config.get("context"),
  controllerImage: config.require("controllerImage"),
  agentImage: config.require("agentImage"),
  namespace: config.get("namespace"),
  apiAddresses: config.getObject<string[]>("apiAddresses"),
  inClusterServer: config.get("inClusterServer"),
  operatorsDir: config.get("operatorsDir") ?? join(dirname(require.resolve("steward/package.json")), "operators"),
  webUnits: config.getNumber("webUnits"),
});

/** Addresses, CA and the admin password, for `steward` (README.md): secret. */
export const connection = out.connection;
export const namespace = out.namespace;
export const webUnits = out.webUnits;
export const checkerUnits = out.checkerUnits;
export const dbUnits = out.dbUnits;
