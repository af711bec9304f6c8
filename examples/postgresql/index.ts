/** `pulumi up` entry point: reads the hosts and the key from stack config (see README.md). */
import * as pulumi from "@pulumi/pulumi";
import { dirname, join } from "node:path";
import type { SshHost } from "steward";
import { postgresqlStack } from "./stack";

const config = new pulumi.Config("steward");
const out = postgresqlStack({
  controllers: config.requireObject<SshHost[]>("controllers"),
  databaseHosts: config.requireObject<SshHost[]>("databaseHosts"),
  clientHost: config.requireObject<SshHost>("clientHost"),
  privateKey: config.requireSecret("privateKey"),
  operatorsDir: config.get("operatorsDir") ?? join(dirname(require.resolve("steward/package.json")), "operators"),
  ...(config.get("database") ? { database: config.get("database")! } : {}),
  destroyDataOnDelete: config.getBoolean("destroyDataOnDelete") ?? false,
});

export const addresses = out.addresses;
export const postgresqlUnits = out.postgresqlUnits;
export const appUnits = out.appUnits;
