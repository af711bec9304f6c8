/** `pulumi up` entry point: reads the hosts and the key from stack config (see README.md). */
import * as pulumi from "@pulumi/pulumi";
import { dirname, join } from "node:path";
import type { SshHost } from "steward";
import { bareMetal } from "./stack";

const config = new pulumi.Config("steward");
const out = bareMetal({
  controllers: config.requireObject<SshHost[]>("controllers"),
  spares: config.getObject<SshHost[]>("spares") ?? [],
  workers: config.requireObject<SshHost[]>("workers"),
  privateKey: config.requireSecret("privateKey"),
  operatorsDir: config.get("operatorsDir") ?? join(dirname(require.resolve("steward/package.json")), "operators"),
});

export const addresses = out.addresses;
export const leader = out.leader;
export const webUnits = out.webUnits;
